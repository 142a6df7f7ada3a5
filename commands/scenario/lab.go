package scenario

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
)

// pollEvery is how often a scenario looks at the lab while it waits.
const pollEvery = 200 * time.Millisecond

// labState is what "the lab as found" means: the jobs not ended, each
// node's state and reason, the partitions, QoS, accounts and associations
// with their shares.
type labState struct {
	active []string          // "12 PENDING", of jobs not ended
	nodes  map[string]string // name -> state and reason
	parts  []string          // name:state
	acct   []string          // "qos high prio=100", "assoc physics/nobody shares=1", ...
}

// snapshot reads the lab's state.
func (r *Run) snapshot() (*labState, error) {
	ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
	defer cancel()
	jobs, err := r.cl.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := r.cl.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	mgr, err := r.cl.Acctmgr(ctx)
	if err != nil {
		return nil, err
	}
	s := &labState{nodes: map[string]string{}}
	for _, j := range jobs {
		if !j.State.Final() {
			s.active = append(s.active, fmt.Sprintf("%d %s", j.ID, j.State))
		}
	}
	for _, n := range nodes.Nodes {
		s.nodes[n.Name] = strings.TrimSpace(n.State + " " + n.Reason)
	}
	for _, p := range nodes.Partitions {
		s.parts = append(s.parts, p.Name+":"+p.State)
	}
	for _, q := range mgr.QOS {
		s.acct = append(s.acct, fmt.Sprintf("qos %s priority=%d preempt=%s mode=%s", q.Name, q.Priority, strings.Join(q.Preempt, ","), q.PreemptMode))
	}
	for _, a := range mgr.Accounts {
		s.acct = append(s.acct, "account "+a.Name)
	}
	for _, u := range mgr.Users {
		s.acct = append(s.acct, "user "+u.Name+" default="+u.DefaultAccount)
	}
	for _, a := range mgr.Assocs {
		s.acct = append(s.acct, fmt.Sprintf("assoc %s/%s shares=%d qos=%s", a.Account, a.User, a.Shares, strings.Join(a.QOS, ",")))
	}
	sort.Strings(s.acct)
	return s, nil
}

// busy says what makes the lab unfit for a scenario: jobs pending or
// running ("" when idle).
func (s *labState) busy() string {
	if len(s.active) == 0 {
		return ""
	}
	return fmt.Sprintf("%d job(s) not ended: %s", len(s.active), strings.Join(s.active[:min(len(s.active), 5)], ", "))
}

// diff lists how now differs from s.
func (s *labState) diff(now *labState) []string {
	var out []string
	if len(now.active) > 0 {
		out = append(out, "jobs not ended: "+strings.Join(now.active, ", "))
	}
	names := make([]string, 0, len(s.nodes))
	for n := range s.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if now.nodes[n] != s.nodes[n] {
			out = append(out, fmt.Sprintf("%s is %q, was %q", n, now.nodes[n], s.nodes[n]))
		}
	}
	if !slices.Equal(s.parts, now.parts) {
		out = append(out, fmt.Sprintf("partitions %v, were %v", now.parts, s.parts))
	}
	for _, a := range now.acct {
		if !slices.Contains(s.acct, a) {
			out = append(out, "sacctmgr has "+a)
		}
	}
	for _, a := range s.acct {
		if !slices.Contains(now.acct, a) {
			out = append(out, "sacctmgr lost "+a)
		}
	}
	return out
}

// cleanUp cancels what the scenario left running, undoes its changes and
// waits (a while) for the lab to be as before; it returns what differs.
func (r *Run) cleanUp(before *labState) []string {
	// A context of its own: the scenario's may have ended (Ctrl-C).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 90*time.Second)
	defer cancel()
	var problems []string
	var left []uint64
	for _, id := range r.jobs {
		// An array's id lists its tasks: it is left while any task is.
		js, err := r.cl.Job(ctx, id)
		if err == nil && slices.ContainsFunc(js, func(j api.Job) bool { return !j.State.Final() }) {
			left = append(left, id)
		}
	}
	if len(left) > 0 {
		r.say("Cleaning up: cancelling job(s) %s", joinIDs(left))
		r.typeCmd("scancel " + strings.ReplaceAll(joinIDs(left), ",", " "))
		if _, err := r.cl.Cancel(ctx, api.CancelRequest{JobIDs: left}); err != nil {
			problems = append(problems, "scancel: "+errText(err))
		}
	}
	for i := len(r.undo) - 1; i >= 0; i-- {
		u := r.undo[i]
		r.say("Cleaning up: %s", u.what)
		if err := u.fn(ctx); err != nil {
			problems = append(problems, u.what+": "+errText(err))
		}
	}
	var diff []string
	for {
		now, err := r.snapshot()
		if err != nil {
			diff = []string{"cannot read the lab: " + err.Error()}
		} else if diff = before.diff(now); len(diff) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return append(problems, diff...)
		case <-time.After(pollEvery):
		}
	}
	return problems
}

