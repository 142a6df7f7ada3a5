package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"hpc/accounting"
	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
	"hpc/exec"
)

// Options configure one node daemon.
type Options struct {
	Name   string         // this node's name, as in the config
	Config *config.Config // the cluster's config
	Dir    string         // this node's state directory
	Key    []byte         // the cluster key that signs node-to-node requests
	Socket string         // unix socket for local clients (default Dir/hpc.sock)
	// Join lists gossip addresses (host:port) to join; by default every
	// other node of the config.
	Join       []string
	ForcePlain bool // run steps as plain processes even as root
	Logger     *slog.Logger
	// Clock gives the time the controller stamps on its decisions (submit,
	// start and end times, time limits); nil means the system clock.
	Clock func() time.Time

	// afterStart, for tests, runs on the leader between the commit of
	// jobs' starts and their launch.
	afterStart func([]fsm.JobStart)
	// restart, set by StartNode, starts the daemon again in the role its
	// state directory now records (roles.go); nil refuses role changes.
	restart func()
}

// Daemon is one running node: gossip member, Raft voter when the node is a
// controller, API server and step agent.
type Daemon struct {
	o    Options
	cfg  *config.Config
	self *config.Node
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// keepSteps: the daemon stops leaving its steps running (Stop).
	keepSteps atomic.Bool
	// caughtUp is set once this node, as leader, has applied everything
	// committed before its term (the leader loop's barrier); until then
	// its state may lag, and the leader's routes wait for it.
	caughtUp atomic.Bool
	shutOnce sync.Once
	// health is when the leader last heard each node (health.go).
	health nodeHealth
	// intents are the launches and kills this leader has in flight
	// (intents.go).
	intents intentState
	// reg counts the runs nodes' registrations miss (register.go).
	reg registry
	// ctlFails is when a controller last failed to answer this agent-only
	// node's forwarded request (API address -> time.Time).
	ctlFails sync.Map

	list  *memberlist.Memberlist
	raft  *raft.Raft
	fsm   *fsm.FSM
	acct  *accounting.Store
	bolt  *raftboltdb.BoltStore
	exec  *exec.Executor
	kick  chan struct{}
	creds *peer.Credentials // this node's certificate and the cluster's CA
	peers *peer.Caller      // signed calls to the nodes' APIs, over TLS
	srvs  []*http.Server
	// local calls the socket's routes in this process (inprocess.go).
	local *api.Client
	agent *agent.Agent
	// submits holds each user's submissions to a rate (ratelimit.go).
	submits *submitLimiter
	// submitQ groups the submits that arrive while others commit
	// (submitbatch.go).
	submitQ submitQueue
	// diag counts what sdiag shows (diag.go).
	diag *diagStats
	// metrics is the node's Prometheus figures (metrics.go).
	metrics *daemonMetrics
	// launches are the steps this node runs for their srun (the launcher).
	launchMu sync.Mutex
	launches map[stepKey]*launch
	view     *schedView
	// memberCopy is the live gossip members (members), under memberMu.
	memberMu   sync.Mutex
	memberCopy map[string]memberlist.Node
	// ctlChange describes the controller change this leader is making
	// (controllers.go): one at a time.
	ctlChange atomic.Pointer[string]
	// ctlNudged is when the leader last told each node that runs Raft
	// outside the voter set to stop it (leader loop only).
	ctlNudged map[string]time.Time
}

