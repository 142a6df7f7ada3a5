package commands

import (
	"fmt"
	"io"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sreportOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts("all_clusters,a", "cluster,M,:", "federation", "help,h", "local", "noheader,n", "parsable,p",
		"parsable2,P", "quiet,Q", "tres,T,:", "time,t,:", "usage", "verbose,v", "version,V")
})

const sreportUsage = "Usage: sreport [-a|-M cluster|--local] [-n] [-p|-P] [-Q] [-v] [-T tres]\n" +
	"               [-t minutes|hours|seconds|percent] [--federation] [--help]\n" +
	"               [--usage] [-V] <COMMAND> [start=TIME] [end=TIME]\n"

const sreportHelp = `sreport [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -a or --all_clusters: every cluster (hpc runs one)
     -M or --cluster=name: this cluster only (hpc runs one: another name
                           reports nothing)
     --federation, --local: federation scope (hpc runs one cluster)
     -h or --help:       print this help
     -n or --noheader:   no header lines
     -p or --parsable:   fields separated by '|', with a '|' at the end
     -P or --parsable2:  fields separated by '|', nothing at the end
     -Q or --quiet:      no warnings
     -t or --time=unit:  minutes (the default), hours, seconds or percent
     -T or --tres=names: the TRES to report on (hpc accounts cpu only)
     -v or --verbose:    say which options mean nothing in hpc
     -V or --version:    print the Slurm version hpc follows
     --usage:            print a short list of the options

    Valid <COMMAND> values are:
     cluster utilization                 the cluster's CPU time, used and idle
     cluster accountutilizationbyuser    CPU time by account and user
     user topusage                       the users who used the most CPU time

    Each takes start=TIME and end=TIME (default: yesterday, midnight to
    midnight).
`

// sreportParams is a parsed sreport command line.
type sreportParams struct {
	v                  reportView
	allClusters, local bool
	cluster            string // -M
	tres               string // -T
	notes              notices
}

// option applies one of sreport's options.
func (p *sreportParams) option(e *Env) func(o *jobspec.Opt, val string, has bool) error {
	return func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "t":
			p.v.unit = strings.ToLower(val)
		case "n":
			p.v.noHeader = true
		case "p":
			p.v.sep, p.v.trailing = "|", true
		case "P":
			p.v.sep, p.v.trailing = "|", false
		case "a":
			p.allClusters = true
		case "M":
			p.cluster = val
		case "local":
			p.local = true
		case "federation":
			p.notes.add("--federation: hpc runs one cluster, not a federation; no effect")
		case "Q":
			// Nothing hpc's sreport says is a warning to silence.
		case "T":
			p.tres = val
		case "v":
			p.notes.verbose++
		case "h":
			io.WriteString(e.Stdout, sreportHelp)
			return quit{0}
		default:
			if handled, err := helpOrVersion(e, o.ID(), sreportHelp, sreportUsage); handled {
				return err
			}
		}
		return nil
	}
}

// settle checks the cluster options and reads -T as sreport does, with
// hpc's TRES table: cpu alone (the only TRES hpc's accounting measures);
// names it lacks are dropped, and none left is fatal.
func (p *sreportParams) settle(e *Env, prog string) bool {
	n := 0
	for _, set := range []bool{p.allClusters, p.cluster != "", p.local} {
		if set {
			n++
		}
	}
	if n > 1 {
		fmt.Fprintf(e.Stderr, "Only one cluster option can be used (--all_clusters OR --cluster OR --local)\n")
		return false
	}
	if p.tres == "" {
		p.tres = e.Getenv("SREPORT_TRES")
	}
	if p.tres != "" {
		for _, t := range strings.Split(p.tres, ",") {
			switch {
			case strings.EqualFold(t, "cpu"), strings.EqualFold(t, "ALL"):
				p.v.tres = true
			default:
				p.notes.add("--tres: hpc's accounting measures cpu only; %s left out", t)
			}
		}
		if !p.v.tres {
			p.notes.flush(e, prog)
			fmt.Fprintf(e.Stderr, "%s: fatal: No valid TRES given\n", prog)
			return false
		}
	}
	p.notes.flush(e, prog)
	return true
}

