package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// apiErr is the message of an api.Error ("" for none).
func apiErr(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func partitionOf(t *testing.T, cl *api.Client, name string) *api.Partition {
	t.Helper()
	resp, err := cl.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range resp.Partitions {
		if resp.Partitions[i].Name == name {
			return &resp.Partitions[i]
		}
	}
	return nil
}

// scontrol create/update/delete partition through a real daemon: sinfo's
// view changes at once, a job runs in a created partition, a partition
// with a running job is not deleted, a deleted one refuses jobs, and only
// root, SlurmUser and administrators may change partitions.
func TestPartitionRoutes(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	create := api.PartitionRequest{Action: api.PartitionCreate, Name: "short", Set: [][2]string{{"Nodes", "node1"}, {"MaxTime", "30"}}}
	if err := cl.ChangePartition(ctx, create); err != nil {
		t.Fatal(err)
	}
	if p := partitionOf(t, cl, "short"); p == nil || p.MaxTimeMin != 30 || p.State != "UP" || p.Default {
		t.Fatalf("created: %+v", p)
	}
	for _, c := range []struct {
		req  api.PartitionRequest
		want string
	}{
		{create, api.ErrInvalidPartition},
		{api.PartitionRequest{Action: api.PartitionCreate, Name: "bad", Set: [][2]string{{"Nodes", "node9"}}}, api.ErrInvalidNodeName},
		{api.PartitionRequest{Action: api.PartitionUpdate, Name: "nosuch", Set: [][2]string{{"State", "UP"}}}, api.ErrInvalidPartition},
		{api.PartitionRequest{Action: api.PartitionDelete, Name: "nosuch"}, api.ErrInvalidPartition},
	} {
		if got := apiErr(cl.ChangePartition(ctx, c.req)); got != c.want {
			t.Errorf("%+v: %q, want %q", c.req, got, c.want)
		}
	}
	// Not root, not SlurmUser, not an administrator (an operator is not
	// enough): Slurm's Invalid user id.
	privacyUsers(t, d)
	for _, who := range []peer.Identity{annID, olgaID} {
		code, body := askAs(t, d, who, d.handlePartition, http.MethodPost, "/api/partition",
			api.PartitionRequest{Action: api.PartitionDelete, Name: "short"}, nil)
		var ae api.Error
		json.Unmarshal([]byte(body), &ae)
		if code != http.StatusForbidden || ae.Message != api.ErrUserIDMissing {
			t.Errorf("%s deletes a partition: %d %s", who.User, code, body)
		}
	}

	id, err := cl.Submit(ctx, api.JobSpec{Partition: "short", Script: "#!/bin/sh\nsleep 300\n", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, cl, id, api.StateRunning); j.Spec.TimeLimitMin != 30 {
		t.Errorf("job in short: limit %d", j.Spec.TimeLimitMin)
	}
	if got := apiErr(cl.ChangePartition(ctx, api.PartitionRequest{Action: api.PartitionDelete, Name: "short"})); got != api.ErrPartitionInUse {
		t.Errorf("delete with a running job: %q", got)
	}
	// Update: DOWN and the default, and a longer limit; sinfo sees it.
	up := api.PartitionRequest{Action: api.PartitionUpdate, Name: "short", Set: [][2]string{{"State", "DOWN"}, {"Default", "YES"}, {"MaxTime", "1:00:00"}}}
	if err := cl.ChangePartition(ctx, up); err != nil {
		t.Fatal(err)
	}
	if p := partitionOf(t, cl, "short"); p.State != "DOWN" || !p.Default || p.MaxTimeMin != 60 {
		t.Errorf("updated: %+v", p)
	}
	if p := partitionOf(t, cl, "debug"); p.Default {
		t.Error("debug is still the default")
	}
	file, err := cl.ConfigFile(ctx)
	if err != nil || !strings.Contains(file.Text, "PartitionName=short Nodes=node1 Default=YES MaxTime=01:00:00 State=DOWN") {
		t.Errorf("write config: %v\n%s", err, file.Text)
	}
	cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{id}})
	waitJob(t, cl, id, api.StateCancelled)
	if err := cl.ChangePartition(ctx, api.PartitionRequest{Action: api.PartitionDelete, Name: "short"}); err != nil {
		t.Fatal(err)
	}
	if partitionOf(t, cl, "short") != nil {
		t.Error("short is still listed")
	}
	_, err = cl.Submit(ctx, api.JobSpec{Partition: "short", Script: "#!/bin/sh\ntrue\n", WorkDir: t.TempDir()})
	if got := apiErr(err); got != api.ErrInvalidPartition {
		t.Errorf("submit to a deleted partition: %q", got)
	}
}

