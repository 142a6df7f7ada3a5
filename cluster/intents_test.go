package cluster

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
)

// A batch host that cannot be reached is the node's fault, not the job's:
// the job goes back to the queue (never FAILED), and the node is not
// responding (`*`) until it registers again, so the job is not sent there
// again meanwhile. (Five launch failures in a row hold the job:
// fsm.TestLaunchFailedRequeuesThenHolds.)
func TestLaunchFailureRequeues(t *testing.T) {
	d, cl := startOne(t)
	// Node-to-node calls reach the TCP API; the local socket stays.
	d.srvs[1].Close()
	ctx := context.Background()
	id, err := cl.Submit(ctx, api.JobSpec{WorkDir: t.TempDir(), Script: "#!/bin/sh\ntrue\n"})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, cl, id, api.StatePending)
	for deadline := time.Now().Add(30 * time.Second); j.Restarts == 0; j = waitJob(t, cl, id, api.StatePending) {
		if time.Now().After(deadline) {
			t.Fatalf("never requeued: %+v", j)
		}
		time.Sleep(50 * time.Millisecond)
	}
	nodes, err := cl.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := nodes.Nodes[0].State; st != api.NodeIdle+"*" {
		t.Errorf("node state %q after its daemon failed a launch, want IDLE*", st)
	}
	// It stays pending: nothing else to run on.
	time.Sleep(time.Second)
	if j := waitJob(t, cl, id, api.StatePending); j.Restarts != 1 {
		t.Errorf("restarts %d: sent to the node that does not answer again", j.Restarts)
	}
}

// A node registers what it runs: the leader has it kill what the state
// does not give it, acknowledges launches, and requeues (or, under
// --no-requeue, ends NODE_FAIL) a run the node no longer has.
func TestRegistrationReconciles(t *testing.T) {
	// A long SlurmdTimeout: the node's own registrations (every 100 s)
	// stay out of the way of the test's.
	d, cl := startOneConf(t, "SlurmdTimeout=300\n", func(*Options) {})
	ctx := context.Background()
	no := false
	id, err := cl.Submit(ctx, api.JobSpec{WorkDir: t.TempDir(), Script: "#!/bin/sh\nsleep 300\n", Requeue: &no})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, cl, id, api.StateRunning)
	for deadline := time.Now().Add(20 * time.Second); !j.Launched; j = waitJob(t, cl, id, api.StateRunning) {
		if time.Now().After(deadline) {
			t.Fatal("the launch was never acknowledged")
		}
		time.Sleep(50 * time.Millisecond)
	}
	register := func(reg api.NodeRegistration) api.RegistrationResponse {
		t.Helper()
		var resp api.RegistrationResponse
		if err := d.peers.CallNode(ctx, d.addr(d.cfg.APIPort), "/internal/register", reg, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	run := api.JobRun{JobID: id, Run: j.StartTime}
	stranger := api.JobRun{JobID: 9999, Run: j.StartTime}
	oldRun := api.JobRun{JobID: id, Run: j.StartTime.Add(-time.Minute)}
	resp := register(api.NodeRegistration{Node: "node1", Jobs: []api.JobRun{run, stranger, oldRun},
		Steps: []api.StepRun{{JobID: 9999, StepID: 0, Run: j.StartTime}}})
	if len(resp.Kill) != 2 || resp.Kill[0] != stranger || resp.Kill[1] != oldRun || len(resp.KillSteps) != 1 {
		t.Fatalf("kill %+v steps %+v; want the unknown job, the earlier run and the unknown job's step", resp.Kill, resp.KillSteps)
	}
	// Missing once: it may have been on its way. Missing twice: lost.
	register(api.NodeRegistration{Node: "node1"})
	if j := waitJob(t, cl, id, api.StateRunning); j.State != api.StateRunning {
		t.Fatal(j.State)
	}
	register(api.NodeRegistration{Node: "node1"})
	j = waitJob(t, cl, id, api.StateNodeFail)
	if j.Reason != reasonBatchMissing {
		t.Errorf("reason %q", j.Reason)
	}
	// The run still on the node is now one to kill.
	if resp := register(api.NodeRegistration{Node: "node1", Jobs: []api.JobRun{run}}); len(resp.Kill) != 1 || resp.Kill[0] != run {
		t.Fatalf("kill %+v, want the ended run", resp.Kill)
	}
	// An unknown node's registration is refused.
	var resp2 api.RegistrationResponse
	if err := d.peers.CallNode(ctx, d.addr(d.cfg.APIPort), "/internal/register", api.NodeRegistration{Node: "nodeX"}, &resp2); err == nil {
		t.Fatal("a registration of an unknown node was taken")
	}
}

// What a leader decided but did not carry out (it died between the commit
// and the call) is carried on from the state alone by the next one: a
// start whose launch never went out is launched, a cancel whose kill never
// went out is sent. Here the launch is claimed and dropped, and the cancel
// committed without a kill; forgetting what is in flight, as a new term
// does, must be enough.
func TestNewLeaderCarriesOnIntents(t *testing.T) {
	var d *Daemon
	var dropped sync.Map
	var drop atomic.Bool
	drop.Store(true)
	d, cl := startOneWith(t, func(o *Options) {
		o.afterStart = func(starts []fsm.JobStart) {
			for _, s := range starts {
				if !drop.Load() {
					break
				}
				if j, _ := d.fsm.Job(s.JobID); j != nil && d.intents.claimLaunch(j) {
					dropped.Store(j.ID, true) // the old leader's launch, lost
				}
			}
		}
	})
	ctx := context.Background()
	dir := t.TempDir()
	id, err := cl.Submit(ctx, api.JobSpec{WorkDir: dir, Script: "#!/bin/sh\necho ran > " + dir + "/ran\n"})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, cl, id, api.StateRunning)
	if _, ok := dropped.Load(id); !ok || j.Launched {
		t.Fatalf("the launch was not dropped: launched=%v", j.Launched)
	}
	d.intents.reset() // a new term
	j = waitJob(t, cl, id, api.StateCompleted)
	if b, _ := os.ReadFile(filepath.Join(dir, "ran")); string(b) != "ran\n" || j.Restarts != 0 {
		t.Fatalf("output %q restarts %d", b, j.Restarts)
	}

	// A cancel committed, its kill never sent.
	drop.Store(false)
	id, err = cl.Submit(ctx, api.JobSpec{WorkDir: dir, Script: "#!/bin/sh\nexec sleep 300\n"})
	if err != nil {
		t.Fatal(err)
	}
	for j = waitJob(t, cl, id, api.StateRunning); !j.Launched; j = waitJob(t, cl, id, api.StateRunning) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := d.propose(&fsm.Cancel{Time: d.now(), JobID: id}); err != nil {
		t.Fatal(err)
	}
	d.intents.reset()
	waitJob(t, cl, id, api.StateCancelled)
}