// Raft timing: fast enough that a lab fails over in well under a second
// (scripts/bench-failover.sh), slow enough that a loaded 2-core machine
// does not hold elections for nothing. A follower stands for election once
// it has heard nothing for HeartbeatTimeout (checked at random intervals of
// one to two of it), and the other survivor votes only once it has noticed
// too; ElectionTimeout is a candidate's wait before trying again. A
// follower that is merely starved cannot unseat a healthy leader (pre-vote:
// the others still hear the leader and refuse), and a starved leader
// already steps down after LeaderLeaseTimeout, which is shorter: 300 ms
// adds no new way to lose a leader. Raft asks LeaderLeaseTimeout <=
// HeartbeatTimeout <= ElectionTimeout. CommitTimeout is how often the
// leader sends each follower its commit index when no entry is flowing:
// Raft's own 50 ms. Each send is a TLS round trip to every follower, and
// the leader reads nothing from followers' state, so a follower learning
// of a commit that late changes nothing. An idle leader holding 5,000
// jobs used 79 ms of CPU a second at 10 ms, 50 ms at 50 ms (most of the
// rest is heartbeats, every HeartbeatTimeout/10).
const (
	raftHeartbeat = 300 * time.Millisecond
	raftElection  = 300 * time.Millisecond
	raftLease     = 250 * time.Millisecond
	raftCommit    = 50 * time.Millisecond
	raftMaxAppend = 64
	raftLogCache  = 64
	applyTimeout  = 10 * time.Second
)

// Raft snapshots: once the log holds raftSnapshotThreshold entries after the
// last snapshot, the next check (every one to two raftSnapshotInterval)
// takes one, and the log is cut back to raftTrailingLogs behind its head.
// The threshold bounds how often a snapshot is taken; the interval only
// how late after the threshold. Raft's own 120 s would let a busy
// cluster's log, and the replay after a restart, grow many times past the
// threshold before the check comes round.
//
// The entries kept behind a snapshot are there for a follower a little
// behind, which the leader can then send entries rather than the
// snapshot. Every one stays in raft.db, and BoltDB reads the file through
// a memory map: each page of the log a controller has written is read
// back (an append reads the last page; a cut reads all it deletes), so
// the file's pages stay in the controller's resident memory. With 5,000
// jobs held after the bench's workload, Raft's own 10,240 kept a 40 MB
// file, 10.4 MiB of it resident; 1024 keep 16-25 MB, 2.8-3.7 MiB resident
// soon after the file grew, 15.7 of 16 MiB in a run where it had not
// grown for a while (a shell's submit is 1-5 KB, most of it the
// environment). A follower further behind installs the leader's snapshot
// (e2e TestLabSnapshotCatchUp); one that falls behind again while it
// installs needs a whole raftSnapshotThreshold of entries more to be, so
// the threshold, not the entries kept, is what lets a slow follower
// catch up.
const (
	raftSnapshotThreshold = 4096
	raftSnapshotInterval  = 10 * time.Second
	raftTrailingLogs      = 1024
)

// snapshotThreshold is the threshold for a state of jobs jobs: a snapshot
// writes every job and accounting's rows, so a state of 100,000 jobs took
// seconds of a controller's CPU each time; at a fixed threshold it took
// one every 4,096 entries, and a controller under a stream of submits did
// little else. Half the jobs (in steps of raftSnapshotThreshold) keeps
// the snapshots' cost per entry bounded, and the log at most about half
// the state's jobs past raftTrailingLogs.
func snapshotThreshold(jobs int) uint64 {
	steps := uint64(jobs/2) / raftSnapshotThreshold
	return max(1, steps) * raftSnapshotThreshold
}

// tuneSnapshots keeps Raft's snapshot threshold at snapshotThreshold of
// the jobs the state holds, looking every raftSnapshotInterval; every
// controller takes its own snapshots.
func (d *Daemon) tuneSnapshots() {
	defer d.wg.Done()
	t := time.NewTicker(raftSnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
			d.retuneSnapshots()
		}
	}
}

func (d *Daemon) retuneSnapshots() {
	var jobs int
	d.fsm.View(func(st *fsm.State) { jobs = len(st.Jobs) })
	d.setSnapshotThreshold(jobs)
}

// setSnapshotThreshold sets Raft's snapshot threshold for a state of jobs
// jobs.
func (d *Daemon) setSnapshotThreshold(jobs int) {
	rc := d.raft.ReloadableConfig()
	if want := snapshotThreshold(jobs); rc.SnapshotThreshold != want {
		rc.SnapshotThreshold = want
		if err := d.raft.ReloadConfig(rc); err != nil {
			d.log.Warn("cannot change the snapshot threshold", "threshold", want, "err", err)
		}
	}
}

