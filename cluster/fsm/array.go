package fsm

import (
	"sort"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// ArrayThrottled marks, for each array with a %N limit, the pending tasks
// beyond what may start now (reason JobArrayTaskLimit).
func (st *State) ArrayThrottled() map[uint64]bool {
	running := map[uint64]int{}
	limits := map[uint64]int{} // by array: its %N (0: none), read once
	var pending []*api.Job
	for j := range st.ArrayTasks() { // the index's: not every job
		lim, seen := limits[j.ArrayJobID]
		if !seen {
			// Every task carries its array's --array: parsing it once an
			// array, not once a task, is what keeps a pass over 10,000
			// tasks cheap.
			if _, l, err := jobspec.ParseArray(j.Spec.Array); err == nil {
				lim = l
			}
			limits[j.ArrayJobID] = lim
		}
		if lim <= 0 {
			continue
		}
		switch j.State {
		case api.StateRunning, api.StateCompleting:
			running[j.ArrayJobID]++
		case api.StatePending:
			pending = append(pending, j)
		}
	}
	sort.Slice(pending, func(a, b int) bool { return pending[a].ID < pending[b].ID })
	out := map[uint64]bool{}
	for _, j := range pending {
		if running[j.ArrayJobID] >= limits[j.ArrayJobID] {
			out[j.ID] = true
			continue
		}
		running[j.ArrayJobID]++ // it may start: count it against the limit
	}
	return out
}
