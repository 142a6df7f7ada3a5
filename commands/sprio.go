package commands

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sprioOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts("jobs,j,::", "user,u,:", "users,u,:", "long,l", "norm,n", "weights,w", "noheader,h",
		"partition,p,:", "cluster,M,:", "clusters,M,:", "format,o,:", "sort,S,:", "verbose,v", "federation",
		"local", "sibling", "help", "usage", "version,V")
})

const sprioUsage = "Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]\n" +
	"     [--federation] [--local] [--sibling] [--usage] [-hlnvVw]\n"

const sprioHelp = `Usage: sprio [OPTIONS]
  -h, --noheader              no header line
  -j, --jobs=job_ids          only these pending jobs (comma-separated)
  -l, --long                  the long listing, with more columns
  -M, --cluster, --clusters=name
                              the cluster to ask (hpc runs one: its name or all)
  -n, --norm                  the factors normalized to 0..1
  -o, --format=format         the columns, as sprio's %i %r %u %Y %A %F...
  -p, --partition=partitions  only jobs pending in these partitions
  -S, --sort=keys             sort by these format letters ('-' descending)
  -u, --user, --users=users   only jobs of these users
  -v, --verbose               print the options read
  -w, --weights               the configured weight of each factor
      --federation, --local, --sibling
                              federation scope (hpc runs one cluster: no effect)

Help options:
      --help                  print this help
      --usage                 print a short list of the options
  -V, --version               print the Slurm version hpc follows
`

// sprioParams is a parsed sprio command line.
type sprioParams struct {
	sprioView
	jobsGiven, jobsArg string
	usersArg, partsArg string
	format, sort       string
	cluster            string // -M: this cluster's name
	notes              notices
}

// sprioMain is sprio: each pending job's priority and the weighted (or,
// with -n, normalized) multifactor factors that make it up, from the
// leader's latest scheduling pass.
func sprioMain(e *Env, prog string, args []string) int {
	p := &sprioParams{sprioView: sprioView{jobs: map[uint64]bool{}, users: map[string]bool{}, parts: map[string]bool{}}}
	rest, code, done := parseOpts(e, prog, sprioOpts(), args, p.option(e, prog))
	if done {
		return code
	}
	if len(rest) > 0 && p.jobsGiven != "" && p.jobsArg == "" {
		// sprio -j 12: the jobs are the operand.
		if err := p.option(e, prog)(&jobspec.Opt{Short: 'j'}, rest[0], true); err != nil {
			return 1
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		e.errorf(prog, "Unrecognized option: %s", rest[0])
		io.WriteString(e.Stdout, sprioUsage)
		return 1
	}
	if p.long && p.format != "" {
		fmt.Fprintf(e.Stderr, "%s: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", prog)
		return 1
	}
	if v := e.Getenv("SPRIO_FORMAT"); v != "" && p.format == "" && !p.long {
		p.format = v
	}
	if p.notes.verbose > 0 {
		p.printOptions(e)
	}
	p.notes.flush(e, prog)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := e.Client(ctx)
	var resp *api.PriorityResponse
	if err == nil {
		resp, err = cl.Priority(ctx)
	}
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	if resp.Plugin != "priority/multifactor" {
		fmt.Fprintf(e.Stderr, "You are not running a supported priority plugin\n(%s).\nOnly 'priority/multifactor' is supported.\n", resp.Plugin)
		return 1
	}
	if p.sort != "" {
		if err := sortSprio(resp.Rows, p.sort); err != nil {
			e.errorf(prog, "%v", err)
			return 1
		}
	}
	if p.format == "" {
		fmt.Fprint(e.Stdout, formatSprio(resp, p.sprioView))
		return 0
	}
	if strings.Contains(p.format, "%c") && p.cluster == "" {
		p.cluster, _ = clusterName(e)
	}
	fmt.Fprint(e.Stdout, sprioByFormat(e, prog, resp, p.sprioView, p.format, p.cluster))
	return 0
}

// option applies one of sprio's options.
func (p *sprioParams) option(e *Env, prog string) func(o *jobspec.Opt, val string, has bool) error {
	return func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "j":
			p.jobsGiven = "1"
			if has {
				p.jobsArg = val
			}
			for _, s := range splitList(val) {
				id, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					e.errorf(prog, "Invalid job id: %s", s)
					return quit{1}
				}
				p.jobs[id] = true
			}
		case "u":
			p.usersArg = val
			for _, s := range splitList(val) {
				p.users[s] = true
			}
		case "p":
			p.partsArg = val
			for _, s := range splitList(val) {
				p.parts[s] = true
			}
		case "l":
			p.long = true
		case "n":
			p.norm = true
		case "w":
			p.weights = true
		case "h":
			p.noHeader = true
		case "o":
			p.format = val
		case "S":
			p.sort = val
		case "v":
			p.notes.verbose++
		case "federation", "local", "sibling":
			p.notes.add("--%s: hpc runs one cluster, not a federation; no effect", o.Long)
		case "M":
			name, ok := resolveClusters(e, prog, val)
			if !ok {
				return quit{1}
			}
			p.cluster = name
		default:
			if handled, err := helpOrVersion(e, o.ID(), sprioHelp, sprioUsage); handled {
				return err
			}
		}
		return nil
	}
}

