package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// strigger runs the strigger link as root in the lab.
func (l *labT) strigger(args ...string) (string, string, int) {
	l.t.Helper()
	cmd := exec.Command(filepath.Join(l.links, "strigger"), args...)
	cmd.Dir = l.top
	cmd.Env = append(os.Environ(), "HPC_DIR="+l.dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		l.t.Fatalf("strigger %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// Triggers in a real lab: a node an administrator downs and resumes runs
// the down and up programs once each; the leader's death is a node going
// down too, and the new leader, which keeps every trigger, runs the
// permanent down trigger for it, without running the earlier events
// again (at most once).
func TestStriggerLab(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-strigger-", 3, "")
	out := filepath.Join(l.top, "trig.out")
	prog := filepath.Join(l.top, "trig.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"$*\" >> "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--set", "--down", "--flags=perm", "--program=" + prog + " down"},
		{"--set", "-u", "-nnode[1-3]", "--program=" + prog + " up"},
	} {
		if o, e, code := l.strigger(args...); code != 0 {
			t.Fatalf("strigger %v: %d %s %s", args, code, o, e)
		}
	}
	lines := func() string {
		b, _ := os.ReadFile(out)
		return string(b)
	}
	st, _, _ := l.run(0, l.top, "status")
	m := regexp.MustCompile(`Leader:\s+(node\d)`).FindStringSubmatch(st)
	if m == nil {
		t.Fatalf("no leader in status:\n%s", st)
	}
	leader := m[1]
	other := "node1"
	if leader == other {
		other = "node2"
	}
	if o, e, code := l.run(0, l.top, "scontrol", "update", "nodename="+other, "state=down", "reason=test"); code != 0 {
		t.Fatalf("down %s: %d %s %s", other, code, o, e)
	}
	want := "down " + other + "\n"
	waitFor(t, 30*time.Second, "the down program", func() (bool, string) { return lines() == want, lines() })
	if o, e, code := l.run(0, l.top, "scontrol", "update", "nodename="+other, "state=resume"); code != 0 {
		t.Fatalf("resume %s: %d %s %s", other, code, o, e)
	}
	want += "up " + other + "\n"
	waitFor(t, 30*time.Second, "the up program", func() (bool, string) { return lines() == want, lines() })

	pid, err := os.ReadFile(filepath.Join(l.dir, leader, "hpc.pid"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	want += "down " + leader + "\n"
	waitFor(t, 60*time.Second, "the new leader's down program", func() (bool, string) { return lines() == want, lines() })
	time.Sleep(5 * time.Second) // a few passes of the new leader's loop
	// The killed node comes back (so that the lab stops cleanly); the
	// up trigger was used up, so nothing runs.
	if o, e, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 || !strings.Contains(o, "restarting "+leader) {
		t.Fatalf("up after the leader died: %d %s %s", code, o, e)
	}
	waitFor(t, 30*time.Second, "the three nodes to be idle after the restart", func() (bool, string) {
		o, _, _ := l.run(0, l.top, "nodes", "-h", "-p", "debug")
		return strings.Contains(o, "3   idle node[1-3]"), "\n" + o
	})
	o, e, code := l.strigger("--get")
	if got := lines(); got != want {
		t.Errorf("programs ran:\n%s\nwant\n%s", got, want)
	}
	if code != 0 || !regexp.MustCompile(`(?m)^      1 node            \* down\s+0 root     PERM  `+regexp.QuoteMeta(prog)+` down$`).MatchString(o) ||
		strings.Count(o, "\n") != 2 {
		t.Errorf("--get after failover: %d\n%s%s", code, o, e)
	}
}
