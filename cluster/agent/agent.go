package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"hpc/cluster/config"
	"hpc/cluster/peer"
	"hpc/exec"
)

// Options are what an agent needs from its daemon.
type Options struct {
	Name   string         // this node's name
	Config *config.Config // the cluster's config
	// ConfigPath is the slurm.conf the node re-reads on reconfigure ("":
	// none, the config was given whole).
	ConfigPath string
	Dir        string         // this node's state directory
	Socket     string         // the daemon's unix socket, for srun inside jobs
	Exec       *exec.Executor // runs the steps
	Peers      *peer.Caller   // calls to other nodes and to the leader
	Log        *slog.Logger
	// Ctx ends with the daemon; work the agent started in the background
	// stops then, and Wait waits for it.
	Ctx context.Context
	// OnLaunch, if set, is told how long each launch on this node took,
	// from the request's arrival to its tasks running: kind "batch" (a
	// job's batch script) or "srun" (the node's tasks of a step). The
	// daemon's metrics count them.
	OnLaunch func(kind string, took time.Duration)
}

// Agent is the node side of a daemon: it runs batch steps and its share of
// srun steps through exec, carries their output to their launchers, runs
// prologs and epilogs, keeps jobs' storage, re-attaches to the steps a
// previous daemon left running, and reports the ends of jobs to the
// leader through its own node's API.
type Agent struct {
	cfg  atomic.Pointer[config.Config] // replaced by Reconfigure
	path string                        // the node's slurm.conf
	self *config.Node
	// host is this host's address: the node's NodeAddr, or a
	// controller-only or submit host's (self nil), whose daemon still
	// launches srun steps and reports their ends through its own API.
	host   string
	name   string
	dir    string
	socket string
	log    *slog.Logger
	ctx    context.Context
	wg     sync.WaitGroup
	exec   *exec.Executor
	peers  *peer.Caller

	steps    *stepTable
	runStore runStorage // jobstorage.go
	onLaunch func(kind string, took time.Duration)
}

// New returns the agent of node o.Name; the node must be in the config.
func New(o Options) *Agent {
	ag := &Agent{
		self: o.Config.Node(o.Name), name: o.Name, dir: o.Dir, socket: o.Socket, path: o.ConfigPath,
		log: o.Log, ctx: o.Ctx, exec: o.Exec, peers: o.Peers, steps: newStepTable(), onLaunch: o.OnLaunch,
	}
	ag.cfg.Store(o.Config)
	ag.host, _ = o.Config.HostAddr(o.Name)
	return ag
}

// launched tells OnLaunch of a launch that arrived at arrived and runs now.
func (ag *Agent) launched(kind string, arrived time.Time) {
	if ag.onLaunch != nil {
		ag.onLaunch(kind, time.Since(arrived))
	}
}

// conf is the node's configuration: slurm.conf as the daemon read it at
// start, or as it re-read it at the last scontrol reconfigure.
func (ag *Agent) conf() *config.Config { return ag.cfg.Load() }

// Reconfigure re-reads the node's slurm.conf (and the files beside it),
// as slurmd does on scontrol reconfigure: what steps and jobs start with
// from now on (Prolog, Epilog, KillWait, limits, ...) follows it. Nodes,
// controllers and ports cannot change without a restart: such a file is
// refused, and the node keeps what it has.
func (ag *Agent) Reconfigure() error {
	if ag.path == "" {
		return nil
	}
	files, err := config.ReadFiles(ag.path)
	if err != nil {
		return err
	}
	next, err := config.ParseFiles(files)
	if err != nil {
		return err
	}
	if next.NeedsRestart(ag.conf()) {
		return fmt.Errorf("%s: nodes, controllers or ports changed: restart the node's daemon", ag.path)
	}
	ag.cfg.Store(next)
	return nil
}

// Routes adds the agent's node-to-node routes to mux, each wrapped by
// node (which checks that a node signed the request).
func (ag *Agent) Routes(mux *http.ServeMux, node func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("POST /internal/launch", node(ag.handleLaunch))
	mux.HandleFunc("POST /internal/reconfigure", node(ag.handleReconfigure))
	mux.HandleFunc("POST /internal/signal", node(ag.handleSignal))
	mux.HandleFunc("POST /internal/step/launch", node(ag.handleStepLaunch))
	mux.HandleFunc("POST /internal/step/attach", node(ag.handleStepAttach))
	mux.HandleFunc("POST /internal/step/signal", node(ag.handleTaskSignal))
	mux.HandleFunc("POST /internal/step/port", node(ag.handleStepPort))
	mux.HandleFunc("POST /internal/step/input", node(ag.handleTaskInput))
	mux.HandleFunc("POST /internal/job/cleanup", node(ag.handleJobCleanup))
	mux.HandleFunc("POST /internal/job/release", node(ag.handleHolderRelease))
	mux.HandleFunc("POST /internal/job/signal", node(ag.handleJobStepsSignal))
	mux.HandleFunc("POST /internal/step/stat", node(ag.handleStepStat))
	mux.HandleFunc("POST /internal/file/open", node(ag.handleFileOpen))
	mux.HandleFunc("POST /internal/file/write", node(ag.handleFileWrite))
	mux.HandleFunc("POST /internal/file/close", node(ag.handleFileClose))
	mux.HandleFunc("POST /internal/file/stat", node(ag.handleFileStat))
	mux.HandleFunc("POST /internal/file/read", node(ag.handleFileRead))
	mux.HandleFunc("POST /internal/file/remove", node(ag.handleFileRemove))
	mux.HandleFunc("POST /internal/job/output", node(ag.handleOutputTail))
}

// Wait waits for the agent's background work once its context ended.
func (ag *Agent) Wait() { ag.wg.Wait() }

// addr is this host's address with port.
func (ag *Agent) addr(port int) string {
	return net.JoinHostPort(ag.host, strconv.Itoa(port))
}

// KillAll kills every step the agent runs (SIGTERM, then SIGKILL after
// grace) and waits for them: the daemon stops without leaving them.
func (ag *Agent) KillAll(grace time.Duration) { ag.steps.killAll(grace) }

// handleReconfigure is the leader's word, after scontrol reconfigure, to
// re-read slurm.conf.
func (ag *Agent) handleReconfigure(w http.ResponseWriter, r *http.Request) {
	if err := ag.Reconfigure(); err != nil {
		ag.log.Warn("reconfigure refused", "err", err)
		peer.WriteErr(w, http.StatusConflict, err)
		return
	}
	ag.log.Info("reconfigured", "file", ag.path)
	peer.WriteJSON(w, struct{}{})
}
