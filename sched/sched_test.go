package sched

import (
	"reflect"
	"testing"
)

func lab(n int) Snapshot {
	s := Snapshot{}
	var names []string
	for i := 1; i <= n; i++ {
		name := "node" + string(rune('0'+i))
		s.Nodes = append(s.Nodes, Node{Name: name, CPUs: 2, MemMB: 4000, Up: true})
		names = append(names, name)
	}
	s.Partitions = []Partition{{Name: "debug", Nodes: names, Up: true}}
	return s
}

func TestScheduleFIFOAndGang(t *testing.T) {
	s := lab(3)
	s.Pending = []Job{
		{ID: 1, Partition: "debug", DefMemPerCPU: 1000},                      // 1 cpu on node1
		{ID: 2, Partition: "debug", Nodes: 2, NTasks: 4, DefMemPerCPU: 1000}, // 2+2: node2, node3
		{ID: 3, Partition: "debug", Nodes: 2, DefMemPerCPU: 1000},            // needs 2 nodes: only node1 has room
		{ID: 4, Partition: "debug", DefMemPerCPU: 1000},                      // behind a blocked job
		{ID: 5, Partition: "nosuch"},
	}
	res := Schedule(s)
	want := []Start{
		{JobID: 1, Alloc: []Alloc{{Node: "node1", CPUs: 1, Tasks: 1, MemMB: 1000}}},
		{JobID: 2, Alloc: []Alloc{{Node: "node2", CPUs: 2, Tasks: 2, MemMB: 2000}, {Node: "node3", CPUs: 2, Tasks: 2, MemMB: 2000}}},
	}
	if !reflect.DeepEqual(res.Starts, want) {
		t.Fatalf("starts = %+v, want %+v", res.Starts, want)
	}
	wantReasons := map[uint64]string{3: ReasonResources, 4: ReasonPriority, 5: ReasonBadPartition}
	if !reflect.DeepEqual(res.Reasons, wantReasons) {
		t.Fatalf("reasons = %v, want %v", res.Reasons, wantReasons)
	}
}

func TestScheduleRespectsMemoryAndDownNodes(t *testing.T) {
	s := lab(2)
	s.Nodes[0].Up = false
	s.Nodes[1].AllocMemMB = 3500
	s.Pending = []Job{{ID: 7, Partition: "debug", MemPerNodeMB: 1000}}
	res := Schedule(s)
	if len(res.Starts) != 0 || res.Reasons[7] != ReasonResources {
		t.Fatalf("got %+v", res)
	}
	s.Nodes[1].AllocMemMB = 0
	res = Schedule(s)
	if len(res.Starts) != 1 || res.Starts[0].Alloc[0].Node != "node2" {
		t.Fatalf("got %+v", res)
	}
	s.Nodes[1].Up = false
	res = Schedule(s)
	if res.Reasons[7] != ReasonNodesDown {
		t.Fatalf("got %+v", res)
	}
}

func TestScheduleSpreadsTasksWithoutNodeCount(t *testing.T) {
	s := lab(3)
	s.Pending = []Job{{ID: 1, Partition: "debug", NTasks: 5, DefMemPerCPU: 100}}
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
	s.Pending = []Job{{ID: 1, Partition: "debug", NTasks: 2}}
	Schedule(s)
	if s.Nodes[0].AllocCPUs != 0 {
		t.Fatal("Schedule changed its input")
	}
}
