package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"hpc/cluster/hostlist"
)

// multiProg turns srun --multi-prog's configuration file into the argv every
// task runs: a small shell dispatcher that picks the task's line by
// SLURM_PROCID. Lines read "RANKS PROGRAM [ARGS...]", RANKS being "*", a
// number, a range or a list ("0-3,5"); in the arguments %t is the task id
// and %o its offset within the line's ranks, as in Slurm. Comments start
// with '#'.
func multiProg(path, cwd string) ([]string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var script strings.Builder
	script.WriteString(`case "$SLURM_PROCID" in` + "\n")
	lines := 0
	for n, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("%s line %d: expected \"ranks program [args]\"", path, n+1)
		}
		ranks, err := multiProgRanks(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, n+1, err)
		}
		for off, r := range ranks {
			if r < 0 {
				script.WriteString("*) ")
			} else {
				fmt.Fprintf(&script, "%d) ", r)
			}
			script.WriteString("exec")
			for _, a := range f[1:] {
				script.WriteString(" " + shellWord(a, off))
			}
			script.WriteString(" ;;\n")
		}
		lines++
	}
	if lines == 0 {
		return nil, fmt.Errorf("%s: no programs in the multi-prog file", path)
	}
	script.WriteString(`*) echo "srun: error: no executable for task $SLURM_PROCID in the multi-prog file" >&2; exit 1 ;;` + "\nesac\n")
	return []string{"/bin/sh", "-c", script.String()}, nil
}

// multiProgRanks reads a line's ranks; "*" is -1 (any task).
func multiProgRanks(s string) ([]int, error) {
	if s == "*" {
		return []int{-1}, nil
	}
	var out []int
	for _, item := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b-a > hostlist.MaxHosts {
			return nil, fmt.Errorf("invalid task ranks %q", s)
		}
		for r := a; r <= b; r++ {
			out = append(out, r)
		}
	}
	return out, nil
}

// shellWord quotes an argument for sh, with %t (the task id, from
// SLURM_PROCID) and %o (the offset) put in.
func shellWord(a string, off int) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(a); i++ {
		switch {
		case a[i] == '%' && i+1 < len(a) && a[i+1] == 't':
			b.WriteString(`'"$SLURM_PROCID"'`)
			i++
		case a[i] == '%' && i+1 < len(a) && a[i+1] == 'o':
			b.WriteString(strconv.Itoa(off))
			i++
		case a[i] == '\'':
			b.WriteString(`'\''`)
		default:
			b.WriteByte(a[i])
		}
	}
	b.WriteByte('\'')
	return b.String()
}
