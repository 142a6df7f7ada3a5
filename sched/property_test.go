package sched

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// smallSpec is a cluster small enough to check by brute force, with every
// kind of request in the mix.
func smallSpec(rng *rand.Rand) genSpec {
	return genSpec{nodes: 8 + rng.IntN(40), leafSize: []int{0, 4, 8}[rng.IntN(3)], fanout: 3,
		gpuEvery: []int{0, 3, 5}[rng.IntN(3)], fill: rng.Float64() * 0.9, pending: 20 + rng.IntN(150),
		users: 12, accounts: 3, rich: true}
}

func propSnapshot(seed uint64) Snapshot {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := generate(smallSpec(rng), seed)
	s.QOS[2].Limits.MaxJobsPerUser = 2
	if seed%3 == 0 {
		s.Config.PreemptType = "preempt/qos"
		s.Config.PreemptMode = PreemptRequeue
		s.QOS[1].Preempt = []string{"normal", "low"}
	}
	if seed%4 == 0 {
		s.Config = Config{DefMemPerCPU: 500, PreemptType: s.Config.PreemptType, PreemptMode: s.Config.PreemptMode}
	}
	if seed%5 == 0 {
		s.Config.BackfillMaxJobTest = 3
	}
	return s
}

const propSeeds = 300

type usage struct {
	cpu  int
	mem  int64
	devs map[string]int // "gpu/3" -> holders
}

// nodeUse adds up, per node, what running jobs (less the preempted) and
// the pass's starts hold at time at (zero: now).
func nodeUse(s *Snapshot, res *Result, at time.Time) map[string]*usage {
	gone := map[uint64]bool{}
	for _, pr := range res.Preempt {
		gone[pr.JobID] = true
	}
	m := map[string]*usage{}
	get := func(n string) *usage {
		if m[n] == nil {
			m[n] = &usage{devs: map[string]int{}}
		}
		return m[n]
	}
	add := func(a Alloc) {
		u := get(a.Node)
		u.cpu += a.CPUs
		u.mem += a.MemMB
		for _, g := range a.Gres {
			for _, d := range g.Indices {
				u.devs[fmt.Sprintf("%s/%d", g.Name, d)]++
			}
		}
	}
	for _, r := range s.Running {
		if gone[r.ID] || (!at.IsZero() && !r.EndTime.IsZero() && !r.EndTime.After(at)) {
			continue
		}
		for _, a := range r.Alloc {
			add(a)
		}
	}
	for _, st := range res.Starts {
		if !at.IsZero() && st.TimeLimit > 0 && !s.Now.Add(st.TimeLimit).After(at) {
			continue
		}
		for _, a := range st.Alloc {
			add(a)
		}
	}
	return m
}

