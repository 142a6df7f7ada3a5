package sched

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

// lab is n nodes of 2 CPUs and 4000 MB in partition "debug".
func lab(n int) Snapshot {
	s := Snapshot{Now: t0}
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node%d", i)
		s.Nodes = append(s.Nodes, Node{Name: name, CPUs: 2, MemMB: 4000})
		names = append(names, name)
	}
	s.Partitions = []Partition{{Name: "debug", Nodes: names, Default: true}}
	return s
}

func jobResult(t *testing.T, r Result, id uint64) JobResult {
	t.Helper()
	for _, j := range r.Jobs {
		if j.JobID == id {
			return j
		}
	}
	t.Fatalf("no result for job %d", id)
	return JobResult{}
}

func reasons(r Result) map[uint64]string {
	m := map[uint64]string{}
	for _, j := range r.Jobs {
		if j.Reason != "" {
			m[j.JobID] = j.Reason
		}
	}
	return m
}

func startOf(r Result, id uint64) *Start {
	for i := range r.Starts {
		if r.Starts[i].JobID == id {
			return &r.Starts[i]
		}
	}
	return nil
}

func TestScheduleFIFOAndGang(t *testing.T) {
	s := lab(3)
	s.Config.DefMemPerCPU = 1000
	s.Pending = []Job{
		{ID: 1, Partitions: []string{"debug"}},                      // 1 cpu on node1
		{ID: 2, Partitions: []string{"debug"}, Nodes: 2, NTasks: 4}, // 2+2: node2, node3
		{ID: 3, Partitions: []string{"debug"}, Nodes: 2},            // needs 2 nodes: only node1 has room
		{ID: 4, Partitions: []string{"debug"}},                      // no reservation holds node1: backfills
		{ID: 5, Partitions: []string{"nosuch"}},
	}
	res := Schedule(s)
	want := []Start{
		{JobID: 1, Partition: "debug", Alloc: []Alloc{{Node: "node1", CPUs: 1, Tasks: 1, MemMB: 1000}}},
		{JobID: 2, Partition: "debug", Alloc: []Alloc{{Node: "node2", CPUs: 2, Tasks: 2, MemMB: 2000}, {Node: "node3", CPUs: 2, Tasks: 2, MemMB: 2000}}},
		{JobID: 4, Partition: "debug", Alloc: []Alloc{{Node: "node1", CPUs: 1, Tasks: 1, MemMB: 1000}}},
	}
	if !reflect.DeepEqual(res.Starts, want) {
		t.Fatalf("starts = %+v, want %+v", res.Starts, want)
	}
	wantReasons := map[uint64]string{3: ReasonResources, 5: ReasonPartitionConfig}
	if !reflect.DeepEqual(reasons(res), wantReasons) {
		t.Fatalf("reasons = %v, want %v", reasons(res), wantReasons)
	}
	if len(res.Jobs) != len(s.Pending) {
		t.Fatalf("%d job results for %d jobs", len(res.Jobs), len(s.Pending))
	}
	for i, j := range res.Jobs {
		if j.JobID != s.Pending[i].ID {
			t.Fatalf("results out of order: %d at %d", j.JobID, i)
		}
	}
	if j := jobResult(t, res, 3); !j.ExpectedStart.IsZero() {
		t.Fatalf("job 3 can never start (unlimited jobs hold the nodes) but expects %v", j.ExpectedStart)
	}
}

func TestSchedulePriorityBehindWaiter(t *testing.T) {
	s := lab(2)
	s.Running = []RunningJob{{ID: 9, StartTime: t0, EndTime: t0.Add(time.Hour),
		Alloc: []Alloc{{Node: "node1", CPUs: 2}, {Node: "node2", CPUs: 1}}}}
	s.Pending = []Job{
		{ID: 1, Nodes: 2, NTasks: 4, TimeLimit: time.Hour},   // waits for job 9
		{ID: 2, NTasks: 2, TimeLimit: time.Hour},             // does not fit now either: behind job 1
		{ID: 3, TimeLimit: 2 * time.Hour},                    // fits node2 now, but would delay job 1
		{ID: 4, TimeLimit: 30 * time.Minute, NTasks: 1},      // fits node2 and ends before job 1 starts
		{ID: 5, TimeLimit: 30 * time.Minute, Hold: HoldUser}, // held
	}
	res := Schedule(s)
	if len(res.Starts) != 1 || res.Starts[0].JobID != 4 || res.Starts[0].Alloc[0].Node != "node2" {
		t.Fatalf("starts = %+v", res.Starts)
	}
	want := map[uint64]string{1: ReasonResources, 2: ReasonPriority, 3: ReasonPriority, 5: ReasonJobHeldUser}
	if got := reasons(res); !reflect.DeepEqual(got, want) {
		t.Fatalf("reasons = %v, want %v", got, want)
	}
	j1 := jobResult(t, res, 1)
	if !j1.ExpectedStart.Equal(t0.Add(time.Hour)) || !reflect.DeepEqual(j1.ExpectedNodes, []string{"node1", "node2"}) {
		t.Fatalf("job 1 expected %v on %v", j1.ExpectedStart, j1.ExpectedNodes)
	}
	// Job 2 plans after job 1's hour; job 3 (2 h) fits alongside nothing
	// before job 2, so it comes after both.
	if j2 := jobResult(t, res, 2); !j2.ExpectedStart.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("job 2 expected at %v", j2.ExpectedStart)
	}
	if p := jobResult(t, res, 5).Priority; p != 0 {
		t.Fatalf("held job priority %d, want 0", p)
	}
}

