package scenario

import (
	"fmt"
	"math"
	"time"

	"hpc/cluster/api"
)

var accounting = &Scenario{
	Name:  "accounting",
	Title: "sacct, sreport and sshare over the scenario's own jobs",
	Needs: "1 idle node",
	run:   runAccounting,
}

// acctObs is what the accounting scenario read back.
type acctObs struct {
	ok, failed, cancelled uint64
	rows                  []api.AcctRow // sacct -X of the three jobs
	user, account         string
	// reportCPUSec is sreport's CPU-seconds of the user under the account
	// over the scenario's window [from, to]; windowRows are sacct's rows
	// of the user's jobs under the account, which it sums.
	reportCPUSec float64
	from, to     time.Time
	windowRows   []api.AcctRow
	share        *api.ShareRow // sshare's line of the user's association
}

func runAccounting(r *Run) Verdict {
	r.needNodes(1)
	d := r.dur(3 * time.Second)
	r.say("Every job leaves an accounting row: sacct lists them, sreport sums their")
	r.say("CPU time, sshare weighs it against the association's share.")
	ok := r.sbatch("-J", "acct-ok", "-n1", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(d))
	bad := r.sbatch("-J", "acct-fail", "-n1", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(d)+"; exit 3")
	cn := r.sbatch("-J", "acct-cancel", "-n1", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(r.dur(120*time.Second)))
	r.waitState(cn, 60*time.Second, api.StateRunning)
	r.say("Cancelling job %d:", cn)
	r.typeCmd(fmt.Sprintf("scancel %d", cn))
	_, err := r.cl.Cancel(r.ctx, api.CancelRequest{JobIDs: []uint64{cn}})
	r.check(err, "scancel")
	f := r.follow()
	ids := []uint64{ok, bad, cn}
	m := f.until("the jobs to end", d+90*time.Second, ids, func(m map[uint64]api.Job) bool { return allEnded(m, ids...) })
	o := acctObs{ok: ok, failed: bad, cancelled: cn, user: m[ok].User, account: m[ok].Account}
	r.typeCmd("sacct -X -j " + joinIDs(ids) + " -o JobID,JobName,State,ExitCode,AllocCPUS,Elapsed,NodeList")
	var rows []api.AcctRow
	r.waitUntil("the accounting rows to show the ends", 30*time.Second, func() bool {
		all, err := r.cl.Acct(r.ctx, api.AcctQuery{JobIDs: ids, AllUsers: true, JobsOnly: true})
		r.check(err, "sacct")
		rows = all
		ended := 0
		for _, row := range rows {
			if row.Step == "" && !row.End.IsZero() {
				ended++
			}
		}
		return ended == len(ids)
	})
	o.rows = rows
	start, end := r.t0.Truncate(time.Second), time.Now().Add(time.Second).Truncate(time.Second)
	o.from, o.to = start, end
	r.typeCmd(fmt.Sprintf("sreport cluster AccountUtilizationByUser start=%s end=%s -t seconds", start.Format("2006-01-02T15:04:05"), end.Format("2006-01-02T15:04:05")))
	rep, err := r.cl.Report(r.ctx, start, end)
	r.check(err, "sreport")
	for _, u := range rep.Usage {
		if u.User == o.user && u.Account == o.account {
			o.reportCPUSec += u.CPUSeconds
		}
	}
	// sreport sums what sacct lists: every job of the user's in the
	// window, the scenario's and any that ended as it began.
	all, err := r.cl.Acct(r.ctx, api.AcctQuery{AllUsers: true, JobsOnly: true})
	r.check(err, "sacct")
	for _, row := range all {
		if row.Step == "" && row.User == o.user && row.Account == o.account {
			o.windowRows = append(o.windowRows, row)
		}
	}
	r.typeCmd("sshare -a")
	sh, err := r.cl.Share(r.ctx)
	r.check(err, "sshare")
	for i := range sh.Rows {
		if sh.Rows[i].User == o.user && sh.Rows[i].Account == o.account {
			o.share = &sh.Rows[i]
		}
	}
	res, summary, evidence := judgeAccounting(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// judgeAccounting checks the three rows' states and exit codes, that
// sreport's CPU-seconds of the user equal what sacct's rows of the user
// give over the same window (AllocCPUS times the elapsed time inside it,
// within rounding), and that sshare has the user's association with usage.
func judgeAccounting(o acctObs) (Result, string, []string) {
	want := map[uint64]struct {
		state string
		exit  int
	}{o.ok: {"COMPLETED", 0}, o.failed: {"FAILED", 3}, o.cancelled: {"CANCELLED", 0}}
	var ev, fail []string
	var cpuSec float64
	seen := map[uint64]bool{}
	for _, row := range o.rows {
		if row.Step != "" {
			continue
		}
		seen[row.JobID] = true
		el := row.End.Sub(row.Start).Seconds()
		ev = append(ev, fmt.Sprintf("sacct: %d %s %s ExitCode=%d:%d AllocCPUS=%d Elapsed=%.0fs NodeList=%s",
			row.JobID, row.JobName, row.State, row.ExitCode, row.Signal, row.AllocCPUs, el, row.NodeList))
		w, ok := want[row.JobID]
		if ok && (row.State != w.state && !(w.state == "CANCELLED" && len(row.State) > 9 && row.State[:9] == "CANCELLED")) {
			fail = append(fail, fmt.Sprintf("job %d is %s in sacct, not %s", row.JobID, row.State, w.state))
		}
		if ok && row.ExitCode != w.exit {
			fail = append(fail, fmt.Sprintf("job %d's exit code is %d, not %d", row.JobID, row.ExitCode, w.exit))
		}
	}
	for id := range want {
		if !seen[id] {
			fail = append(fail, fmt.Sprintf("sacct has no row for job %d", id))
		}
	}
	var inWindow int
	for _, row := range o.windowRows {
		if row.Start.IsZero() {
			continue
		}
		end := row.End
		if end.IsZero() {
			end = o.to
		}
		if s, e := maxTime(row.Start, o.from), minTime(end, o.to); e.After(s) {
			cpuSec += float64(row.AllocCPUs) * e.Sub(s).Seconds()
			inWindow++
		}
	}
	ev = append(ev, fmt.Sprintf("sreport: %s under %s used %.0f CPU-seconds in the scenario's %.0f s; sacct's %d rows of theirs in it: AllocCPUS x Elapsed (clipped) sum to %.1f",
		o.user, o.account, o.reportCPUSec, o.to.Sub(o.from).Seconds(), inWindow, cpuSec))
	if math.Abs(o.reportCPUSec-cpuSec) > math.Max(3, 0.1*cpuSec) {
		fail = append(fail, fmt.Sprintf("sreport's %.0f CPU-seconds do not match the rows' %.1f", o.reportCPUSec, cpuSec))
	}
	if o.share == nil {
		fail = append(fail, fmt.Sprintf("sshare has no line for %s under %s", o.user, o.account))
	} else {
		ev = append(ev, fmt.Sprintf("sshare: %s/%s RawShares=%d RawUsage=%.0f EffectvUsage=%.3f FairShare=%.3f",
			o.account, o.user, o.share.RawShares, o.share.RawUsage, o.share.EffectvUsage, o.share.FairShare))
		if o.share.RawUsage <= 0 {
			fail = append(fail, "sshare shows no usage for the association")
		}
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("sacct shows COMPLETED, FAILED (exit 3) and CANCELLED; sreport's %.0f CPU-seconds match the rows; sshare counts the usage", o.reportCPUSec), ev
}
