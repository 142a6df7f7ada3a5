package fsm

import (
	"reflect"
	"testing"

	"hpc/cluster/api"
)

// Submitting an array makes one job per index with consecutive ids; the
// %N limit keeps the rest pending once N run.
func TestArraySubmitAndThrottle(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	job := &api.Job{Spec: api.JobSpec{Name: "sweep", Partition: "debug", Script: "#!/bin/sh\n", WorkDir: "/tmp", Array: "2-6:2%1"}, User: "ann", UID: 1000}
	res := applyAll(t, f, []Op{&Submit{Job: job}}, 1)[0].(Result)
	if res.Err != nil || res.JobID != 1 {
		t.Fatalf("submit: %+v", res)
	}
	for id, task := range map[uint64]int{1: 2, 2: 4, 3: 6} {
		j, _ := f.Job(id)
		if j == nil || j.ArrayJobID != 1 || j.ArrayTaskID != task {
			t.Errorf("job %d: %+v", id, j)
		}
	}
	var throttled map[uint64]bool
	f.View(func(st *State) { throttled = st.ArrayThrottled() })
	if !reflect.DeepEqual(throttled, map[uint64]bool{2: true, 3: true}) {
		t.Errorf("throttled %v, want the two tasks after the first", throttled)
	}
	applyAll(t, f, []Op{&Start{Starts: []JobStart{{JobID: 1, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1}}}}}}, 2)
	f.View(func(st *State) { throttled = st.ArrayThrottled() })
	if !reflect.DeepEqual(throttled, map[uint64]bool{2: true, 3: true}) {
		t.Errorf("with one running: throttled %v", throttled)
	}
	if res := applyAll(t, f, []Op{&Submit{Job: &api.Job{Spec: api.JobSpec{Array: "9-1"}}}}, 3)[0].(Result); res.Err == nil {
		t.Error("a bad array spec was applied")
	}
}
