package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
)

var kubeBinding = &Scenario{
	Name:  "kube-binding",
	Title: "binding one node at a time deadlocks two multi-node jobs; co-allocation finishes both",
	Needs: "3 idle nodes (4 shows the classic two 3-node jobs)",
	run:   runKube,
}

// simJob is a multi-node job for the binding simulation: Size tasks (pods),
// one per node.
type simJob struct {
	Name string
	Size int
}

// simResult is what the simulated binder did.
type simResult struct {
	Steps []string            // "bind A/0 -> node1", in order
	Bound map[string][]string // job -> the nodes its pods hold
	Ran   []string            // jobs that got all their nodes
	// Deadlocked is set when jobs are left that hold nodes and can never
	// get the rest; Held counts the nodes they hold.
	Deadlocked bool
	Held       int
}

// simulateBinding binds the jobs' pods one at a time, as Kubernetes'
// default scheduler binds pods: taking the jobs' pods in turn (A/0, B/0,
// A/1, B/1, ...), each to the next free node, with no view of the job as
// a whole. A job runs once all its pods are bound, and gives its nodes
// back when it ends. It is a teaching model computed here, not the lab's
// scheduler.
func simulateBinding(nodes []string, jobs []simJob) simResult {
	res := simResult{Bound: map[string][]string{}}
	free := append([]string(nil), nodes...)
	next := make([]int, len(jobs)) // next pod to bind, per job
	done := make([]bool, len(jobs))
	for progress := true; progress; {
		progress = false
		for {
			bound := false // a round: each job binds its next pod
			for i, j := range jobs {
				if done[i] || next[i] >= j.Size || len(free) == 0 {
					continue
				}
				res.Steps = append(res.Steps, fmt.Sprintf("bind %s/%d -> %s", j.Name, next[i], free[0]))
				res.Bound[j.Name] = append(res.Bound[j.Name], free[0])
				free, next[i], bound = free[1:], next[i]+1, true
			}
			if !bound {
				break
			}
			progress = true
		}
		for i, j := range jobs {
			if !done[i] && next[i] == j.Size {
				done[i], progress = true, true
				res.Ran = append(res.Ran, j.Name)
				res.Steps = append(res.Steps, fmt.Sprintf("%s has all %d nodes: runs, ends, frees %s", j.Name, j.Size, strings.Join(res.Bound[j.Name], ",")))
				free = append(free, res.Bound[j.Name]...)
			}
		}
	}
	for i, j := range jobs {
		if !done[i] && next[i] > 0 {
			res.Deadlocked = true
			res.Held += len(res.Bound[j.Name])
		}
	}
	return res
}

// kubeObs is what the kube-binding scenario saw and computed.
type kubeObs struct {
	sim   simResult
	nodes int // the nodes the workload could use
	size  int // each job's node count
	real  []api.Job
	// heldWhilePending counts looks in which a pending job held nodes.
	heldWhilePending int
	t0               time.Time
}

