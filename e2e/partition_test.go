package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Partitions made with scontrol are part of the replicated state: after
// the leader dies, the new leader has them, schedules jobs in them, and
// still refuses a deleted one. scontrol reconfigure then re-reads
// slurm.conf on every controller.
func TestPartitionLab(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-partition-", 3, "")
	// The daemon killed below is started again first, so that hpc down
	// stops everything it left.
	t.Cleanup(func() { l.run(0, l.top, "up", "--dir", l.dir) })
	scontrol := func(args ...string) string {
		t.Helper()
		o, e, code := l.run(0, l.top, append([]string{"scontrol"}, args...)...)
		if code != 0 {
			t.Fatalf("scontrol %v: %d %s %s", args, code, o, e)
		}
		return o
	}
	scontrol("create", "PartitionName=made", "Nodes=node[1-2]", "MaxTime=5")
	scontrol("create", "PartitionName=gone", "Nodes=node3")
	scontrol("delete", "PartitionName=gone")
	if o := scontrol("show", "partition", "made"); !strings.Contains(o, "MaxTime=00:05:00") || !strings.Contains(o, "Nodes=node[1-2]") {
		t.Fatalf("show partition made:\n%s", o)
	}

	st, _, _ := l.run(0, l.top, "status")
	m := regexp.MustCompile(`Leader:\s+(node\d)`).FindStringSubmatch(st)
	if m == nil {
		t.Fatalf("no leader in status:\n%s", st)
	}
	pid, err := os.ReadFile(filepath.Join(l.dir, m[1], "hpc.pid"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "a new leader with partition made", func() (bool, string) {
		o, e, code := l.run(0, l.top, "scontrol", "show", "partition", "made")
		return code == 0 && strings.Contains(o, "MaxTime=00:05:00"), o + e
	})
	if o, e, code := l.run(0, l.top, "sbatch", "-p", "gone", "--wrap", "true"); code == 0 || !strings.Contains(e, "Invalid partition name specified") {
		t.Errorf("sbatch to a deleted partition after failover: %d %s %s", code, o, e)
	}
	// The dead leader's node must be DOWN before a job may go there.
	waitFor(t, 60*time.Second, m[1]+" down", func() (bool, string) {
		out, _, _ := l.run(0, l.top, "nodes", "-N", "-h")
		return regexp.MustCompile(m[1] + `\s.*down`).MatchString(out), out
	})
	id := l.submit(0, l.top, "-p", "made", "--wrap", "sleep 300")
	l.waitState(id, "R")
	l.pidinfo(id)

	// reconfigure: slurm.conf's partitions come back; the job runs on.
	scontrol("reconfigure")
	if _, _, code := l.run(0, l.top, "scontrol", "show", "partition", "made"); code == 0 {
		t.Error("scontrol's partition is still there after reconfigure")
	}
	l.waitState(id, "R")
	if o, e, code := l.run(0, l.top, "scancel", strconv.FormatUint(id, 10)); code != 0 {
		t.Fatalf("scancel: %d %s %s", code, o, e)
	}
	waitFor(t, 60*time.Second, "the job's end", func() (bool, string) {
		out, _, _ := l.run(0, l.top, "queue", "-h", "-j", strconv.FormatUint(id, 10), "-o", "%t")
		return strings.TrimSpace(out) == "" || strings.TrimSpace(out) == "CA", out
	})
	time.Sleep(2 * time.Second) // its container's mounts go with it
}

// pidinfo checks scontrol pidinfo on the node that runs job id, for a
// process of the job's cgroup, and for one outside any job.
func (l *labT) pidinfo(id uint64) {
	t := l.t
	t.Helper()
	out, _, _ := l.run(0, l.top, "queue", "-h", "-j", strconv.FormatUint(id, 10), "-o", "%N")
	node := strings.TrimSpace(out)
	var pids []string
	poll(15*time.Second, func() (bool, string) {
		procs, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/hpc/*/job_%d/*/cgroup.procs", id))
		if len(procs) == 0 {
			procs, _ = filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/hpc/*/job_%d/*/cgroup.procs", id)) // cgroup v2
		}
		for _, p := range procs {
			b, _ := os.ReadFile(p)
			pids = append(pids, strings.Fields(string(b))...)
		}
		return len(pids) > 0, ""
	})
	if len(pids) == 0 {
		t.Logf("job %d has no cgroup (plain processes?): pidinfo not checked", id)
		return
	}
	t.Setenv("HPC_SOCKET", filepath.Join(l.dir, node, "hpc.sock"))
	// A job's cgroup holds short-lived processes too (the container's
	// setup, a shell that execs): one gone by the time it is asked about
	// is no job's any more, so each pid listed is tried, and the list read
	// again, until one answers.
	want := fmt.Sprintf("Slurm JobId=%d ends at ", id)
	var o, e string
	var code int
	poll(15*time.Second, func() (bool, string) {
		for _, pid := range pids {
			o, e, code = l.run(0, l.top, "scontrol", "pidinfo", pid)
			if code == 0 && strings.HasPrefix(o, want) && strings.Contains(o, "\nJob remaining time is ") {
				return true, ""
			}
		}
		pids = pids[:0]
		procs, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/hpc/*/job_%d/*/cgroup.procs", id))
		if len(procs) == 0 {
			procs, _ = filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/hpc/*/job_%d/*/cgroup.procs", id))
		}
		for _, p := range procs {
			b, _ := os.ReadFile(p)
			pids = append(pids, strings.Fields(string(b))...)
		}
		return false, ""
	})
	if code != 0 || !strings.HasPrefix(o, want) || !strings.Contains(o, "\nJob remaining time is ") {
		t.Errorf("pidinfo of job %d's processes: %d %q %q", id, code, o, e)
	}
	o, e, code = l.run(0, l.top, "scontrol", "pidinfo", strconv.Itoa(os.Getpid()))
	if code != 1 || e != "Failed to locate job for requested pid\n" {
		t.Errorf("pidinfo of the test: %d %q %q", code, o, e)
	}
	os.Unsetenv("HPC_SOCKET")
}