// printOptions is what sprio -v prints before the listing.
func (p *sprioParams) printOptions(e *Env) {
	null := func(s string) string {
		if s == "" {
			return "(null)"
		}
		return s
	}
	jobFlag := 0
	if p.jobsGiven != "" {
		jobFlag = 1
	}
	fmt.Fprintf(e.Stdout, "-----------------------------\nformat     = %s\njob_flag   = %d\njobs       = %s\n"+
		"partition  = %s\nusers      = %s\nverbose    = %d\n-----------------------------\n\n\n",
		null(p.format), jobFlag, null(p.jobsArg), null(p.partsArg), null(p.usersArg), p.notes.verbose)
}

type sprioView struct {
	jobs                          map[uint64]bool
	users, parts                  map[string]bool
	long, norm, weights, noHeader bool
}

// formatSprio prints sprio's table: "%.15i %9r %.10Y %.10S %.10A %.10F
// %.10J %.10P %.10Q" (with -l also USER and NICE), one line per pending job.
func formatSprio(resp *api.PriorityResponse, v sprioView) string {
	var b strings.Builder
	num := func(x float64) string {
		if v.norm {
			return strconv.FormatFloat(x, 'f', 7, 64)
		}
		return strconv.FormatInt(int64(math.Round(x)), 10)
	}
	line := func(id, part, user, prio, site string, f [5]string, nice string) {
		fmt.Fprintf(&b, "%15s %-9s ", id, trunc(part, 9))
		if v.long {
			fmt.Fprintf(&b, "%8s ", trunc(user, 8))
		}
		fmt.Fprintf(&b, "%10s %10s %10s %10s %10s %10s %10s", prio, site, f[0], f[1], f[2], f[3], f[4])
		if v.long {
			fmt.Fprintf(&b, " %6s", nice)
		}
		b.WriteByte('\n')
	}
	if !v.noHeader {
		line("JOBID", "PARTITION", "USER", "PRIORITY", "SITE", [5]string{"AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS"}, "NICE")
	}
	if v.weights {
		w := resp.Weights
		line("Weights", "", "", "", "1", [5]string{num(w.Age), num(w.Fairshare), num(w.JobSize), num(w.Partition), num(w.QOS)}, "")
	}
	for _, r := range resp.Rows {
		if (len(v.jobs) > 0 && !v.jobs[r.JobID]) || (len(v.users) > 0 && !v.users[r.User]) || (len(v.parts) > 0 && !v.parts[r.Partition]) {
			continue
		}
		f := r.Weighted
		prio := strconv.FormatUint(uint64(r.Priority), 10)
		if v.norm {
			f = r.Normalized
			prio = strconv.FormatFloat(float64(r.Priority)/float64(math.MaxUint32), 'f', 7, 64)
		}
		line(strconv.FormatUint(r.JobID, 10), r.Partition, r.User, prio, "0",
			[5]string{num(f.Age), num(f.Fairshare), num(f.JobSize), num(f.Partition), num(f.QOS)}, strconv.Itoa(r.Nice))
	}
	return b.String()
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// sortSprio sorts rows by -S keys as sprio's sort_job_list does: one
// stable sort per key, the last first; '-' before a key descends. The
// weighted and normalized letters of a factor sort alike.
func sortSprio(rows []api.PriorityRow, keys string) error {
	for i := len(keys) - 1; i >= 0; i-- {
		c := keys[i]
		if c == ',' || c == '-' || c == '+' {
			continue
		}
		desc := i > 0 && keys[i-1] == '-'
		var key func(a, b api.PriorityRow) int
		factor := func(f func(api.PriorityFactors) float64) func(a, b api.PriorityRow) int {
			return func(a, b api.PriorityRow) int { return cmp.Compare(f(a.Weighted), f(b.Weighted)) }
		}
		switch c {
		case 'c', 't', 'T':
			key = func(api.PriorityRow, api.PriorityRow) int { return 0 } // one cluster; no TRES factors
		case 'i':
			key = func(a, b api.PriorityRow) int { return cmp.Compare(a.JobID, b.JobID) }
		case 'N':
			key = func(a, b api.PriorityRow) int { return cmp.Compare(a.Nice, b.Nice) }
		case 'r':
			key = func(a, b api.PriorityRow) int { return strings.Compare(a.Partition, b.Partition) }
		case 'u':
			key = func(a, b api.PriorityRow) int { return strings.Compare(a.User, b.User) }
		case 'a', 'A':
			key = factor(func(f api.PriorityFactors) float64 { return f.Age })
		case 'f', 'F':
			key = factor(func(f api.PriorityFactors) float64 { return f.Fairshare })
		case 'j', 'J':
			key = factor(func(f api.PriorityFactors) float64 { return f.JobSize })
		case 'p', 'P':
			key = factor(func(f api.PriorityFactors) float64 { return f.Partition })
		case 'q', 'Q':
			key = factor(func(f api.PriorityFactors) float64 { return f.QOS })
		case 'y', 'Y':
			key = func(a, b api.PriorityRow) int { return cmp.Compare(a.Priority, b.Priority) }
		default:
			return fmt.Errorf("Invalid sort specification: %c", c)
		}
		sort.SliceStable(rows, func(a, b int) bool {
			if desc {
				return key(rows[b], rows[a]) < 0
			}
			return key(rows[a], rows[b]) < 0
		})
	}
	return nil
}

// sprioField is one %-field of a -o format.
type sprioField struct {
	letter byte
	width  int
	right  bool
	suffix string
}

// sprioByFormat prints the listing in a -o format, as sprio's
// parse_format and print functions do: text before the first % is a
// prefix, each field is %[.][width]letter and what follows it up to the
// next %; '.' right-justifies; a width cuts and pads. An unknown letter
// is reported and left out.
func sprioByFormat(e *Env, prog string, resp *api.PriorityResponse, v sprioView, format, cluster string) string {
	prefix, body, _ := strings.Cut(format, "%")
	if !strings.Contains(format, "%") {
		body = ""
	}
	var fields []sprioField
	for _, tok := range strings.Split(body, "%") {
		if body == "" {
			break
		}
		var f sprioField
		i := 0
		if i < len(tok) && tok[i] == '.' {
			f.right = true
			i++
		}
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			f.width = f.width*10 + int(tok[i]-'0')
			i++
		}
		if i < len(tok) {
			f.letter = tok[i]
			f.suffix = tok[i+1:]
		}
		if !strings.ContainsRune("aAbBcfFijJNpPqQrSuyYtT", rune(f.letter)) || f.letter == 0 {
			e.errorf(prog, "Invalid job format specification: %c", f.letter)
			continue
		}
		fields = append(fields, f)
	}
	var b strings.Builder
	line := func(value func(f sprioField) string) {
		b.WriteString(prefix)
		for _, f := range fields {
			b.WriteString(sprioCell(value(f), f.width, f.right) + f.suffix)
		}
		b.WriteByte('\n')
	}
	if !v.noHeader {
		line(func(f sprioField) string { return sprioHeaders[f.letter] })
	}
	if v.weights {
		line(func(f sprioField) string { return sprioWeight(resp.Weights, f.letter) })
	}
	for _, r := range resp.Rows {
		if (len(v.jobs) > 0 && !v.jobs[r.JobID]) || (len(v.users) > 0 && !v.users[r.User]) || (len(v.parts) > 0 && !v.parts[r.Partition]) {
			continue
		}
		line(func(f sprioField) string { return sprioValue(r, f.letter, cluster) })
	}
	return b.String()
}