// sreportMain is sreport: cluster utilization, user topusage and cluster
// accountutilizationbyuser over a window, from accounting.
func sreportMain(e *Env, prog string, args []string) int {
	p := &sreportParams{v: reportView{unit: "minutes"}}
	rest, code, done := parseOpts(e, prog, sreportOpts(), args, p.option(e))
	if done {
		return code
	}
	if !p.settle(e, prog) {
		return 1
	}
	v := p.v
	now := e.Now()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	v.start, v.end = day.AddDate(0, 0, -1), day
	var words []string
	for _, a := range rest {
		k, val, ok := strings.Cut(a, "=")
		if !ok {
			words = append(words, strings.ToLower(a))
			continue
		}
		switch strings.ToLower(k) {
		case "start", "end":
			t, ok := parseReportTime(val, now)
			if !ok {
				e.errorf(prog, "Invalid time specification: %s", val)
				return 1
			}
			if strings.ToLower(k) == "start" {
				v.start = t
			} else {
				v.end = t
			}
		case "topcount":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				e.errorf(prog, "Invalid TopCount: %s", val)
				return 1
			}
			v.top = n
		default:
			e.errorf(prog, "Unknown condition: %s", a)
			return 1
		}
	}
	switch v.unit {
	case "minutes", "hours", "seconds", "percent":
	default:
		e.errorf(prog, "unknown time format %s", v.unit)
		return 1
	}
	report := strings.Join(words, " ")
	switch report {
	case "cluster utilization", "user topusage", "cluster accountutilizationbyuser":
	default:
		e.errorf(prog, "Not valid report %s", report)
		return 1
	}
	if !v.end.After(v.start) {
		e.errorf(prog, "end time must be after start time")
		return 1
	}
	cl, ctx, cancel, err := connect(e)
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	defer cancel()
	resp, err := cl.Report(ctx, v.start, v.end)
	if err == nil && p.cluster != "" {
		// -M: this cluster, or (another name) no records at all.
		var own string
		if own, err = clusterName(e); err == nil && !slicesContainsFold(splitList(p.cluster), own) {
			resp = &api.ReportResponse{Cluster: own, Start: resp.Start, End: resp.End}
			v.noRecords = true
		}
	}
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	switch report {
	case "cluster utilization":
		fmt.Fprint(e.Stdout, formatClusterUtil(resp, v))
	case "user topusage":
		fmt.Fprint(e.Stdout, formatTopUsage(resp, v))
	default:
		fmt.Fprint(e.Stdout, formatAcctByUser(resp, v))
	}
	return 0
}

// parseReportTime reads YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY] or now.
func parseReportTime(s string, now time.Time) (time.Time, bool) {
	if strings.EqualFold(s, "now") {
		return now, true
	}
	for _, f := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02", "01/02/06"} {
		if t, err := time.ParseInLocation(f, s, now.Location()); err == nil {
			return t, true
		}
	}
	if t, err := time.ParseInLocation("01/02", s, now.Location()); err == nil {
		return time.Date(now.Year(), t.Month(), t.Day(), 0, 0, 0, 0, now.Location()), true
	}
	return time.Time{}, false
}

type reportView struct {
	tres       bool // -T: usage in TRES units, with a TRES Name column
	noRecords  bool // -M named another cluster: nothing to report
	unit       string
	noHeader   bool
	sep        string
	trailing   bool
	start, end time.Time
	top        int
}

// table prints sreport's header block and a table.
func (v reportView) table(title string, cols []column, rows [][]string) string {
	var b strings.Builder
	if !v.noHeader {
		dash := strings.Repeat("-", 80)
		kind := "CPU"
		if v.tres {
			kind = "TRES"
		}
		units := map[string]string{"minutes": kind + " Minutes", "hours": kind + " Hours", "seconds": kind + " Seconds", "percent": "Percentage of Total"}
		fmt.Fprintf(&b, "%s\n%s\nUsage reported in %s\n%s\n", dash, title, units[v.unit], dash)
	}
	if v.tres {
		cols, rows = tresColumns(cols, rows)
	}
	if v.noRecords {
		rows = nil
	}
	t := &tableWriter{cols: cols, sep: v.sep, trailing: v.trailing, noHeader: v.noHeader}
	t.header()
	for _, r := range rows {
		t.line(r, false)
	}
	return b.String() + t.b.String()
}

// tresColumns turns a report's columns into -T's: a TRES Name column
// (cpu) before the usage, no Energy column.
func tresColumns(cols []column, rows [][]string) ([]column, [][]string) {
	at := len(cols)
	for i, c := range cols {
		if c.title == "Used" || c.title == "Allocated" {
			at = i
			break
		}
	}
	keep := func(row []string, name string) []string {
		var out []string
		for i := range cols {
			if i == at {
				out = append(out, name)
			}
			if cols[i].title != "Energy" {
				out = append(out, row[i])
			}
		}
		return out
	}
	var titles []column
	for i, c := range cols {
		if i == at {
			titles = append(titles, column{"TRES Name", 14, false})
		}
		if c.title != "Energy" {
			titles = append(titles, c)
		}
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = keep(r, "cpu")
	}
	return titles, out
}

// slicesContainsFold reports whether list holds s, in any case.
func slicesContainsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func (v reportView) span() string {
	f := "2006-01-02T15:04:05"
	return v.start.Format(f) + " - " + v.end.Add(-time.Second).Format(f)
}

