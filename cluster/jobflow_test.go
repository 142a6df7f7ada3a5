package cluster

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
)

// waitReason waits until a pending job shows the reason.
func waitReason(t *testing.T, cl *api.Client, id uint64, reason string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		jobs, err := cl.Jobs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.ID == id && j.State == api.StatePending && j.Reason == reason {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d never pending with reason %s: %+v", id, reason, jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDependencyHoldRequeue(t *testing.T) {
	_, cl := startOne(t)
	ctx := context.Background()
	dir := t.TempDir()
	submit := func(spec api.JobSpec) uint64 {
		t.Helper()
		spec.WorkDir = dir
		id, err := cl.Submit(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	gate := filepath.Join(dir, "gate")
	// a waits for a file; b runs only after a succeeds; c only if a fails.
	a := submit(api.JobSpec{Script: "#!/bin/sh\nwhile [ ! -e " + gate + " ]; do sleep 0.05; done\n"})
	b := submit(api.JobSpec{Script: "#!/bin/sh\ntrue\n", Dependency: "afterok:1"})
	c := submit(api.JobSpec{Script: "#!/bin/sh\ntrue\n", Dependency: "afternotok:1"})
	waitJob(t, cl, a, api.StateRunning)
	waitReason(t, cl, b, "Dependency")
	waitReason(t, cl, c, "Dependency")
	os.WriteFile(gate, nil, 0o644)
	waitJob(t, cl, a, api.StateCompleted)
	waitJob(t, cl, b, api.StateCompleted)
	waitReason(t, cl, c, "DependencyNeverSatisfied")
	if _, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\n", WorkDir: dir, Dependency: "foo:1"}); err == nil || err.Error() != api.ErrJobDependency {
		t.Errorf("bad dependency syntax: %v", err)
	}

	// A job submitted held waits with JobHeldUser until released.
	h := submit(api.JobSpec{Script: "#!/bin/sh\ntrue\n", Hold: true})
	waitReason(t, cl, h, "JobHeldUser")
	res, err := cl.JobControl(ctx, api.JobControlRequest{JobIDs: []uint64{h}, Action: "release"})
	if err != nil || res[0].Error != "" {
		t.Fatalf("release: %+v %v", res, err)
	}
	waitJob(t, cl, h, api.StateCompleted)

	// Requeue: a running job goes back to pending with the same id and
	// runs again.
	counter := filepath.Join(dir, "runs")
	r := submit(api.JobSpec{Script: "#!/bin/sh\necho run >> " + counter + "\n[ $(wc -l < " + counter + ") -ge 2 ] || sleep 300\n"})
	waitJob(t, cl, r, api.StateRunning)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(counter); string(b) == "run\n" {
			break // the first run is under way
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run never started")
		}
	}
	res, err = cl.JobControl(ctx, api.JobControlRequest{JobIDs: []uint64{r}, Action: "requeue"})
	if err != nil || res[0].Error != "" {
		t.Fatalf("requeue: %+v %v", res, err)
	}
	j := waitJob(t, cl, r, api.StateCompleted)
	if j.Restarts != 1 {
		t.Errorf("restarts %d, want 1", j.Restarts)
	}
	if b, _ := os.ReadFile(counter); string(b) != "run\nrun\n" {
		t.Errorf("runs %q", b)
	}
	res, _ = cl.JobControl(ctx, api.JobControlRequest{JobIDs: []uint64{r}, Action: "hold"})
	if res[0].Error != api.ErrJobNotPendingOrRun {
		t.Errorf("hold of a finished job: %+v", res)
	}
}

// sprio's data: with multifactor priority the leader reports each pending
// job's priority and factors; a bigger job gets the larger job-size factor.
func TestPriorityFactors(t *testing.T) {
	_, cl := startOneConf(t, "PriorityType=priority/multifactor\nPriorityWeightJobSize=1000\nPriorityWeightAge=100\n", func(*Options) {})
	ctx := context.Background()
	dir := t.TempDir()
	block, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 300\n", WorkDir: dir, NTasks: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, block, api.StateRunning)
	small, _ := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: dir})
	big, _ := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: dir, NTasks: 2})
	var resp *api.PriorityResponse
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err = cl.Priority(ctx)
		if err == nil && len(resp.Rows) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("priority rows: %+v %v", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp.Plugin != "priority/multifactor" || resp.Weights.JobSize != 1000 {
		t.Fatalf("plugin/weights %+v", resp)
	}
	rs, rb := resp.Rows[0], resp.Rows[1]
	if rs.JobID != small || rb.JobID != big || rb.Weighted.JobSize <= rs.Weighted.JobSize || rb.Priority <= rs.Priority {
		t.Errorf("job size factor: small %+v big %+v", rs, rb)
	}
	cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{block, small, big}})
}