// Start brings a node up and returns once its servers listen.
func Start(o Options) (*Daemon, error) {
	cfg := o.Config
	self := cfg.Node(o.Name)
	if self == nil {
		// A SlurmctldHost without a NodeName line runs a controller only:
		// Raft, gossip and the API, and never jobs (it is not in
		// cfg.Nodes, so neither the scheduler nor sinfo sees it). An
		// HpcSubmitHost (a login node) runs gossip and the API only: the
		// commands run there reach the controllers through it.
		addr, ok := cfg.HostAddr(o.Name)
		if !ok {
			return nil, fmt.Errorf("node %q is not in the config (NodeName or SlurmctldHost lines)", o.Name)
		}
		self = &config.Node{Name: o.Name, Addr: addr, Hostname: o.Name}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.Socket == "" {
		o.Socket = filepath.Join(o.Dir, "hpc.sock")
	}
	if len(o.Key) < 16 {
		return nil, errors.New("cluster key missing or shorter than 16 bytes")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{
		o: o, cfg: cfg, self: self, log: o.Logger.With("node", o.Name),
		ctx: ctx, stop: cancel,
		kick:     make(chan struct{}, 1),
		launches: map[stepKey]*launch{},
		submits:  newSubmitLimiter(cfg.SubmitRate()),
		diag:     newDiagStats(time.Now()),
		view:     newSchedView(),
	}
	d.metrics = newDaemonMetrics(d)
	ok := false
	defer func() {
		if !ok {
			d.Shutdown()
		}
	}()

	creds, err := peer.NodeCredentials(o.Dir, o.Name, []string{self.Addr}, o.Key)
	if err != nil {
		return nil, fmt.Errorf("node credentials: %w", err)
	}
	d.creds, d.peers = creds, peer.NewCaller(o.Key, cfg, creds)

	// A controller-only or submit host runs no steps: no containers to
	// prepare (the executor is there for the daemon's wiring only).
	ex, err := exec.New(exec.Options{StateDir: filepath.Join(o.Dir, "exec"), NodeName: o.Name, ForcePlain: o.ForcePlain || !d.runsJobs(), Logger: d.log})
	if err != nil {
		return nil, fmt.Errorf("start executor: %w", err)
	}
	d.exec = ex
	d.log.Info("executor ready", "mode", ex.Mode())

	role, err := d.startRole()
	if err != nil {
		return nil, err
	}
	if role.raft {
		if err := d.startRaft(role.bootstrap); err != nil {
			return nil, err
		}
	}
	if err := d.startGossip(); err != nil {
		return nil, err
	}
	d.agent = agent.New(agent.Options{Name: o.Name, Config: cfg, ConfigPath: d.confPath(), Dir: o.Dir, Socket: o.Socket, Exec: ex, Peers: d.peers, Log: d.log, Ctx: ctx,
		OnLaunch: d.metrics.launched})
	if d.runsJobs() {
		// A controller-only or submit host never runs jobs: nothing to
		// re-attach, nothing to register.
		d.agent.Reattach()
	}
	if err := d.startServers(); err != nil {
		return nil, err
	}
	if d.raft != nil {
		d.wg.Add(3)
		go d.leaderLoop()
		go d.healthLoop() // health.go
		go d.tuneSnapshots()
	}
	ok = true
	return d, nil
}

func (d *Daemon) addr(port int) string {
	return net.JoinHostPort(d.self.Addr, strconv.Itoa(port))
}

// startRaft starts this node's Raft. bootstrap: a SlurmctldHost with no
// Raft state yet writes the first voter set, the SlurmctldHost lines; a
// node made a controller at run time (roles.go) never does, it learns the
// voter set from the leader that added it.
func (d *Daemon) startRaft(bootstrap bool) error {
	dir := filepath.Join(d.o.Dir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	acct, err := accounting.Open(filepath.Join(d.o.Dir, "accounting.db"))
	if err != nil {
		return fmt.Errorf("open accounting: %w", err)
	}
	d.acct = acct
	d.fsm = fsm.New(d.cfg, acct, d.log)
	d.fsm.OnApply(func(fsm.Type) { d.wake() })

	bolt, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return fmt.Errorf("open raft store: %w", err)
	}
	d.bolt = bolt
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		return err
	}
	bind := d.addr(d.cfg.RaftPort)
	advertise, err := net.ResolveTCPAddr("tcp", bind)
	if err != nil {
		return err
	}
	stream, err := newTLSStream(bind, advertise, d.creds.ServerConfig(), d.creds.ClientConfig())
	if err != nil {
		return fmt.Errorf("raft listen on %s: %w", bind, err)
	}
	trans := raft.NewNetworkTransport(stream, 3, 10*time.Second, io.Discard)
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(d.o.Name)
	rc.HeartbeatTimeout = raftHeartbeat
	rc.ElectionTimeout = raftElection
	rc.LeaderLeaseTimeout = raftLease
	rc.CommitTimeout = raftCommit
	rc.SnapshotThreshold = raftSnapshotThreshold
	rc.SnapshotInterval = raftSnapshotInterval
	rc.TrailingLogs = raftTrailingLogs
	// The leader writes, and sends, up to this many entries in one disk
	// write and one message (raft's own default), taking them off its
	// apply channel in batches. Many submits at once are already one
	// entry (submitbatch.go), so more entries per message gain nothing,
	// and each message, with entries of up to maxSubmitBatchBytes, stays
	// bounded.
	rc.MaxAppendEntries = raftMaxAppend
	rc.BatchApplyCh = true
	// A leader removed from the voters (hpc controller remove) steps down
	// and waits for the word to restart without Raft (roles.go), rather
	// than shutting Raft down under the routes that read it.
	rc.ShutdownOnRemove = false
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: os.Stderr})

	has, err := raft.HasExistingState(bolt, bolt, snaps)
	if err != nil {
		return err
	}
	// The newest entries stay in memory too: the leader sends them to the
	// followers right after writing them, without reading them back from
	// BoltDB one by one. One message's worth (raftMaxAppend): the cache
	// counts entries, not bytes, and 512 entries of a shell's submits
	// (5 KB each, most of it the environment) held 2.5 MB for nothing;
	// a submit group's entry can be hundreds of KB.
	logs, err := raft.NewLogCache(raftLogCache, bolt)
	if err != nil {
		return err
	}
	r, err := raft.NewRaft(rc, d.fsm, logs, bolt, snaps, trans)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	d.raft = r
	d.watchLeaders(r) // metrics.go
	// Raft's voter set lives in its log: once there is state, the voter
	// set is the log's (changed at run time by hpc controller), never the
	// config's again.
	if !has && bootstrap {
		// Every controller bootstraps with the same voter set from the
		// config; raft accepts identical bootstraps on all of them.
		var servers []raft.Server
		for _, c := range d.cfg.ControlHosts {
			addr, _ := d.cfg.HostAddr(c.Name)
			servers = append(servers, raft.Server{
				ID:      raft.ServerID(c.Name),
				Address: d.raftAddr(addr),
			})
		}
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("bootstrap raft: %w", err)
		}
	}
	return nil
}

