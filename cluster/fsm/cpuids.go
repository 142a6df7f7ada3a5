package fsm

import (
	"slices"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// The CPUs of a node a job holds are chosen when the job starts, in the
// FSM (so every controller picks the same ones): the lowest-numbered CPUs
// that no other running job holds there. The scheduler counts CPUs per
// node, so there are always enough free ones; were there not (a node whose
// CPUs= shrank), the least used ones are shared.

// cpuUse counts, per node, how many running jobs hold each CPU.
type cpuUse struct {
	cfg  *config.Config
	used map[string][]int
}

func newCPUUse(cfg *config.Config, st *State) *cpuUse {
	u := &cpuUse{cfg: cfg, used: map[string][]int{}}
	for _, j := range st.Jobs {
		if j.State != api.StateRunning && j.State != api.StateCompleting {
			continue
		}
		for _, a := range j.Alloc {
			if len(a.CPUIDs) == 0 {
				continue
			}
			n := u.node(a.Node)
			for _, id := range a.CPUIDs {
				if id >= 0 && id < len(n) {
					n[id]++
				}
			}
		}
	}
	return u
}

// node returns the use counts of a node's CPUs.
func (u *cpuUse) node(name string) []int {
	n, ok := u.used[name]
	if !ok {
		cpus := 1
		if c := u.cfg.Node(name); c != nil && c.CPUs > 0 {
			cpus = c.CPUs
		}
		n = make([]int, cpus)
		u.used[name] = n
	}
	return n
}

// assign picks the CPUs of each node of an allocation.
func (u *cpuUse) assign(alloc []api.NodeAlloc) {
	for i := range alloc {
		a := &alloc[i]
		n := u.node(a.Node)
		want := min(a.CPUs, len(n))
		a.CPUIDs = a.CPUIDs[:0]
		for level := 0; len(a.CPUIDs) < want; level++ {
			for id, c := range n {
				if c == level && len(a.CPUIDs) < want {
					a.CPUIDs = append(a.CPUIDs, id)
				}
			}
		}
		for _, id := range a.CPUIDs {
			n[id]++
		}
		slices.Sort(a.CPUIDs)
	}
}
