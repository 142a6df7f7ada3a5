package faultnet

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"hpc/internal/netns"
)

// helperEnv makes the test binary a helper inside a namespace:
// "listen ADDR" answers every connection with "ok"; "dial ADDR" exits 0
// if ADDR answers "ok" within a second, 1 otherwise.
const helperEnv = "FAULTNET_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helper(h))
	}
	os.Exit(m.Run())
}

func helper(h string) int {
	verb, addr, _ := strings.Cut(h, " ")
	switch verb {
	case "listen":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		for {
			c, err := l.Accept()
			if err != nil {
				return 2
			}
			fmt.Fprintln(c, "ok")
			c.Close()
		}
	case "dial":
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if line != "ok\n" {
			fmt.Fprintln(os.Stderr, "no answer:", err)
			return 1
		}
		return 0
	}
	return 2
}

func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("makes network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes network namespaces")
	}
}

const port = "7000"

// reach reports whether from reaches to's listener (a TCP dial from
// inside from's namespace).
func reach(n *Net, from, to string) (bool, string) {
	cmd := n.Command(from, os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=dial "+net.JoinHostPort(n.Addr(to), port))
	out, err := cmd.CombinedOutput()
	return err == nil, strings.TrimSpace(string(out))
}

// expect polls until from reaches to (want) or fails to (!want): a link's
// state takes effect within moments, not at once.
func expect(t *testing.T, n *Net, from, to string, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, out := reach(n, from, to)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s reaches %s: %v, want %v (%s)", from, to, got, want, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startNet(t *testing.T, nodes ...string) *Net {
	t.Helper()
	n, err := New(Options{Prefix: "faultnet-" + t.Name(), Subnet: 250, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
		if left := namespaces(t, "faultnet-"+t.Name()); left > 0 {
			t.Errorf("%d namespaces left after Close", left)
		}
	})
	for _, node := range nodes {
		if err := n.Start(node, func() *exec.Cmd {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), helperEnv+"=listen "+net.JoinHostPort(n.Addr(node), port))
			return c
		}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// namespaces counts the live holders of prefix's namespaces.
func namespaces(t *testing.T, prefix string) int {
	t.Helper()
	h, err := netns.Holders(tag + prefix + "_")
	if err != nil {
		t.Fatal(err)
	}
	return len(h)
}

func TestCutRestore(t *testing.T) {
	needRoot(t)
	n := startNet(t, "a", "b")
	if n.Addr("a") != "10.250.0.1" || n.Addr("b") != "10.250.0.2" {
		t.Fatalf("addresses %s %s", n.Addr("a"), n.Addr("b"))
	}
	expect(t, n, "a", "b", true)
	expect(t, n, "b", "a", true)
	// The address exists only in b's namespace: the host does not have it.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(n.Addr("b"), port), 300*time.Millisecond); err == nil {
		c.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if line, _ := bufio.NewReader(c).ReadString('\n'); line == "ok\n" {
			t.Error("the host reaches a node's listener")
		}
		c.Close()
	}
	if err := n.Cut("b"); err != nil {
		t.Fatal(err)
	}
	expect(t, n, "a", "b", false)
	expect(t, n, "b", "a", false)
	expect(t, n, "b", "b", true) // its own address still answers
	if err := n.Restore("b"); err != nil {
		t.Fatal(err)
	}
	expect(t, n, "a", "b", true)
	expect(t, n, "b", "a", true)
}

func TestPartitionHeal(t *testing.T) {
	needRoot(t)
	n := startNet(t, "a", "b", "c", "d")
	if err := n.Partition("c", "d"); err != nil {
		t.Fatal(err)
	}
	expect(t, n, "a", "c", false)
	expect(t, n, "d", "b", false)
	expect(t, n, "a", "b", true) // the majority still meet
	expect(t, n, "c", "d", true) // and so does the minority
	if err := n.Partition("a"); err == nil {
		t.Error("a second partition before Heal was accepted")
	}
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	expect(t, n, "a", "c", true)
	expect(t, n, "d", "b", true)
	if err := n.Partition("a", "b", "c", "d"); err == nil {
		t.Error("a partition of every node was accepted")
	}
}

func TestProcessFaults(t *testing.T) {
	needRoot(t)
	n := startNet(t, "a", "b")
	expect(t, n, "a", "b", true)
	// A frozen listener's kernel still takes the connection; nothing answers.
	if err := n.Freeze("b"); err != nil {
		t.Fatal(err)
	}
	expect(t, n, "a", "b", false)
	if err := n.Thaw("b"); err != nil {
		t.Fatal(err)
	}
	expect(t, n, "a", "b", true)
	pid := n.Pid("b")
	if err := n.Kill9("b"); err != nil {
		t.Fatal(err)
	}
	expect(t, n, "a", "b", false)
	if err := n.Thaw("b"); err == nil {
		t.Error("Thaw of a killed program succeeded")
	}
	if err := n.Restart("b"); err != nil {
		t.Fatal(err)
	}
	if n.Pid("b") == pid {
		t.Error("Restart kept the killed pid")
	}
	expect(t, n, "a", "b", true)
	if err := n.Restart("b"); err == nil {
		t.Error("Restart while the program runs succeeded")
	}
}

// A set whose owner died before Close (its lock free, its namespaces
// left) is removed by the next New of the prefix.
func TestStaleSetRemoved(t *testing.T) {
	needRoot(t)
	prefix := "faultnet-" + t.Name()
	stale, err := New(Options{Prefix: prefix, Subnet: 250, Nodes: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	stale.unlock() // as the kernel does when its process dies
	staleHub := stale.NetNS("hub")
	if got := namespaces(t, prefix); got != 2 {
		t.Fatalf("%d namespaces, want a hub and a node's", got)
	}
	n, err := New(Options{Prefix: prefix, Subnet: 250, Nodes: []string{"x"}, LockWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// A live holder is waited for, then refused.
	if _, err := New(Options{Prefix: prefix, Subnet: 250, Nodes: []string{"y"}, LockWait: 200 * time.Millisecond}); err == nil {
		t.Error("a second live set of the same prefix was made")
	}
	if got := namespaces(t, prefix); got != 2 {
		t.Errorf("%d namespaces after New, want the new set's 2", got)
	}
	if _, err := os.Stat(staleHub); err == nil {
		t.Errorf("the stale hub's holder %s still lives", staleHub)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if left := namespaces(t, prefix); left > 0 {
		t.Errorf("%d namespaces left after Close", left)
	}
}
