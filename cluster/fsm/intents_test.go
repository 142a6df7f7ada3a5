package fsm

import (
	"testing"
	"time"

	"hpc/cluster/api"
)

// intentsFixture is an FSM with node1 UP and job 1 (--requeue as given)
// started on node1 at run.
func intentsFixture(t *testing.T, requeue *bool) (*FSM, time.Time) {
	t.Helper()
	f, _ := testFSM(t, testConfig(t))
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	spec := api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Requeue: requeue}
	run := t0.Add(time.Second)
	applyAll(t, f, []Op{
		&NodeStateChange{Time: t0, Node: "node1", State: "UP"},
		&Submit{Time: t0, Job: &api.Job{Spec: spec, UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "ann"}},
		&Start{Time: run, Starts: []JobStart{{JobID: 1, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1, MemMB: 100}}, StdOut: "/tmp/o", StdErr: "/tmp/o"}}},
	}, 1)
	return f, run
}

func TestLaunchedAcknowledgesOneRun(t *testing.T) {
	f, run := intentsFixture(t, nil)
	applyAll(t, f, []Op{&Launched{Runs: []api.JobRun{{JobID: 1, Run: run.Add(-time.Second)}}}}, 10)
	if j, _ := f.Job(1); j.Launched {
		t.Fatal("an acknowledgement of another run marked this one launched")
	}
	applyAll(t, f, []Op{&Launched{Runs: []api.JobRun{{JobID: 1, Run: run}}}}, 11)
	if j, _ := f.Job(1); !j.Launched {
		t.Fatal("the run's acknowledgement did not mark it launched")
	}
	// Requeued, its next run is not launched yet.
	applyAll(t, f, []Op{&Requeue{JobIDs: []uint64{1}}, &End{Time: run.Add(time.Minute), End: api.JobEnd{JobID: 1, Node: "node1", Run: run}}}, 12)
	if j, _ := f.Job(1); j.State != api.StatePending || j.Launched {
		t.Fatalf("requeued: %s launched=%v", j.State, j.Launched)
	}
}

// A launch the node could not be reached for requeues the job even under
// --no-requeue (it never ran); five in a row hold it, as slurmctld does.
func TestLaunchFailedRequeuesThenHolds(t *testing.T) {
	no := false
	f, run := intentsFixture(t, &no)
	idx := uint64(10)
	for i := 1; i <= MaxLaunchRequeues; i++ {
		applyAll(t, f, []Op{&LaunchFailed{Time: run.Add(time.Second), Run: api.JobRun{JobID: 1, Run: run}, Node: "node1", Why: "connection refused"}}, idx)
		j, _ := f.Job(1)
		if j.State != api.StatePending || j.Restarts != i {
			t.Fatalf("failure %d: %s restarts %d", i, j.State, j.Restarts)
		}
		wantHold := ""
		if i == MaxLaunchRequeues {
			wantHold = api.HoldRequeue
		}
		if j.Hold != wantHold {
			t.Fatalf("failure %d: hold %q, want %q", i, j.Hold, wantHold)
		}
		if i == MaxLaunchRequeues {
			break
		}
		run = run.Add(time.Minute)
		applyAll(t, f, []Op{&Start{Time: run, Starts: []JobStart{{JobID: 1, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1, MemMB: 100}}, StdOut: "/tmp/o", StdErr: "/tmp/o"}}}}, idx+1)
		idx += 2
	}
	// A failure report for an old run changes nothing.
	before, _ := f.Job(1)
	applyAll(t, f, []Op{&LaunchFailed{Time: run.Add(time.Hour), Run: api.JobRun{JobID: 1, Run: run.Add(-time.Hour)}, Node: "node1"}}, 100)
	if after, _ := f.Job(1); after.Restarts != before.Restarts {
		t.Fatal("a stale launch failure requeued the job")
	}
}

// A run its node lost is requeued if the job may be, else NODE_FAIL; a
// cancelled one ends CANCELLED.
func TestLostRun(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name    string
		requeue *bool
		cancel  bool
		want    api.JobState
	}{
		{"default JobRequeue=1", nil, false, api.StatePending},
		{"--requeue", &yes, false, api.StatePending},
		{"--no-requeue", &no, false, api.StateNodeFail},
		{"cancelled", nil, true, api.StateCancelled},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, run := intentsFixture(t, c.requeue)
			var ops []Op
			if c.cancel {
				ops = append(ops, &Cancel{Time: run.Add(time.Second), JobID: 1})
			}
			ops = append(ops, &LaunchFailed{Time: run.Add(2 * time.Second), Run: api.JobRun{JobID: 1, Run: run}, Node: "node1", Why: "batch job missing from its node", Lost: true})
			applyAll(t, f, ops, 10)
			j, _ := f.Job(1)
			if j.State != c.want {
				t.Fatalf("state %s, want %s", j.State, c.want)
			}
			if c.want == api.StateNodeFail && j.Reason != "batch job missing from its node" {
				t.Errorf("reason %q", j.Reason)
			}
			if c.want == api.StatePending && (j.Hold != "" || j.LaunchFailures != 0) {
				t.Errorf("a lost run counted as a failed launch: hold %q failures %d", j.Hold, j.LaunchFailures)
			}
		})
	}
}

func TestNodeResponding(t *testing.T) {
	f, run := intentsFixture(t, nil)
	applyAll(t, f, []Op{&NodeResponding{Time: run, Node: "node1", Responding: false}}, 10)
	var noResp bool
	f.View(func(st *State) { noResp = st.Nodes["node1"].NoResp })
	if !noResp {
		t.Fatal("node1 not marked not responding")
	}
	applyAll(t, f, []Op{&NodeResponding{Time: run, Node: "node1", Responding: true}}, 11)
	f.View(func(st *State) { noResp = st.Nodes["node1"].NoResp })
	if noResp {
		t.Fatal("node1 still not responding")
	}
	if r := applyAll(t, f, []Op{&NodeResponding{Time: run, Node: "nodeX"}}, 12)[0].(Result); r.Err == nil {
		t.Fatal("an unknown node was accepted")
	}
}

// A node the controller marks DOWN requeues its batch jobs that may be
// requeued (Slurm's JobRequeue=1 default); others, and every job under an
// entry written before Requeue existed, end NODE_FAIL.
func TestNodeDownRequeues(t *testing.T) {
	no := false
	for _, c := range []struct {
		name    string
		requeue *bool
		opFlag  bool
		want    api.JobState
	}{
		{"requeue", nil, true, api.StatePending},
		{"--no-requeue", &no, true, api.StateNodeFail},
		{"older entry", nil, false, api.StateNodeFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, run := intentsFixture(t, c.requeue)
			applyAll(t, f, []Op{&NodeStateChange{Time: run.Add(time.Minute), Node: "node1", State: "DOWN", Why: "Not responding", Requeue: c.opFlag}}, 10)
			j, _ := f.Job(1)
			if j.State != c.want {
				t.Fatalf("state %s, want %s", j.State, c.want)
			}
			if c.want == api.StatePending && (j.Restarts != 1 || len(j.Alloc) != 0) {
				t.Errorf("requeued: restarts %d alloc %v", j.Restarts, j.Alloc)
			}
		})
	}
}
