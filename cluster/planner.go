package cluster

import (
	"reflect"
	"slices"

	"hpc/sched"
)

// leaderPlanner keeps the leader's sched.Planner from one scheduling pass
// to the next, so that a pass after a small change (a job submitted, ended
// or cancelled, time moving on) redoes only what that change can affect.
//
// Every pass still builds the whole snapshot from the replicated state
// (Daemon.snapshot) and hands it to plan, which works out what changed
// since the last one in the planner's terms: running jobs that started,
// ended or changed, pending jobs that were submitted, changed (held,
// released, updated, a dependency met) or left, past usage and the time. A
// change it cannot put that way (nodes and their states, partitions,
// topology, QoS and associations, the configuration) rebuilds the planner,
// and so does reset, which the leader calls when it may have missed
// changes (it has just become leader). Either way plan returns what
// sched.Schedule returns for the same snapshot: the planner's passes equal
// fresh ones (sched tests that), and Schedule does not depend on the order
// of the snapshot's lists.
//
// A leaderPlanner is used by the leader's loop alone.
type leaderPlanner struct {
	pl *sched.Planner
	// fixed is the last snapshot's parts that rebuild the planner when
	// they change.
	fixed sched.Snapshot
	// running and pending are the jobs the planner holds, by id, with the
	// pass that last saw them.
	running map[uint64]seen[sched.RunningJob]
	pending map[uint64]seen[sched.Job]
	pass    uint64

	// builds and passes count what plan did, for tests.
	builds, passes int
}

// seen is a job the planner holds and the pass that last saw it.
type seen[T any] struct {
	job  T
	pass uint64
}

// track records this pass's jobs in m: it returns those that are new or
// changed (same says whether a job is unchanged) and the ids of those no
// longer there, which it drops.
func track[T any](m map[uint64]seen[T], jobs []T, id func(*T) uint64, same func(a, b *T) bool, pass uint64) (changed []T, gone []uint64) {
	for i := range jobs {
		j := &jobs[i]
		old, ok := m[id(j)]
		if !ok || !same(&old.job, j) {
			changed = append(changed, *j)
			old.job = *j
		}
		old.pass = pass
		m[id(j)] = old
	}
	for k, v := range m {
		if v.pass != pass {
			gone = append(gone, k)
			delete(m, k)
		}
	}
	// Map order must not reach the planner.
	slices.Sort(gone)
	return changed, gone
}

func runningID(j *sched.RunningJob) uint64 { return j.ID }
func pendingID(j *sched.Job) uint64        { return j.ID }

// reset makes the next pass rebuild the planner.
func (lp *leaderPlanner) reset() {
	lp.pl = nil
}

// plan runs a scheduling pass over snap. The result's lists belong to the
// planner until the next call.
func (lp *leaderPlanner) plan(snap sched.Snapshot) sched.Result {
	lp.passes++
	lp.pass++
	if lp.pl == nil || !sameFixed(&lp.fixed, &snap) {
		lp.rebuild(snap)
		return lp.pl.Plan()
	}
	d := sched.Delta{Now: snap.Now}
	d.Started, d.Ended = track(lp.running, snap.Running, runningID, sameRunning, lp.pass)
	d.Submitted, d.Removed = track(lp.pending, snap.Pending, pendingID, sameJob, lp.pass)
	lp.pl.Apply(d)
	lp.pl.SetUsage(snap.Usage)
	return lp.pl.Plan()
}

// rebuild starts a planner afresh from snap.
func (lp *leaderPlanner) rebuild(snap sched.Snapshot) {
	lp.builds++
	lp.pl = sched.NewPlanner(snap)
	lp.fixed = snap
	lp.fixed.Running, lp.fixed.Pending, lp.fixed.Usage = nil, nil, nil
	lp.running = make(map[uint64]seen[sched.RunningJob], len(snap.Running))
	lp.pending = make(map[uint64]seen[sched.Job], len(snap.Pending))
	track(lp.running, snap.Running, runningID, sameRunning, lp.pass)
	track(lp.pending, snap.Pending, pendingID, sameJob, lp.pass)
}

// sameFixed reports whether b has the same nodes, partitions, topology,
// QoS, associations and configuration as a.
func sameFixed(a, b *sched.Snapshot) bool {
	if a.Config != b.Config || len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i := range a.Nodes {
		if !sameNode(&a.Nodes[i], &b.Nodes[i]) {
			return false
		}
	}
	return reflect.DeepEqual(a.Partitions, b.Partitions) && reflect.DeepEqual(a.Topology, b.Topology) &&
		reflect.DeepEqual(a.QOS, b.QOS) && reflect.DeepEqual(a.Assocs, b.Assocs)
}

func sameNode(a, b *sched.Node) bool {
	return a.Name == b.Name && a.CPUs == b.CPUs && a.MemMB == b.MemMB && a.State == b.State && a.Weight == b.Weight &&
		slices.Equal(a.Features, b.Features) &&
		slices.EqualFunc(a.Gres, b.Gres, func(x, y sched.Gres) bool {
			return x.Name == y.Name && x.Type == y.Type && x.Count == y.Count && slices.Equal(x.Indices, y.Indices)
		})
}

// sameJob reports whether two pending jobs ask the same. Every field of
// sched.Job is compared (a test checks that none is missed).
func sameJob(a, b *sched.Job) bool {
	return a.ID == b.ID && a.User == b.User && a.Account == b.Account && a.QOS == b.QOS &&
		slices.Equal(a.Partitions, b.Partitions) &&
		a.SubmitTime.Equal(b.SubmitTime) && a.EligibleTime.Equal(b.EligibleTime) && a.BeginTime.Equal(b.BeginTime) &&
		a.Hold == b.Hold && a.Dependency == b.Dependency && a.Nice == b.Nice && a.Priority == b.Priority &&
		a.TimeLimit == b.TimeLimit && a.Nodes == b.Nodes && a.NTasks == b.NTasks && a.NTasksPerNode == b.NTasksPerNode &&
		a.CPUsPerTask == b.CPUsPerTask && a.MemPerNodeMB == b.MemPerNodeMB && a.MemPerCPUMB == b.MemPerCPUMB &&
		a.Exclusive == b.Exclusive && slices.Equal(a.NodeList, b.NodeList) && slices.Equal(a.Exclude, b.Exclude) &&
		a.Constraint == b.Constraint && slices.Equal(a.Gres, b.Gres) &&
		a.GPUs == b.GPUs && a.GPUsPerNode == b.GPUsPerNode && a.GPUsPerTask == b.GPUsPerTask && a.GPUType == b.GPUType &&
		a.Switches == b.Switches && a.SwitchWait == b.SwitchWait
}

// sameRunning reports whether two running jobs hold the same. Every field
// of sched.RunningJob is compared (a test checks that none is missed).
func sameRunning(a, b *sched.RunningJob) bool {
	return a.ID == b.ID && a.User == b.User && a.Account == b.Account && a.QOS == b.QOS && a.Partition == b.Partition &&
		a.StartTime.Equal(b.StartTime) && a.EndTime.Equal(b.EndTime) &&
		slices.EqualFunc(a.Alloc, b.Alloc, func(x, y sched.Alloc) bool {
			return x.Node == y.Node && x.CPUs == y.CPUs && x.Tasks == y.Tasks && x.MemMB == y.MemMB &&
				slices.EqualFunc(x.Gres, y.Gres, func(g, h sched.GresAlloc) bool {
					return g.Name == h.Name && g.Type == h.Type && slices.Equal(g.Indices, h.Indices)
				})
		})
}