func TestScheduleRespectsMemoryAndDownNodes(t *testing.T) {
	s := lab(2)
	s.Nodes[0].State = NodeDown
	s.Running = []RunningJob{{ID: 9, Alloc: []Alloc{{Node: "node2", CPUs: 1, MemMB: 3500}}}}
	s.Pending = []Job{{ID: 7, MemPerNodeMB: 1000}}
	res := Schedule(s)
	if len(res.Starts) != 0 || reasons(res)[7] != ReasonResources {
		t.Fatalf("got %+v", res)
	}
	s.Running = nil
	res = Schedule(s)
	if len(res.Starts) != 1 || res.Starts[0].Alloc[0].Node != "node2" || res.Starts[0].Alloc[0].MemMB != 1000 {
		t.Fatalf("got %+v", res)
	}
	s.Nodes[1].State = NodeDrain
	res = Schedule(s)
	if r := reasons(res)[7]; r != ReasonNodesDown {
		t.Fatalf("reason %q", r)
	}
	s.Pending[0].NodeList = []string{"node1", "node2"}
	s.Pending[0].Nodes = 2
	res = Schedule(s)
	if r := reasons(res)[7]; r != "ReqNodeNotAvail, UnavailableNodes:node[1-2]" {
		t.Fatalf("reason %q", r)
	}
}

func TestScheduleSpreadsTasksWithoutNodeCount(t *testing.T) {
	s := lab(3)
	s.Config.DefMemPerCPU = 100
	s.Pending = []Job{{ID: 1, NTasks: 5}}
	res := Schedule(s)
	if len(res.Starts) != 1 {
		t.Fatalf("got %+v", res)
	}
	got := 0
	for _, a := range res.Starts[0].Alloc {
		got += a.Tasks
		if a.CPUs > 2 {
			t.Fatalf("over-allocated %+v", a)
		}
	}
	if got != 5 || len(res.Starts[0].Alloc) != 3 {
		t.Fatalf("alloc %+v", res.Starts[0].Alloc)
	}
}

func TestScheduleDoesNotMutateInput(t *testing.T) {
	s := lab(1)
	s.Pending = []Job{{ID: 1, NTasks: 2, NodeList: []string{"node1"}}}
	s.Running = []RunningJob{{ID: 2, Alloc: []Alloc{{Node: "node1", CPUs: 0}}}}
	before := fmt.Sprintf("%+v", s)
	Schedule(s)
	if after := fmt.Sprintf("%+v", s); after != before {
		t.Fatalf("Schedule changed its input:\n%s\n%s", before, after)
	}
}

func TestPartitionReasons(t *testing.T) {
	s := lab(4)
	s.Partitions = append(s.Partitions,
		Partition{Name: "gpu", Nodes: []string{"node3", "node4"}, MaxTime: time.Hour},
		Partition{Name: "off", Nodes: []string{"node1"}, State: PartitionDown},
		Partition{Name: "gone", Nodes: []string{"node1"}, State: PartitionInactive},
		Partition{Name: "small", Nodes: []string{"node1", "node2"}, MaxNodes: 1},
		Partition{Name: "acct", Nodes: []string{"node1"}, AllowAccounts: []string{"physics"}, AllowQOS: []string{"high"}},
	)
	s.Nodes[3].Features = []string{"fast"}
	s.Pending = []Job{
		{ID: 1, Nodes: 10}, // more than the cluster
		{ID: 2, Partitions: []string{"gpu"}, Nodes: 3}, // more than the partition
		{ID: 3, Partitions: []string{"gpu"}, TimeLimit: 2 * time.Hour},
		{ID: 4, Partitions: []string{"off"}},
		{ID: 5, Partitions: []string{"gone"}},
		{ID: 6, Partitions: []string{"small"}, Nodes: 2},
		{ID: 7, Partitions: []string{"acct"}, Account: "chem"},
		{ID: 8, Partitions: []string{"acct"}, Account: "physics"},
		{ID: 9, Constraint: "slow"},
		{ID: 10, NTasks: 100},
		{ID: 11, BeginTime: t0.Add(time.Hour)},
		{ID: 12, Dependency: DependencyPending},
		{ID: 13, Dependency: DependencyNever},
		{ID: 14, Hold: HoldAdmin},
		{ID: 15, Constraint: "fast", Partitions: []string{"off", "debug"}}, // second partition runs it
		{ID: 16, Dependency: DependencySatisfied, BeginTime: t0.Add(-time.Minute)},
	}
	res := Schedule(s)
	want := map[uint64]string{
		1: ReasonPartitionConfig, 2: ReasonPartitionNodeLimit, 3: ReasonPartitionTimeLimit,
		4: ReasonPartitionDown, 5: ReasonPartitionInactive, 6: ReasonPartitionNodeLimit,
		7: ReasonAccountNotAllowed, 8: ReasonQOSNotAllowed, 9: ReasonBadConstraints,
		10: ReasonPartitionConfig, 11: ReasonBeginTime, 12: ReasonDependency,
		13: ReasonDependencyNever, 14: ReasonJobHeldAdmin,
	}
	if got := reasons(res); !reflect.DeepEqual(got, want) {
		t.Fatalf("reasons:\n got %v\nwant %v", got, want)
	}
	if st := startOf(res, 15); st == nil || st.Partition != "debug" || st.Alloc[0].Node != "node4" {
		t.Fatalf("job 15: %+v", st)
	}
	if startOf(res, 16) == nil {
		t.Fatal("job 16 should start")
	}
}

