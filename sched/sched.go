package sched

import "sort"

// Node is one compute node's capacity and what is already allocated on it.
type Node struct {
	Name       string
	CPUs       int
	MemMB      int64
	AllocCPUs  int
	AllocMemMB int64
	// Up is false for nodes that cannot take work (DOWN, UNKNOWN).
	Up bool
}

func (n *Node) freeCPUs() int  { return n.CPUs - n.AllocCPUs }
func (n *Node) freeMem() int64 { return n.MemMB - n.AllocMemMB }
func (n *Node) usable() bool   { return n.Up && n.freeCPUs() > 0 }
func (n *Node) fits(cpus int, mem int64) bool {
	return n.Up && n.freeCPUs() >= cpus && n.freeMem() >= mem
}

// Job is a pending job's request. Jobs are handed to Schedule in priority
// order (for now: submit order).
type Job struct {
	ID        uint64
	Partition string
	// Nodes is the exact node count asked for (-N); 0 means "as few as fit".
	Nodes       int
	NTasks      int // 0 means one task per node
	CPUsPerTask int // 0 means 1
	// MemPerNodeMB is --mem; 0 means DefMemPerCPU for each allocated CPU.
	MemPerNodeMB int64
	DefMemPerCPU int64
}

// Partition names the nodes a job may use, in the order they are tried.
type Partition struct {
	Name  string
	Nodes []string
	Up    bool
}

// Snapshot is everything Schedule looks at.
type Snapshot struct {
	Nodes      []Node
	Partitions []Partition
	Pending    []Job
}

// Alloc is one node's share of a job's allocation.
type Alloc struct {
	Node  string
	CPUs  int
	Tasks int
	MemMB int64
}

// Start says that a job starts now on the given nodes.
type Start struct {
	JobID uint64
	Alloc []Alloc
}

// Result holds the decisions of one pass.
type Result struct {
	Starts []Start
	// Reasons gives each job that stays pending Slurm's reason for it.
	Reasons map[uint64]string
}

// Pending reasons named as Slurm names them.
const (
	ReasonPriority      = "Priority"
	ReasonResources     = "Resources"
	ReasonPartitionDown = "PartitionDown"
	ReasonNodesDown     = "ReqNodeNotAvail, UnavailableNodes"
	ReasonBadPartition  = "PartitionConfig"
)

// Schedule runs one pass of first-in-first-out scheduling with gang
// allocation: jobs are considered in the given order; a job starts only when
// all of its nodes and CPUs are free at once, and is never partly placed. The
// first job of a partition that cannot start blocks the jobs behind it in that
// partition (they wait with reason Priority) so that it is not starved.
// Allocations made earlier in the pass are seen by later jobs.
func Schedule(s Snapshot) Result {
	res := Result{Reasons: map[uint64]string{}}
	nodes := make([]Node, len(s.Nodes))
	copy(nodes, s.Nodes)
	index := make(map[string]int, len(nodes))
	for i := range nodes {
		index[nodes[i].Name] = i
	}
	parts := make(map[string]*Partition, len(s.Partitions))
	for i := range s.Partitions {
		parts[s.Partitions[i].Name] = &s.Partitions[i]
	}
	blocked := map[string]bool{}
	for _, j := range s.Pending {
		p := parts[j.Partition]
		switch {
		case p == nil:
			res.Reasons[j.ID] = ReasonBadPartition
			continue
		case !p.Up:
			res.Reasons[j.ID] = ReasonPartitionDown
			continue
		case blocked[p.Name]:
			res.Reasons[j.ID] = ReasonPriority
			continue
		}
		cand := make([]*Node, 0, len(p.Nodes))
		for _, name := range p.Nodes {
			if i, ok := index[name]; ok {
				cand = append(cand, &nodes[i])
			}
		}
		alloc, reason := place(j, cand)
		if alloc == nil {
			res.Reasons[j.ID] = reason
			blocked[p.Name] = true
			continue
		}
		for _, a := range alloc {
			n := &nodes[index[a.Node]]
			n.AllocCPUs += a.CPUs
			n.AllocMemMB += a.MemMB
		}
		res.Starts = append(res.Starts, Start{JobID: j.ID, Alloc: alloc})
	}
	return res
}

// place finds an allocation for j on the candidate nodes, or says why not.
func place(j Job, cand []*Node) ([]Alloc, string) {
	cpt := max(j.CPUsPerTask, 1)
	tasks := j.NTasks
	if tasks <= 0 {
		tasks = max(j.Nodes, 1)
	}
	mem := func(cpus int) int64 {
		if j.MemPerNodeMB > 0 {
			return j.MemPerNodeMB
		}
		return j.DefMemPerCPU * int64(cpus)
	}
	anyUp := false
	for _, n := range cand {
		anyUp = anyUp || n.Up
	}
	if !anyUp {
		return nil, ReasonNodesDown
	}
	// How many tasks each usable node could take now.
	type option struct {
		n   *Node
		cap int
	}
	var opts []option
	for _, n := range cand {
		if !n.usable() {
			continue
		}
		fit := n.freeCPUs() / cpt
		for fit > 0 && !n.fits(fit*cpt, mem(fit*cpt)) {
			fit--
		}
		if fit > 0 {
			opts = append(opts, option{n, fit})
		}
	}
	sum := func(o []option) int {
		t := 0
		for _, x := range o {
			t += x.cap
		}
		return t
	}
	need := j.Nodes
	if need > 0 {
		if len(opts) < need || tasks < need {
			return nil, ReasonResources
		}
		chosen := opts[:need:need]
		if sum(chosen) < tasks {
			// The first nodes in order are too small: take the roomiest.
			byCap := append([]option(nil), opts...)
			sort.SliceStable(byCap, func(a, b int) bool { return byCap[a].cap > byCap[b].cap })
			chosen = byCap[:need]
		}
		opts = chosen
	}
	if sum(opts) < tasks {
		return nil, ReasonResources
	}
	// Every chosen node gets one task; the rest fill nodes in order.
	var alloc []Alloc
	left := tasks
	for i, o := range opts {
		if left == 0 {
			break
		}
		take := min(o.cap, left)
		if need > 0 {
			take = min(o.cap, left-(need-i-1))
		}
		alloc = append(alloc, Alloc{Node: o.n.Name, CPUs: take * cpt, Tasks: take, MemMB: mem(take * cpt)})
		left -= take
	}
	return alloc, ""
}
