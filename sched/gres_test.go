package sched

import (
	"reflect"
	"testing"
	"time"
)

func gpuLab() Snapshot {
	s := Snapshot{Now: t0}
	s.Nodes = []Node{
		{Name: "cpu1", CPUs: 8, MemMB: 8000},
		{Name: "gpu1", CPUs: 8, MemMB: 8000, Gres: []Gres{{Name: "gpu", Count: 2}}},
		{Name: "gpu2", CPUs: 8, MemMB: 8000, Gres: []Gres{{Name: "gpu", Type: "a100", Count: 2}, {Name: "gpu", Type: "v100", Count: 2}}},
		{Name: "gpu3", CPUs: 8, MemMB: 8000, Gres: []Gres{{Name: "gpu", Type: "a100", Count: 4, Indices: []int{4, 5, 6, 7}}}},
	}
	s.Partitions = []Partition{{Name: "all", Nodes: []string{"cpu1", "gpu1", "gpu2", "gpu3"}, Default: true}}
	return s
}

func gresOf(st *Start) map[string][]GresAlloc {
	out := map[string][]GresAlloc{}
	for _, a := range st.Alloc {
		out[a.Node] = a.Gres
	}
	return out
}

func TestGresDevicesTravelWithAllocation(t *testing.T) {
	s := gpuLab()
	// gpu1 has device 0 in use.
	s.Running = []RunningJob{{ID: 9, Alloc: []Alloc{{Node: "gpu1", CPUs: 1, Gres: []GresAlloc{{Name: "gpu", Indices: []int{0}}}}}}}
	s.Pending = []Job{
		{ID: 1, Gres: []GresRequest{{Name: "gpu", Count: 1}}},                    // gpu1, device 1
		{ID: 2, Gres: []GresRequest{{Name: "gpu", Type: "v100", Count: 2}}},      // gpu2's v100s: 2 and 3
		{ID: 3, GPUs: 3, GPUType: "a100"},                                        // gpu3: 4,5,6
		{ID: 4, GPUsPerNode: 2},                                                  // gpu2's a100s: 0, 1
		{ID: 5, Gres: []GresRequest{{Name: "gpu", Type: "h100", Count: 1}}},      // no such type anywhere
		{ID: 6, Gres: []GresRequest{{Name: "gpu", Count: 2}}},                    // only one left (gpu3: 7)
		{ID: 7, NTasks: 2, GPUsPerTask: 1, Gres: nil, Exclude: []string{"gpu1"}}, // nothing with 2 left
	}
	res := Schedule(s)
	want := map[uint64]map[string][]GresAlloc{
		1: {"gpu1": {{Name: "gpu", Indices: []int{1}}}},
		2: {"gpu2": {{Name: "gpu", Type: "v100", Indices: []int{2, 3}}}},
		3: {"gpu3": {{Name: "gpu", Type: "a100", Indices: []int{4, 5, 6}}}},
		4: {"gpu2": {{Name: "gpu", Type: "a100", Indices: []int{0, 1}}}},
	}
	for id, w := range want {
		st := startOf(res, id)
		if st == nil {
			t.Fatalf("job %d did not start: %v", id, reasons(res))
		}
		if got := gresOf(st); !reflect.DeepEqual(got, w) {
			t.Fatalf("job %d gres %+v, want %+v", id, got, w)
		}
	}
	r := reasons(res)
	if r[5] != ReasonPartitionConfig || r[6] != ReasonResources || r[7] != ReasonPriority {
		t.Fatalf("reasons %v", r)
	}
}

func TestGpusPerTaskSpreadsTasks(t *testing.T) {
	s := gpuLab()
	// 3 tasks with one GPU each, on 2 nodes: gpu2 (4 GPUs) could take them
	// all, but the node count is fixed at 2.
	s.Pending = []Job{{ID: 1, Nodes: 2, NTasks: 3, GPUsPerTask: 1}}
	res := Schedule(s)
	st := startOf(res, 1)
	if st == nil {
		t.Fatalf("no start: %v", reasons(res))
	}
	total := 0
	for _, a := range st.Alloc {
		n := 0
		for _, g := range a.Gres {
			n += len(g.Indices)
		}
		if n != a.Tasks {
			t.Fatalf("node %s: %d tasks, %d gpus", a.Node, a.Tasks, n)
		}
		total += n
	}
	if total != 3 || len(st.Alloc) != 2 || st.Alloc[0].Node != "gpu1" || st.Alloc[0].Tasks != 2 {
		t.Fatalf("alloc %+v", st.Alloc)
	}
}

func TestExclusiveTakesAllGresAndWholeNode(t *testing.T) {
	s := gpuLab()
	s.Pending = []Job{
		{ID: 1, Exclusive: true, Gres: []GresRequest{{Name: "gpu", Count: 1}}, TimeLimit: time.Hour},
		{ID: 2, Gres: []GresRequest{{Name: "gpu", Count: 1}}, TimeLimit: time.Hour},
	}
	res := Schedule(s)
	st := startOf(res, 1)
	if st == nil || st.Alloc[0].Node != "gpu1" || st.Alloc[0].CPUs != 8 {
		t.Fatalf("job 1 %+v", st)
	}
	if st := startOf(res, 2); st == nil || st.Alloc[0].Node != "gpu2" {
		t.Fatalf("job 2 should not share gpu1: %+v", st)
	}
}