// scontrol reconfigure: the leader re-reads slurm.conf; scontrol's
// partitions give way to the file's, new settings show, a running job
// runs on, node changes are refused; the result survives a restart (log
// replay).
func TestReconfigureRoute(t *testing.T) {
	var opts Options
	d, cl := startOneWith(t, func(o *Options) { opts = *o })
	ctx := context.Background()
	id, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 300\n", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateRunning)
	if err := cl.ChangePartition(ctx, api.PartitionRequest{Action: api.PartitionCreate, Name: "made", Set: [][2]string{{"Nodes", "ALL"}}}); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(d.cfg.Text, "KillWait=30", "KillWait=45", 1) + "\nPartitionName=extra Nodes=node1 MaxTime=10\n"
	if err := os.WriteFile(d.confPath(), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, body := askAs(t, d, annID, d.handleReconfigure, http.MethodPost, "/api/reconfigure", struct{}{}, nil)
	if code != http.StatusForbidden || !strings.Contains(body, api.ErrUserIDMissing) {
		t.Errorf("ann reconfigures: %d %s", code, body)
	}
	if err := cl.Reconfigure(ctx); err != nil {
		t.Fatal(err)
	}
	if partitionOf(t, cl, "made") != nil || partitionOf(t, cl, "extra") == nil {
		t.Error("partitions are not slurm.conf's after reconfigure")
	}
	var served struct {
		KillWait int
	}
	if err := cl.Config(ctx, &served); err != nil || served.KillWait != 45 {
		t.Errorf("show config after reconfigure: KillWait %d %v", served.KillWait, err)
	}
	waitJob(t, cl, id, api.StateRunning)

	bad := strings.Replace(text, "RealMemory=4000", "RealMemory=8000", 1)
	if err := os.WriteFile(d.confPath(), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := apiErr(cl.Reconfigure(ctx)); got != api.ErrNeedRestart {
		t.Errorf("reconfigure with changed nodes: %q", got)
	}

	// A restart replays the log: the reconfigured partitions come back.
	d.Shutdown()
	d2, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d2.Shutdown)
	deadline := time.Now().Add(20 * time.Second)
	for d2.conf().Partition("extra") == nil || d2.conf().KillWait != 45 {
		if time.Now().After(deadline) {
			t.Fatalf("after a restart: partitions %+v", d2.conf().Partitions)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pidinfo finds a plain process's job by SLURM_JOB_ID in its environment
// or its parent's, and no job for a process outside one.
func TestJobOfPid(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "echo ready; sleep 30 & wait")
	cmd.Env = append(os.Environ(), "SLURM_JOB_ID=77")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Start returns once the kernel has begun the exec, which can be before
	// the new program's environment is in place (/proc/PID/environ reads
	// empty then): wait for the shell to speak.
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if id, ok := jobOfPid(cmd.Process.Pid, true); !ok || id != 77 {
		t.Errorf("child: %d %v", id, ok)
	}
	if _, ok := jobOfPid(cmd.Process.Pid, false); ok {
		t.Error("found by environment with cgroups in use")
	}
	if os.Getenv("SLURM_JOB_ID") == "" {
		if id, ok := jobOfPid(os.Getpid(), true); ok {
			t.Errorf("the test itself is in job %d", id)
		}
	}
	if _, ok := jobOfPid(1<<30, true); ok {
		t.Error("a pid that does not exist")
	}
}
