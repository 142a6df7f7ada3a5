package faultnet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/internal/netns"
)

const (
	// lockDir holds one lock file per prefix. The files stay: removing
	// one while another run waits on it would let two runs hold it.
	lockDir = "/run/faultnet"
	// tag begins the argument that names a holder: tag+"<prefix>_<role>".
	tag = "faultnet:"
	// mainBridge joins every node; a partition's minority is moved to
	// minorityBridge.
	mainBridge     = "br0"
	minorityBridge = "br1"
	// nodeLink is a node's end of its veth pair, in its own namespace.
	nodeLink = "eth0"
)

// A prefix or node name is one word without "_", so that "<prefix>_"
// names exactly one set's namespaces (prefix "a" never reaches "a-b"'s).
var (
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,40}$`)
	nodeRE   = regexp.MustCompile(`^[A-Za-z0-9.-]{1,40}$`)
)

// Options says what network New makes.
type Options struct {
	// Prefix names the set: its namespaces are <Prefix>_hub and
	// <Prefix>_<node>. One per test, so that tests running side by side
	// never share a namespace, and a run killed before its Close is
	// cleaned by the next run of the same test.
	Prefix string
	// Subnet gives the addresses: the i-th node (from 1) is 10.Subnet.0.i/24.
	Subnet int
	// Nodes are the nodes' names, at most 250.
	Nodes []string
	// LockWait is how long New waits while another live process holds
	// the prefix (default two minutes).
	LockWait time.Duration
}

// Net is one set of namespaces: a hub and the nodes on its bridge.
type Net struct {
	prefix string
	subnet int
	nodes  []string
	index  map[string]int // node -> i (from 1): its address and its hub port v<i>
	lock   *os.File
	holder map[string]int // "hub" or a node -> the pid that holds its namespace

	mu     sync.Mutex
	procs  map[string]*proc
	parted []string // the minority while partitioned
}

// proc is the program Start runs for a node: how to make it again after
// Kill9, and the running one.
type proc struct {
	make func() *exec.Cmd
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

// New makes the network of opts, first removing what a dead earlier
// owner of the same prefix left. It needs root.
func New(opts Options) (*Net, error) {
	if !prefixRE.MatchString(opts.Prefix) {
		return nil, fmt.Errorf("faultnet: prefix %q: want 1-40 letters, digits or '-'", opts.Prefix)
	}
	if opts.Subnet < 0 || opts.Subnet > 255 {
		return nil, fmt.Errorf("faultnet: subnet %d is not 0-255", opts.Subnet)
	}
	if len(opts.Nodes) == 0 || len(opts.Nodes) > 250 {
		return nil, fmt.Errorf("faultnet: %d nodes: want 1 to 250", len(opts.Nodes))
	}
	n := &Net{prefix: opts.Prefix, subnet: opts.Subnet, index: map[string]int{}, holder: map[string]int{}, procs: map[string]*proc{}}
	for i, name := range opts.Nodes {
		if !nodeRE.MatchString(name) || name == "hub" {
			return nil, fmt.Errorf("faultnet: node name %q: want 1-40 letters, digits, '.' or '-', not hub", name)
		}
		if _, dup := n.index[name]; dup {
			return nil, fmt.Errorf("faultnet: node %s is named twice", name)
		}
		n.index[name] = i + 1
		n.nodes = append(n.nodes, name)
	}
	wait := opts.LockWait
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	lock, err := takeLock(opts.Prefix, wait)
	if err != nil {
		return nil, err
	}
	n.lock = lock
	// Holding the lock, whatever has the prefix is a dead run's.
	if err := removeSet(opts.Prefix); err != nil {
		n.unlock()
		return nil, fmt.Errorf("faultnet: removing a stale %s set: %w", opts.Prefix, err)
	}
	if err := n.build(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// build makes the hub with its two bridges, then each node's namespace
// and link. Both ends of each veth pair are made inside the set's own
// namespaces, so no name is ever taken in the host's.
func (n *Net) build() error {
	for _, role := range append([]string{"hub"}, n.nodes...) {
		// A process holds each namespace, never a name under /run/netns
		// (internal/netns says why).
		pid, err := netns.Hold(netns.Spec{Tag: tag + n.prefix + "_" + role})
		if err != nil {
			return fmt.Errorf("faultnet: %w", err)
		}
		n.holder[role] = pid
	}
	hub := n.holder["hub"]
	for _, br := range []string{mainBridge, minorityBridge} {
		if err := netns.Bridge(hub, br); err != nil {
			return err
		}
	}
	for _, node := range n.nodes {
		if err := netns.Join(hub, mainBridge, n.port(node), n.holder[node], nodeLink, n.Addr(node)+"/24"); err != nil {
			return err
		}
	}
	return nil
}

// Nodes returns the nodes' names in order.
func (n *Net) Nodes() []string { return slices.Clone(n.nodes) }

// Addr returns a node's address (10.subnet.0.i), "" for an unknown node.
func (n *Net) Addr(node string) string {
	i, ok := n.index[node]
	if !ok {
		return ""
	}
	return fmt.Sprintf("10.%d.0.%d", n.subnet, i)
}

// NetNS returns the path of a node's network namespace (for nsenter
// --net=, or setns); "hub" is the hub's.
func (n *Net) NetNS(node string) string { return netns.NS(n.holder[node], "net") }

func (n *Net) port(node string) string { return "v" + strconv.Itoa(n.index[node]) }

func (n *Net) known(node string) error {
	if _, ok := n.index[node]; !ok {
		return fmt.Errorf("faultnet: no node %q in %s", node, n.prefix)
	}
	return nil
}

// Command returns a command that runs name with args inside node's
// network namespace (and nowhere else: it keeps the caller's mounts,
// users and processes' view).
func (n *Net) Command(node, name string, args ...string) *exec.Cmd {
	return netns.Command(n.holder[node], []string{"net"}, name, args...)
}

// enter rewrites cmd to run inside node's namespace, as the program itself
// (netns.Enter), so signals reach it directly.
func (n *Net) enter(node string, cmd *exec.Cmd) error {
	if err := netns.Enter(n.holder[node], []string{"net"}, cmd); err != nil {
		return fmt.Errorf("faultnet: %w", err)
	}
	return nil
}

// Start runs the command mk makes inside node's namespace and keeps it as
// the node's program: the one Kill9, Freeze and Thaw signal, and Restart
// makes again with mk. It is waited for in the background.
func (n *Net) Start(node string, mk func() *exec.Cmd) error {
	if err := n.known(node); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.procs[node]; p != nil && !p.exited() {
		return fmt.Errorf("faultnet: %s's program (pid %d) still runs", node, p.cmd.Process.Pid)
	}
	cmd := mk()
	if err := n.enter(node, cmd); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("faultnet: start on %s: %w", node, err)
	}
	p := &proc{make: mk, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	n.procs[node] = p
	return nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Pid returns the pid of node's program, 0 if none was started.
func (n *Net) Pid(node string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.procs[node]; p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

func (n *Net) running(node string) (*proc, error) {
	if err := n.known(node); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.procs[node]
	if p == nil || p.exited() {
		return nil, fmt.Errorf("faultnet: %s has no running program", node)
	}
	return p, nil
}

// Kill9 kills node's program with SIGKILL and returns once it is gone.
func (n *Net) Kill9(node string) error {
	p, err := n.running(node)
	if err != nil {
		return err
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("faultnet: kill -9 %s: %w", node, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("faultnet: %s's program (pid %d) outlived SIGKILL for 30s", node, p.cmd.Process.Pid)
	}
}

// Restart starts node's program again, made anew by Start's mk, once the
// last one has exited.
func (n *Net) Restart(node string) error {
	n.mu.Lock()
	p := n.procs[node]
	n.mu.Unlock()
	if p == nil {
		return fmt.Errorf("faultnet: nothing was started on %q", node)
	}
	return n.Start(node, p.make)
}

// Freeze stops node's program (SIGSTOP): it holds its sockets and
// answers nothing, as a node stuck in the kernel or swapping would.
func (n *Net) Freeze(node string) error { return n.signal(node, syscall.SIGSTOP) }

// Thaw lets a frozen program go on (SIGCONT).
func (n *Net) Thaw(node string) error { return n.signal(node, syscall.SIGCONT) }

func (n *Net) signal(node string, sig syscall.Signal) error {
	p, err := n.running(node)
	if err != nil {
		return err
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("faultnet: %v to %s: %w", sig, node, err)
	}
	return nil
}

// Cut takes node's link down on the hub's side: the node keeps its
// address but reaches no one, and no one reaches it.
func (n *Net) Cut(node string) error { return n.setPort(node, "down") }

// Restore brings a cut link up again.
func (n *Net) Restore(node string) error { return n.setPort(node, "up") }

func (n *Net) setPort(node, state string) error {
	if err := n.known(node); err != nil {
		return err
	}
	return n.ip("hub", "link", "set", n.port(node), state)
}

// Partition splits the network in two: the given nodes reach one another
// but none of the rest, and the rest likewise. Heal joins them again.
func (n *Net) Partition(minority ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.parted) > 0 {
		return fmt.Errorf("faultnet: already partitioned (%s); Heal first", strings.Join(n.parted, " "))
	}
	if len(minority) == 0 || len(minority) >= len(n.nodes) {
		return fmt.Errorf("faultnet: a partition moves 1 to %d of the %d nodes, not %d", len(n.nodes)-1, len(n.nodes), len(minority))
	}
	for _, node := range minority {
		if err := n.known(node); err != nil {
			return err
		}
	}
	n.parted = slices.Clone(minority)
	for _, node := range minority {
		if err := n.ip("hub", "link", "set", n.port(node), "master", minorityBridge); err != nil {
			return err
		}
	}
	return nil
}

// Heal puts a partition's minority back on the main bridge.
func (n *Net) Heal() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for _, node := range n.parted {
		errs = append(errs, n.ip("hub", "link", "set", n.port(node), "master", mainBridge))
	}
	n.parted = nil
	return errors.Join(errs...)
}

// Close ends what is left of the programs started (thawed first, then
// SIGKILL), removes the namespaces with whatever still runs in them, and
// lets the prefix go.
func (n *Net) Close() error {
	n.mu.Lock()
	procs := n.procs
	n.procs = map[string]*proc{}
	n.mu.Unlock()
	for _, p := range procs {
		if !p.exited() {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	}
	err := removeSet(n.prefix)
	n.unlock()
	return err
}

func (n *Net) unlock() {
	if n.lock != nil {
		n.lock.Close() // closing drops the flock
		n.lock = nil
	}
}

// takeLock holds lockDir/<prefix>.lock (flock) for the life of the set,
// waiting up to wait for a live holder. The kernel drops it when its
// holder dies, so a held lock means a set in use, a free one that any
// namespaces of the prefix are a dead run's.
func takeLock(prefix string, wait time.Duration) (*os.File, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("faultnet: %w", err)
	}
	path := filepath.Join(lockDir, prefix+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("faultnet: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("faultnet: %s: held by another run for %v: %w", path, wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeSet kills every process in the namespaces of prefix's holders
// (found by their tag), holders last: the namespaces, their veth pairs and
// bridges go with the last of them.
func removeSet(prefix string) error {
	if err := netns.Remove(tag + prefix + "_"); err != nil {
		return fmt.Errorf("faultnet: %w", err)
	}
	return nil
}

// ip runs iproute2's ip inside role's namespace ("hub" or a node), its
// output in the error.
func (n *Net) ip(role string, args ...string) error {
	return netns.IP(n.holder[role], args...)
}
