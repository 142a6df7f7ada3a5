package commands

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestLabRunningIsThisLabsDaemon: a node's pid file names its daemon only
// while that pid runs `daemon --name NODE --dir LAB` for this lab. A pid
// file left by a killed daemon whose pid came round again to another
// lab's daemon (or this lab's other node) is not this node's: hpc down
// stopped that other daemon with SIGINT.
func TestLabRunningIsThisLabsDaemon(t *testing.T) {
	mine, other := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "lab")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	// A process whose command line is a daemon's: sh runs sleep (and
	// stays, rather than exec it, since a command follows), and its
	// arguments after the script are the daemon's.
	start := func(args ...string) int {
		cmd := exec.Command("/bin/sh", append([]string{"-c", "sleep 30; exit 0", "hpc"}, args...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	pidFile := func(l lab, node string, pid int) {
		if err := os.MkdirAll(l.nodeDir(node), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(l.pidPath(node), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := lab{dir: mine}
	for _, c := range []struct {
		what string
		args []string
		want bool
	}{
		{"this node's daemon", []string{"daemon", "--name", "node1", "--dir", mine}, true},
		{"with --plain and --join", []string{"daemon", "--name", "node1", "--dir", mine, "--join", "10.0.0.1:7817", "--plain"}, true},
		{"through a link to the lab", []string{"daemon", "--name", "node1", "--dir", link}, true},
		{"behind nsenter", []string{"--target", "1", "--net", "--", "/usr/bin/hpc", "daemon", "--name", "node1", "--dir", mine}, true},
		{"another lab's node1", []string{"daemon", "--name", "node1", "--dir", other}, false},
		{"this lab's node2", []string{"daemon", "--name", "node2", "--dir", mine}, false},
		{"not a daemon", []string{"--name", "node1", "--dir", mine}, false},
	} {
		pidFile(l, "node1", start(c.args...))
		if _, got := l.running("node1"); got != c.want {
			t.Errorf("%s: running %v, want %v", c.what, got, c.want)
		}
	}
	if _, ok := l.running("node9"); ok {
		t.Error("a node without a pid file is running")
	}
}
