package scenario

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"time"

	"hpc/cluster/api"
)

var preemption = &Scenario{
	Name:  "preemption",
	Title: "a QoS with PreemptMode=REQUEUE takes nodes from a low QoS",
	Needs: "PreemptType=preempt/qos in slurm.conf, an sacctmgr administrator (root), 1 idle node",
	run:   runPreemption,
}

// The QoS the scenario makes, and removes again.
const (
	qosLow  = "demo-low"
	qosHigh = "demo-high"
)

// preemptObs is what the preemption scenario saw.
type preemptObs struct {
	lowNodes  []string // where the low job ran before it was preempted
	low, high api.Job  // both as the high job ended
	t0        time.Time
}

func runPreemption(r *Run) Verdict {
	nodes := r.needNodes(1)
	if r.cfg.PreemptType != "preempt/qos" {
		r.skip("needs PreemptType=preempt/qos in slurm.conf (this lab has %q); add it and restart the lab", r.cfg.PreemptType)
	}
	r.setUpQOS()
	n := len(nodes)
	r.say("1. A low-QoS job (%s, PreemptMode=REQUEUE) takes all %d nodes.", qosLow, n)
	low := r.sbatch("-J", "pre-low", "--qos="+qosLow, "-N", strconv.Itoa(n), "--exclusive", "-t", "10", "-o", "/dev/null", "--wrap", sleepCmd(r.dur(300*time.Second)))
	lj := r.waitState(low, 30*time.Second, api.StateRunning)
	r.say("2. A high-QoS job (%s, Preempt=%s) needs one node: Slurm requeues the", qosHigh, qosLow)
	r.say("   low job to make room; it goes back to the queue with the same id.")
	high := r.sbatch("-J", "pre-high", "--qos="+qosHigh, "-N1", "--exclusive", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(r.dur(5*time.Second)))
	r.typeCmd("squeue -o '%.6i %.10j %.10q %.3t %.10r %N'")
	r.typeCmd(fmt.Sprintf("scontrol show job %d | grep -E 'JobState|Restarts'", low))
	r.watch("the low job leaves its nodes and pends again")
	f := r.follow()
	o := preemptObs{lowNodes: lj.NodeNames(), t0: r.t0}
	m := f.until("the high job to end", r.dur(5*time.Second)+90*time.Second, []uint64{low, high}, func(m map[uint64]api.Job) bool {
		return allEnded(m, high)
	})
	// A preempted job may not start again for 121 s (as in Slurm): it
	// still pends when the high job has ended.
	o.high, o.low = m[high], m[low]
	res, summary, evidence := judgePreemption(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// setUpQOS makes the two QoS and lets the caller's association use them,
// recording how to undo both.
func (r *Run) setUpQOS() {
	u, err := user.Current()
	r.check(err, "who am I")
	mgr, err := r.cl.Acctmgr(r.ctx)
	r.check(err, "sacctmgr show user")
	acct := ""
	for _, au := range mgr.Users {
		if au.Name == u.Username {
			acct = au.DefaultAccount
		}
	}
	if acct == "" {
		r.skip("user %s has no association to add the scenario's QoS to", u.Username)
	}
	mode, prio, edit := "requeue", 100, api.ListEdit{Op: "=", Names: []string{qosLow}}
	for _, q := range []api.AcctmgrRequest{
		{Action: "add", Entity: "qos", Names: []string{qosLow}, Set: api.AcctmgrSet{PreemptMode: &mode}},
		{Action: "add", Entity: "qos", Names: []string{qosHigh}, Set: api.AcctmgrSet{Priority: &prio, Preempt: &edit}},
	} {
		r.typeCmd(fmt.Sprintf("sacctmgr -i add qos %s", q.Names[0]))
		if _, err := r.cl.AcctmgrChange(r.ctx, q); err != nil {
			r.skip("sacctmgr add qos %s: %s (needs an sacctmgr administrator, such as root)", q.Names[0], errText(err))
		}
		name := q.Names[0]
		r.onUndo("sacctmgr -i delete qos "+name, func(ctx context.Context) error {
			_, err := r.cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "delete", Entity: "qos", Names: []string{name}})
			return err
		})
	}
	add := api.ListEdit{Op: "+=", Names: []string{qosLow, qosHigh}}
	r.typeCmd(fmt.Sprintf("sacctmgr -i modify user %s where account=%s set qos+=%s,%s", u.Username, acct, qosLow, qosHigh))
	_, err = r.cl.AcctmgrChange(r.ctx, api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{u.Username}, Accounts: []string{acct}, Set: api.AcctmgrSet{QOS: &add}})
	r.check(err, "sacctmgr modify user")
	r.onUndo(fmt.Sprintf("sacctmgr -i modify user %s where account=%s set qos-=%s,%s", u.Username, acct, qosLow, qosHigh), func(ctx context.Context) error {
		del := api.ListEdit{Op: "-=", Names: []string{qosLow, qosHigh}}
		_, err := r.cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{u.Username}, Accounts: []string{acct}, Set: api.AcctmgrSet{QOS: &del}})
		return err
	})
}

// judgePreemption checks that the high job started on a node the low job
// held, and that the low job was requeued (PENDING again, Restarts counted),
// not killed.
func judgePreemption(o preemptObs) (Result, string, []string) {
	rel := func(t time.Time) string { return fmt.Sprintf("%+.1fs", t.Sub(o.t0).Seconds()) }
	ev := []string{
		fmt.Sprintf("low job %d (%s) ran on %s", o.low.ID, qosLow, compress(o.lowNodes)),
		fmt.Sprintf("high job %d (%s) ran %s to %s on %s, %s", o.high.ID, qosHigh, rel(o.high.StartTime), rel(o.high.EndTime), compress(o.high.NodeNames()), o.high.State),
		fmt.Sprintf("low job %d when the high one ran: %s, Reason=%s, Restarts=%d", o.low.ID, o.low.State, o.low.Reason, o.low.Restarts),
	}
	fail := notCompleted(o.high)
	if len(o.high.Alloc) == 0 || !slices.Contains(o.lowNodes, o.high.Alloc[0].Node) {
		fail = append(fail, "the high job did not run on a node the low job held")
	}
	if o.low.Restarts < 1 || o.low.State != api.StatePending {
		fail = append(fail, fmt.Sprintf("the low job was not requeued (%s, Restarts=%d)", o.low.State, o.low.Restarts))
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("job %d (%s) took %s from job %d (%s), which was requeued (PENDING, Restarts=%d)",
		o.high.ID, qosHigh, compress(o.high.NodeNames()), o.low.ID, qosLow, o.low.Restarts), ev
}
