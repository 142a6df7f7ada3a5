package cluster

import (
	"reflect"
	"testing"

	"hpc/cluster/api"
)

func TestParseArray(t *testing.T) {
	cases := []struct {
		spec  string
		idx   []int
		limit int
		bad   bool
	}{
		{spec: "0-3", idx: []int{0, 1, 2, 3}},
		{spec: "1-7:2", idx: []int{1, 3, 5, 7}},
		{spec: "5,1,3,1", idx: []int{1, 3, 5}},
		{spec: "0-15%4", idx: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, limit: 4},
		{spec: "1000", idx: []int{1000}},
		{spec: "1001", bad: true},
		{spec: "3-1", bad: true},
		{spec: "1:2", bad: true},
		{spec: "a-b", bad: true},
		{spec: "0-3%x", bad: true},
		{spec: "", bad: true},
	}
	for _, c := range cases {
		idx, limit, err := parseArray(c.spec)
		if c.bad {
			if err == nil {
				t.Errorf("%q accepted", c.spec)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(idx, c.idx) || limit != c.limit {
			t.Errorf("%q: %v %d %v", c.spec, idx, limit, err)
		}
	}
	if arrayStep([]int{1, 3, 5}) != 2 || arrayStep([]int{1, 2, 5}) != 1 {
		t.Error("arrayStep")
	}
}

// Submitting an array makes one job per index with consecutive ids; the
// %N limit keeps the rest pending once N run.
func TestArraySubmitAndThrottle(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	job := &api.Job{Spec: api.JobSpec{Name: "sweep", Partition: "debug", Script: "#!/bin/sh\n", WorkDir: "/tmp", Array: "2-6:2%1"}, User: "ann", UID: 1000}
	res := applyAll(t, f, []command{{Op: opSubmit, Job: job}}, 1)[0].(applyResult)
	if res.Err != nil || res.JobID != 1 {
		t.Fatalf("submit: %+v", res)
	}
	for id, task := range map[uint64]int{1: 2, 2: 4, 3: 6} {
		j, _ := f.job(id)
		if j == nil || j.ArrayJobID != 1 || j.ArrayTaskID != task {
			t.Errorf("job %d: %+v", id, j)
		}
	}
	var throttled map[uint64]bool
	f.view(func(st *state) { throttled = arrayThrottled(st) })
	if !reflect.DeepEqual(throttled, map[uint64]bool{2: true, 3: true}) {
		t.Errorf("throttled %v, want the two tasks after the first", throttled)
	}
	applyAll(t, f, []command{{Op: opStart, Starts: []jobStart{{JobID: 1, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1}}}}}}, 2)
	f.view(func(st *state) { throttled = arrayThrottled(st) })
	if !reflect.DeepEqual(throttled, map[uint64]bool{2: true, 3: true}) {
		t.Errorf("with one running: throttled %v", throttled)
	}
	if res := applyAll(t, f, []command{{Op: opSubmit, Job: &api.Job{Spec: api.JobSpec{Array: "9-1"}}}}, 3)[0].(applyResult); res.Err == nil {
		t.Error("a bad array spec was applied")
	}
}
