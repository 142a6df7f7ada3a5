package format

import (
	"strings"
	"unicode/utf8"

	"hpc/cluster/hostlist"
	"hpc/cluster/openapi"
)

// pad fits s into a column the way Slurm's _print_str does: a zero width
// prints s as is; otherwise s is padded with spaces on the left (right
// justified) or right to width. A longer value is cut to its first width
// characters when cut is true, and printed whole when it is false (Slurm
// never cuts node lists and durations).
func pad(s string, width int, right, cut bool) string {
	if width <= 0 {
		return s
	}
	var b strings.Builder
	writePad(&b, s, width, right, cut)
	return b.String()
}

// writePad writes pad's text to b without making it a string first.
func writePad(b *strings.Builder, s string, width int, right, cut bool) {
	n := width
	if width > 0 {
		n = utf8.RuneCountInString(s)
	}
	switch {
	case n > width && cut:
		b.WriteString(truncRunes(s, width))
	case n >= width:
		b.WriteString(s)
	case right:
		writeSpaces(b, width-n)
		b.WriteString(s)
	default:
		b.WriteString(s)
		writeSpaces(b, width-n)
	}
}

const spaces = "                                "

func writeSpaces(b *strings.Builder, n int) {
	for n > len(spaces) {
		b.WriteString(spaces)
		n -= len(spaces)
	}
	b.WriteString(spaces[:n])
}

// truncRunes returns the first n characters of s.
func truncRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// compareHost is lessHost as a three-way comparison.
func compareHost(a, b string) int {
	switch {
	case openapi.LessHost(a, b):
		return -1
	case openapi.LessHost(b, a):
		return 1
	}
	return 0
}

// expandNames expands every entry of a list that may hold hostlist
// expressions ("node[1-4]") into plain names, keeping order. Entries that do
// not parse are kept as they are.
func expandNames(list []string) []string {
	var out []string
	for _, e := range list {
		if !strings.ContainsAny(e, "[,") {
			out = append(out, e)
			continue
		}
		names, err := hostlist.Expand(e)
		if err != nil {
			out = append(out, e)
			continue
		}
		out = append(out, names...)
	}
	return out
}

// orNull is how Slurm prints an unset string with printf("%s"): "(null)".
func orNull(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}
