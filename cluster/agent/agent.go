package agent

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"hpc/cluster/config"
	"hpc/cluster/peer"
	"hpc/exec"
)

// Options are what an agent needs from its daemon.
type Options struct {
	Name   string         // this node's name
	Config *config.Config // the cluster's config
	Dir    string         // this node's state directory
	Socket string         // the daemon's unix socket, for srun inside jobs
	Exec   *exec.Executor // runs the steps
	Peers  *peer.Caller   // calls to other nodes and to the leader
	Log    *slog.Logger
	// Ctx ends with the daemon; work the agent started in the background
	// stops then, and Wait waits for it.
	Ctx context.Context
}

// Agent is the node side of a daemon: it runs batch steps and its share of
// srun steps through exec, carries their output to their launchers, runs
// prologs and epilogs, keeps jobs' storage, re-attaches to the steps a
// previous daemon left running, and reports the ends of jobs to the
// leader through its own node's API.
type Agent struct {
	cfg    *config.Config
	self   *config.Node
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
}

// New returns the agent of node o.Name; the node must be in the config.
func New(o Options) *Agent {
	return &Agent{
		cfg: o.Config, self: o.Config.Node(o.Name), name: o.Name, dir: o.Dir, socket: o.Socket,
		log: o.Log, ctx: o.Ctx, exec: o.Exec, peers: o.Peers, steps: newStepTable(),
	}
}

// Routes adds the agent's node-to-node routes to mux, each wrapped by
// node (which checks that a node signed the request).
func (ag *Agent) Routes(mux *http.ServeMux, node func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("POST /internal/launch", node(ag.handleLaunch))
	mux.HandleFunc("POST /internal/signal", node(ag.handleSignal))
	mux.HandleFunc("POST /internal/step/launch", node(ag.handleStepLaunch))
	mux.HandleFunc("POST /internal/step/attach", node(ag.handleStepAttach))
	mux.HandleFunc("POST /internal/step/signal", node(ag.handleTaskSignal))
	mux.HandleFunc("POST /internal/step/port", node(ag.handleStepPort))
	mux.HandleFunc("POST /internal/step/input", node(ag.handleTaskInput))
	mux.HandleFunc("POST /internal/job/cleanup", node(ag.handleJobCleanup))
	mux.HandleFunc("POST /internal/job/release", node(ag.handleHolderRelease))
	mux.HandleFunc("POST /internal/job/signal", node(ag.handleJobStepsSignal))
}

// Wait waits for the agent's background work once its context ended.
func (ag *Agent) Wait() { ag.wg.Wait() }

// addr is this node's address with port.
func (ag *Agent) addr(port int) string {
	return net.JoinHostPort(ag.self.Addr, strconv.Itoa(port))
}

// KillAll kills every step the agent runs (SIGTERM, then SIGKILL after
// grace) and waits for them: the daemon stops without leaving them.
func (ag *Agent) KillAll(grace time.Duration) { ag.steps.killAll(grace) }
