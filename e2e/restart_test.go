package e2e

import (
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	hpcexec "hpc/exec"
)

// TestLabRestartKeepsJobs stops a node's daemon as a service manager stops
// slurmd (SIGTERM) while two jobs run on that node, lets one of them end
// while no daemon is there, and starts the daemon again: both jobs survive
// the restart, the new daemon re-attaches to them, and their ends reach the
// controller and accounting as if nothing had happened. The daemon then
// dies (SIGKILL) and is started again; the job survives that too. A lab of its own.
func TestLabRestartKeepsJobs(t *testing.T) {
	needLab(t)
	l, work := startRestartLab(t, "hpc-restart-")
	wait := func(name string) string {
		return fmt.Sprintf("while [ ! -e %s ]; do sleep 0.1; done\n", filepath.Join(work, name))
	}
	cpus := "grep Cpus_allowed_list /proc/self/status; "
	long := l.submit(nobody, work, "-w", "node3", "-o", "long.out", "--wrap",
		"echo start; "+cpus+strings.ReplaceAll(wait("go-long"), "\n", "; ")+"echo end $SLURM_JOB_ID")
	short := l.submit(nobody, work, "-w", "node3", "-o", "short.out", "--wrap",
		"echo start; "+cpus+strings.ReplaceAll(wait("go-short"), "\n", "; ")+"exit 4")
	l.waitState(long, "R")
	l.waitState(short, "R")
	longCPUs := waitFile(t, filepath.Join(work, "long.out"), "Cpus_allowed_list")
	shortCPUs := waitFile(t, filepath.Join(work, "short.out"), "Cpus_allowed_list")
	// Each job holds one of node3's two CPUs (scontrol show job -d) and
	// runs on it: a host CPU of its own where the host has two.
	var ids []string
	for _, id := range []uint64{long, short} {
		out, _, _ := l.run(0, l.top, "scontrol", "-d", "show", "job", fmt.Sprint(id))
		m := regexp.MustCompile(`Nodes=node3 CPU_IDs=(\S+) Mem=`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("scontrol -d show job %d:\n%s", id, out)
		}
		ids = append(ids, m[1])
	}
	if ids[0] == ids[1] || (ids[0] != "0" && ids[0] != "1") || (ids[1] != "0" && ids[1] != "1") {
		t.Errorf("CPU_IDs %v", ids)
	}
	if runtime.NumCPU() >= 2 && longCPUs == shortCPUs {
		t.Errorf("both jobs run on the same CPUs: %q", longCPUs)
	}

	// Stop node3's daemon as a service manager would.
	l.stopDaemon("node3", syscall.SIGTERM)
	// The short job ends while no daemon runs on its node.
	if err := os.WriteFile(filepath.Join(work, "go-short"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up again: %d\n%s\n%s", code, out, errs)
	}
	// The controller learns the short job's end from the new daemon.
	l.waitAcct(short, fmt.Sprintf("%d|nobody|FAILED|4:0|node3", short))
	// The long job runs on, and survives a crash of the daemon too.
	if out, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(long), "-o", "%t %N"); strings.TrimSpace(out) != "R node3" {
		t.Errorf("long job after the restart: %q", out)
	}
	l.stopDaemon("node3", syscall.SIGKILL)
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after the crash: %d\n%s\n%s", code, out, errs)
	}
	if out, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(long), "-o", "%t %N"); strings.TrimSpace(out) != "R node3" {
		t.Errorf("long job after the crash: %q", out)
	}
	if err := os.WriteFile(filepath.Join(work, "go-long"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l.waitAcct(long, fmt.Sprintf("%d|nobody|COMPLETED|0:0|node3", long))
	if got := readFileT(t, filepath.Join(work, "long.out")); got != fmt.Sprintf("start\n%s\nend %d\n", longCPUs, long) {
		t.Errorf("output of the re-attached job: %q", got)
	}
	// Nothing of them is left on the node.
	if ents, _ := os.ReadDir(filepath.Join(l.dir, "node3", "running")); len(ents) != 0 {
		t.Errorf("job records left: %v", ents)
	}

	// The node "reboots": its daemon and the job's processes die. The
	// job the controller still thinks running there ends once the node's
	// new daemon registers without it, rather than running for ever:
	// NODE_FAIL under --no-requeue (requeued otherwise, as Slurm does).
	gone := l.submit(nobody, work, "-w", "node3", "--no-requeue", "-o", "gone.out", "--wrap", "echo start; sleep 300")
	l.waitState(gone, "R")
	waitFile(t, filepath.Join(work, "gone.out"), "start")
	l.stopDaemon("node3", syscall.SIGKILL)
	// The node's cgroups are named like its container state directory.
	node3 := filepath.Base(hpcexec.ContainerStateDir("node3", filepath.Join(l.dir, "node3", "exec")))
	procs, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/hpc/%s/job_%d/%d.batch/cgroup.procs", node3, gone, gone))
	if len(procs) == 0 {
		procs, _ = filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/hpc/%s/job_%d/%d.batch/cgroup.procs", node3, gone, gone)) // cgroup v2
	}
	if len(procs) != 1 {
		t.Fatalf("the job's cgroup: %v", procs)
	}
	pids, _ := os.ReadFile(procs[0])
	for _, p := range strings.Fields(string(pids)) {
		n, _ := strconv.Atoi(p)
		syscall.Kill(n, syscall.SIGKILL)
	}
	// A reboot empties /run, where the containers' state is.
	states, _ := filepath.Glob(fmt.Sprintf("/run/hpc/%s/%d.batch", node3, gone))
	if len(states) != 1 {
		t.Fatalf("the job's container state: %v", states)
	}
	os.RemoveAll(states[0])
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after the reboot: %d\n%s\n%s", code, out, errs)
	}
	waitFor(t, 60*time.Second, fmt.Sprintf("job %d, lost in the reboot, to end NODE_FAIL", gone), func() (bool, string) {
		row := l.acctRow(gone)
		return strings.Contains(row, "|NODE_FAIL|"), fmt.Sprintf("%q", row)
	})
	if out, _, _ := l.run(0, l.top, "scontrol", "show", "job", fmt.Sprint(gone)); !strings.Contains(out, "Reason=batch_job_missing_from_its_node") {
		t.Errorf("the lost job's reason:\n%s", out)
	}
}

