package fsm

import (
	"iter"

	"hpc/cluster/api"
	"hpc/sched"
)

// jobIndex names the jobs the leader's loop reads on every pass, so that
// a pass over 100,000 held jobs reads none of them: the jobs not PENDING
// (running, completing, and ended but not purged yet), the PENDING ones
// without a hold, and the array tasks not ended; and it counts the jobs
// submit limits count, which every controller reads for each submit. The
// FSM keeps it up to date after each entry, from the jobs the entry wrote
// (jobForWrite, submits, purges), and after each job a submit adds; a
// State that has none (a snapshot's copy) is read by scanning every job.
type jobIndex struct {
	active map[uint64]struct{} // not PENDING
	ready  map[uint64]struct{} // PENDING, no hold
	tasks  map[uint64]struct{} // array tasks not ended (ArrayThrottled)
	// usage counts the jobs submit limits count (submitCounted) by QoS,
	// account and user: a submit reads the counts, not every job
	// (limits.go). counted is the count each such job is in (a key of
	// each job would be 81 bytes a job); a count that falls to 0 goes.
	usage   map[sched.UsageKey]*usageCount
	counted map[uint64]*usageCount
}

type usageCount struct {
	key sched.UsageKey
	n   int
}

// buildIndex makes the index from every job (a new state, a restore).
func (st *State) buildIndex() {
	st.idx = &jobIndex{active: map[uint64]struct{}{}, ready: map[uint64]struct{}{}, tasks: map[uint64]struct{}{},
		usage: map[sched.UsageKey]*usageCount{}, counted: map[uint64]*usageCount{}}
	for id := range st.Jobs {
		st.reindex(id)
	}
}

// reindex files job id as it is now (gone: nowhere).
func (st *State) reindex(id uint64) {
	if st.idx == nil {
		return
	}
	delete(st.idx.active, id)
	delete(st.idx.ready, id)
	delete(st.idx.tasks, id)
	if c := st.idx.counted[id]; c != nil {
		if c.n--; c.n == 0 {
			delete(st.idx.usage, c.key)
		}
		delete(st.idx.counted, id)
	}
	j := st.Jobs[id]
	if j != nil && submitCounted(j) {
		k := usageKey(j)
		c := st.idx.usage[k]
		if c == nil {
			c = &usageCount{key: k}
			st.idx.usage[k] = c
		}
		c.n++
		st.idx.counted[id] = c
	}
	if j != nil && j.ArrayJobID != 0 && !j.State.Final() {
		st.idx.tasks[id] = struct{}{}
	}
	switch {
	case j == nil:
	case j.State != api.StatePending:
		st.idx.active[id] = struct{}{}
	case j.Hold == "":
		st.idx.ready[id] = struct{}{}
	}
}

// NotPending is every job not PENDING: running, completing, suspended,
// and ended but not yet purged.
func (st *State) NotPending() iter.Seq[*api.Job] {
	return st.indexed(func(ix *jobIndex) map[uint64]struct{} { return ix.active },
		func(j *api.Job) bool { return j.State != api.StatePending })
}

// Unheld is every PENDING job without a hold: those a scheduling pass
// considers.
func (st *State) Unheld() iter.Seq[*api.Job] {
	return st.indexed(func(ix *jobIndex) map[uint64]struct{} { return ix.ready },
		func(j *api.Job) bool { return j.State == api.StatePending && j.Hold == "" })
}

// ArrayTasks is every task of a job array that has not ended.
func (st *State) ArrayTasks() iter.Seq[*api.Job] {
	return st.indexed(func(ix *jobIndex) map[uint64]struct{} { return ix.tasks },
		func(j *api.Job) bool { return j.ArrayJobID != 0 && !j.State.Final() })
}

// indexed yields the jobs of one of the index's sets, or, without an
// index, every job that is.
func (st *State) indexed(set func(*jobIndex) map[uint64]struct{}, is func(*api.Job) bool) iter.Seq[*api.Job] {
	return func(yield func(*api.Job) bool) {
		if st.idx == nil {
			for _, j := range st.Jobs {
				if is(j) && !yield(j) {
					return
				}
			}
			return
		}
		for id := range set(st.idx) {
			if j := st.Jobs[id]; j != nil && !yield(j) {
				return
			}
		}
	}
}