func checkPass(t *testing.T, s *Snapshot, res *Result) {
	t.Helper()
	nodes := map[string]*Node{}
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	jobs := map[uint64]*Job{}
	for i := range s.Pending {
		jobs[s.Pending[i].ID] = &s.Pending[i]
	}
	parts := map[string]*Partition{}
	for i := range s.Partitions {
		parts[s.Partitions[i].Name] = &s.Partitions[i]
	}
	// Never more than a node has; every device used once and real.
	for name, u := range nodeUse(s, res, time.Time{}) {
		n := nodes[name]
		if u.cpu > n.CPUs || u.mem > n.MemMB {
			t.Fatalf("node %s over-allocated: %d/%d cpus, %d/%d MB", name, u.cpu, n.CPUs, u.mem, n.MemMB)
		}
		have := map[string]bool{}
		for _, g := range nodeIndices(n) {
			have[g] = true
		}
		for d, c := range u.devs {
			if c > 1 || !have[d] {
				t.Fatalf("node %s device %s held %d times (exists: %v)", name, d, c, have[d])
			}
		}
	}
	startsOn := map[string]int{}
	for _, st := range res.Starts {
		for _, a := range st.Alloc {
			startsOn[a.Node]++
		}
	}
	gone := map[uint64]bool{}
	for _, pr := range res.Preempt {
		gone[pr.JobID] = true
	}
	runningOn := map[string]int{}
	for _, r := range s.Running {
		if !gone[r.ID] {
			for _, a := range r.Alloc {
				runningOn[a.Node]++
			}
		}
	}
	lowLimit := 0
	for _, q := range s.QOS {
		if q.Name == "low" {
			lowLimit = q.Limits.MaxJobsPerUser
		}
	}
	perUserLow := map[string]int{}
	for _, r := range s.Running {
		if r.QOS == "low" && !gone[r.ID] {
			perUserLow[r.User]++
		}
	}
	for _, st := range res.Starts {
		j := jobs[st.JobID]
		if j.Hold != HoldNone || j.Dependency == DependencyPending || j.Dependency == DependencyNever || j.BeginTime.After(s.Now) {
			t.Fatalf("job %d started while not eligible", j.ID)
		}
		if j.QOS == "low" {
			perUserLow[j.User]++
			if lowLimit > 0 && perUserLow[j.User] > lowLimit {
				t.Fatalf("user %s runs %d low jobs, limit %d", j.User, perUserLow[j.User], lowLimit)
			}
		}
		part := parts[st.Partition]
		if part == nil || (len(j.Partitions) > 0 && !slices.Contains(j.Partitions, st.Partition)) {
			t.Fatalf("job %d started in %q, asked %v", j.ID, st.Partition, j.Partitions)
		}
		req := compileForTest(s, j)
		tasks, cpus := 0, 0
		for _, a := range st.Alloc {
			n := nodes[a.Node]
			if n.State != NodeUp || !slices.Contains(part.Nodes, a.Node) || slices.Contains(j.Exclude, a.Node) {
				t.Fatalf("job %d on node %s (state %d) not usable in %s", j.ID, a.Node, n.State, st.Partition)
			}
			if a.Tasks < 1 || a.CPUs < a.Tasks*max(j.CPUsPerTask, 1) {
				t.Fatalf("job %d: node %s has %d tasks on %d cpus", j.ID, a.Node, a.Tasks, a.CPUs)
			}
			if j.Exclusive || part.OverSubscribe == OverSubscribeExclusive {
				if a.CPUs != n.CPUs || runningOn[a.Node] > 0 || startsOn[a.Node] > 1 {
					t.Fatalf("exclusive job %d shares %s", j.ID, a.Node)
				}
			}
			gpus := 0
			for _, g := range a.Gres {
				gpus += len(g.Indices)
			}
			if gpus < req.gpuPerNode+a.Tasks*j.GPUsPerTask {
				t.Fatalf("job %d: %d gpus on %s, asked %d per node + %d per task", j.ID, gpus, a.Node, req.gpuPerNode, j.GPUsPerTask)
			}
			tasks += a.Tasks
			cpus += a.CPUs
		}
		// A gang is whole: all its tasks, on exactly its node count.
		if tasks != req.tasks {
			t.Fatalf("job %d placed %d of %d tasks", j.ID, tasks, req.tasks)
		}
		if req.nodes > 0 && len(st.Alloc) != req.nodes {
			t.Fatalf("job %d on %d nodes, asked %d", j.ID, len(st.Alloc), req.nodes)
		}
		for _, w := range j.NodeList {
			if !slices.ContainsFunc(st.Alloc, func(a Alloc) bool { return a.Node == w }) {
				t.Fatalf("job %d lacks -w node %s", j.ID, w)
			}
		}
	}
	// Every reservation finds its nodes free enough at its start, by the
	// time limits of running jobs and of the jobs started now: starting
	// them delayed no reserved job.
	for i, jr := range res.Jobs {
		if jr.Reason == "" || jr.ExpectedStart.IsZero() {
			continue
		}
		j := &s.Pending[i]
		if !jr.ExpectedStart.After(s.Now) && !jr.ExpectedStart.Equal(s.Now) {
			t.Fatalf("job %d expected in the past", j.ID)
		}
		req := compileForTest(s, j)
		use := nodeUse(s, res, jr.ExpectedStart)
		part := parts[jr.Partition]
		excl := j.Exclusive || (part != nil && part.OverSubscribe == OverSubscribeExclusive)
		freeCPU := 0
		for _, name := range jr.ExpectedNodes {
			n := nodes[name]
			u := use[name]
			if u == nil {
				u = &usage{}
			}
			if excl && u.cpu > 0 {
				t.Fatalf("job %d reserved whole node %s at %v, busy with %d cpus", j.ID, name, jr.ExpectedStart, u.cpu)
			}
			if n.CPUs-u.cpu < max(j.CPUsPerTask, 1) {
				t.Fatalf("job %d reserved %s at %v with %d cpus free", j.ID, name, jr.ExpectedStart, n.CPUs-u.cpu)
			}
			freeCPU += n.CPUs - u.cpu
		}
		if freeCPU < req.tasks*max(j.CPUsPerTask, 1) {
			t.Fatalf("job %d reserved %v at %v: %d cpus free, needs %d", j.ID, jr.ExpectedNodes, jr.ExpectedStart, freeCPU, req.tasks*max(j.CPUsPerTask, 1))
		}
	}
}

