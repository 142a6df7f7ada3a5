package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hpc/cluster/agent"
	"hpc/cluster/api"
)

// writeHook writes an executable root script for Prolog= or Epilog=.
func writeHook(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// waitFile waits for a file to exist and returns its contents.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never written", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPrologEpilog(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	hooks := t.TempDir()
	prolog, epilog := filepath.Join(hooks, "prolog"), filepath.Join(hooks, "epilog")
	failFlag := filepath.Join(hooks, "fail")
	// The prolog fails while the flag exists; each run leaves a marker.
	writeHook(t, prolog, `if [ -e `+failFlag+` ]; then echo failing; exit 3; fi
echo "$(id -u) $SLURM_JOB_ID $SLURM_JOB_USER $SLURMD_NODENAME $SLURM_JOB_NODELIST $SLURM_SCRIPT_CONTEXT" > `+hooks+`/prolog.$SLURM_JOB_ID
`)
	writeHook(t, epilog, `if [ ! -e `+hooks+`/done.$SLURM_JOB_ID ]; then exit 1; fi
echo "$(id -u) $SLURM_JOB_ID $SLURM_SCRIPT_CONTEXT" > `+hooks+`/epilog.$SLURM_JOB_ID
`)
	if err := os.WriteFile(failFlag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, cl := startOneConf(t, "Prolog="+prolog+"\nEpilog="+epilog+"\nPrologEpilogTimeout=20\n", func(*Options) {})
	ctx := context.Background()
	work := t.TempDir()
	// The job proves the prolog ran before it, then lets the epilog pass.
	script := "#!/bin/sh\ntest -e " + hooks + "/prolog.$SLURM_JOB_ID || exit 7\ntouch " + hooks + "/done.$SLURM_JOB_ID\n"
	id, err := cl.Submit(ctx, api.JobSpec{Script: script, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	// A failed prolog drains the node and requeues the job.
	deadline := time.Now().Add(30 * time.Second)
	for {
		nodes, err := cl.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := nodes.Nodes[0]; strings.Contains(n.State, "DRAIN") {
			if n.Reason != "Prolog error" {
				t.Errorf("drained node %+v, want reason Prolog error", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node never drained: %+v", nodes.Nodes[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Requeued held, as Slurm does unless nohold_on_prolog_fail.
	if j := waitJob(t, cl, id, api.StatePending); j.Restarts != 1 || j.Hold != api.HoldRequeue || j.Reason != api.ReasonRequeueHeld {
		t.Errorf("requeued job: Restarts=%d Hold=%q Reason=%q, want 1, requeue, %q", j.Restarts, j.Hold, j.Reason, api.ReasonRequeueHeld)
	}
	if _, err := os.Stat(filepath.Join(hooks, "epilog."+strconv.FormatUint(id, 10))); err == nil {
		t.Error("epilog ran for a job that never started")
	}
	// Fixed and resumed, the node runs it: prolog as root with the job's
	// environment, then the job, then the epilog.
	os.Remove(failFlag)
	if err := cl.Update(ctx, api.UpdateRequest{Nodes: []string{"node1"}, Set: map[string]string{"State": "RESUME"}}); err != nil {
		t.Fatal(err)
	}
	if res, err := cl.JobControl(ctx, api.JobControlRequest{Action: "release", JobIDs: []uint64{id}}); err != nil || res[0].Error != "" {
		t.Fatalf("release: %v %+v", err, res)
	}
	j := waitJob(t, cl, id, api.StateCompleted)
	if j.ExitCode != 0 || j.Restarts != 1 {
		t.Errorf("job ended %+v", j)
	}
	got := strings.TrimSpace(waitFile(t, filepath.Join(hooks, "prolog."+strconv.FormatUint(id, 10))))
	want := "0 " + strconv.FormatUint(id, 10) + " " + j.User + " node1 node1 prolog_slurmd"
	if got != want {
		t.Errorf("prolog saw %q, want %q", got, want)
	}
	// The end is reported after the epilog, so its marker is there now.
	if got, want := strings.TrimSpace(waitFile(t, filepath.Join(hooks, "epilog."+strconv.FormatUint(id, 10)))), "0 "+strconv.FormatUint(id, 10)+" epilog_slurmd"; got != want {
		t.Errorf("epilog saw %q, want %q", got, want)
	}
	nodes, _ := cl.Nodes(ctx)
	if n := nodes.Nodes[0]; strings.Contains(n.State, "DRAIN") {
		t.Errorf("node drained after a good epilog: %+v", n)
	}

	// A failing epilog (the job did not leave its mark) drains the node
	// with "Epilog error"; the job keeps its state.
	id2, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nexit 0\n", WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id2, api.StateCompleted)
	deadline = time.Now().Add(30 * time.Second)
	for {
		nodes, _ := cl.Nodes(ctx)
		if n := nodes.Nodes[0]; strings.Contains(n.State, "DRAIN") {
			if n.Reason != "Epilog error" {
				t.Errorf("drained node %+v, want reason Epilog error", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node never drained after a failed epilog: %+v", nodes.Nodes[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The node call other nodes' prologs and epilogs go through.
func TestPrologNodeCall(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	hooks := t.TempDir()
	prolog := filepath.Join(hooks, "prolog")
	writeHook(t, prolog, "echo \"$SLURM_JOB_ID $SLURM_JOB_UID $SLURM_JOB_PARTITION\" > "+hooks+"/out\n[ \"$SLURM_JOB_ID\" = 42 ]\n")
	d, _ := startOneConf(t, "Prolog="+prolog+"\nPrologEpilogTimeout=20\n", func(*Options) {})
	ctx := context.Background()
	job := api.Job{ID: 42, UID: 1000, Spec: api.JobSpec{Partition: "debug"}, Alloc: []api.NodeAlloc{{Node: "node1"}}}
	var res agent.ScriptResult
	if err := d.peers.CallNode(ctx, d.addr(d.cfg.APIPort), "/internal/launch?phase=prolog", job, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Ran || res.Error != "" {
		t.Errorf("good prolog: %+v", res)
	}
	if got := strings.TrimSpace(waitFile(t, filepath.Join(hooks, "out"))); got != "42 1000 debug" {
		t.Errorf("prolog saw %q", got)
	}
	job.ID = 43
	res = agent.ScriptResult{}
	if err := d.peers.CallNode(ctx, d.addr(d.cfg.APIPort), "/internal/launch?phase=prolog", job, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Ran || !strings.Contains(res.Error, "exit status 1") {
		t.Errorf("failing prolog: %+v", res)
	}
	// Epilog is not configured: nothing runs.
	res = agent.ScriptResult{}
	if err := d.peers.CallNode(ctx, d.addr(d.cfg.APIPort), "/internal/launch?phase=epilog", job, &res); err != nil || res.Ran {
		t.Errorf("unconfigured epilog: %+v %v", res, err)
	}
}
