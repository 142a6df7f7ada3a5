package sched

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// genSpec describes a generated cluster and workload.
type genSpec struct {
	nodes    int     // compute nodes
	leafSize int     // nodes per leaf switch (0: no topology)
	fanout   int     // leaves per middle switch (a 3-level tree)
	gpuEvery int     // every gpuEvery-th node has GPUs (0: none)
	fill     float64 // fraction of CPUs held by running jobs
	pending  int
	users    int
	accounts int
	// features and odd requests (-w, -x, -C, --switches, holds) appear
	// when rich is set.
	rich bool
}

// generate builds a snapshot from spec, deterministically from seed.
func generate(spec genSpec, seed uint64) Snapshot {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := Snapshot{Now: t0}
	s.Config = Config{
		PriorityWeightAge: 1000, PriorityWeightFairshare: 10000, PriorityWeightJobSize: 500,
		PriorityWeightPartition: 1000, PriorityWeightQOS: 2000,
		PriorityDecayHalfLife: 7 * 24 * time.Hour, DefMemPerCPU: 1000,
	}
	cpuChoices := []int{16, 32, 64}
	var all, gpus, plain []string
	for i := 0; i < spec.nodes; i++ {
		name := fmt.Sprintf("n%05d", i)
		cpus := cpuChoices[rng.IntN(len(cpuChoices))]
		n := Node{Name: name, CPUs: cpus, MemMB: int64(cpus) * 4000}
		if spec.gpuEvery > 0 && i%spec.gpuEvery == spec.gpuEvery-1 {
			if rng.IntN(2) == 0 {
				n.Gres = []Gres{{Name: "gpu", Type: "a100", Count: 4}}
			} else {
				n.Gres = []Gres{{Name: "gpu", Count: 2}, {Name: "gpu", Type: "t4", Count: 2}}
			}
			gpus = append(gpus, name)
		} else {
			plain = append(plain, name)
		}
		if rng.IntN(2) == 0 {
			n.Features = append(n.Features, "ib")
		}
		n.Features = append(n.Features, []string{"skylake", "icelake"}[rng.IntN(2)])
		if spec.rich && rng.IntN(40) == 0 {
			n.State = NodeState(1 + rng.IntN(2))
		}
		s.Nodes = append(s.Nodes, n)
		all = append(all, name)
	}
	s.Partitions = []Partition{
		{Name: "batch", Nodes: plain, Default: true, MaxTime: 3 * 24 * time.Hour, DefaultTime: time.Hour, PriorityJobFactor: 1},
		{Name: "debug", Nodes: all[:max(len(all)/10, 1)], MaxTime: time.Hour, PriorityTier: 2, PriorityJobFactor: 2},
		{Name: "long", Nodes: all[len(all)/2:], MaxTime: 7 * 24 * time.Hour, PriorityJobFactor: 1},
	}
	if len(gpus) > 0 {
		s.Partitions = append(s.Partitions, Partition{Name: "gpu", Nodes: gpus, MaxTime: 2 * 24 * time.Hour, PriorityJobFactor: 3})
	}
	if spec.rich {
		s.Partitions = append(s.Partitions, Partition{Name: "whole", Nodes: all[:len(all)/3], OverSubscribe: OverSubscribeExclusive, MaxNodes: 4})
	}
	if spec.leafSize > 0 {
		var leaves []string
		for i := 0; i*spec.leafSize < len(all); i++ {
			name := fmt.Sprintf("leaf%d", i)
			s.Topology = append(s.Topology, Switch{Name: name, Nodes: all[i*spec.leafSize : min((i+1)*spec.leafSize, len(all))]})
			leaves = append(leaves, name)
		}
		var mids []string
		for i := 0; i*spec.fanout < len(leaves); i++ {
			name := fmt.Sprintf("mid%d", i)
			s.Topology = append(s.Topology, Switch{Name: name, Switches: leaves[i*spec.fanout : min((i+1)*spec.fanout, len(leaves))]})
			mids = append(mids, name)
		}
		s.Topology = append(s.Topology, Switch{Name: "core", Switches: mids})
	}
	s.QOS = []QOS{{Name: "normal"}, {Name: "high", Priority: 100}, {Name: "low", Limits: Limits{MaxJobsPerUser: 50}}}
	var users [][2]string
	for a := 0; a < spec.accounts; a++ {
		acct := fmt.Sprintf("acct%d", a)
		s.Assocs = append(s.Assocs, Assoc{Account: acct, Shares: 1 + rng.IntN(10)})
		for u := 0; u < spec.users/spec.accounts; u++ {
			user := fmt.Sprintf("u%d_%d", a, u)
			s.Assocs = append(s.Assocs, Assoc{Account: acct, User: user})
			users = append(users, [2]string{acct, user})
			s.Usage = append(s.Usage, Usage{Account: acct, User: user, CPUs: rng.IntN(64),
				Start: t0.Add(-time.Duration(24+rng.IntN(24*14)) * time.Hour), End: t0.Add(-time.Duration(rng.IntN(24)) * time.Hour)})
		}
	}
	if spec.rich {
		s.Assocs[0].Limits.GrpTRES.CPU = 256
	}
	// Running jobs fill nodes to about spec.fill of their CPUs.
	id := uint64(1)
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.State != NodeUp {
			continue
		}
		used := 0
		gpu := 0
		for float64(used) < spec.fill*float64(n.CPUs) {
			c := min(1+rng.IntN(n.CPUs/2), n.CPUs-used)
			if c <= 0 {
				break
			}
			u := users[rng.IntN(len(users))]
			rj := RunningJob{ID: id, User: u[1], Account: u[0], QOS: "normal", Partition: "batch",
				StartTime: t0.Add(-time.Duration(rng.IntN(3600*10)) * time.Second),
				Alloc:     []Alloc{{Node: n.Name, CPUs: c, Tasks: c, MemMB: int64(c) * 1000}}}
			rj.EndTime = t0.Add(time.Duration(60+rng.IntN(3600*24)) * time.Second)
			if len(n.Gres) > 0 && gpu < n.Gres[0].Count && rng.IntN(2) == 0 {
				rj.Alloc[0].Gres = []GresAlloc{{Name: "gpu", Type: n.Gres[0].Type, Indices: []int{gpu}}}
				gpu++
			}
			s.Running = append(s.Running, rj)
			used += c
			id++
		}
	}
	id = 1_000_000
	parts := []string{"batch", "batch", "batch", "long", "debug"}
	for i := 0; i < spec.pending; i++ {
		u := users[rng.IntN(len(users))]
		j := Job{ID: id, User: u[1], Account: u[0], SubmitTime: t0.Add(-time.Duration(rng.IntN(3600*48)) * time.Second)}
		id++
		switch q := rng.IntN(20); {
		case q == 0:
			j.QOS = "high"
		case q < 3:
			j.QOS = "low"
		}
		j.Partitions = []string{parts[rng.IntN(len(parts))]}
		if rng.IntN(10) == 0 {
			j.Partitions = []string{"debug", "batch"}
		}
		j.TimeLimit = time.Duration(5+rng.IntN(60*24)) * time.Minute
		if j.Partitions[0] == "debug" {
			j.TimeLimit = time.Duration(1+rng.IntN(60)) * time.Minute
		}
		switch k := rng.IntN(100); {
		case k < 60: // small shared job
			j.NTasks = 1 + rng.IntN(8)
			j.CPUsPerTask = 1 + rng.IntN(2)
		case k < 80: // multi-node
			j.Nodes = 2 + rng.IntN(7)
			j.NTasks = j.Nodes * (1 + rng.IntN(8))
		case k < 90 && len(gpus) > 0: // gpu
			j.Partitions = []string{"gpu"}
			j.TimeLimit = time.Duration(5+rng.IntN(60*24)) * time.Minute
			switch rng.IntN(3) {
			case 0:
				j.Gres = []GresRequest{{Name: "gpu", Count: 1 + rng.IntN(2)}}
			case 1:
				j.GPUs, j.GPUType = 1+rng.IntN(4), "a100"
			default:
				j.Nodes, j.GPUsPerTask, j.NTasks = 2, 1, 2+rng.IntN(3)
			}
		case k < 95: // exclusive
			j.Exclusive = true
			j.Nodes = 1 + rng.IntN(4)
		default: // big memory
			j.NTasks = 1
			j.MemPerNodeMB = int64(8000 + rng.IntN(200000))
		}
		if spec.rich {
			switch rng.IntN(30) {
			case 0:
				j.Constraint = "ib&icelake"
			case 1:
				j.Constraint = "skylake|icelake"
			case 2:
				j.NodeList = []string{all[rng.IntN(len(all))]}
				j.Nodes = 0
				j.NTasks = 1
			case 3:
				j.Exclude = []string{all[rng.IntN(len(all))], all[rng.IntN(len(all))]}
			case 4:
				j.Hold = HoldUser
			case 5:
				j.Dependency = DependencyPending
			case 6:
				j.Switches = 1
			case 7:
				j.Partitions = []string{"whole"}
				j.Exclusive = false
				j.Nodes = 1 + rng.IntN(3)
			case 8:
				j.TimeLimit = 0
			case 9:
				j.Nice = rng.IntN(1000)
			}
		}
		s.Pending = append(s.Pending, j)
	}
	return s
}
