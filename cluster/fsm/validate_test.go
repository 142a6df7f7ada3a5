package fsm

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
)

// Malformed payloads are refused whole, with an error in Result, and leave
// the state as it was (FuzzApply's preloaded state: jobs 1 and 3 running
// on node1, 2 on node2 and node3, 4-7 pending, 8 cancelled).
func TestApplyRefusesMalformed(t *testing.T) {
	cfg, preload := fuzzPreload(t)
	t1 := fuzzT0.Add(time.Hour)
	alloc := func(a ...api.NodeAlloc) *Start {
		return &Start{Time: t1, Starts: []JobStart{{JobID: 7, Alloc: a}}}
	}
	spec := func(s api.JobSpec) *Submit {
		s.Script = "#!/bin/sh\n"
		return &Submit{Time: t1, Job: &api.Job{Spec: s, UID: 1000, User: "ann"}}
	}
	step := func(nodes []string, tasks []int, cpus int) *StepStart {
		return &StepStart{Time: t1, JobID: 2, Step: api.Step{Nodes: nodes, Tasks: tasks, CPUsPerTask: cpus}}
	}
	n1 := api.NodeAlloc{Node: "node1", CPUs: 1}
	for _, c := range []struct {
		name string
		op   Op
	}{
		{"start on a node not in the config", alloc(api.NodeAlloc{Node: "node9", CPUs: 1})},
		{"start with no CPUs", alloc(api.NodeAlloc{Node: "node1"})},
		{"start with negative CPUs", alloc(api.NodeAlloc{Node: "node1", CPUs: -4})},
		{"start with more CPUs than the node", alloc(api.NodeAlloc{Node: "node1", CPUs: 3})},
		{"start with huge CPUs", alloc(api.NodeAlloc{Node: "node1", CPUs: 1 << 62})},
		{"start on one node twice", alloc(n1, n1)},
		{"start with negative memory", alloc(api.NodeAlloc{Node: "node1", CPUs: 1, MemMB: -1})},
		{"start with negative tasks", alloc(api.NodeAlloc{Node: "node1", CPUs: 1, Tasks: -1})},
		{"start with a GPU on a node without", alloc(api.NodeAlloc{Node: "node1", CPUs: 1, Gres: []api.GresAlloc{{Name: "gpu", Indices: []int{0}}}})},
		{"start with a GPU out of range", alloc(api.NodeAlloc{Node: "node2", CPUs: 1, Gres: []api.GresAlloc{{Name: "gpu", Indices: []int{2}}}})},
		{"start with a GPU twice", alloc(api.NodeAlloc{Node: "node2", CPUs: 1, Gres: []api.GresAlloc{{Name: "gpu", Indices: []int{1}}, {Name: "gpu", Indices: []int{1}}}})},
		{"start of a job never submitted", &Start{Time: t1, Starts: []JobStart{{JobID: 99, Alloc: []api.NodeAlloc{n1}}}}},
		{"start of job 0", &Start{Time: t1, Starts: []JobStart{{JobID: 0, Alloc: []api.NodeAlloc{n1}}}}},
		{"start in an unknown partition", &Start{Time: t1, Starts: []JobStart{{JobID: 7, Alloc: []api.NodeAlloc{n1}, Partition: "nosuch"}}}},
		{"start with a bad time limit", &Start{Time: t1, Starts: []JobStart{{JobID: 7, Alloc: []api.NodeAlloc{n1}, TimeLimitMin: -2}}}},
		{"a good start beside a bad one", &Start{Time: t1, Starts: []JobStart{{JobID: 7, Alloc: []api.NodeAlloc{n1}}, {JobID: 5, Alloc: []api.NodeAlloc{{Node: "nodeX", CPUs: 1}}}}}},
		{"submit of negative nodes", spec(api.JobSpec{Nodes: -1})},
		{"submit of huge ntasks", spec(api.JobSpec{NTasks: 1 << 40})},
		{"submit of negative cpus per task", spec(api.JobSpec{CPUsPerTask: -2})},
		{"submit of negative memory", spec(api.JobSpec{MemPerCPUMB: -1})},
		{"submit of a bad time limit", spec(api.JobSpec{TimeLimitMin: -3})},
		{"submit of an array past MaxArraySize", spec(api.JobSpec{Array: "0-1001"})},
		{"submit with an unknown hold", &Submit{Time: t1, Job: &api.Job{Spec: api.JobSpec{Script: "x"}, Hold: "forever"}}},
		{"submit carrying an allocation", &Submit{Time: t1, Job: &api.Job{Spec: api.JobSpec{Script: "x"}, Alloc: []api.NodeAlloc{n1}}}},
		{"submit carrying steps", &Submit{Time: t1, Job: &api.Job{Spec: api.JobSpec{Script: "x"}, Steps: []api.Step{{Nodes: []string{"node1"}, Tasks: []int{1}}}}}},
		{"submit in the year 9999", &Submit{Time: time.Date(9999, 12, 31, 23, 59, 0, 0, time.UTC), Job: &api.Job{Spec: api.JobSpec{Script: "x"}}}},
		{"node state unknown", &NodeStateChange{Time: t1, Node: "node1", State: "EXPLODED"}},
		{"node state of no node", &NodeStateChange{Time: t1, Node: "node9", State: "DOWN"}},
		{"step with more nodes than task counts", step([]string{"node2", "node3"}, []int{1}, 1)},
		{"step without nodes", step(nil, nil, 1)},
		{"step on a node outside the job", step([]string{"node1"}, []int{1}, 1)},
		{"step on a node not in the config", step([]string{"node9"}, []int{1}, 1)},
		{"step on one node twice", step([]string{"node2", "node2"}, []int{1, 1}, 1)},
		{"step with no tasks on a node", step([]string{"node2"}, []int{0}, 1)},
		{"step with huge tasks", step([]string{"node2", "node3"}, []int{1 << 62, 1 << 62}, 1)},
		{"step with negative cpus", step([]string{"node2"}, []int{1}, -1)},
		{"hold unknown", &Hold{JobIDs: []uint64{7}, Hold: "forever"}},
		{"requeue with an unknown hold", &Requeue{JobIDs: []uint64{1}, Hold: "admin"}},
		{"preempt with an unknown mode", &Preempt{Preempts: []PreemptMark{{JobID: 1, Mode: "REQUEUE"}, {JobID: 2, Mode: "MAYBE"}}}},
		{"update to negative nodes", &UpdateJob{JobID: 7, Update: JobUpdate{Nodes: -1}}},
		{"update to a bad time limit", &UpdateJob{JobID: 7, Update: JobUpdate{TimeLimitMin: -9}}},
		{"update to an unknown partition", &UpdateJob{JobID: 7, Update: JobUpdate{Partition: "debug,nosuch"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fuzzFSM(t, cfg, preload)
			before := stateJSON(t, f)
			data, err := Encode(c.op)
			if err != nil {
				t.Fatal(err)
			}
			r := f.Apply(&raft.Log{Index: 100, Data: data}).(Result)
			if r.Err == nil {
				t.Error("applied")
			}
			if !bytes.Equal(stateJSON(t, f), before) {
				t.Error("the state changed")
			}
			f.View(func(st *State) {
				if err := checkInvariants(cfg, st); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// An end reported for a job that is not running (a pending job has no
// batch host, as an end with no node has none) changes nothing.
func TestEndOfPendingJobIgnored(t *testing.T) {
	cfg, preload := fuzzPreload(t)
	f := fuzzFSM(t, cfg, preload)
	before := stateJSON(t, f)
	r := applyAll(t, f, []Op{&End{Time: fuzzT0.Add(time.Hour), End: api.JobEnd{JobID: 7, ExitCode: 1}}}, 100)[0].(Result)
	if r.Err != nil || !bytes.Equal(stateJSON(t, f), before) {
		t.Errorf("result %v; state changed: %v", r, !bytes.Equal(stateJSON(t, f), before))
	}
}