func (v reportView) secs() string {
	return fmt.Sprintf("(%d secs)", int64(v.end.Sub(v.start)/time.Second))
}

// amount prints CPU-seconds in the chosen unit (percent of total).
func (v reportView) amount(cpuSecs, total float64) string {
	switch v.unit {
	case "hours":
		return strconv.FormatInt(int64(cpuSecs/3600), 10)
	case "seconds":
		return strconv.FormatInt(int64(cpuSecs), 10)
	case "percent":
		if total <= 0 {
			return "0.00%"
		}
		return fmt.Sprintf("%.2f%%", 100*cpuSecs/total)
	}
	return strconv.FormatInt(int64(cpuSecs/60), 10)
}

func formatClusterUtil(r *api.ReportResponse, v reportView) string {
	reported := float64(r.TotalCPUs) * v.end.Sub(v.start).Seconds()
	alloc := 0.0
	for _, u := range r.Usage {
		alloc += u.CPUSeconds
	}
	idle := max(reported-alloc, 0)
	cols := []column{{"Cluster", 9, false}, {"Allocated", 13, false}, {"Down", 10, false}, {"PLND Down", 9, false},
		{"Idle", 13, false}, {"Planned", 10, false}, {"Reported", 13, false}}
	row := []string{r.Cluster, v.amount(alloc, reported), v.amount(0, reported), v.amount(0, reported),
		v.amount(idle, reported), v.amount(0, reported), v.amount(reported, reported)}
	return v.table("Cluster Utilization "+v.span(), cols, [][]string{row})
}

func properName(login string) string {
	if u, err := user.Lookup(login); err == nil && u.Name != "" {
		return strings.SplitN(u.Name, ",", 2)[0]
	}
	return login
}

func formatTopUsage(r *api.ReportResponse, v reportView) string {
	top := v.top
	if top == 0 {
		top = 10
	}
	type ua struct {
		user  string
		accts []string
		secs  float64
	}
	by := map[string]*ua{}
	for _, u := range r.Usage {
		x := by[u.User]
		if x == nil {
			x = &ua{user: u.User}
			by[u.User] = x
		}
		x.secs += u.CPUSeconds
		x.accts = append(x.accts, u.Account)
	}
	var list []*ua
	for _, x := range by {
		list = append(list, x)
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].secs != list[b].secs {
			return list[a].secs > list[b].secs
		}
		return list[a].user < list[b].user
	})
	if len(list) > top {
		list = list[:top]
	}
	total := float64(r.TotalCPUs) * v.end.Sub(v.start).Seconds()
	cols := []column{{"Cluster", 9, false}, {"Login", 9, false}, {"Proper Name", 15, false},
		{"Account", 15, false}, {"Used", 10, false}, {"Energy", 8, false}}
	var rows [][]string
	for _, x := range list {
		sort.Strings(x.accts)
		rows = append(rows, []string{r.Cluster, x.user, properName(x.user), strings.Join(x.accts, ","), v.amount(x.secs, total), "0"})
	}
	return v.table(fmt.Sprintf("Top %d Users %s %s", top, v.span(), v.secs()), cols, rows)
}

func formatAcctByUser(r *api.ReportResponse, v reportView) string {
	total := float64(r.TotalCPUs) * v.end.Sub(v.start).Seconds()
	// An account's usage is its subtree's: sum the users' up the tree.
	user := map[[2]string]float64{}
	for _, u := range r.Usage {
		user[[2]string{u.Account, u.User}] += u.CPUSeconds
	}
	acct := map[string]float64{}
	var stack []string // account at each depth
	for _, a := range r.Assocs {
		if a.User != "" {
			continue
		}
		stack = append(stack[:min(a.Depth, len(stack))], a.Account)
		for k, s := range user {
			if k[0] == a.Account {
				for _, up := range stack {
					acct[up] += s
				}
			}
		}
	}
	cols := []column{{"Cluster", 9, false}, {"Account", 15, false}, {"Login", 9, false},
		{"Proper Name", 15, false}, {"Used", 10, false}, {"Energy", 8, false}}
	var rows [][]string
	for _, a := range r.Assocs {
		name := strings.Repeat(" ", a.Depth) + a.Account
		if a.User == "" {
			rows = append(rows, []string{r.Cluster, name, "", "", v.amount(acct[a.Account], total), "0"})
			continue
		}
		s, ok := user[[2]string{a.Account, a.User}]
		if !ok {
			continue
		}
		rows = append(rows, []string{r.Cluster, name, a.User, properName(a.User), v.amount(s, total), "0"})
	}
	return v.table("Cluster/Account/User Utilization "+v.span()+" "+v.secs(), cols, rows)
}
