package sched

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func topoLab() Snapshot {
	s := Snapshot{Now: t0}
	var all []string
	for i := 1; i <= 10; i++ {
		name := fmt.Sprintf("n%d", i)
		s.Nodes = append(s.Nodes, Node{Name: name, CPUs: 4, MemMB: 4000})
		all = append(all, name)
	}
	s.Partitions = []Partition{{Name: "p", Nodes: all, Default: true}}
	s.Topology = []Switch{
		{Name: "s1", Nodes: []string{"n1", "n2", "n3", "n4"}},
		{Name: "s2", Nodes: []string{"n5", "n6"}},
		{Name: "s3", Nodes: []string{"n7", "n8", "n9", "n10"}},
		{Name: "top", Switches: []string{"s1", "s2", "s3"}},
	}
	return s
}

func nodesOf(st *Start) []string {
	if st == nil {
		return nil
	}
	var out []string
	for _, a := range st.Alloc {
		out = append(out, a.Node)
	}
	return out
}

func TestTopologyBestFitLeaf(t *testing.T) {
	s := topoLab()
	s.Pending = []Job{
		{ID: 1, Nodes: 2, Exclusive: true}, // s2 fits exactly
		{ID: 2, Nodes: 3, Exclusive: true}, // s1 and s3 both leave one: the first
		{ID: 3, Nodes: 5, Exclusive: true}, // no leaf: s3 (4 free) is fullest, then the one left on s1
		{ID: 4, Nodes: 1, Exclusive: true},
	}
	res := Schedule(s)
	want := map[uint64][]string{
		1: {"n5", "n6"},
		2: {"n1", "n2", "n3"},
		3: {"n4", "n7", "n8", "n9", "n10"},
	}
	for id, w := range want {
		if got := nodesOf(startOf(res, id)); !reflect.DeepEqual(got, w) {
			t.Fatalf("job %d on %v, want %v", id, got, w)
		}
	}
	if r := reasons(res)[4]; r != ReasonResources {
		t.Fatalf("job 4: %q", r)
	}
}

func TestTopologySwitchesBound(t *testing.T) {
	s := topoLab()
	s.Running = []RunningJob{{ID: 9, EndTime: t0.Add(time.Hour), Alloc: []Alloc{{Node: "n1", CPUs: 1}, {Node: "n7", CPUs: 1}}}}
	// 4 whole nodes: no leaf has 4 wholly free nodes now (s1 and s3 lost
	// one each), so with --switches=1 the job waits for job 9.
	s.Pending = []Job{{ID: 1, Nodes: 4, Exclusive: true, Switches: 1, SubmitTime: t0, TimeLimit: time.Hour}}
	res := Schedule(s)
	if len(res.Starts) != 0 || reasons(res)[1] != ReasonResources {
		t.Fatalf("got %+v %v", res.Starts, reasons(res))
	}
	j := jobResult(t, res, 1)
	if !j.ExpectedStart.Equal(t0.Add(time.Hour)) || !reflect.DeepEqual(j.ExpectedNodes, []string{"n1", "n2", "n3", "n4"}) {
		t.Fatalf("expected %v on %v", j.ExpectedStart, j.ExpectedNodes)
	}
	// Once the wait (5 minutes by default) is over, it spans switches.
	s.Pending[0].SubmitTime = t0.Add(-10 * time.Minute)
	res = Schedule(s)
	if got := nodesOf(startOf(res, 1)); len(got) != 4 {
		t.Fatalf("after the wait: %v %v", got, reasons(res))
	}
	// Without the bound it spans switches at once.
	s.Pending[0].Switches = 0
	s.Pending[0].SubmitTime = t0
	res = Schedule(s)
	if got := nodesOf(startOf(res, 1)); !reflect.DeepEqual(got, []string{"n2", "n3", "n4", "n5"}) && len(got) != 4 {
		t.Fatalf("no bound: %v", got)
	}
}
