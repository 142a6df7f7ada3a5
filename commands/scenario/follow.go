package scenario

import (
	"fmt"
	"slices"
	"time"

	"hpc/cluster/api"
)

// follower narrates the changes of a few jobs' states as a scenario polls
// them: "job 12 (bf-short) RUNNING on node2".
type follower struct {
	r    *Run
	seen map[uint64]string
}

func (r *Run) follow() *follower { return &follower{r: r, seen: map[uint64]string{}} }

// look reads the jobs, narrates what changed and returns them.
func (f *follower) look(ids ...uint64) map[uint64]api.Job {
	m := f.r.jobsByID(ids...)
	for _, id := range ids {
		j, ok := m[id]
		if !ok {
			continue
		}
		now := string(j.State)
		if j.State == api.StatePending && j.Reason != "" {
			now += " (" + j.Reason + ")"
		}
		if f.seen[id] == now {
			continue
		}
		f.seen[id] = now
		switch {
		case j.State == api.StateRunning:
			f.r.say("job %d (%s) RUNNING on %s", id, j.Spec.Name, compress(j.NodeNames()))
		case j.State == api.StatePending && !j.ExpectedStart.IsZero():
			f.r.say("job %d (%s) %s, expected start %s", id, j.Spec.Name, now, f.r.at(j.ExpectedStart))
		default:
			f.r.say("job %d (%s) %s", id, j.Spec.Name, now)
		}
	}
	return m
}

// until polls the jobs until done says the scenario has seen enough.
func (f *follower) until(what string, timeout time.Duration, ids []uint64, done func(m map[uint64]api.Job) bool) map[uint64]api.Job {
	var m map[uint64]api.Job
	f.r.waitUntil(what, timeout, func() bool {
		m = f.look(ids...)
		return done(m)
	})
	return m
}

// allEnded says whether every job of ids has ended in m.
func allEnded(m map[uint64]api.Job, ids ...uint64) bool {
	for _, id := range ids {
		if j, ok := m[id]; !ok || !j.State.Final() {
			return false
		}
	}
	return true
}

// notCompleted lists the jobs that did not end COMPLETED, for a verdict.
func notCompleted(jobs ...api.Job) []string {
	var out []string
	for _, j := range jobs {
		if j.State != api.StateCompleted {
			out = append(out, fmt.Sprintf("job %d (%s) ended %s", j.ID, j.Spec.Name, j.State))
		}
	}
	return out
}

// sameNodes reports whether the job holds exactly the nodes.
func sameNodes(j api.Job, nodes []string) bool {
	got := slices.Clone(j.NodeNames())
	want := slices.Clone(nodes)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}
