package commands

import (
	"fmt"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sreportOpts = opts("time,t,:", "noheader,n", "parsable,p", "parsable2,P", "help", "usage", "version,V")

const sreportUsage = "Usage: sreport [-n] [-p|-P] [-t minutes|hours|seconds|percent] [--help] [--usage]\n" +
	"               [-V] <COMMAND> [start=TIME] [end=TIME]\n"

const sreportHelp = `sreport [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -n or --noheader:   no header lines
     -p or --parsable:   fields separated by '|', with a '|' at the end
     -P or --parsable2:  fields separated by '|', nothing at the end
     -t or --time=unit:  minutes (the default), hours, seconds or percent
     -V or --version:    print the Slurm version hpc follows
     --help:             print this help
     --usage:            print a short list of the options

    Valid <COMMAND> values are:
     cluster utilization                 the cluster's CPU time, used and idle
     cluster accountutilizationbyuser    CPU time by account and user
     user topusage                       the users who used the most CPU time

    Each takes start=TIME and end=TIME (default: yesterday, midnight to
    midnight).
`

// sreportMain is sreport: cluster utilization, user topusage and cluster
// accountutilizationbyuser over a window, from accounting.
func sreportMain(e *Env, prog string, args []string) int {
	v := reportView{unit: "minutes"}
	rest, code, done := parseOpts(e, prog, sreportOpts, args, func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "t":
			v.unit = strings.ToLower(val)
		case "n":
			v.noHeader = true
		case "p":
			v.sep, v.trailing = "|", true
		case "P":
			v.sep, v.trailing = "|", false
		default:
			if handled, err := helpOrVersion(e, o.ID(), sreportHelp, sreportUsage); handled {
				return err
			}
		}
		return nil
	})
	if done {
		return code
	}
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
		units := map[string]string{"minutes": "CPU Minutes", "hours": "CPU Hours", "seconds": "CPU Seconds", "percent": "Percentage of Total"}
		fmt.Fprintf(&b, "%s\n%s\nUsage reported in %s\n%s\n", dash, title, units[v.unit], dash)
	}
	t := &tableWriter{cols: cols, sep: v.sep, trailing: v.trailing, noHeader: v.noHeader}
	t.header()
	for _, r := range rows {
		t.line(r, false)
	}
	return b.String() + t.b.String()
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