// waitAcct polls sacct until the job's row is want.
func (l *labT) waitAcct(id uint64, want string) {
	l.t.Helper()
	waitFor(l.t, 60*time.Second, fmt.Sprintf("job %d's sacct row to be %q", id, want), func() (bool, string) {
		got := l.acctRow(id)
		return got == want, fmt.Sprintf("%q", got)
	})
}

// startRestartLab starts a 3-node lab led by node1 (so that the others'
// daemons can go away without a new election), with a work directory of
// nobody's.
func startRestartLab(t *testing.T, prefix string) (*labT, string) {
	t.Helper()
	return startRestartLabConf(t, prefix, "")
}

// startRestartLabConf is startRestartLab with more of slurm.conf.
func startRestartLabConf(t *testing.T, prefix, extra string) (*labT, string) {
	t.Helper()
	l, _ := startLab(t, prefix, 3, "KillWait=2\n"+extra)
	// Should the test stop while a daemon is down, the lab's daemons are
	// started again first, so that hpc down stops their jobs too.
	t.Cleanup(func() { l.run(0, l.top, "up", "--dir", l.dir) })
	if out, errs, code := l.run(0, l.top, "scontrol", "takeover", "node1"); code != 0 {
		t.Fatalf("takeover: %s %s", out, errs)
	}
	work := filepath.Join(l.top, "work")
	os.Mkdir(work, 0o755)
	os.Chown(work, nobody, nobody)
	return l, work
}

// stopDaemon stops node's daemon with sig and waits until it is gone.
func (l *labT) stopDaemon(node string, sig syscall.Signal) {
	l.t.Helper()
	b, err := os.ReadFile(filepath.Join(l.dir, node, "hpc.pid"))
	if err != nil {
		l.t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, sig); err != nil {
		l.t.Fatal(err)
	}
	waitFor(l.t, 30*time.Second, fmt.Sprintf("%s's daemon (pid %d) to stop", node, pid), func() (bool, string) {
		return syscall.Kill(pid, 0) != nil, ""
	})
}

