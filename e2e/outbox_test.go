package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/peer"
	hpcexec "hpc/exec"
)

// TestLabOutbox: a node's daemon dies (SIGKILL) while its job runs, the job
// ends while no daemon is there, and the daemon is started again: the job
// ends with its real exit code, not as a batch job missing from its node.
// The same when the daemon dies after it saw the job end but before the
// leader committed the end (it runs the Epilog first): the end waited in
// the node's outbox. Then a job is requeued and started again on the same
// node, and the end of its first run, sent again as a node's agent sends
// it, changes nothing. A lab of its own.
func TestLabOutbox(t *testing.T) {
	needLab(t)
	marks := t.TempDir()
	epilog := filepath.Join(marks, "epilog.sh")
	script := fmt.Sprintf("#!/bin/sh\ntouch %[1]s/epilog-$SLURM_JOB_ID\n[ -e %[1]s/slow ] && sleep 10\nexit 0\n", marks)
	if err := os.WriteFile(epilog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	l, _ := startLab(t, "hpc-outbox-", 3, "KillWait=2\nEpilog="+epilog+"\n")
	t.Cleanup(func() { l.run(0, l.top, "up", "--dir", l.dir) })
	if out, errs, code := l.run(0, l.top, "scontrol", "takeover", "node1"); code != 0 {
		t.Fatalf("takeover: %s %s", out, errs)
	}
	work := filepath.Join(l.top, "work")
	os.Mkdir(work, 0o755)
	os.Chown(work, nobody, nobody)
	up := func(why string) {
		t.Helper()
		if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
			t.Fatalf("up %s: %d\n%s\n%s", why, code, out, errs)
		}
	}
	ended := func(id uint64, code string) {
		t.Helper()
		l.waitAcct(id, fmt.Sprintf("%d|nobody|FAILED|%s|node2", id, code))
		out, _, _ := l.run(0, l.top, "scontrol", "show", "job", fmt.Sprint(id))
		if !strings.Contains(out, "JobState=FAILED") || !strings.Contains(out, "ExitCode="+code) || strings.Contains(out, "missing") {
			t.Errorf("scontrol show job after the restart:\n%s", out)
		}
	}

	id := l.submit(nobody, work, "-w", "node2", "-o", "seven.out", "--wrap", "echo start; sleep 3; exit 7")
	l.waitState(id, "R")
	waitFile(t, filepath.Join(work, "seven.out"), "start")
	l.stopDaemon("node2", syscall.SIGKILL)
	// The job's processes end while no daemon runs on node2.
	node2 := filepath.Base(hpcexec.ContainerStateDir("node2", filepath.Join(l.dir, "node2", "exec")))
	procs := fmt.Sprintf("/sys/fs/cgroup/pids/hpc/%s/job_%d/%d.batch/cgroup.procs", node2, id, id)
	if _, err := os.Stat(procs); err != nil {
		procs = fmt.Sprintf("/sys/fs/cgroup/hpc/%s/job_%d/%d.batch/cgroup.procs", node2, id, id) // cgroup v2
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("job %d's processes to exit", id), func() (bool, string) {
		b, err := os.ReadFile(procs)
		return err != nil || strings.TrimSpace(string(b)) == "", string(b)
	})
	up("after the crash")
	ended(id, "7:0")

	// The daemon dies in the Epilog, after it saw the job end and before
	// it reported the end.
	os.WriteFile(filepath.Join(marks, "slow"), nil, 0o644)
	id = l.submit(nobody, work, "-w", "node2", "-o", "five.out", "--wrap", "echo start; sleep 1; exit 5")
	waitFor(t, 60*time.Second, fmt.Sprintf("job %d's epilog", id), func() (bool, string) {
		_, err := os.Stat(filepath.Join(marks, fmt.Sprintf("epilog-%d", id)))
		return err == nil, ""
	})
	l.stopDaemon("node2", syscall.SIGKILL)
	os.Remove(filepath.Join(marks, "slow"))
	if ents, _ := os.ReadDir(filepath.Join(l.dir, "node2", "outbox")); len(ents) != 1 {
		t.Errorf("node2's outbox during the epilog: %v", ents)
	}
	up("after the crash in the epilog")
	ended(id, "5:0")
	if ents, _ := os.ReadDir(filepath.Join(l.dir, "node2", "outbox")); len(ents) != 0 {
		t.Errorf("outbox not empty once committed: %v", ents)
	}

	// A requeued job's first run ends; the second runs on node2 again.
	rq := l.submit(nobody, work, "-w", "node2", "-o", "rq.out", "--wrap", "echo run $SLURM_RESTART_COUNT; sleep 300")
	l.waitState(rq, "R")
	run1 := l.job(rq).StartTime
	if out, errs, code := l.run(0, l.top, "scontrol", "requeue", fmt.Sprint(rq)); code != 0 {
		t.Fatalf("requeue: %s %s", out, errs)
	}
	waitFor(t, 90*time.Second, fmt.Sprintf("job %d to run again", rq), func() (bool, string) {
		j := l.job(rq)
		return j.State == api.StateRunning && j.Restarts == 1, fmt.Sprintf("%s restarts %d", j.State, j.Restarts)
	})
	run2 := l.job(rq).StartTime
	if run2.Equal(run1) {
		t.Fatalf("both runs started at %v", run1)
	}
	// The first run's end, resent by node2's agent as if its answer was lost.
	sendNodeEnd(t, l, "node2", api.JobEnd{JobID: rq, Node: "node2", ExitCode: 9, Start: run1, End: run2, Run: run1})
	time.Sleep(time.Second)
	if j := l.job(rq); j.State != api.StateRunning || !j.StartTime.Equal(run2) || j.ExitCode != 0 {
		t.Errorf("a stale end changed the job's run: %s start %v exit %d", j.State, j.StartTime, j.ExitCode)
	}
	if out, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(rq), "-o", "%t %N"); strings.TrimSpace(out) != "R node2" {
		t.Errorf("requeued job after the stale end: %q", out)
	}
	l.run(0, l.top, "scancel", fmt.Sprint(rq))
	waitFor(t, 60*time.Second, fmt.Sprintf("job %d to end CANCELLED", rq), func() (bool, string) {
		row := l.acctRow(rq)
		return strings.Contains(row, "|CANCELLED"), row
	})

	// The same when the daemon that dies is the leader's: the others elect
	// a new one, and the job ends with its real exit code and usage once
	// the node's daemon is back, within SlurmdTimeout.
	out, _, _ := l.run(0, l.top, "status")
	m := regexp.MustCompile(`Leader:\s+(node\d)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no leader in status:\n%s", out)
	}
	leader := m[1]
	id = l.submit(nobody, work, "-w", leader, "-o", "six.out", "--wrap", "echo start; head -c 20000000 /dev/zero | tail -c 1 >/dev/null; sleep 3; exit 6")
	l.waitState(id, "R")
	waitFile(t, filepath.Join(work, "six.out"), "start")
	l.stopDaemon(leader, syscall.SIGKILL)
	up("after the leader's crash")
	l.waitAcct(id, fmt.Sprintf("%d|nobody|FAILED|6:0|%s", id, leader))
	out, _, _ = l.run(0, l.top, "acct", "-n", "-P", "-j", fmt.Sprint(id), "-o", "JobID,MaxRSS")
	if !strings.Contains(out, fmt.Sprintf("%d.batch|", id)) || strings.Contains(out, fmt.Sprintf("%d.batch|\n", id)) {
		t.Errorf("the batch step's usage was lost with the leader:\n%s", out)
	}
}

// sendNodeEnd posts a job end as node's agent does: through that node's
// API, signed with the cluster key, with a node's TLS credentials.
func sendNodeEnd(t *testing.T, l *labT, node string, e api.JobEnd) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(l.dir, "cluster.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadAll(filepath.Join(l.dir, "slurm.conf"))
	if err != nil {
		t.Fatal(err)
	}
	addr := cfg.Node(node).Addr
	creds, err := peer.NodeCredentials(t.TempDir(), node, []string{addr}, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api := fmt.Sprintf("%s:%d", addr, cfg.APIPort)
	if err := peer.NewCaller(key, cfg, creds).CallNode(ctx, api, "/internal/job-end", e, nil); err != nil {
		t.Fatalf("job end through %s: %v", api, err)
	}
}
