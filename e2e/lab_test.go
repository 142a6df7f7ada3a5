package e2e

// The walking skeleton's end-to-end test: a real 3-node cluster of hpc
// daemons (real memberlist, real Raft over TCP, real libcontainer steps,
// real SQLite files) on loopback addresses of their own, driven through the
// command line as root and as an unprivileged user.

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

	"golang.org/x/sys/unix"

	"hpc/accounting"
)

func TestLabEndToEnd(t *testing.T) {
	needLab(t)
	l, out := startLab(t, "hpc-lab-", 3, "KillWait=3\n")
	top := l.top
	if !strings.Contains(out, "is up") || !strings.Contains(out, "leader") {
		t.Fatalf("hpc up summary missing:\n%s", out)
	}
	// Each node has its own address, state directory, log and socket.
	for i, n := range []string{"node1", "node2", "node3"} {
		for _, f := range []string{"hpc.log", "hpc.sock", "raft/raft.db", "accounting.db"} {
			if _, err := os.Stat(filepath.Join(l.dir, n, f)); err != nil {
				t.Errorf("%s: %v", n, err)
			}
		}
		if !strings.Contains(out, fmt.Sprintf("%s%d", l.net, i+1)) {
			t.Errorf("summary does not show %s's address", n)
		}
	}

	t.Run("UpTwice", func(t *testing.T) {
		l := l.with(t)
		out, _, code := l.run(0, top, "up", "--dir", l.dir)
		if code != 0 || !strings.Contains(out, "already up") {
			t.Fatalf("second up: exit %d: %s", code, out)
		}
	})

	t.Run("Status", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(0, top, "status")
		if code != 0 {
			t.Fatalf("status: %s %s", out, errs)
		}
		for _, want := range []string{"Leader:   node", "Voters:   node1, node2, node3", "alive"} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
		if strings.Count(out, "alive") != 3 {
			t.Errorf("want 3 alive members:\n%s", out)
		}
	})

	t.Run("Takeover", func(t *testing.T) {
		l := l.with(t)
		if _, errs, code := l.run(nobody, top, "scontrol", "takeover", "node3"); code == 0 || !strings.Contains(errs, "Access/permission denied") {
			t.Errorf("takeover as nobody: exit %d %q", code, errs)
		}
		if out, errs, code := l.run(0, top, "scontrol", "takeover", "node3"); code != 0 {
			t.Fatalf("takeover: exit %d %q %q", code, out, errs)
		}
		// The node asked (node1) learns its new leader from node3's first
		// message, which may follow takeover's answer by a heartbeat.
		waitFor(t, 5*time.Second, "node1 to see node3 lead", func() (bool, string) {
			out, _, _ := l.run(0, top, "status")
			return strings.Contains(out, "Leader:   node3"), out
		})
	})

	t.Run("Sinfo", func(t *testing.T) {
		l := l.with(t)
		out, _, _ := l.run(0, top, "nodes")
		want := "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n" +
			"debug*       up 1-00:00:00      3   idle node[1-3]\n" +
			"gpu          up 1-00:00:00      2   idle node[2-3]\n"
		if out != want {
			t.Fatalf("sinfo:\n%s\nwant:\n%s", out, want)
		}
	})

	rootDir := filepath.Join(top, "root-work")
	userDir := filepath.Join(top, "nobody-work")
	os.Mkdir(rootDir, 0o755)
	os.Mkdir(userDir, 0o755)
	os.Chown(userDir, nobody, nobody)

	script := "#!/bin/bash\n#SBATCH -J envjob\n#SBATCH --ntasks=1\n" +
		"echo uid=$(id -u) gid=$(id -g)\necho pwd=$(pwd)\nenv | grep -E '^SLURM' | sort\n"
	for _, d := range []string{rootDir, userDir} {
		os.WriteFile(filepath.Join(d, "env.sh"), []byte(script), 0o644)
	}

	t.Run("SubmitAsRoot", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(0, rootDir, "submit", "--wait", "env.sh")
		m := submittedRE.FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("submit --wait: exit %d %q %q", code, out, errs)
		}
		id := m[1]
		outFile := filepath.Join(rootDir, "slurm-"+id+".out")
		b, err := os.ReadFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		body := string(b)
		for _, want := range []string{
			"uid=0 gid=0", "pwd=" + rootDir, "SLURM_JOB_ID=" + id, "SLURM_JOB_NAME=envjob",
			"SLURM_NNODES=1", "SLURM_NTASKS=1", "SLURM_CPUS_ON_NODE=1", "SLURM_SUBMIT_DIR=" + rootDir,
			"SLURM_JOB_PARTITION=debug", "SLURMD_NODENAME=node", "SLURM_JOB_NODELIST=node",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("output lacks %q:\n%s", want, body)
			}
		}
		if owner(t, outFile) != 0 {
			t.Errorf("output owned by %d", owner(t, outFile))
		}
		n, _ := strconv.ParseUint(id, 10, 64)
		if row := l.acctRow(n); !regexp.MustCompile(`^` + id + `\|root\|COMPLETED\|0:0\|node\d$`).MatchString(row) {
			t.Errorf("acct row %q", row)
		}
	})

	t.Run("SubmitAsUser", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(nobody, userDir, "submit", "--wait", "-J", "mine", "env.sh")
		m := submittedRE.FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("submit --wait as nobody: exit %d %q %q", code, out, errs)
		}
		id := m[1]
		outFile := filepath.Join(userDir, "slurm-"+id+".out")
		b, err := os.ReadFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), fmt.Sprintf("uid=%d gid=%d", nobody, nobody)) || !strings.Contains(string(b), "SLURM_JOB_NAME=mine") {
			t.Errorf("job did not run as nobody, or -J did not override:\n%s", b)
		}
		if owner(t, outFile) != nobody {
			t.Errorf("output owned by %d, want %d", owner(t, outFile), nobody)
		}
		n, _ := strconv.ParseUint(id, 10, 64)
		if row := l.acctRow(n); !strings.HasPrefix(row, id+"|nobody|COMPLETED|0:0|") {
			t.Errorf("acct row %q", row)
		}
		// Every controller's FSM wrote the row into its own SQLite file.
		for _, node := range []string{"node1", "node2", "node3"} {
			st, err := accounting.Open(filepath.Join(l.dir, node, "accounting.db"))
			if err != nil {
				t.Fatal(err)
			}
			if ok, seen := poll(10*time.Second, func() (bool, string) {
				rows, err := st.Query(accounting.Filter{JobIDs: []uint64{n}, JobsOnly: true})
				return err == nil && len(rows) == 1 && rows[0].Job.State == "COMPLETED" && rows[0].Job.UID == nobody,
					fmt.Sprintf("%+v %v", rows, err)
			}); !ok {
				t.Errorf("%s accounting: %s", node, seen)
			}
			st.Close()
		}
	})

	t.Run("ExitCode", func(t *testing.T) {
		l := l.with(t)
		out, _, code := l.run(0, rootDir, "submit", "--wait", "--wrap", "exit 3")
		if code != 3 {
			t.Fatalf("submit --wait of exit 3: exit %d (%s)", code, out)
		}
		id, _ := strconv.ParseUint(submittedRE.FindStringSubmatch(out)[1], 10, 64)
		if row := l.acctRow(id); !strings.Contains(row, "|FAILED|3:0|") {
			t.Errorf("acct row %q", row)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		l := l.with(t)
		mine := l.submit(nobody, userDir, "--wrap", "sleep 300")
		roots := l.submit(0, rootDir, "--wrap", "sleep 300")
		l.waitState(mine, "R")
		l.waitState(roots, "R")

		// Another user's job: refused, and it keeps running.
		_, errs, code := l.run(nobody, userDir, "cancel", fmt.Sprint(roots))
		if code == 0 || !strings.Contains(errs, fmt.Sprintf("Kill job error on job id %d: Access/permission denied", roots)) {
			t.Fatalf("nobody cancelling root's job: exit %d %q", code, errs)
		}
		// Their own job: cancelled.
		if _, errs, code := l.run(nobody, userDir, "cancel", fmt.Sprint(mine)); code != 0 {
			t.Fatalf("cancel own job: exit %d %q", code, errs)
		}
		l.waitState(roots, "R")
		if _, errs, code := l.run(0, rootDir, "cancel", fmt.Sprint(roots)); code != 0 {
			t.Fatalf("root cancel: exit %d %q", code, errs)
		}
		for _, id := range []uint64{mine, roots} {
			l.waitState(id, "CA")
			waitFor(t, 15*time.Second, fmt.Sprintf("job %d's acct row to show CANCELLED", id), func() (bool, string) {
				row := l.acctRow(id)
				return strings.Contains(row, "|CANCELLED"), fmt.Sprintf("%q", row)
			})
		}
		// A pending job cancelled while it waits never runs.
		hold := l.submit(0, rootDir, "-N", "3", "-n", "6", "--wrap", "sleep 300")
		l.waitState(hold, "R")
		pend := l.submit(0, rootDir, "--wrap", "touch never-ran")
		l.waitState(pend, "PD")
		if out, _, _ := l.run(0, rootDir, "queue", "-h", "-j", fmt.Sprint(pend), "-o", "%r"); strings.TrimSpace(out) != "Resources" {
			t.Errorf("pending reason %q, want Resources", out)
		}
		l.run(0, rootDir, "cancel", fmt.Sprint(pend))
		l.waitState(pend, "CA")
		l.run(0, rootDir, "cancel", fmt.Sprint(hold))
		l.waitState(hold, "CA")
		if _, err := os.Stat(filepath.Join(rootDir, "never-ran")); err == nil {
			t.Error("a job cancelled while pending ran")
		}
		if row := l.acctRow(pend); !strings.HasPrefix(row, fmt.Sprintf("%d|root|CANCELLED", pend)) {
			t.Errorf("pending cancel acct row %q", row)
		}
	})

	t.Run("TestOnly", func(t *testing.T) {
		l := l.with(t)
		before, _, _ := l.run(0, rootDir, "queue", "-h")
		out, errs, code := l.run(0, rootDir, "submit", "--test-only", "-N", "2", "--wrap", "true")
		re := regexp.MustCompile(`^sbatch: Job \d+ to start at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d using 2 processors on nodes node\[\d-\d\] in partition debug\n$`)
		if code != 0 || out != "" || !re.MatchString(errs) {
			t.Fatalf("--test-only: exit %d stdout %q stderr %q", code, out, errs)
		}
		if after, _, _ := l.run(0, rootDir, "queue", "-h"); after != before {
			t.Errorf("--test-only queued something:\n%s", after)
		}
	})

	// The trust boundary under the lab's config: another user sees root's
	// job but not its batch script (no PrivateData), and a user without an
	// association may not submit (AccountingStorageEnforce).
	t.Run("Privacy", func(t *testing.T) {
		l := l.with(t)
		id := l.submit(0, rootDir, "-H", "--export=ALL,TOKEN=s3cret", "--wrap", "echo private")
		defer l.run(0, rootDir, "cancel", fmt.Sprint(id))
		if out, _, _ := l.run(nobody, userDir, "queue", "-h", "-j", fmt.Sprint(id), "-o", "%i %u"); strings.TrimSpace(out) != fmt.Sprintf("%d root", id) {
			t.Errorf("squeue as nobody: %q", out)
		}
		if out, errs, code := l.run(nobody, userDir, "scontrol", "write", "batch_script", fmt.Sprint(id), "-"); code != 1 || out != "" || errs != "job script retrieval failed: Invalid user id\n" {
			t.Errorf("write batch_script of root's job as nobody: exit %d %q %q", code, out, errs)
		}
		if out, errs, code := l.run(0, rootDir, "scontrol", "write", "batch_script", fmt.Sprint(id), "-"); code != 0 || !strings.Contains(out, "echo private") {
			t.Errorf("write batch_script as root: exit %d %q %q", code, out, errs)
		}
		out, errs, code := l.run(12345, top, "submit", "--wrap", "true")
		if want := "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n"; code != 1 || out != "" || errs != want {
			t.Errorf("submit without an association: exit %d %q %q, want %q", code, out, errs, want)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		l := l.with(t)
		cases := []struct {
			args []string
			err  string
			code int
		}{
			{[]string{"-p", "nosuch", "--wrap", "true"}, "sbatch: error: invalid partition specified: nosuch\nsbatch: error: Batch job submission failed: Invalid partition name specified\n", 1},
			{[]string{"-N", "10", "--wrap", "true"}, "sbatch: error: Batch job submission failed: More processors requested than permitted\n", 1},
			{[]string{"-t", "abc", "--wrap", "true"}, "sbatch: error: Invalid --time specification\n", 255},
			{[]string{"-t", "2-00:00:00", "--wrap", "true"}, "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)\n", 1},
			{[]string{"--mem=abc", "--wrap", "true"}, "sbatch: error: Invalid --mem specification\n", 255},
			{[]string{"--mem=100G", "--wrap", "true"}, "sbatch: error: Memory specification can not be satisfied\nsbatch: error: Batch job submission failed: Requested node configuration is not available\n", 1},
			{[]string{"--bogus", "--wrap", "true"}, "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information\n", 255},
		}
		for _, c := range cases {
			out, errs, code := l.run(0, rootDir, append([]string{"submit"}, c.args...)...)
			if out != "" || errs != c.err || code != c.code {
				t.Errorf("submit %v: exit %d stdout %q stderr %q; want exit %d stderr %q", c.args, code, out, errs, c.code, c.err)
			}
		}
	})

	t.Run("LeaderDiesMidJob", func(t *testing.T) {
		l := l.with(t)
		// One job per node, each taking the whole node.
		var ids []uint64
		for i := 0; i < 3; i++ {
			ids = append(ids, l.submit(0, rootDir, "-n", "2", "--wrap", "sleep 4; echo finished"))
		}
		where := map[uint64]string{}
		for _, id := range ids {
			l.waitState(id, "R")
			out, _, _ := l.run(0, top, "queue", "-h", "-j", fmt.Sprint(id), "-o", "%N")
			where[id] = strings.TrimSpace(out)
		}
		out, _, _ := l.run(0, top, "status")
		m := regexp.MustCompile(`Leader:\s+(node\d)\s+term (\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no leader in status:\n%s", out)
		}
		leader := m[1]
		pid, err := os.ReadFile(filepath.Join(l.dir, leader, "hpc.pid"))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The survivors elect a new leader; jobs on surviving nodes finish
		// and are accounted; the job on the dead node goes back to the
		// queue once the node is DOWN (JobRequeue=1, as Slurm's default)
		// and runs again on a surviving node.
		for _, id := range ids {
			if where[id] == leader {
				l.waitState(id, "CD")
				out, _, _ := l.run(0, top, "scontrol", "show", "job", fmt.Sprint(id))
				if !strings.Contains(out, "Restarts=1 ") || strings.Contains(out, "BatchHost="+leader+"\n") {
					t.Errorf("job %d from the dead node, not requeued once and run elsewhere:\n%s", id, out)
				}
			} else {
				l.waitState(id, "CD")
				if row := l.acctRow(id); !strings.Contains(row, "|COMPLETED|0:0|") {
					t.Errorf("job %d on %s: acct %q", id, where[id], row)
				}
			}
		}
		out, _, _ = l.run(0, top, "status")
		if m2 := regexp.MustCompile(`Leader:\s+(node\d)`).FindStringSubmatch(out); m2 == nil || m2[1] == leader {
			t.Fatalf("no new leader after killing %s:\n%s", leader, out)
		}
		// Not responding (`*`) at once, DOWN SlurmdTimeout after the
		// leader last heard it.
		waitFor(t, 30*time.Second, leader+" shown down*", func() (bool, string) {
			out, _, _ := l.run(0, top, "nodes", "-N", "-h")
			return regexp.MustCompile(leader + `\s.*down\*`).MatchString(out), "\n" + out
		})
		// `hpc up` brings back only the node that stopped; it rejoins.
		out, errs, code := l.run(0, top, "up", "--dir", l.dir)
		if code != 0 || !strings.Contains(out, "restarting "+leader) {
			t.Fatalf("up after a node died: %d %s %s", code, out, errs)
		}
		waitFor(t, 30*time.Second, "the three nodes to be idle after the restart", func() (bool, string) {
			out, _, _ := l.run(0, top, "nodes", "-h", "-p", "debug")
			return strings.Contains(out, "3   idle node[1-3]"), "\n" + out
		})
		// Work still flows through the cluster.
		if out, errs, code := l.run(0, rootDir, "submit", "--wait", "-N", "3", "--wrap", "true"); code != 0 {
			t.Fatalf("3-node job after restart: %d %s %s", code, out, errs)
		}
	})

	t.Run("Down", func(t *testing.T) {
		l := l.with(t)
		out, _, code := l.run(0, top, "down", "--dir", l.dir)
		if code != 0 || !strings.Contains(out, "Stopped 3 node(s)") {
			t.Fatalf("down: %d %s", code, out)
		}
		if _, err := os.Stat(filepath.Join(l.dir, "node1", "accounting.db")); err != nil {
			t.Fatal("down without --purge must keep state")
		}
	})
}

// Without root the lab still works: steps run as plain processes of the
// user, and the status says so.
func TestLabUnprivileged(t *testing.T) {
	needLab(t)
	l, home, out := startUserLab(t, "hpc-lab-user-", 2)
	if !strings.Contains(out, "not running as root") {
		t.Errorf("up does not say steps run as plain processes:\n%s", out)
	}
	out, _, _ = l.run(nobody, home, "status")
	if !strings.Contains(out, "Steps:    plain processes") {
		t.Errorf("status does not say plain processes:\n%s", out)
	}
	out, errs, code := l.run(nobody, home, "submit", "--wait", "--wrap", "echo uid=$(id -u) node=$SLURMD_NODENAME")
	m := submittedRE.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("submit: %d %q %q", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(home, "slurm-"+m[1]+".out"))
	if err != nil || !strings.Contains(string(b), fmt.Sprintf("uid=%d node=node", nobody)) {
		t.Fatalf("output %q %v", b, err)
	}
}

// A GPU job may open the device files of the GPUs it was given and no
// others: the devices cgroup enforces the allocation. The "GPUs" are
// device nodes made for the test under /dev, where real GPUs live, with
// the numbers of two devices any root process may open (/dev/fuse and
// /dev/net/tun); they are removed at the end. A job given both GPUs opens
// both, so the refusal comes from the allocation, not the device.
func TestLabGPUDevices(t *testing.T) {
	needLab(t)
	var usable []uint64
	for _, p := range []string{"/dev/fuse", "/dev/net/tun"} {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			continue
		}
		if f, err := os.Open(p); err == nil {
			f.Close()
			usable = append(usable, st.Rdev)
		}
	}
	if len(usable) < 2 {
		t.Skip("needs /dev/fuse and /dev/net/tun to borrow device numbers from")
	}
	prefix := fmt.Sprintf("/dev/hpctest-%d-gpu", os.Getpid())
	l, _ := startLab(t, "hpc-gpu-", 1, "KillWait=2\n", func(top string) {
		for i, rdev := range usable {
			p := fmt.Sprintf("%s%d", prefix, i)
			if err := unix.Mknod(p, unix.S_IFCHR|0o600, int(rdev)); err != nil {
				t.Skipf("cannot make device nodes here: %v", err)
			}
			t.Cleanup(func() { os.Remove(p) })
		}
		os.WriteFile(filepath.Join(top, "gres.conf"), []byte("NodeName=node1 Name=gpu File="+prefix+"[0-1]\n"), 0o644)
	})
	out, _, _ := l.run(0, l.top, "status")
	if !strings.Contains(out, "Steps:    containers") {
		t.Skipf("steps do not run in containers here:\n%s", out)
	}
	script := fmt.Sprintf("echo CUDA=$CUDA_VISIBLE_DEVICES\n(exec 3<%s0) 2>/dev/null && echo gpu0 opened || echo gpu0 refused\n"+
		"(exec 4<%s1) 2>/dev/null && echo gpu1 opened || echo gpu1 refused\n", prefix, prefix)
	for _, c := range []struct{ gres, want string }{
		{"gpu:1", "CUDA=0\ngpu0 opened\ngpu1 refused\n"},
		{"gpu:2", "CUDA=0,1\ngpu0 opened\ngpu1 opened\n"},
	} {
		stdout, errs, code := l.run(0, l.top, "submit", "--wait", "-o", "gpu.out", "--gres="+c.gres, "--wrap", script)
		if code != 0 {
			t.Fatalf("gpu job: %d %q %q", code, stdout, errs)
		}
		b, _ := os.ReadFile(filepath.Join(l.top, "gpu.out"))
		if got := string(b); got != c.want {
			t.Errorf("--gres=%s: output %q, want %q", c.gres, got, c.want)
		}
	}
}

// `hpc up --join` starts one node of a cluster whose config and key it is
// given (as the Vagrantfile does on each VM): here a controller and a node
// that is only an agent, each in a directory of its own, as on two
// machines. The agent's status shows the controller's Raft view and a
// two-node job runs across both.
func TestLabJoin(t *testing.T) {
	needLab(t)
	l := newLabT(t, "hpc-join-")
	top := l.top
	conf := filepath.Join(top, "slurm.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf("ClusterName=vlab\nSlurmctldHost=node1(%[1]s1)\nHpcApiPort=%[2]d\nHpcRaftPort=%[3]d\nHpcGossipPort=%[4]d\n"+
		"NodeName=DEFAULT CPUs=2 RealMemory=2000\nNodeName=node1 NodeAddr=%[1]s1\nNodeName=node2 NodeAddr=%[1]s2\n"+
		"PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=1-00:00:00 State=UP\n", l.net, l.api, l.api+1, l.api+2)), 0o644)
	key := filepath.Join(top, "cluster.key")
	os.WriteFile(key, []byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"), 0o600)
	dirs := map[string]string{"node1": filepath.Join(top, "m1"), "node2": filepath.Join(top, "m2")}
	t.Cleanup(func() {
		for n, d := range dirs {
			l.run(0, top, "down", "--dir", d)
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(d, n, "hpc.log"))
				t.Logf("--- log of %s:\n%s", n, b)
			}
		}
	})
	gossip := func(node int) string { return fmt.Sprintf("%s%d:%d", l.net, node, l.api+2) }
	for _, c := range [][2]string{{"node1", gossip(2)}, {"node2", gossip(1)}} {
		out, errs, code := l.run(0, top, "up", "--dir", dirs[c[0]], "--join", c[1], "--name", c[0], "--config", conf, "--key-file", key, "--timeout", "60s")
		if code != 0 {
			t.Fatalf("up --join as %s: %d\n%s\n%s", c[0], code, out, errs)
		}
	}
	l.dir = dirs["node2"] // the agent's side: every command goes through it
	out, _, _ := l.run(0, top, "status")
	if !strings.Contains(out, "Node:     node2 (Agent (not a controller))") || !strings.Contains(out, "Leader:   node1") {
		t.Errorf("agent's status:\n%s", out)
	}
	work := filepath.Join(top, "work")
	os.Mkdir(work, 0o755)
	out, errs, code := l.run(0, work, "submit", "--wait", "-N", "2", "-o", "j.out", "--wrap", "echo $SLURM_JOB_NODELIST")
	b, _ := os.ReadFile(filepath.Join(work, "j.out"))
	if code != 0 || string(b) != "node[1-2]\n" {
		t.Errorf("two-node job through the agent: %d %q %q output %q", code, out, errs, b)
	}
}
