package fsm

import (
	"reflect"
	"testing"
	"time"

	"hpc/cluster/api"
)

// A node resends a job's end until the leader has committed it, so an End
// may come twice, or come for an earlier run of a job that was requeued
// and started again on the same node. Neither changes anything; an End
// without Run (older entries, the leader's own) applies as it always did.
func TestEndRunAndDuplicates(t *testing.T) {
	cfg := testConfig(t)
	f, st := testFSM(t, cfg)
	t0 := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	spec := api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp"}
	alloc := []api.NodeAlloc{{Node: "node1", CPUs: 1, MemMB: 1000}}
	run1, run2 := t0.Add(4*time.Second), t0.Add(20*time.Second)
	applyAll(t, f, []Op{
		&NodeStateChange{Time: t0, Node: "node1", State: "UP"},
		&Submit{Time: t0, Job: &api.Job{Spec: spec, UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "ann"}},
		&Start{Time: run1, Starts: []JobStart{{JobID: 1, Alloc: alloc, StdOut: "/tmp/o", StdErr: "/tmp/o"}}},
		&Requeue{JobIDs: []uint64{1}},
		&End{Time: t0.Add(5 * time.Second), End: api.JobEnd{JobID: 1, Node: "node1", Signal: 15, Run: run1}},
	}, 1)
	if j, _ := f.Job(1); j.State != api.StatePending || j.Restarts != 1 {
		t.Fatalf("after the requeued run: %s restarts %d", j.State, j.Restarts)
	}
	applyAll(t, f, []Op{&Start{Time: run2, Starts: []JobStart{{JobID: 1, Alloc: alloc, StdOut: "/tmp/o", StdErr: "/tmp/o"}}}}, 10)
	snap := func() (api.Job, []string) {
		j, _ := f.Job(1)
		var rows []string
		for _, r := range acctDump(t, st) {
			s := r.Job.State
			if r.Step != nil {
				s = r.Step.Step + ":" + r.Step.State
			}
			rows = append(rows, s)
		}
		return *j, rows
	}

	// The first run's end, resent: the second run goes on.
	beforeJob, beforeRows := snap()
	stale := &End{Time: t0.Add(21 * time.Second), End: api.JobEnd{JobID: 1, Node: "node1", Signal: 15, Run: run1}}
	if r := applyAll(t, f, []Op{stale}, 20)[0].(Result); r.Err != nil {
		t.Fatal(r.Err)
	}
	if j, rows := snap(); !reflect.DeepEqual(j, beforeJob) || !reflect.DeepEqual(rows, beforeRows) {
		t.Fatalf("a stale run's end changed the job: %s %v, was %s %v", j.State, rows, beforeJob.State, beforeRows)
	}

	// The second run's end applies once; again, it changes nothing.
	end := api.JobEnd{JobID: 1, Node: "node1", ExitCode: 7, Run: run2, Start: run2, End: t0.Add(30 * time.Second),
		Usage: &api.StepUsage{MaxRSSKB: 1024, MaxRSSNode: "node1"}}
	applyAll(t, f, []Op{&End{Time: t0.Add(31 * time.Second), End: end}}, 30)
	j, rows := snap()
	if j.State != api.StateFailed || j.ExitCode != 7 {
		t.Fatalf("second run's end: %s exit %d", j.State, j.ExitCode)
	}
	applyAll(t, f, []Op{&End{Time: t0.Add(40 * time.Second), End: end}}, 40)
	if j2, rows2 := snap(); !reflect.DeepEqual(j2, j) || !reflect.DeepEqual(rows2, rows) {
		t.Fatalf("a duplicate end changed the job: %+v %v", j2, rows2)
	}
	if full := acctDump(t, st); len(full) == 0 || !full[0].Job.End.Equal(t0.Add(31*time.Second)) {
		t.Errorf("accounting end time after the duplicate: %+v", full)
	}

	// An End without Run, as older entries are: it ends whatever run goes.
	applyAll(t, f, []Op{
		&Submit{Time: t0.Add(50 * time.Second), Job: &api.Job{Spec: spec, UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "ann"}},
		&Start{Time: t0.Add(51 * time.Second), Starts: []JobStart{{JobID: 2, Alloc: alloc, StdOut: "/tmp/o", StdErr: "/tmp/o"}}},
		&End{Time: t0.Add(52 * time.Second), End: api.JobEnd{JobID: 2, Node: "node1", ExitCode: 2}},
	}, 50)
	if j, _ := f.Job(2); j.State != api.StateFailed || j.ExitCode != 2 {
		t.Errorf("an End without Run: %s exit %d", j.State, j.ExitCode)
	}
}
