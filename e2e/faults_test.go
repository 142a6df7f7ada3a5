package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hpc/cluster/config"
)

// TestFaultHarness puts each node of a 4-node lab (node1-3 controllers,
// node4 compute only) in a network namespace of its own and shows each
// fault of the harness and its restore against the real daemons: kill -9
// of the leader (another leads and schedules; the daemon started again
// rejoins), SIGSTOP of a node's daemon past SlurmdTimeout (down, then
// idle after SIGCONT), a cut link (down, then idle once restored), and
// the leader alone on the minority side of a partition (the majority
// elects a leader and runs a job; after healing all agree on one leader).
func TestFaultHarness(t *testing.T) {
	needLab(t)
	cfg, err := config.LabConfig(4)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.ControlHosts) != 3 || cfg.IsController("node4") {
		t.Fatalf("config.Lab(4) has controllers %v; the test expects node1-3", cfg.ControlHosts)
	}
	// SlurmdTimeout=3: a node out of touch is marked down within seconds.
	last := time.Now()
	l := startNetLab(t, 61, 4, "SlurmdTimeout=3\n")
	lap := func(what string) {
		t.Logf("%-55s %v", what, time.Since(last).Round(100*time.Millisecond))
		last = time.Now()
	}
	lap("lab up")

	// kill -9 of the leader.
	lead := l.leader("node1")
	via := otherController(lead, "")
	if err := l.fn.Kill9(lead); err != nil {
		t.Fatal(err)
	}
	next := l.waitLeader(via, lead)
	lap(fmt.Sprintf("kill -9 %s: %s leads", lead, next))
	l.waitNode(via, lead, downRE, 30*time.Second)
	lap(lead + " down")
	l.runJob(via, 30*time.Second)
	lap("a job ran")
	l.restart(lead)
	l.waitNode(via, lead, `^idle$`, 30*time.Second)
	l.waitAgree()
	lap(lead + " restarted: idle, follows the leader")

	// SIGSTOP of the compute node's daemon, then SIGCONT.
	lead = l.leader("node1")
	if err := l.fn.Freeze("node4"); err != nil {
		t.Fatal(err)
	}
	l.waitNode(lead, "node4", downRE, 30*time.Second)
	lap("SIGSTOP node4: down")
	if err := l.fn.Thaw("node4"); err != nil {
		t.Fatal(err)
	}
	l.waitNode(lead, "node4", `^idle$`, 30*time.Second)
	lap("SIGCONT node4: idle")

	// A cut link: a controller that does not lead.
	cut := otherController(lead, "")
	if err := l.fn.Cut(cut); err != nil {
		t.Fatal(err)
	}
	l.waitNode(lead, cut, downRE, 30*time.Second)
	lap("cut " + cut + ": down")
	if err := l.fn.Restore(cut); err != nil {
		t.Fatal(err)
	}
	l.waitNode(lead, cut, `^idle$`, 30*time.Second)
	l.waitAgree()
	lap("restore " + cut + ": idle, follows the leader")

	// The leader alone in the minority: the majority elects another, which
	// marks the old one down and runs a job; healed, all follow one leader.
	lead = l.leader("node1")
	major := otherController(lead, "")
	if err := l.fn.Partition(lead); err != nil {
		t.Fatal(err)
	}
	next = l.waitLeader(major, lead)
	lap(fmt.Sprintf("partition %s alone: %s leads the majority", lead, next))
	l.waitNode(major, lead, downRE, 30*time.Second)
	l.runJob(major, 30*time.Second)
	lap(lead + " down, a job ran on the majority side")
	if err := l.fn.Heal(); err != nil {
		t.Fatal(err)
	}
	got := l.waitAgree()
	for _, n := range l.nodes {
		l.waitNode(got, n, `^idle$`, 30*time.Second)
	}
	lap("heal: every node idle, all follow " + got)
}

// A node out of touch: Slurm's "down*" (down, not responding). The
// patterns are regexps.
const downRE = `^down\*$`

// otherController is a controller of the 4-node lab other than a and b.
func otherController(a, b string) string {
	for _, n := range []string{"node1", "node2", "node3"} {
		if n != a && n != b {
			return n
		}
	}
	return ""
}

// waitLeader waits until via names a leader other than old and returns it.
func (l *netLab) waitLeader(via, old string) string {
	l.t.Helper()
	var next string
	waitFor(l.t, 30*time.Second, fmt.Sprintf("a leader other than %s (through %s)", old, via), func() (bool, string) {
		next = l.leader(via)
		return next != "" && next != old, next
	})
	return next
}