func TestMultiPartitionFirstThatCanStart(t *testing.T) {
	s := lab(2)
	s.Partitions = []Partition{
		{Name: "a", Nodes: []string{"node1"}},
		{Name: "b", Nodes: []string{"node2"}},
	}
	s.Running = []RunningJob{{ID: 9, Alloc: []Alloc{{Node: "node1", CPUs: 2}}}}
	s.Pending = []Job{{ID: 1, Partitions: []string{"a", "b"}}, {ID: 2, Partitions: []string{"b", "a"}}}
	res := Schedule(s)
	if st := startOf(res, 1); st == nil || st.Partition != "b" {
		t.Fatalf("job 1: %+v", res)
	}
	if st := startOf(res, 2); st == nil || st.Partition != "b" {
		t.Fatalf("job 2: %+v", res)
	}
	j := jobResult(t, res, 1)
	if len(j.PartitionPriorities) != 2 || j.PartitionPriorities[0].Partition != "a" {
		t.Fatalf("partition priorities %+v", j.PartitionPriorities)
	}
}

func TestPriorityTierGoesFirst(t *testing.T) {
	s := lab(1)
	s.Partitions = []Partition{
		{Name: "low", Nodes: []string{"node1"}},
		{Name: "high", Nodes: []string{"node1"}, PriorityTier: 10},
	}
	s.Pending = []Job{
		{ID: 1, Partitions: []string{"low"}, NTasks: 2},
		{ID: 2, Partitions: []string{"high"}, NTasks: 2},
	}
	res := Schedule(s)
	if len(res.Starts) != 1 || res.Starts[0].JobID != 2 {
		t.Fatalf("starts %+v", res.Starts)
	}
}

func TestExclusive(t *testing.T) {
	s := lab(2)
	s.Running = []RunningJob{{ID: 9, Alloc: []Alloc{{Node: "node1", CPUs: 1}}}}
	s.Pending = []Job{{ID: 1, Exclusive: true}, {ID: 2, Exclusive: true}}
	res := Schedule(s)
	st := startOf(res, 1)
	if st == nil || st.Alloc[0].Node != "node2" || st.Alloc[0].CPUs != 2 || st.Alloc[0].Tasks != 1 {
		t.Fatalf("job 1: %+v", st)
	}
	if r := reasons(res)[2]; r != ReasonResources {
		t.Fatalf("job 2 reason %q", r)
	}
	// OverSubscribe=EXCLUSIVE does the same for every job.
	s.Partitions[0].OverSubscribe = OverSubscribeExclusive
	s.Pending = []Job{{ID: 3}}
	res = Schedule(s)
	if st := startOf(res, 3); st == nil || st.Alloc[0].Node != "node2" || st.Alloc[0].CPUs != 2 {
		t.Fatalf("job 3: %+v", res)
	}
}

func TestNodeListExcludeConstraint(t *testing.T) {
	s := lab(4)
	s.Nodes[1].Features = []string{"ib", "skylake"}
	s.Nodes[2].Features = []string{"ib", "icelake"}
	s.Nodes[3].Features = []string{"icelake"}
	s.Pending = []Job{
		{ID: 1, NodeList: []string{"node4"}},
		{ID: 2, Exclude: []string{"node1", "node2"}, NTasks: 2},
		{ID: 3, Constraint: "ib&skylake"},
		{ID: 4, Constraint: "skylake|icelake", NTasks: 2},
	}
	res := Schedule(s)
	want := map[uint64]string{1: "node4", 2: "node3", 3: "node2"}
	for id, node := range want {
		st := startOf(res, id)
		if st == nil || len(st.Alloc) != 1 || st.Alloc[0].Node != node {
			t.Fatalf("job %d: %+v", id, st)
		}
	}
	// Job 4's two tasks spread over what skylake/icelake nodes have left.
	if st := startOf(res, 4); st == nil || len(st.Alloc) != 2 || st.Alloc[0].Node != "node2" || st.Alloc[1].Node != "node4" {
		t.Fatalf("job 4: %+v", st)
	}
}

func TestBasicPriorityMatchesSlurm(t *testing.T) {
	s := lab(1)
	s.Pending = []Job{{ID: 20}}
	res := Schedule(s)
	if p := res.Jobs[0].Priority; p != 4294901740 {
		t.Fatalf("priority %d", p)
	}
}