type testReq struct{ tasks, nodes, gpuPerNode int }

// compileForTest works out tasks, nodes and per-node GPUs from a job the
// way the documentation says, independently of request.go.
func compileForTest(s *Snapshot, j *Job) testReq {
	var r testReq
	switch {
	case j.NTasks > 0:
		r.tasks = j.NTasks
	case j.Nodes > 0 && j.NTasksPerNode > 0:
		r.tasks = j.Nodes * j.NTasksPerNode
	case j.Nodes > 0:
		r.tasks = j.Nodes
	default:
		r.tasks = 1
	}
	if j.Nodes > 0 {
		r.nodes = min(j.Nodes, r.tasks)
	}
	for _, g := range j.Gres {
		r.gpuPerNode += g.Count
	}
	r.gpuPerNode += j.GPUsPerNode
	if j.GPUs > 0 {
		if r.nodes > 0 {
			r.gpuPerNode += (j.GPUs + r.nodes - 1) / r.nodes
		} else {
			r.gpuPerNode += j.GPUs
		}
	}
	return r
}

func nodeIndices(n *Node) []string {
	var out []string
	next := map[string]int{}
	for _, g := range n.Gres {
		idx := g.Indices
		if len(idx) != g.Count {
			idx = nil
			for i := 0; i < g.Count; i++ {
				idx = append(idx, next[g.Name]+i)
			}
		}
		for _, d := range idx {
			out = append(out, fmt.Sprintf("%s/%d", g.Name, d))
			next[g.Name] = max(next[g.Name], d+1)
		}
	}
	return out
}

func TestPropertyInvariants(t *testing.T) {
	for seed := uint64(1); seed <= propSeeds; seed++ {
		s := propSnapshot(seed)
		res := Schedule(s)
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkPass(t, &s, &res) })
		if t.Failed() {
			return
		}
	}
}

func TestPropertyDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= propSeeds/3; seed++ {
		s := propSnapshot(seed)
		a, b := Schedule(s), Schedule(s)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two passes differ", seed)
		}
		// The order of the pending and running lists does not matter (a
		// Planner keeps them in its own order).
		sh := s
		sh.Pending = slices.Clone(s.Pending)
		sh.Running = slices.Clone(s.Running)
		rng := rand.New(rand.NewPCG(seed, 1))
		rng.Shuffle(len(sh.Pending), func(i, j int) { sh.Pending[i], sh.Pending[j] = sh.Pending[j], sh.Pending[i] })
		rng.Shuffle(len(sh.Running), func(i, j int) { sh.Running[i], sh.Running[j] = sh.Running[j], sh.Running[i] })
		c := Schedule(sh)
		if !reflect.DeepEqual(a.Starts, c.Starts) || !reflect.DeepEqual(a.Preempt, c.Preempt) {
			t.Fatalf("seed %d: shuffled lists start differently", seed)
		}
		byID := map[uint64]JobResult{}
		for _, j := range c.Jobs {
			byID[j.JobID] = j
		}
		for _, j := range a.Jobs {
			if !reflect.DeepEqual(j, byID[j.JobID]) {
				t.Fatalf("seed %d: job %d differs when shuffled:\n%+v\n%+v", seed, j.JobID, j, byID[j.JobID])
			}
		}
		// The failure cache is only a shortcut.
		if d := schedule(&s, options{noCache: true}); !reflect.DeepEqual(a, d) {
			t.Fatalf("seed %d: the failure cache changed the result", seed)
		}
	}
}

