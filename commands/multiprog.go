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
	lines, err := readMultiProg(path, cwd)
	if err != nil {
		return nil, err
	}
	var script strings.Builder
	script.WriteString(`case "$SLURM_PROCID" in` + "\n")
	for _, l := range lines {
		for off, r := range l.ranks {
			if r < 0 {
				script.WriteString("*) ")
			} else {
				fmt.Fprintf(&script, "%d) ", r)
			}
			script.WriteString("exec")
			for _, a := range l.args {
				script.WriteString(" " + shellWord(a, off))
			}
			script.WriteString(" ;;\n")
		}
	}
	script.WriteString(`*) echo "srun: error: no executable for task $SLURM_PROCID in the multi-prog file" >&2; exit 1 ;;` + "\nesac\n")
	return []string{"/bin/sh", "-c", script.String()}, nil
}

// mpLine is a line of a multi-prog file: its ranks (-1: any) and its
// program and arguments.
type mpLine struct {
	ranks []int
	args  []string
}

// readMultiProg reads a multi-prog file. A line that ends in a backslash
// goes on on the next one, as in Slurm's.
func readMultiProg(path, cwd string) ([]mpLine, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []mpLine
	raw := strings.Split(string(b), "\n")
	for n := 0; n < len(raw); n++ {
		line, first := raw[n], n
		for strings.HasSuffix(line, "\\") && n+1 < len(raw) {
			n++
			line = strings.TrimSuffix(line, "\\") + " " + raw[n]
		}
		line = strings.TrimSuffix(line, "\\")
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("Line %d of configuration file %s invalid", first+1, path)
		}
		ranks, err := multiProgRanks(f[0])
		if err != nil {
			return nil, fmt.Errorf("Line %d of configuration file %s invalid", first+1, path)
		}
		lines = append(lines, mpLine{ranks: ranks, args: f[1:]})
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s: no programs in the multi-prog file", path)
	}
	return lines, nil
}

// multiProgExecs is the program each of ntasks tasks runs, as srun checks
// a multi-prog file against its task count: a task no line names makes
// the file invalid.
func multiProgExecs(name, cwd string, ntasks int) ([]string, error) {
	lines, err := readMultiProg(name, cwd)
	if err != nil {
		return nil, err
	}
	execs := make([]string, ntasks)
	for _, l := range lines {
		for _, r := range l.ranks {
			switch {
			case r < 0:
				for t := range execs {
					if execs[t] == "" {
						execs[t] = l.args[0]
					}
				}
			case r < ntasks && execs[r] == "":
				execs[r] = l.args[0]
			}
		}
	}
	for t, x := range execs {
		if x == "" {
			return nil, fmt.Errorf("Configuration file %s invalid, no record for task id %d", name, t)
		}
	}
	return execs, nil
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