var sprioHeaders = map[byte]string{
	'a': "AGE", 'A': "AGE", 'b': "ASSOC", 'B': "ASSOC", 'c': "CLUSTER", 'f': "FAIRSHARE", 'F': "FAIRSHARE",
	'i': "JOBID", 'j': "JOBSIZE", 'J': "JOBSIZE", 'N': "NICE", 'p': "PARTITION", 'P': "PARTITION",
	'q': "QOS", 'Q': "QOS", 'r': "PARTITION", 'S': "SITE", 'u': "USER", 'y': "PRIORITY", 'Y': "PRIORITY",
	't': "TRES", 'T': "TRES",
}

// sprioFactor picks a factor by its letter (either case).
func sprioFactor(f api.PriorityFactors, letter byte) (float64, bool) {
	switch letter | 0x20 {
	case 'a':
		return f.Age, true
	case 'f':
		return f.Fairshare, true
	case 'j':
		return f.JobSize, true
	case 'p':
		return f.Partition, true
	case 'q':
		return f.QOS, true
	case 'b':
		return 0, true // hpc has no association factor
	}
	return 0, false
}

// sprioWeight is the -w line's cell of a column.
func sprioWeight(w api.PriorityFactors, letter byte) string {
	switch letter {
	case 'i':
		return "Weights"
	case 'S':
		return "1"
	}
	if letter == 'r' || letter == 'y' || letter == 'Y' {
		return ""
	}
	if x, ok := sprioFactor(w, letter); ok {
		return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	}
	return ""
}