// scancel --signal delivers the signal and cancels nothing; a cancelled
// running job shows COMPLETING until its node reports the end.
func TestSignalAndCompleting(t *testing.T) {
	_, cl := startOne(t)
	ctx := context.Background()
	dir := t.TempDir()
	got := filepath.Join(dir, "got-usr1")
	ready := filepath.Join(dir, "ready")
	id, err := cl.Submit(ctx, api.JobSpec{WorkDir: dir, Script: "#!/bin/sh\ntrap 'touch " + got + "' USR1\ntouch " + ready +
		"\nwhile [ ! -e " + got + " ]; do sleep 0.05; done\ntrap '' TERM\nsleep 2\n"})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateRunning)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("job never became ready")
		}
	}
	res, err := cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{id}, Signal: 10, Scope: api.SignalBatch})
	if err != nil || res[0].Error != "" {
		t.Fatalf("signal: %+v %v", res, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(got); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("USR1 never arrived")
		}
	}
	waitJob(t, cl, id, api.StateRunning) // still running: a signal is not a cancel
	if _, err := cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{id}}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateCompleting)
	waitJob(t, cl, id, api.StateCancelled)
}

// scontrol update: a user shortens their job's time limit but may not
// lengthen it; root drains a node (no new jobs start there, with a reason)
// and resumes it.
func TestUpdateJobAndDrainNode(t *testing.T) {
	_, cl := startOne(t)
	ctx := context.Background()
	dir := t.TempDir()
	id, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 300\n", WorkDir: dir, TimeLimitMin: 60, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Update(ctx, api.UpdateRequest{JobID: id, Set: map[string]string{"TimeLimit": "30"}}); err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, cl, id, api.StatePending); j.Spec.TimeLimitMin != 30 {
		t.Errorf("time limit %d", j.Spec.TimeLimitMin)
	}
	if err := cl.Update(ctx, api.UpdateRequest{JobID: id, Set: map[string]string{"Partition": "nosuch"}}); err == nil || err.Error() != api.ErrInvalidPartition {
		t.Errorf("unknown partition: %v", err)
	}
	if err := cl.Update(ctx, api.UpdateRequest{Nodes: []string{"node1"}, Set: map[string]string{"State": "DRAIN"}}); err == nil {
		t.Error("drain without a reason accepted")
	}
	if err := cl.Update(ctx, api.UpdateRequest{Nodes: []string{"node1"}, Set: map[string]string{"State": "DRAIN", "Reason": "maintenance"}}); err != nil {
		t.Fatal(err)
	}
	nodes, _ := cl.Nodes(ctx)
	if n := nodes.Nodes[0]; n.State != "IDLE+DRAIN" || n.Reason != "maintenance" || n.ReasonUser != "root" || n.ReasonTime.IsZero() {
		t.Errorf("drained node %+v", n)
	}
	cl.JobControl(ctx, api.JobControlRequest{JobIDs: []uint64{id}, Action: "release"})
	waitReason(t, cl, id, "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions")
	if err := cl.Update(ctx, api.UpdateRequest{Nodes: []string{"node1"}, Set: map[string]string{"State": "RESUME"}}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateRunning)
	cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{id}})
}

// A job cancelled between the commit of its start and its launch ends
// CANCELLED: its batch host never heard of it, so no end report would
// ever come (it used to stay COMPLETING for ever).
func TestCancelBeforeLaunch(t *testing.T) {
	var once sync.Once
	var cancelErr error
	_, cl := startOneWith(t, func(o *Options) {
		sock := o.Socket
		o.afterStart = func(starts []fsm.JobStart) {
			once.Do(func() {
				c := api.NewClient(sock)
				_, cancelErr = c.Cancel(context.Background(), api.CancelRequest{JobIDs: []uint64{starts[0].JobID}})
			})
		}
	})
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	id, err := cl.Submit(context.Background(), api.JobSpec{WorkDir: dir, Script: "#!/bin/sh\ntouch " + ran + "\nsleep 300\n"})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, cl, id, api.StateCancelled)
	if cancelErr != nil {
		t.Fatal(cancelErr)
	}
	if j.StartTime.IsZero() {
		t.Fatalf("the job never started, so the cancel did not come between start and launch: %+v", j)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the cancelled job's script ran")
	}
}

// scancel --signal to a job that has not started: Slurm's "try again
// later" (scancel retries), not a refusal; once it runs, the signal goes.
func TestSignalPendingJob(t *testing.T) {
	_, cl := startOne(t)
	ctx := context.Background()
	dir := t.TempDir()
	id, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 300\n", WorkDir: dir, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{id}, Signal: 10})
	if err != nil || len(res) != 1 || res[0].Error != api.ErrTransitionState {
		t.Fatalf("signal to a held job: %+v %v", res, err)
	}
	if j := waitJob(t, cl, id, api.StatePending); j.CancelRequested {
		t.Errorf("the signal cancelled the job: %+v", j)
	}
	// Just started, no step yet: still starting its steps, the same
	// answer; the batch step itself (scancel -b) takes the signal.
	run, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\ntrap '' USR1\nsleep 300\n", WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, run, api.StateRunning)
	res, err = cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{run}, Signal: 10})
	if err != nil || len(res) != 1 || res[0].Error != api.ErrTransitionState {
		t.Errorf("step signal to a job starting: %+v %v", res, err)
	}
	res, err = cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{run}, Signal: 10, Scope: api.SignalBatch})
	if err != nil || len(res) != 1 || res[0].Error != "" {
		t.Errorf("batch signal to a job starting: %+v %v", res, err)
	}
}
