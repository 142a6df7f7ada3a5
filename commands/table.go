package commands

import (
	"fmt"
	"strings"
)

// column is one column of the fixed-width tables sshare and sreport print.
type column struct {
	title string
	width int
	left  bool // values left-justified (titles are right-justified)
}

// tableWriter prints rows under a header as the Slurm account tools do:
// fixed-width columns each followed by a space, a dashed line under the
// titles; or, with a separator (-p, -P), the values joined by it (and one
// after the last with trailing, as -p does). Values longer than their
// column are cut.
type tableWriter struct {
	cols     []column
	sep      string
	trailing bool
	noHeader bool
	b        strings.Builder
}

func (t *tableWriter) line(vals []string, header bool) {
	for i, c := range t.cols {
		s := vals[i]
		if t.sep != "" {
			t.b.WriteString(s)
			if i < len(t.cols)-1 || t.trailing {
				t.b.WriteString(t.sep)
			}
			continue
		}
		if len(s) > c.width {
			s = s[:c.width]
		}
		if c.left && !header {
			fmt.Fprintf(&t.b, "%-*s ", c.width, s)
		} else {
			fmt.Fprintf(&t.b, "%*s ", c.width, s)
		}
	}
	t.b.WriteByte('\n')
}

// header prints the titles (and the dashes) unless noHeader.
func (t *tableWriter) header() {
	if t.noHeader {
		return
	}
	var titles, dashes []string
	for _, c := range t.cols {
		titles = append(titles, c.title)
		dashes = append(dashes, strings.Repeat("-", c.width))
	}
	t.line(titles, true)
	if t.sep == "" {
		t.line(dashes, true)
	}
}