func runKube(r *Run) Verdict {
	nodes := r.needNodes(3)
	n := len(nodes)
	k := min(n, (n+1)/2+1)
	d := r.dur(8 * time.Second)
	sim := simulateBinding(nodes, []simJob{{"A", k}, {"B", k}})
	r.say("SIMULATED (computed by this scenario, nothing submitted): two %d-node jobs", k)
	r.say("on these %d nodes, their tasks bound one node at a time, in turn, as", n)
	r.say("Kubernetes' default scheduler binds pods:")
	for _, s := range sim.Steps {
		r.say("   %s", s)
	}
	for _, j := range []string{"A", "B"} {
		r.say("   %s holds %s and waits for %d more", j, strings.Join(sim.Bound[j], ","), k-len(sim.Bound[j]))
	}
	if sim.Deadlocked {
		r.say("   Deadlock: each holds nodes the other needs; %d nodes idle for ever.", sim.Held)
	}
	r.say("REAL (on this lab): the same two jobs under Slurm, which allocates a job's")
	r.say("nodes all at once or not at all; the second waits holding nothing.")
	a := r.sbatch("-J", "kube-A", "-N", strconv.Itoa(k), "--exclusive", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(d))
	b := r.sbatch("-J", "kube-B", "-N", strconv.Itoa(k), "--exclusive", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(d))
	r.typeCmd("squeue")
	r.watch("the node grid: the first job's nodes busy, the rest IDLE while the second waits")
	o := kubeObs{sim: sim, nodes: n, size: k, t0: r.t0}
	f := r.follow()
	m := f.until("both jobs to end", 2*d+90*time.Second, []uint64{a, b}, func(m map[uint64]api.Job) bool {
		for _, j := range m {
			if j.State == api.StatePending && len(j.Alloc) > 0 {
				o.heldWhilePending++
			}
		}
		return allEnded(m, a, b)
	})
	o.real = []api.Job{m[a], m[b]}
	res, summary, evidence := judgeKube(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// idleNodeSeconds is the node-seconds of nodes free of the jobs in
// [from, to] on a cluster of n nodes.
func idleNodeSeconds(n int, jobs []api.Job, from, to time.Time) float64 {
	total := float64(n) * to.Sub(from).Seconds()
	for _, j := range jobs {
		s, e := maxTime(j.StartTime, from), minTime(j.EndTime, to)
		if e.After(s) {
			total -= float64(len(j.Alloc)) * e.Sub(s).Seconds()
		}
	}
	return total
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// judgeKube checks that the simulated binder deadlocked, that the real
// run under co-allocation finished both jobs without a pending job
// holding nodes, and counts the idle node-seconds of each over the window
// the real run took (the simulation's go on for ever).
func judgeKube(o kubeObs) (Result, string, []string) {
	from, to := o.real[0].SubmitTime, o.real[0].EndTime
	for _, j := range o.real {
		from, to = minTime(from, j.SubmitTime), maxTime(to, j.EndTime)
	}
	window := to.Sub(from).Seconds()
	realIdle := idleNodeSeconds(o.nodes, o.real, from, to)
	simIdle := float64(o.nodes) * window // no job of the simulation ever runs
	ev := []string{
		fmt.Sprintf("simulated binder: %s; ran: %v; %d of %d nodes held by pods that never run",
			strings.Join(o.sim.Steps, ", "), o.sim.Ran, o.sim.Held, o.nodes),
	}
	for _, j := range o.real {
		ev = append(ev, fmt.Sprintf("real job %d (%s): pending %s, ran on %s for %s, %s",
			j.ID, j.Spec.Name, span(j.SubmitTime, j.StartTime), compress(j.NodeNames()), span(j.StartTime, j.EndTime), j.State))
	}
	ev = append(ev,
		fmt.Sprintf("idle node-seconds over the real run's %.1f s: simulated binder %.1f (and growing for ever), Slurm co-allocation %.1f", window, simIdle, realIdle),
		fmt.Sprintf("looks in which a pending real job held nodes: %d", o.heldWhilePending))
	var fail []string
	if !o.sim.Deadlocked {
		fail = append(fail, "the simulated binder did not deadlock (too few nodes for the demonstration?)")
	}
	fail = append(fail, notCompleted(o.real...)...)
	if o.heldWhilePending > 0 {
		fail = append(fail, "a pending job held nodes under Slurm")
	}
	for _, j := range o.real {
		if len(j.Alloc) != o.size {
			fail = append(fail, fmt.Sprintf("job %d ran on %d nodes, not %d", j.ID, len(j.Alloc), o.size))
		}
	}
	if realIdle >= simIdle {
		fail = append(fail, "co-allocation left no fewer idle node-seconds than the deadlock")
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("one-node-at-a-time binding deadlocks (%d nodes held idle for ever: %.0f node-seconds in %.1f s and counting); Slurm finished both jobs with %.1f idle node-seconds",
		o.sim.Held, simIdle, window, realIdle), ev
}
