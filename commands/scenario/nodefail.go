package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"hpc/cluster/api"
)

var nodeFailure = &Scenario{
	Name:  "node-failure",
	Title: "a node dies under a --requeue job: DOWN after SlurmdTimeout, the job runs again elsewhere",
	Needs: "3 idle nodes, the lab's directory (its daemons' pid files: run where `hpc up` ran, as its user)",
	run:   runNodeFailure,
}

// nodeFailObs is what the node-failure scenario saw.
type nodeFailObs struct {
	firstNode  string    // where the job ran first, and whose daemon was killed
	killed     time.Time // when the daemon was killed
	down       time.Time // when the node was first seen DOWN (zero: never)
	downReason string
	requeued   time.Time // when the job was first seen PENDING again (zero: never)
	final      api.Job   // the job's record as it ended
	timeout    int       // SlurmdTimeout
	t0         time.Time
}

func runNodeFailure(r *Run) Verdict {
	nodes := r.needNodes(3)
	lead := r.leader()
	if lead == "" {
		r.skip("the lab has no leader to ask")
	}
	lab := r.needLab(lead)
	// The scenario talks to the leader's node, and keeps its job off it,
	// so that the node it kills is neither its own nor the leader.
	r.useNode(lab, lead)
	r.say("1. A batch job with --requeue starts on a node other than the leader (%s).", lead)
	id := r.sbatch("-J", "nf-requeue", "--requeue", "-x", lead, "-n1", "-t", "5", "-o", "/dev/null", "--wrap", sleepCmd(r.dur(60*time.Second)))
	j := r.waitState(id, 30*time.Second, api.StateRunning)
	o := nodeFailObs{firstNode: j.NodeNames()[0], timeout: r.cfg.SlurmdTimeout, t0: r.t0}
	if !slices.Contains(nodes, o.firstNode) {
		r.skip("the job started on %s, not an idle node of the default partition", o.firstNode)
	}
	if why := lab.Unreachable(o.firstNode); why != "" {
		r.skip("cannot stop and start %s's daemon: %s", o.firstNode, why)
	}
	r.say("   job %d RUNNING on %s", id, o.firstNode)
	r.say("2. %s's daemon dies (SIGKILL, as a crash). The controller stops hearing it:", o.firstNode)
	r.say("   not responding at once (sinfo's *), DOWN after SlurmdTimeout=%d s; then", o.timeout)
	r.say("   its batch job, which allows a requeue, goes back to the queue.")
	o.killed = r.killNode(lab, o.firstNode)
	r.typeCmd("sinfo -N -o '%N %T %E'")
	r.typeCmd(fmt.Sprintf("scontrol show job %d | grep -E 'JobState|Restarts|NodeList'", id))
	r.watch(o.firstNode + " turns DOWN, the job leaves it")
	f := r.follow()
	budget := time.Duration(max(o.timeout, 1))*time.Second*3 + r.dur(60*time.Second) + 90*time.Second
	m := f.until("the job to end", budget, []uint64{id}, func(m map[uint64]api.Job) bool {
		if o.down.IsZero() {
			if st := r.nodeState(o.firstNode); strings.HasPrefix(st, api.NodeDown) {
				o.down = time.Now()
				o.downReason = r.nodeReason(o.firstNode)
				r.say("%s is DOWN (%s), %.1f s after its daemon died", o.firstNode, o.downReason, o.down.Sub(o.killed).Seconds())
			}
		}
		if j, ok := m[id]; ok && j.State == api.StatePending && o.requeued.IsZero() {
			o.requeued = time.Now()
		}
		return allEnded(m, id)
	})
	o.final = m[id]
	r.say("3. The lab gets %s back once the scenario ends (hpc up restarts what stopped).", o.firstNode)
	res, summary, evidence := judgeNodeFailure(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// nodeReason is a node's reason as sinfo -R shows it.
func (r *Run) nodeReason(name string) string {
	resp, err := r.cl.Nodes(r.ctx)
	r.check(err, "sinfo -R")
	for _, n := range resp.Nodes {
		if n.Name == name {
			return n.Reason
		}
	}
	return ""
}

// judgeNodeFailure checks the job's story: it ran first on the node that
// died, the node went DOWN (not sooner than SlurmdTimeout after it died),
// the job was requeued once (Restarts=1) and COMPLETED on another node.
func judgeNodeFailure(o nodeFailObs) (Result, string, []string) {
	rel := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return fmt.Sprintf("%+.1fs", t.Sub(o.t0).Seconds())
	}
	// A requeued job may start again between two looks: Restarts is
	// the record of its requeue.
	seen := func(t time.Time) string {
		if t.IsZero() {
			return "no look (it started again between two)"
		}
		return rel(t)
	}
	ev := []string{
		fmt.Sprintf("job %d first RUNNING on %s; its daemon killed at %s", o.final.ID, o.firstNode, rel(o.killed)),
		fmt.Sprintf("%s DOWN (%s) at %s, SlurmdTimeout=%d s", o.firstNode, o.downReason, rel(o.down), o.timeout),
		fmt.Sprintf("job %d seen PENDING again at %s; ended %s on %s at %s, Restarts=%d", o.final.ID, seen(o.requeued), o.final.State, compress(o.final.NodeNames()), rel(o.final.EndTime), o.final.Restarts),
	}
	var fail []string
	if o.down.IsZero() {
		fail = append(fail, o.firstNode+" was never seen DOWN")
	} else if o.down.Sub(o.killed) < time.Duration(o.timeout)*time.Second-time.Second {
		fail = append(fail, fmt.Sprintf("%s went DOWN %.1f s after it died, before SlurmdTimeout=%d s", o.firstNode, o.down.Sub(o.killed).Seconds(), o.timeout))
	}
	if o.final.Restarts != 1 {
		fail = append(fail, fmt.Sprintf("Restarts=%d, not 1", o.final.Restarts))
	}
	fail = append(fail, notCompleted(o.final)...)
	if len(o.final.Alloc) == 0 || slices.Contains(o.final.NodeNames(), o.firstNode) {
		fail = append(fail, fmt.Sprintf("the job's last run was on %s, not on another node than %s", compress(o.final.NodeNames()), o.firstNode))
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("job %d lost %s (DOWN after %.1f s), was requeued (Restarts=1) and COMPLETED on %s",
		o.final.ID, o.firstNode, o.down.Sub(o.killed).Seconds(), compress(o.final.NodeNames())), ev
}