// TestPropertyBackfillNeverDelaysTopJob runs the cluster forward: jobs
// started by a pass run to a random point within their time limit, and the
// top job (the first in queue order that has to wait) never sees its
// expected start move later than first promised.
func TestPropertyBackfillNeverDelaysTopJob(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		s := generate(genSpec{nodes: 6 + rng.IntN(20), leafSize: []int{0, 4}[rng.IntN(2)], fanout: 2,
			gpuEvery: 4, fill: 0.7, pending: 30 + rng.IntN(60), users: 6, accounts: 2}, seed)
		s.Config = Config{DefMemPerCPU: 1000} // FIFO: the order stays put
		for i := range s.Partitions {
			s.Partitions[i].PriorityTier = 0
		}
		ends := map[uint64]time.Time{}
		for _, r := range s.Running {
			ends[r.ID] = r.StartTime.Add(time.Duration(rng.Float64() * float64(r.EndTime.Sub(r.StartTime))))
			if ends[r.ID].Before(s.Now) {
				ends[r.ID] = s.Now.Add(time.Minute)
			}
		}
		var topID uint64
		var promised time.Time
		for step := 0; step < 40 && len(s.Pending) > 0; step++ {
			res := Schedule(s)
			checkPass(t, &s, &res)
			// The top waiting job in queue order: lowest id among the
			// eligible jobs that did not start (FIFO).
			var top *JobResult
			for i := range res.Jobs {
				jr := &res.Jobs[i]
				if (jr.Reason == ReasonResources || jr.Reason == ReasonPriority) && (top == nil || jr.JobID < top.JobID) {
					top = jr
				}
			}
			if top != nil && top.JobID == topID && !promised.IsZero() {
				if top.ExpectedStart.IsZero() || top.ExpectedStart.After(promised) {
					t.Fatalf("seed %d step %d: job %d was promised %v, now %v", seed, step, topID, promised, top.ExpectedStart)
				}
			}
			if top != nil && top.JobID != topID {
				topID, promised = top.JobID, top.ExpectedStart
			} else if top != nil && !top.ExpectedStart.IsZero() {
				promised = top.ExpectedStart
			}
			// Commit the starts and move time to the next end.
			started := map[uint64]bool{}
			for _, st := range res.Starts {
				started[st.JobID] = true
				rj := RunningJob{ID: st.JobID, StartTime: s.Now, Alloc: st.Alloc, Partition: st.Partition}
				if st.TimeLimit > 0 {
					rj.EndTime = s.Now.Add(st.TimeLimit)
					ends[st.JobID] = s.Now.Add(time.Second + time.Duration(rng.Float64()*float64(st.TimeLimit-time.Second)))
				} else {
					ends[st.JobID] = s.Now.Add(time.Duration(1+rng.IntN(1e5)) * time.Second)
				}
				s.Running = append(s.Running, rj)
			}
			var pending []Job
			for _, j := range s.Pending {
				if !started[j.ID] {
					pending = append(pending, j)
				}
			}
			s.Pending = pending
			next := time.Time{}
			for _, r := range s.Running {
				if e := ends[r.ID]; next.IsZero() || e.Before(next) {
					next = e
				}
			}
			if next.IsZero() {
				break
			}
			s.Now = next.Truncate(time.Second).Add(time.Second)
			var running []RunningJob
			for _, r := range s.Running {
				if ends[r.ID].After(s.Now) {
					running = append(running, r)
				}
			}
			s.Running = running
		}
	}
}