// nodeMeta is what a node tells the others about itself over gossip.
type nodeMeta struct {
	API  string `json:"api"`
	Ctl  bool   `json:"ctl"` // runs Raft
	Mode string `json:"mode"`
	// Plain: steps run as plain processes, which a daemon restart (a
	// controller role change) would end.
	Plain bool `json:"plain,omitempty"`
}

type gossipDelegate struct{ meta []byte }

func (g *gossipDelegate) NodeMeta(limit int) []byte {
	if len(g.meta) > limit {
		return g.meta[:0]
	}
	return g.meta
}
func (g *gossipDelegate) NotifyMsg([]byte)                           {}
func (g *gossipDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (g *gossipDelegate) LocalState(join bool) []byte                { return nil }
func (g *gossipDelegate) MergeRemoteState(buf []byte, join bool)     {}

// gossipEvents keeps the daemon's copy of the live members (members):
// memberlist's Members hands out its own records, which it rewrites in
// place when a member comes back or changes its meta (a restart, a
// controller role change), so reading them would race; it calls these
// under its lock, where copying is safe.
type gossipEvents struct{ d *Daemon }

func (e gossipEvents) NotifyJoin(n *memberlist.Node)   { e.d.memberSeen(n, true) }
func (e gossipEvents) NotifyLeave(n *memberlist.Node)  { e.d.memberSeen(n, false) }
func (e gossipEvents) NotifyUpdate(n *memberlist.Node) { e.d.memberSeen(n, true) }

func (d *Daemon) memberSeen(n *memberlist.Node, alive bool) {
	d.memberMu.Lock()
	if d.memberCopy == nil {
		d.memberCopy = map[string]memberlist.Node{}
	}
	if alive {
		c := *n
		c.Meta = slices.Clone(n.Meta)
		c.Addr = slices.Clone(n.Addr)
		c.State = memberlist.StateAlive
		d.memberCopy[n.Name] = c
	} else {
		delete(d.memberCopy, n.Name)
	}
	d.memberMu.Unlock()
	d.wake()
}

// members are the live gossip members, this node included, by name: a
// member counts from its join until memberlist declares it dead or gone.
func (d *Daemon) members() []memberlist.Node {
	d.memberMu.Lock()
	defer d.memberMu.Unlock()
	out := make([]memberlist.Node, 0, len(d.memberCopy))
	for _, m := range d.memberCopy {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b memberlist.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (d *Daemon) startGossip() error {
	mc := memberlist.DefaultLocalConfig()
	mc.Name = d.o.Name
	mc.BindAddr = d.self.Addr
	mc.BindPort = d.cfg.GossipPort
	mc.AdvertiseAddr = d.self.Addr
	mc.AdvertisePort = d.cfg.GossipPort
	mc.LogOutput = io.Discard
	mc.SecretKey = peer.GossipKey(d.o.Key)
	// A silent member is declared dead in one to three seconds rather than
	// memberlist's local default of up to eighteen: the leader shows a node
	// not responding (`*`) once gossip has given it up (health.go), and
	// memberlist tells no one while it merely suspects. A member wrongly
	// declared dead (a starved machine) rejoins within seconds, and only
	// SlurmdTimeout without contact takes a node DOWN.
	mc.ProbeInterval = 500 * time.Millisecond
	// Gossip's messages are a few hundred bytes on a cluster's own
	// network: compressing each one (LZW, a new writer every message) was
	// 8-18% of what a node allocated while it ran jobs (heap profiles over
	// 30 sbatch --wait), and saved no measurable CPU. A member still reads
	// a compressed message from one that compresses.
	mc.EnableCompression = false
	mc.SuspicionMult = 2
	mc.SuspicionMaxTimeoutMult = 3
	meta, _ := json.Marshal(nodeMeta{API: d.addr(d.cfg.APIPort), Ctl: d.raft != nil, Mode: d.execMode(), Plain: !d.exec.Containers()})
	mc.Delegate = &gossipDelegate{meta: meta}
	mc.Events = gossipEvents{d}
	list, err := memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("gossip listen on %s: %w", d.addr(d.cfg.GossipPort), err)
	}
	d.list = list
	peers := d.o.Join
	if len(peers) == 0 {
		for _, n := range d.cfg.Nodes {
			if n.Name != d.o.Name {
				peers = append(peers, net.JoinHostPort(n.Addr, strconv.Itoa(d.cfg.GossipPort)))
			}
		}
		for _, h := range d.cfg.ControlHosts {
			if h.Name != d.o.Name && d.cfg.ControllerOnly(h.Name) {
				peers = append(peers, net.JoinHostPort(h.Addr, strconv.Itoa(d.cfg.GossipPort)))
			}
		}
	}
	if len(peers) > 0 {
		d.wg.Add(1)
		go d.joinLoop(peers)
	}
	return nil
}

// execMode is how this node runs steps, as status shows it.
func (d *Daemon) execMode() string {
	switch {
	case d.cfg.ControllerOnly(d.o.Name):
		return noSteps
	case d.cfg.IsSubmitHost(d.o.Name):
		return noStepsSubmit
	}
	return d.exec.Mode()
}

// runsJobs is whether this host is a compute node (a NodeName line): the
// only hosts with an agent that runs jobs and steps.
func (d *Daemon) runsJobs() bool { return d.cfg.Node(d.o.Name) != nil }

// noSteps and noStepsSubmit are the step modes of a controller-only host
// and of a submit host (a login node).
const (
	noSteps       = "none (controller only)"
	noStepsSubmit = "none (submit host)"
)

// rejoinInterval is how often a node tries again the peers gossip does not
// have as alive members.
const rejoinInterval = 3 * time.Second

// joinLoop keeps trying to reach the other members until one answers (the
// nodes of a lab start in any order), and then, every rejoinInterval, the
// peers that are not alive members: memberlist forgets a dead member after
// a while, and the two sides of a partition that healed, or a node whose
// link came back, would otherwise never try each other again.
func (d *Daemon) joinLoop(peers []string) {
	defer d.wg.Done()
	delay := 100 * time.Millisecond
	joined := false
	for {
		if !joined {
			if joinSome(d.ctx, d.list, peers, len(peers)) > 0 {
				joined, delay = true, rejoinInterval
			}
		} else if missing := d.missingPeers(peers); len(missing) > 0 {
			joinSome(d.ctx, d.list, missing, joinFanout) // those that answer are back
		}
		select {
		case <-d.ctx.Done():
			return
		case <-time.After(delay):
		}
		if !joined {
			delay = min(delay*2, 2*time.Second)
		}
	}
}

// joinFanout is how many peers a node tries at a time: one that answers
// hands over every member it knows (memberlist's push-pull), so a node of
// a 1,000-node cluster does not dial them all.
const joinFanout = 3

// joinSome tries peers in a random order, joinFanout at a time, until one
// batch joins, up to limit peers were tried or ctx ends; it returns how
// many answered.
func joinSome(ctx context.Context, list *memberlist.Memberlist, peers []string, limit int) int {
	order := slices.Clone(peers)
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	order = order[:min(len(order), limit)]
	for len(order) > 0 && ctx.Err() == nil { // a daemon stopping tries no more
		batch := order[:min(len(order), joinFanout)]
		order = order[len(batch):]
		if n, _ := list.Join(batch); n > 0 { // an error names those that did not answer
			return n
		}
	}
	return 0
}

// missingPeers returns the peers (host:port) that are not alive members.
func (d *Daemon) missingPeers(peers []string) []string {
	alive := map[string]bool{}
	for _, m := range d.members() {
		alive[net.JoinHostPort(m.Addr.String(), strconv.Itoa(int(m.Port)))] = true
	}
	var out []string
	for _, p := range peers {
		if !alive[p] {
			out = append(out, p)
		}
	}
	return out
}

// now is the controller's time, in UTC.
func (d *Daemon) now() time.Time {
	if d.o.Clock != nil {
		return d.o.Clock().UTC()
	}
	return time.Now().UTC()
}

func (d *Daemon) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Shutdown stops the node's servers, gossip and Raft. Running steps are
// killed.
func (d *Daemon) Shutdown() { d.shutdown(false) }

// Stop stops the node's servers, gossip and Raft as Shutdown does, but
// leaves the node's jobs running, as stopping slurmd does: the next daemon
// started on the node re-attaches to them (reattach.go). The node does not
// leave the gossip cluster either, so that a quick restart is not seen as
// the node going away. Steps that run as plain processes (no containers)
// are stopped all the same: nothing could re-attach to them.
func (d *Daemon) Stop() { d.shutdown(true) }

func (d *Daemon) shutdown(keepSteps bool) {
	d.shutOnce.Do(func() { d.shutdownOnce(keepSteps) })
}

func (d *Daemon) shutdownOnce(keepSteps bool) {
	if keepSteps && d.exec != nil && !d.exec.Containers() {
		// Plain processes are the daemon's children, with nothing a new
		// daemon could re-attach to: left running they would be lost.
		d.log.Warn("steps run as plain processes here and cannot outlive this daemon: stopping them")
		keepSteps = false
	}
	d.keepSteps.Store(keepSteps)
	d.stop()
	for _, s := range d.srvs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.Shutdown(ctx)
		cancel()
	}
	if d.list != nil {
		if !keepSteps {
			_ = d.list.Leave(time.Second)
		}
		_ = d.list.Shutdown()
	}
	if d.raft != nil {
		_ = d.raft.Shutdown().Error()
	}
	d.wg.Wait()
	if d.agent != nil {
		d.agent.Wait()
	}
	if d.bolt != nil {
		_ = d.bolt.Close()
	}
	if d.acct != nil {
		_ = d.acct.Close()
	}
	if d.exec != nil {
		if !keepSteps && d.agent != nil { // nil: the start failed before the agent was made
			d.agent.KillAll(time.Second)
		}
		_ = d.exec.Close()
	}
	_ = os.Remove(d.o.Socket)
}

// propose commits an operation through Raft on the leader.
func (d *Daemon) propose(op fsm.Op) (fsm.Result, error) {
	if d.raft == nil {
		return fsm.Result{}, &api.Error{Message: api.ErrNoLeader}
	}
	data, err := fsm.Encode(op)
	if err != nil {
		return fsm.Result{}, err
	}
	start := time.Now()
	f := d.raft.Apply(data, applyTimeout)
	if err := d.await(f); err != nil {
		return fsm.Result{}, fmt.Errorf("commit %T: %w", op, err)
	}
	d.metrics.committed(start)
	res, _ := f.Response().(fsm.Result)
	return res, res.Err
}

// await waits for a Raft future to be answered, or for the daemon to stop.
// hashicorp/raft leaves unanswered a future it had queued and not yet taken
// when it shuts down (an Apply's or a Barrier's has no shutdown channel),
// and waiting on it alone hung the daemon's stop for good: its leader loop
// never returned. The wait left behind then ends with the process. Every
// Raft future the daemon waits on goes through here: commits, barriers,
// configuration reads and changes, leadership transfers (a transfer's
// and a configuration read's channels are buffered too).
func (d *Daemon) await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-d.ctx.Done():
		return raft.ErrRaftShutdown
	}
}

