package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"hpc/cluster/api"
)

var failover = &Scenario{
	Name:  "failover",
	Title: "the leader dies mid-workload: another controller takes over, no job is lost",
	Needs: "3 controllers (SlurmctldHost), 3 idle nodes, the lab's directory (its daemons' pid files: run where `hpc up` ran, as its user)",
	run:   runFailover,
}

// failoverObs is what the failover scenario saw.
type failoverObs struct {
	oldLeader, newLeader string
	killed, elected      time.Time // the leader's death; the first answer naming another
	running, pending     []uint64  // the jobs' states as the leader died
	final                map[uint64]api.Job
	completedRows        map[uint64]int // sacct's COMPLETED job rows per id
	ids                  []uint64
	t0                   time.Time
}

func runFailover(r *Run) Verdict {
	nodes := r.needNodes(3)
	if len(r.cfg.ControlHosts) < 3 {
		r.skip("needs 3 controllers to lose one (SlurmctldHost lines: this lab has %d)", len(r.cfg.ControlHosts))
	}
	lead := r.leader()
	if lead == "" {
		r.skip("the lab has no leader to ask")
	}
	lab := r.needLab(lead)
	var other string
	for _, c := range r.cfg.ControlHosts {
		if c.Name != lead && lab.Unreachable(c.Name) == "" {
			other = c.Name
			break
		}
	}
	if other == "" {
		r.skip("no other controller's socket to watch the lab from")
	}
	r.useNode(lab, other)
	cpus := 0
	resp, err := r.cl.Nodes(r.ctx)
	r.check(err, "sinfo")
	for _, n := range resp.Nodes {
		if n.Name != lead && slices.Contains(nodes, n.Name) {
			cpus += n.CPUs
		}
	}
	r.say("The leader is %s; the scenario watches from %s. A workload of 1-CPU jobs", lead, other)
	r.say("fills the other nodes' %d CPUs and more (-x %s keeps the jobs off the leader,", cpus, lead)
	r.say("so this is about the controller: node-failure is about losing a node's jobs).")
	r.typeCmd("scontrol ping")
	d := r.dur(20 * time.Second)
	n := cpus + cpus/2 + 1
	o := failoverObs{oldLeader: lead, t0: r.t0}
	out := r.o.Out
	for i := 0; i < n; i++ {
		if i == 1 {
			r.say("... %d jobs in all.", n)
			r.o.Out = nil
		}
		o.ids = append(o.ids, r.sbatch("-J", "fo-"+strconv.Itoa(i), "-x", lead, "-n1", "-t", "5", "-o", "/dev/null", "--wrap", sleepCmd(d)))
	}
	r.o.Out = out
	var m map[uint64]api.Job
	r.waitUntil("some jobs to run and some to pend", 30*time.Second, func() bool {
		m = r.jobsByID(o.ids...)
		o.running, o.pending = byState(m, o.ids)
		return len(o.running) > 0 && len(o.pending) > 0
	})
	r.say("%d jobs RUNNING, %d PENDING. Now %s's daemon dies (SIGKILL).", len(o.running), len(o.pending), lead)
	o.killed = r.killNode(lab, lead)
	r.typeCmd("scontrol ping")
	r.watch("the controllers' panel: a new leader after the election timeout")
	r.waitUntil("a new leader", 60*time.Second, func() bool {
		if l := r.leader(); l != "" && l != lead {
			o.newLeader, o.elected = l, time.Now()
			return true
		}
		return false
	})
	r.say("%s leads now (%.1f s after %s died). The jobs go on:", o.newLeader, o.elected.Sub(o.killed).Seconds(), lead)
	r.typeCmd("squeue")
	r.waitUntil("every job to end", time.Duration(n)*d+2*time.Minute, func() bool {
		if got := r.patientJobs(o.ids...); got != nil {
			m = got
		}
		return allEnded(m, o.ids...)
	})
	o.final = m
	o.completedRows = map[uint64]int{}
	r.typeCmd("sacct -X -j " + joinIDs(o.ids) + " -o JobID,State,Start,End,NodeList")
	r.waitUntil("the accounting rows", 30*time.Second, func() bool {
		rows, err := r.cl.Acct(r.ctx, api.AcctQuery{JobIDs: o.ids, AllUsers: true, JobsOnly: true})
		if err != nil {
			return false
		}
		clear(o.completedRows)
		ended := 0
		for _, row := range rows {
			if row.Step == "" && !row.End.IsZero() {
				ended++
				if row.State == string(api.StateCompleted) {
					o.completedRows[row.JobID]++
				}
			}
		}
		return ended >= len(o.ids)
	})
	res, summary, evidence := judgeFailover(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// byState splits the jobs into those RUNNING and those PENDING.
func byState(m map[uint64]api.Job, ids []uint64) (running, pending []uint64) {
	for _, id := range ids {
		switch m[id].State {
		case api.StateRunning:
			running = append(running, id)
		case api.StatePending:
			pending = append(pending, id)
		}
	}
	return running, pending
}

// judgeFailover checks that another controller took over, that every
// submitted job reached COMPLETED exactly once (one COMPLETED row in
// sacct, never requeued), that the jobs running when the leader died
// finished, and that those pending then started under the new leader.
func judgeFailover(o failoverObs) (Result, string, []string) {
	rel := func(t time.Time) string { return fmt.Sprintf("%+.1fs", t.Sub(o.t0).Seconds()) }
	ev := []string{
		fmt.Sprintf("leader %s killed at %s with %d jobs RUNNING (%s) and %d PENDING (%s)",
			o.oldLeader, rel(o.killed), len(o.running), joinIDs(o.running), len(o.pending), joinIDs(o.pending)),
	}
	var fail []string
	if o.newLeader == "" || o.newLeader == o.oldLeader {
		fail = append(fail, "no other controller took over")
	} else {
		ev = append(ev, fmt.Sprintf("%s leader at %s, %.1f s later", o.newLeader, rel(o.elected), o.elected.Sub(o.killed).Seconds()))
	}
	completed, late := 0, 0
	for _, id := range o.ids {
		j, ok := o.final[id]
		switch {
		case !ok:
			fail = append(fail, fmt.Sprintf("job %d is lost", id))
			continue
		case j.State != api.StateCompleted:
			fail = append(fail, fmt.Sprintf("job %d ended %s", id, j.State))
		case o.completedRows[id] != 1 || j.Restarts != 0:
			fail = append(fail, fmt.Sprintf("job %d: %d COMPLETED rows in sacct, Restarts=%d (not exactly once)", id, o.completedRows[id], j.Restarts))
		default:
			completed++
		}
		if slices.Contains(o.pending, id) {
			if !o.elected.IsZero() && j.StartTime.Before(o.elected.Add(-time.Second)) && j.StartTime.After(o.killed) {
				fail = append(fail, fmt.Sprintf("job %d, pending when %s died, started at %s, before %s led", id, o.oldLeader, rel(j.StartTime), o.newLeader))
			}
			if j.StartTime.After(o.killed) {
				late++
			}
		}
	}
	ev = append(ev, fmt.Sprintf("%d of %d jobs COMPLETED exactly once; %d of the %d pending ones started after the leader died", completed, len(o.ids), late, len(o.pending)))
	if len(o.pending) > 0 && late == 0 {
		fail = append(fail, "no pending job started after the leader died")
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("%s took over from %s in %.1f s; all %d jobs COMPLETED exactly once (%d were running, %d started under %s)",
		o.newLeader, o.oldLeader, o.elected.Sub(o.killed).Seconds(), len(o.ids), len(o.running), late, o.newLeader), ev
}