func joinIDs(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

// --- Submitting and watching jobs.

// sbatch submits a job as `sbatch args...` would, showing the command.
func (r *Run) sbatch(args ...string) uint64 {
	r.typeCmd("sbatch " + shellJoin(args))
	o, err := jobspec.Resolve(args, jobspec.Input{Cwd: r.o.Cwd, Env: r.o.Env, Hostname: r.o.hostname(), Now: time.Now()})
	r.check(err, "sbatch "+shellJoin(args))
	id, err := r.cl.Submit(r.ctx, o.Spec)
	r.check(err, "sbatch "+shellJoin(args))
	r.jobs = append(r.jobs, id)
	r.printf("         Submitted batch job %d\n", id)
	return id
}

// shellJoin writes args as a shell would take them back.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$;&|<>*?()\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// job reads a job's record.
func (r *Run) job(id uint64) api.Job {
	js, err := r.cl.Job(r.ctx, id)
	r.check(err, fmt.Sprintf("scontrol show job %d", id))
	if len(js) == 0 {
		r.check(fmt.Errorf("job %d is gone", id), "scontrol show job")
	}
	return js[0]
}

// jobsByID reads the jobs' records in one request.
func (r *Run) jobsByID(ids ...uint64) map[uint64]api.Job {
	jobs, err := r.cl.Jobs(r.ctx)
	r.check(err, "squeue")
	out := map[uint64]api.Job{}
	for _, j := range jobs {
		if slices.Contains(ids, j.ID) {
			out[j.ID] = j
		}
	}
	return out
}

// waitUntil polls cond until it holds, failing the scenario after
// timeout with what it waited for.
func (r *Run) waitUntil(what string, timeout time.Duration, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if r.o.Waiting != nil && r.waiting == nil { // shown once it is a wait
			r.waiting = r.o.Waiting(what)
			defer func() { r.waiting.Done(); r.waiting = nil }()
		}
		if time.Now().After(deadline) {
			panic(abort{Verdict{Result: Fail, Summary: "timed out after " + timeout.String() + " waiting for " + what}})
		}
		select {
		case <-r.ctx.Done():
			panic(abort{Verdict{Result: Fail, Summary: "interrupted while waiting for " + what}})
		case <-time.After(pollEvery):
		}
	}
}

// waitState waits until the job is in one of the states.
func (r *Run) waitState(id uint64, timeout time.Duration, states ...api.JobState) api.Job {
	var j api.Job
	r.waitUntil(fmt.Sprintf("job %d to be %v", id, states), timeout, func() bool {
		j = r.job(id)
		return slices.Contains(states, j.State)
	})
	return j
}

// waitEnded waits until every job has ended and returns their records.
func (r *Run) waitEnded(timeout time.Duration, ids ...uint64) map[uint64]api.Job {
	var m map[uint64]api.Job
	r.waitUntil("jobs "+joinIDs(ids)+" to end", timeout, func() bool {
		m = r.jobsByID(ids...)
		for _, id := range ids {
			if j, ok := m[id]; !ok || !j.State.Final() {
				return false
			}
		}
		return true
	})
	return m
}

// idleNodes are the default partition's nodes that are IDLE and
// responding, in the configuration's order; a scenario uses these.
func (r *Run) idleNodes() []string {
	resp, err := r.cl.Nodes(r.ctx)
	r.check(err, "sinfo")
	var part []string
	for _, p := range resp.Partitions {
		if p.Default {
			part = p.Nodes
		}
	}
	var out []string
	for _, n := range resp.Nodes {
		if n.State == api.NodeIdle && (part == nil || slices.Contains(part, n.Name)) {
			out = append(out, n.Name)
		}
	}
	return out
}

// needNodes skips the scenario when fewer than n nodes are idle.
func (r *Run) needNodes(n int) []string {
	nodes := r.idleNodes()
	if len(nodes) < n {
		r.skip("needs %d idle nodes in the default partition, the lab has %d (hpc up --nodes %d)", n, len(nodes), n)
	}
	return nodes
}

// compress is a hostlist of names ("node[1-3]").
func compress(names []string) string { return hostlist.Compress(names) }

// at prints a time as the narration does: the seconds since the run began.
func (r *Run) at(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%+.1fs", t.Sub(r.t0).Seconds())
}

// span is how long from a to b, for the evidence.
func span(a, b time.Time) string {
	return fmt.Sprintf("%.1f s", b.Sub(a).Seconds())
}

// joinSemi joins a verdict's failures into one line.
func joinSemi(s []string) string { return strings.Join(s, "; ") }
