package e2e

import (
	"fmt"
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

// A node out of touch: sinfo prints "down" today; Slurm's "down*" (not
// responding) is accepted too. The patterns are regexps.
const downRE = `^down\*?$`

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