// TestLabRestartKeepsSteps restarts node daemons under a running srun
// step, as slurmd restarts under Slurm's steps: first a node that runs one
// of its tasks (SIGTERM), while the tasks write output nobody reads, then
// the node that runs the batch script and launched the step for its srun
// (SIGKILL), then every daemon at once (SIGTERM). The step runs on; its
// output, written before, during and after the restarts, reaches the
// job's output once, in order per task; srun reports the task that failed
// and exits with its code, and the step is accounted FAILED 3:0 by the
// new daemon. A lab of its own.
func TestLabRestartKeepsSteps(t *testing.T) {
	needLab(t)
	l, work := startRestartLab(t, "hpc-restart-steps-")
	l.commandsOnPath(t)
	wait := func(name string) string {
		return fmt.Sprintf("while [ ! -e %s ]; do sleep 0.1; done; ", filepath.Join(work, name))
	}
	task := "echo start $SLURM_PROCID; " + wait("go1") +
		// More than a pipe holds, while node3 has no daemon.
		"printf %0100000d 0 | tr 0 x; echo; echo mid $SLURM_PROCID; " + wait("go2") +
		"echo end $SLURM_PROCID; exit $((SLURM_PROCID*3))"
	id := l.submit(nobody, work, "-N2", "-w", "node2,node3", "-o", "steps.out", "--wrap",
		"srun -l sh -c '"+task+"'; echo srun=$?")
	l.waitState(id, "R")
	out := filepath.Join(work, "steps.out")
	waitFile(t, out, "0: start 0")
	waitFile(t, out, "1: start 1")

	// node3 runs task 1 only.
	l.stopDaemon("node3", syscall.SIGTERM)
	if err := os.WriteFile(filepath.Join(work, "go1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, "0: mid 0")
	time.Sleep(300 * time.Millisecond) // task 1 writes into its pipe, which fills
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "mid 1") {
		t.Fatal("task 1's output arrived while its node had no daemon")
	}
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up again: %d\n%s\n%s", code, out, errs)
	}
	waitFile(t, out, "1: mid 1")

	// node2 runs the batch script, its srun and the step's launcher.
	l.stopDaemon("node2", syscall.SIGKILL)
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after the crash: %d\n%s\n%s", code, out, errs)
	}
	// Every daemon at once, the controller's included (an upgrade).
	for _, n := range []string{"node1", "node2", "node3"} {
		l.stopDaemon(n, syscall.SIGTERM)
	}
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after stopping every daemon: %d\n%s\n%s", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(work, "go2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l.waitAcct(id, fmt.Sprintf("%d|nobody|COMPLETED|0:0|node[2-3]", id))
	got := readFileT(t, out)
	var lines []string
	xs := 0
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if rest, ok := strings.CutPrefix(line, "1: "); ok && strings.Trim(rest, "x") == "" {
			xs += len(rest)
			continue
		}
		if rest, ok := strings.CutPrefix(line, "0: "); ok && strings.Trim(rest, "x") == "" {
			continue
		}
		lines = append(lines, line)
	}
	want := map[string]int{"0: start 0": 1, "1: start 1": 1, "0: mid 0": 1, "1: mid 1": 1, "0: end 0": 1, "1: end 1": 1,
		"srun: error: node3: task 1: Exited with exit code 3": 1, "srun=3": 1}
	seen := map[string]int{}
	for _, line := range lines {
		seen[line]++
	}
	if !maps.Equal(seen, want) || xs != 100000 {
		t.Errorf("output after the restarts (%d x of task 1):\n%s", xs, got)
	}
	// Each task's lines in order.
	for _, task := range []string{"0", "1"} {
		var order []string
		for _, line := range lines {
			if strings.HasPrefix(line, task+": ") {
				order = append(order, strings.Fields(line)[1])
			}
		}
		if strings.Join(order, " ") != "start mid end" {
			t.Errorf("task %s's lines in the order %v", task, order)
		}
	}
	acct, _, _ := l.run(0, l.top, "acct", "-P", "-n", "-j", fmt.Sprint(id), "-o", "JobID,State,ExitCode,NodeList")
	if !strings.Contains(acct, fmt.Sprintf("%d.0|FAILED|3:0|node[2-3]\n", id)) {
		t.Errorf("the step in sacct:\n%s", acct)
	}

	// srun's input goes on reaching its task across a crash of the
	// daemon srun talks to (node1, the controller too) and a restart of
	// the task's node's daemon (node2), which writes it to the task.
	in, feed := io.Pipe()
	cmd := exec.Command(l.bin, "srun", "-w", "node2", "cat")
	var catOut, catErr strings.Builder
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &catOut, &catErr
	cmd.Env = append(os.Environ(), "HPC_DIR="+l.dir, "HPC_SOCKET="+filepath.Join(l.dir, "node1", "hpc.sock"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(feed, "one\n")
	waitFor(t, time.Minute, "srun's allocation", func() (bool, string) {
		last := l.lastJob()
		return last != id, fmt.Sprintf("newest job %d", last)
	})
	l.waitState(l.lastJob(), "R")
	time.Sleep(time.Second)
	l.stopDaemon("node1", syscall.SIGKILL)
	wrote := make(chan struct{})
	go func() {
		io.WriteString(feed, "two\n") // waits in srun while the daemon is away
		close(wrote)
	}()
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after the crash: %d\n%s\n%s", code, out, errs)
	}
	<-wrote
	time.Sleep(time.Second)
	l.stopDaemon("node2", syscall.SIGTERM)
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after stopping node2: %d\n%s\n%s", code, out, errs)
	}
	go func() {
		io.WriteString(feed, "three\n")
		feed.Close()
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(time.Minute):
		cmd.Process.Kill() // input lost: cat never saw its end
		err = <-waited
	}
	if err != nil || catOut.String() != "one\ntwo\nthree\n" {
		t.Errorf("srun cat across a restart: %v, stdout %q, stderr %q", err, catOut.String(), catErr.String())
	}
}

