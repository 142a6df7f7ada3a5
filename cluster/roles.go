package cluster

// Controller roles: which nodes run Raft, and how that changes at run time.
//
// At its first start a node's role comes from slurm.conf: a SlurmctldHost
// runs Raft (and bootstraps the voter set of the SlurmctldHost lines when
// it has no Raft state yet); a NodeName that is no SlurmctldHost runs jobs
// only; a SlurmctldHost without a NodeName line runs a controller only.
//
// `hpc controller add|remove NODE` changes the voter set through the
// leader (controllers.go). The node records its new role in its state
// directory (roleFile) before it acts on it, so that every later start
// keeps it: "voter" runs Raft without ever bootstrapping (the voter set is
// in the Raft log it receives from the leader), "removed" runs no Raft and
// drops the old Raft state, so that a later add starts clean from the
// leader's log rather than from a stale one.
//
// A role change restarts the node's daemon in its process (Node): the
// daemon's Raft handle is fixed for its lifetime, read without locks by
// every route, so the daemon is stopped as slurmd stops (jobs in
// containers keep running and are re-attached) and started again in the
// new role.

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// roleFile, in a node's state directory, holds the controller role the
// node was given at run time.
const roleFile = "controller-role"

// Recorded roles. No file: the config's role.
const (
	roleVoter   = "voter"   // made a controller by hpc controller add
	roleRemoved = "removed" // removed from the controllers by hpc controller remove
)

// nodeRole is what a starting daemon does about Raft.
type nodeRole struct {
	raft      bool // run Raft
	bootstrap bool // write the config's voter set if there is no Raft state
}

// readRole returns the recorded role, "" when there is none.
func readRole(dir string) (string, error) {
	p := filepath.Join(dir, roleFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	switch r := strings.TrimSpace(string(b)); r {
	case roleVoter, roleRemoved:
		return r, nil
	default:
		return "", fmt.Errorf("%s: unknown controller role %q (want %s or %s)", p, r, roleVoter, roleRemoved)
	}
}

// writeRole records role ("" removes the record) so that a crash leaves
// the old file or the new one, never half of one.
func writeRole(dir, role string) error {
	p := filepath.Join(dir, roleFile)
	if role == "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(role + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// wantsRaft is whether a node with this recorded role runs Raft.
func wantsRaft(role string, slurmctldHost bool) bool {
	return role == roleVoter || (role == "" && slurmctldHost)
}

// startRole decides the starting daemon's part in Raft.
func (d *Daemon) startRole() (nodeRole, error) {
	role, err := readRole(d.o.Dir)
	if err != nil {
		return nodeRole{}, err
	}
	ctl := d.cfg.IsController(d.o.Name)
	switch role {
	case roleVoter:
		return nodeRole{raft: true}, nil
	case roleRemoved:
		if err := os.RemoveAll(filepath.Join(d.o.Dir, "raft")); err != nil {
			return nodeRole{}, fmt.Errorf("drop the Raft state of a removed controller: %w", err)
		}
		return nodeRole{}, nil
	}
	return nodeRole{raft: ctl, bootstrap: ctl}, nil
}

// raftAddr is the Raft address of a host.
func (d *Daemon) raftAddr(host string) raft.ServerAddress {
	return raft.ServerAddress(net.JoinHostPort(host, strconv.Itoa(d.cfg.RaftPort)))
}

// apiAddr is the API address of a host of the config ("" when unknown).
func (d *Daemon) apiAddr(name string) string {
	addr, ok := d.cfg.HostAddr(name)
	if !ok {
		return ""
	}
	return net.JoinHostPort(addr, strconv.Itoa(d.cfg.APIPort))
}

// Node runs a node's daemon and starts it again, in the same process, when
// its controller role changes (see the top of this file). `hpc daemon`
// runs one; a Daemon started alone refuses role changes.
type Node struct {
	o         Options
	mu        sync.Mutex
	d         *Daemon
	stopped   bool
	again     chan struct{}
	done      chan struct{}
	loopDone  chan struct{}
	closeOnce sync.Once
}

// StartNode starts a node's daemon under a Node.
func StartNode(o Options) (*Node, error) {
	n := &Node{again: make(chan struct{}, 1), done: make(chan struct{}), loopDone: make(chan struct{})}
	o.restart = n.restartSoon
	n.o = o
	d, err := Start(o)
	if err != nil {
		return nil, err
	}
	n.d = d
	go n.loop()
	return n, nil
}

// Daemon is the node's current daemon (nil while a restart has not
// succeeded yet).
func (n *Node) Daemon() *Daemon {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.d
}

// Stop stops the daemon leaving its jobs running (Daemon.Stop).
func (n *Node) Stop() { n.end(true) }

// Shutdown stops the daemon with its jobs (Daemon.Shutdown).
func (n *Node) Shutdown() { n.end(false) }

func (n *Node) end(keepSteps bool) {
	n.closeOnce.Do(func() { close(n.done) })
	<-n.loopDone
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = true
	if n.d == nil {
		return
	}
	if keepSteps {
		n.d.Stop()
	} else {
		n.d.Shutdown()
	}
}

func (n *Node) restartSoon() {
	select {
	case n.again <- struct{}{}:
	default:
	}
}

func (n *Node) loop() {
	defer close(n.loopDone)
	for {
		select {
		case <-n.done:
			return
		case <-n.again:
			n.restart()
		}
	}
}

// restart stops the daemon as slurmd stops (its jobs run on) and starts
// it again, which reads the recorded role. A start that fails (a port
// still held) is tried again until it succeeds or the node is stopped.
func (n *Node) restart() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped || n.d == nil {
		return
	}
	log := n.d.log
	log.Info("restarting the daemon in its new controller role")
	n.d.Stop()
	n.d = nil
	delay := 200 * time.Millisecond
	for {
		d, err := Start(n.o)
		if err == nil {
			n.d = d
			log.Info("daemon restarted", "controller", d.raft != nil)
			return
		}
		log.Error("restart failed; trying again", "err", err, "in", delay)
		select {
		case <-n.done:
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}