func (d *Daemon) isLeader() bool { return d.raft != nil && d.raft.State() == raft.Leader }

// leaderAPI returns the API address of the controller to send writes to.
func (d *Daemon) leaderAPI() (string, error) {
	if d.raft != nil {
		_, id := d.raft.LeaderWithID()
		if id == "" {
			return "", &api.Error{Message: api.ErrNoLeader}
		}
		addr, ok := d.cfg.HostAddr(string(id))
		if !ok {
			return "", fmt.Errorf("leader %s is not in the config", id)
		}
		return net.JoinHostPort(addr, strconv.Itoa(d.cfg.APIPort)), nil
	}
	// An agent-only node asks a live controller, which forwards: one that
	// did not answer lately only if no other is left (a dead or cut off
	// controller stays a gossip member for a few seconds).
	var fallback string
	for _, m := range d.members() {
		var meta nodeMeta
		if json.Unmarshal(m.Meta, &meta) != nil || !meta.Ctl {
			continue
		}
		if !d.ctlFailedLately(meta.API) {
			return meta.API, nil
		}
		if fallback == "" {
			fallback = meta.API
		}
	}
	if fallback != "" {
		return fallback, nil
	}
	return "", &api.Error{Message: api.ErrNoLeader}
}

// ctlAvoid is how long an agent-only node passes over a controller that
// did not answer a forwarded request.
const ctlAvoid = 10 * time.Second

// ctlFailed notes that the controller at addr did not answer.
func (d *Daemon) ctlFailed(addr string) { d.ctlFails.Store(addr, time.Now()) }

// ctlFailedLately tells whether the controller at addr failed to answer
// within ctlAvoid.
func (d *Daemon) ctlFailedLately(addr string) bool {
	t, ok := d.ctlFails.Load(addr)
	return ok && time.Since(t.(time.Time)) < ctlAvoid
}