// TestLabRestartKeepsAllocation: salloc's allocation runs nothing on its
// batch host (the node holds it: exec.Executor.Hold), and holds it across
// the death of that node's daemon (SIGKILL): the next daemon holds it
// again, salloc's command then runs a step there, and the job ends
// COMPLETED when salloc's command does.
func TestLabRestartKeepsAllocation(t *testing.T) {
	needLab(t)
	// Nodes register every 2 s, so that the leader would have found the
	// allocation lost (two registrations in a row without it) well
	// before salloc's command goes on.
	l, work := startRestartLabConf(t, "hpc-restart-alloc-", "SlurmdTimeout=6\n")
	l.commandsOnPath(t) // salloc's command runs srun
	gate := filepath.Join(work, "go")
	type result struct {
		out, errs string
		code      int
	}
	done := make(chan result, 1)
	go func() {
		out, errs, code := l.run(nobody, work, "salloc", "-N1", "-w", "node2", "sh", "-c",
			"while [ ! -e "+gate+" ]; do sleep 0.1; done; srun hostname; echo after=$?")
		done <- result{out, errs, code}
	}()
	var id uint64
	waitFor(t, 60*time.Second, "salloc's job to run", func() (bool, string) {
		out, _, _ := l.run(0, l.top, "queue", "-h", "-t", "R", "-o", "%i")
		n, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
		id = n
		return err == nil, out
	})
	// The run (its start time) and its restart count: a requeue of the
	// allocation would change both.
	run := func() string {
		out, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(id), "-o", "%t %S")
		show, _, _ := l.run(0, l.top, "scontrol", "show", "job", fmt.Sprint(id))
		return strings.TrimSpace(out) + " " + regexp.MustCompile(`Restarts=\d+`).FindString(show)
	}
	before := run()
	if !strings.HasPrefix(before, "R ") || !strings.HasSuffix(before, " Restarts=0") {
		t.Fatalf("job %d before the crash: %q", id, before)
	}
	l.stopDaemon("node2", syscall.SIGKILL)
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after the crash: %d\n%s\n%s", code, out, errs)
	}
	for range 4 { // 8 s: four registrations
		time.Sleep(2 * time.Second)
		if now := run(); now != before {
			t.Fatalf("after node2's daemon came back, job %d is %q, was %q", id, now, before)
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.code != 0 || r.out != "node2\nafter=0\n" {
			t.Errorf("salloc: exit %d, %q %q", r.code, r.out, r.errs)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("salloc did not end")
	}
	l.waitAcct(id, fmt.Sprintf("%d|nobody|COMPLETED|0:0|node2", id))
}