// waitAgree waits until every node names the same leader and returns it.
func (l *netLab) waitAgree() string {
	l.t.Helper()
	var leader string
	waitFor(l.t, 30*time.Second, "every node to name one leader", func() (bool, string) {
		var seen []string
		agree := true
		for i, n := range l.nodes {
			ld := l.leader(n)
			if i == 0 {
				leader = ld
			}
			agree = agree && ld != "" && ld == leader
			seen = append(seen, n+"="+ld)
		}
		return agree, strings.Join(seen, " ")
	})
	return leader
}

// TestNodeNotResponding: a node whose daemon stops answering (SIGSTOP) is
// not responding (`*`) as soon as gossip suspects it, long before
// SlurmdTimeout: no new job starts there meanwhile. It goes DOWN
// SlurmdTimeout after the leader last heard it, and its batch job goes back
// to the queue (JobRequeue=1). Once it answers again, the run it still has
// is killed (the controller gave the job a new run) and the job runs again.
func TestNodeNotResponding(t *testing.T) {
	needLab(t)
	const timeout = 8 // SlurmdTimeout
	l := startNetLab(t, 67, 4, fmt.Sprintf("SlurmdTimeout=%d\n", timeout))
	lead := l.leader("node1")
	lv := l.on(lead)
	marks := filepath.Join(l.top, "marks")
	os.Mkdir(marks, 0o777)
	// A job that records each run on node4, then runs until killed.
	long := lv.submit(0, l.top, "-w", "node4", "--wrap", "n=${SLURM_RESTART_COUNT:-0}; echo run $n >> "+marks+"/runs; "+
		"while :; do touch "+marks+"/beat-$n; sleep 0.5; done")
	waitFor(t, 30*time.Second, "the job's first run", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(marks, "runs"))
		return strings.Contains(string(b), "run 0\n"), string(b)
	})
	frozen := time.Now()
	if err := l.fn.Freeze("node4"); err != nil {
		t.Fatal(err)
	}
	l.waitNode(lead, "node4", `^(idle|mixed|allocated)\*$`, secs(timeout))
	star := time.Since(frozen)
	// Not responding, not yet DOWN: a job asking for it waits.
	held := lv.submit(0, l.top, "-w", "node4", "--wrap", "true")
	if st := l.nodeStates(lead)["node4"]; strings.HasPrefix(st, "down") {
		t.Fatalf("node4 %s %v after the freeze, before SlurmdTimeout (%d s)", st, time.Since(frozen), timeout)
	}
	l.waitNode(lead, "node4", `^down\*$`, 3*secs(timeout))
	down := time.Since(frozen)
	if out, _, _ := lv.run(0, l.top, "squeue", "-h", "-j", fmt.Sprint(held), "-o", "%t"); strings.TrimSpace(out) != "PD" {
		t.Errorf("a job for a node that does not respond: %q, want PD", out)
	}
	waitFor(t, 30*time.Second, "the job on the DOWN node to be requeued", func() (bool, string) {
		out, _, _ := lv.run(0, l.top, "scontrol", "show", "job", fmt.Sprint(long))
		return strings.Contains(out, "JobState=PENDING") && strings.Contains(out, "Restarts=1 "), out
	})
	t.Logf("frozen node: not responding after %v, DOWN after %v (SlurmdTimeout=%ds)", star.Round(100*time.Millisecond), down.Round(100*time.Millisecond), timeout)

	if err := l.fn.Thaw("node4"); err != nil {
		t.Fatal(err)
	}
	// The first run is killed; the second runs, once.
	waitFor(t, 60*time.Second, "the job's second run on node4", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(marks, "runs"))
		return strings.Contains(string(b), "run 1\n"), string(b)
	})
	b, _ := os.ReadFile(filepath.Join(marks, "runs"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("runs of the job: %q", b)
	}
	waitFor(t, 60*time.Second, "the first run to be killed (its heartbeat file to go stale)", func() (bool, string) {
		fi, err := os.Stat(filepath.Join(marks, "beat-0"))
		return err == nil && time.Since(fi.ModTime()) > 3*time.Second, ""
	})
	waitFor(t, 60*time.Second, "the held-back job to complete", func() (bool, string) {
		out, _, _ := lv.run(0, l.top, "sacct", "-X", "-n", "-P", "-j", fmt.Sprint(held), "-o", "State")
		return strings.TrimSpace(out) == "COMPLETED", out
	})
	lv.run(0, l.top, "scancel", fmt.Sprint(long))
}

func secs(seconds int) time.Duration { return time.Duration(seconds) * time.Second }