// sprioValue is a job's cell of a column.
func sprioValue(r api.PriorityRow, letter byte, cluster string) string {
	switch letter {
	case 'i':
		return strconv.FormatUint(r.JobID, 10)
	case 'r':
		return r.Partition
	case 'u':
		return r.User
	case 'c':
		return cluster
	case 'N':
		return strconv.Itoa(r.Nice)
	case 'S':
		return "0"
	case 'Y':
		return strconv.FormatUint(uint64(r.Priority), 10)
	case 'y':
		return fmt.Sprintf("%16.14f", float64(r.Priority)/float64(math.MaxUint32))
	case 't', 'T':
		return ""
	}
	if letter >= 'a' {
		x, _ := sprioFactor(r.Normalized, letter)
		return strconv.FormatFloat(x, 'f', 7, 64)
	}
	x, _ := sprioFactor(r.Weighted, letter)
	return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
}

// sprioCell writes a value as sprio's _print_str does: with a width, cut
// to it and padded (right-justified after '.').
func sprioCell(s string, width int, right bool) string {
	if width == 0 {
		return s
	}
	if len(s) > width {
		s = s[:width]
	}
	if right {
		return fmt.Sprintf("%*s", width, s)
	}
	return fmt.Sprintf("%-*s", width, s)
}
