package cluster

import (
	"compress/gzip"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/fsm"
	"hpc/internal/promtext"
	"hpc/sched"
)

// Prometheus metrics: GET /metrics on the API port's plain-HTTP side
// (web.go: a token, or an anonymous viewer on the node's own machine), in
// Prometheus's text format (internal/promtext), on every node. Each daemon
// has figures of its own (several run in one test process, and a role
// change starts a new daemon in the same process); nothing is global.
//
// Who exports what:
//   - The cluster-wide figures (jobs by state and partition, pending
//     reasons, nodes by state, CPUs and GPUs) come from the leader alone,
//     once it has caught up with the log (caughtUp), read from the
//     replicated state at scrape time. So a Prometheus that scrapes every
//     node gets each figure once, and sum() over the cluster is right; the
//     series move to the new leader after a failover. A follower's copy of
//     the state could lag, and the pending reasons are the leader's alone
//     (schedView, soft state). HashiCorp's Consul and Nomad, on the same
//     Raft library, export their catalog figures from the leader only too.
//   - Every controller (Raft member): its term, whether it leads, its
//     applied index, the leader changes it has seen and its commit latency
//     (commits are proposed on the leader, so a follower's histogram stays
//     empty until it leads).
//   - Every node, compute-only nodes included (no Raft, no state: no
//     cluster figures): the gossip members by state as this node sees them,
//     its launch latency of batch scripts and srun tasks, and Go's and the
//     process's own figures.
//
// Names: those of the community exporter (vpenso/prometheus-slurm-exporter)
// where it has the figure: slurm_nodes_{alloc,idle,mix,drain,down},
// slurm_cpus_{alloc,idle,other,total}, slurm_gpus_{alloc,idle,other,total},
// slurm_partition_cpus_{allocated,idle,other,total} and
// slurm_partition_jobs_pending. The jobs by state are
// slurm_jobs_{pending,running,...}, the names of Slurm's own metrics
// plugin (25.11, /metrics/jobs; the community exporter calls them
// slurm_queue_*). Everything else is hpc's own and named hpc_...

// Histogram buckets, in seconds: 1-2.5-5 steps over the span each figure
// may take.
var (
	// A pass over a short queue to one over a very long one.
	schedPassBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// Up to applyTimeout (10 s), past which propose gives up.
	raftCommitBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// A plain process to a container whose image is prepared first.
	stepLaunchBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
)

// daemonMetrics is one daemon's figures counted where their events
// happen (the scheduler's passes, Raft commits, leader changes,
// launches) and the collector of those read at scrape time. Its methods
// do nothing on a nil receiver: a Daemon built by hand in a test has
// none.
type daemonMetrics struct {
	schedPass     *promtext.Buckets
	backfill      promtext.Count
	raftCommit    *promtext.Buckets
	leaderChanges promtext.Count
	launch        *promtext.BucketsBy // by kind
	collector     *metricsCollector
	// inFlight holds a place per scrape being answered: at most two read
	// the state at once (each holds the FSM's read lock for its pass);
	// more are answered 503.
	inFlight chan struct{}
}

var (
	schedPassFamily = &promtext.Family{Name: "hpc_scheduler_pass_seconds", Type: promtext.Histogram,
		Help: "Duration of the leader's scheduling passes over a non-empty queue (sdiag's main and backfill cycles: one pass does both)."}
	backfillFamily = &promtext.Family{Name: "hpc_backfill_starts_total", Type: promtext.Counter,
		Help: "Jobs the leader's passes started by backfill: ahead of a job of higher priority waiting for resources (sdiag's backfilled jobs, never reset)."}
	raftCommitFamily = &promtext.Family{Name: "hpc_raft_commit_seconds", Type: promtext.Histogram,
		Help: "Time from proposing an entry to Raft to its being applied to this controller's state, for the entries committed."}
	leaderChangesFamily = &promtext.Family{Name: "hpc_leader_changes_total", Type: promtext.Counter,
		Help: "Leaders this controller has seen take office (a new leader, or the same one again after a time without)."}
	launchFamily = &promtext.Family{Name: "hpc_step_launch_seconds", Type: promtext.Histogram, Labels: []string{"kind"},
		Help: "Time on this node from a launch request's arrival to its tasks running: kind=batch for a job's batch script, kind=srun for this node's tasks of an srun step."}
)

// newDaemonMetrics makes d's figures.
func newDaemonMetrics(d *Daemon) *daemonMetrics {
	return &daemonMetrics{
		schedPass:  promtext.NewBuckets(schedPassBuckets),
		raftCommit: promtext.NewBuckets(raftCommitBuckets),
		launch:     promtext.NewBucketsBy(stepLaunchBuckets),
		collector:  newMetricsCollector(d),
		inFlight:   make(chan struct{}, 2),
	}
}

// registerMetricsRoutes serves the figures (a web route, web.go).
func (d *Daemon) registerMetricsRoutes(mux *http.ServeMux) {
	mux.Handle("GET /metrics", http.TimeoutHandler(http.HandlerFunc(d.serveMetrics), 30*time.Second,
		"the metrics took too long to gather\n"))
}

// serveMetrics answers a scrape: every figure of this daemon in the text
// format, gzipped when the scraper takes it (Prometheus does).
func (d *Daemon) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m := d.metrics
	select {
	case m.inFlight <- struct{}{}:
		defer func() { <-m.inFlight }()
	default:
		http.Error(w, "too many scrapes at once", http.StatusServiceUnavailable)
		return
	}
	text := m.page().Text()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if !acceptsGzip(r) {
		w.Write(text)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	zw.Write(text)
	zw.Close()
}

// acceptsGzip tells whether the request's Accept-Encoding names gzip
// with a weight above zero.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			if strings.TrimSpace(name) != "gzip" {
				continue
			}
			// gzip;q=0 (or 0.0, 0.000) refuses it.
			q, found := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
			if v, err := strconv.ParseFloat(q, 64); found && err == nil && v == 0 {
				return false
			}
			return true
		}
	}
	return false
}

// page is one scrape's figures: the counted ones, the collector's and
// Go's and the process's.
func (m *daemonMetrics) page() *promtext.Page {
	p := &promtext.Page{}
	p.AddBuckets(schedPassFamily, m.schedPass)
	p.Add(backfillFamily, m.backfill.Value())
	p.AddBuckets(raftCommitFamily, m.raftCommit)
	p.Add(leaderChangesFamily, m.leaderChanges.Value())
	m.launch.AddTo(p, launchFamily)
	m.collector.collect(p)
	p.AddRuntime()
	return p
}

// schedulerPass counts a scheduling pass: its length and the jobs it
// started by backfill.
func (m *daemonMetrics) schedulerPass(took time.Duration, backfilled int) {
	if m == nil {
		return
	}
	m.schedPass.Observe(took.Seconds())
	m.backfill.Add(float64(backfilled))
}

// committed counts an entry proposed at start and applied now.
func (m *daemonMetrics) committed(start time.Time) {
	if m != nil {
		m.raftCommit.Observe(time.Since(start).Seconds())
	}
}

// launched counts a launch on this node (agent.Options.OnLaunch).
func (m *daemonMetrics) launched(kind string, took time.Duration) {
	if m != nil {
		m.launch.Observe(kind, took.Seconds())
	}
}

// watchLeaders counts the leaders this controller sees take office: Raft
// tells its observers of each change of leader, the loss of one included
// (an empty id). Called as Raft starts, before it can elect anyone.
func (d *Daemon) watchLeaders(r *raft.Raft) {
	if d.metrics == nil {
		return
	}
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(obs)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer r.DeregisterObserver(obs)
		for {
			select {
			case <-d.ctx.Done():
				return
			case o := <-ch:
				if lo, ok := o.Data.(raft.LeaderObservation); ok && lo.LeaderID != "" {
					d.metrics.leaderChanges.Inc()
				}
			}
		}
	}()
}

// metricsCollector reads, at scrape time, what the daemon knows: Raft's
// term and role, gossip's members and, on the leader, the cluster-wide
// figures of the replicated state.
type metricsCollector struct {
	d *Daemon

	raftTerm, raftLeader, raftApplied *promtext.Family
	gossip                            *promtext.Family

	jobs        [len(jobStates)]*promtext.Family
	partJobs    *promtext.Family
	partPending *promtext.Family
	reasons     *promtext.Family
	nodes       *promtext.Family
	nodesNoResp *promtext.Family
	nodeBuckets map[string]*promtext.Family
	cpus, gpus  [4]*promtext.Family // alloc, idle, other, total
	partCPUs    [4]*promtext.Family
}

// jobStates are the states slurm_jobs_<state> are exported for, every one
// on every scrape (0 when no job is in it), so that a dashboard's panels
// never lack a series. stateIndex gives a state's place.
var jobStates = [...]api.JobState{
	api.StatePending, api.StateRunning, api.StateCompleting, api.StateCompleted, api.StateFailed,
	api.StateCancelled, api.StateTimeout, api.StateOutOfMemory, api.StateNodeFail, api.StatePreempted,
}

// stateIndex is s's place in jobStates (-1: none).
func stateIndex(s api.JobState) int {
	switch s {
	case api.StatePending:
		return 0
	case api.StateRunning:
		return 1
	case api.StateCompleting:
		return 2
	case api.StateCompleted:
		return 3
	case api.StateFailed:
		return 4
	case api.StateCancelled:
		return 5
	case api.StateTimeout:
		return 6
	case api.StateOutOfMemory:
		return 7
	case api.StateNodeFail:
		return 8
	case api.StatePreempted:
		return 9
	}
	return -1
}

// jobCounts are jobs by state, in jobStates's order.
type jobCounts [len(jobStates)]int

// nodeBucket is the community exporter's gauge each of sinfo's long node
// states counts in (as it buckets sinfo's %T: a draining node counts as
// drain); "unknown" has none there (hpc_nodes has it).
var nodeBucket = map[string]string{
	"allocated": "alloc", "mixed": "mix", "idle": "idle",
	"drained": "drain", "draining": "drain", "down": "down",
}

func newMetricsCollector(d *Daemon) *metricsCollector {
	desc := func(name, help string, labels ...string) *promtext.Family {
		return &promtext.Family{Name: name, Help: help, Type: promtext.Gauge, Labels: labels}
	}
	c := &metricsCollector{
		d:           d,
		raftTerm:    desc("hpc_raft_term", "This controller's current Raft term."),
		raftLeader:  desc("hpc_raft_leader", "1 on the controller that leads (and exports the cluster-wide figures), 0 on the others."),
		raftApplied: desc("hpc_raft_applied_index", "The last Raft index applied to this controller's state."),
		gossip:      desc("hpc_gossip_members", "The cluster's hosts as this node's gossip sees them: alive (a member: memberlist counts a suspect member until it declares it dead), dead (declared dead or left, or never joined).", "state"),

		partJobs:    desc("hpc_partition_jobs", "Jobs in the state, by partition (a job pending in several partitions counts in each).", "partition", "state"),
		partPending: desc("slurm_partition_jobs_pending", "Pending jobs for partition (a job pending in several partitions counts in each).", "partition"),
		reasons:     desc("hpc_jobs_pending_reason", "Pending jobs by the reason squeue shows (Priority, Resources, Dependency, JobHeldUser, ...).", "reason"),
		nodes:       desc("hpc_nodes", "Nodes by sinfo's long state name (idle, mixed, allocated, drained, draining, down, unknown); not responding ones count in their state too.", "state"),
		nodesNoResp: desc("hpc_nodes_not_responding", "Nodes the leader does not hear (sinfo's *)."),
		nodeBuckets: map[string]*promtext.Family{},
		cpus: [4]*promtext.Family{
			desc("slurm_cpus_alloc", "Allocated CPUs"), desc("slurm_cpus_idle", "Idle CPUs"),
			desc("slurm_cpus_other", "Other CPUs (the free ones of drained and down nodes, as sinfo's %C counts them)"),
			desc("slurm_cpus_total", "Total CPUs"),
		},
		gpus: [4]*promtext.Family{
			desc("slurm_gpus_alloc", "Allocated GPUs"), desc("slurm_gpus_idle", "Idle GPUs"),
			desc("slurm_gpus_other", "Other GPUs (the free ones of drained and down nodes)"), desc("slurm_gpus_total", "Total GPUs"),
		},
		partCPUs: [4]*promtext.Family{
			desc("slurm_partition_cpus_allocated", "Allocated CPUs for partition", "partition"),
			desc("slurm_partition_cpus_idle", "Idle CPUs for partition", "partition"),
			desc("slurm_partition_cpus_other", "Other CPUs for partition", "partition"),
			desc("slurm_partition_cpus_total", "Total CPUs for partition", "partition"),
		},
	}
	for i, s := range jobStates {
		c.jobs[i] = desc("slurm_jobs_"+strings.ToLower(string(s)), "Jobs in state "+string(s)+".")
	}
	for _, b := range []string{"alloc", "mix", "idle", "drain", "down"} {
		c.nodeBuckets[b] = desc("slurm_nodes_"+b, "Nodes in state "+b+" (sinfo's states as the community exporter buckets them).")
	}
	return c
}

// collect adds what this node knows now.
func (c *metricsCollector) collect(p *promtext.Page) {
	d := c.d
	gauge := p.Add
	alive, dead := d.gossipCounts()
	gauge(c.gossip, float64(alive), "alive")
	gauge(c.gossip, float64(dead), "dead")
	if d.raft == nil {
		return // a compute-only node: no Raft, no state
	}
	leader := d.isLeader()
	gauge(c.raftTerm, float64(d.raft.CurrentTerm()))
	gauge(c.raftLeader, b2f(leader))
	gauge(c.raftApplied, float64(d.raft.AppliedIndex()))
	if !leader || !d.caughtUp.Load() || d.fsm == nil {
		return
	}
	results := d.view.lastResults()
	var f *clusterFigures
	d.fsm.ViewConfig(func(cfg *config.Config, st *fsm.State) { f = countCluster(cfg, st, results) })
	c.sendCluster(f, gauge)
}

// sendCluster adds the cluster-wide figures.
func (c *metricsCollector) sendCluster(f *clusterFigures, gauge func(*promtext.Family, float64, ...string)) {
	for i, n := range f.jobs {
		gauge(c.jobs[i], float64(n))
	}
	for p, counts := range f.partJobs {
		for i, n := range counts {
			if n > 0 {
				gauge(c.partJobs, float64(n), p, string(jobStates[i]))
			}
		}
	}
	for _, p := range f.partitions {
		var pending int
		if counts := f.partJobs[p]; counts != nil {
			pending = counts[0]
		}
		gauge(c.partPending, float64(pending), p)
		use := f.partCPUs[p]
		for i, v := range use {
			gauge(c.partCPUs[i], float64(v), p)
		}
	}
	for r, n := range f.reasons {
		gauge(c.reasons, float64(n), r)
	}
	buckets := map[string]int{}
	for s, n := range f.nodes {
		gauge(c.nodes, float64(n), s)
		if b, ok := nodeBucket[s]; ok {
			buckets[b] += n
		}
	}
	for b, desc := range c.nodeBuckets {
		gauge(desc, float64(buckets[b]))
	}
	gauge(c.nodesNoResp, float64(f.noResp))
	for i := range 4 {
		gauge(c.cpus[i], float64(f.cpus[i]))
		gauge(c.gpus[i], float64(f.gpus[i]))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// gossipCounts counts the cluster's hosts (its nodes, controller-only and
// submit hosts) that are gossip members of this node's view and those that are
// not. memberlist tells no one which members it suspects, so a suspect
// member counts as alive until it is declared dead.
func (d *Daemon) gossipCounts() (alive, dead int) {
	hosts := map[string]bool{}
	for _, n := range d.cfg.Nodes {
		hosts[n.Name] = true
	}
	for _, h := range append(slices.Clone(d.cfg.ControlHosts), d.cfg.SubmitHosts...) {
		hosts[h.Name] = true
	}
	for _, m := range d.members() {
		if hosts[m.Name] {
			alive++
		}
	}
	return alive, len(hosts) - alive
}

// lastResults is the last scheduling pass's per-job results. store
// replaces the map whole and never writes into it, so it may be read once
// the lock is let go.
func (v *schedView) lastResults() map[uint64]sched.JobResult {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.results
}

// aiot is sinfo's %C: allocated, idle, other, total.
type aiot [4]int

// clusterFigures are the cluster-wide figures of one scrape.
type clusterFigures struct {
	jobs       jobCounts
	partJobs   map[string]*jobCounts // by partition
	reasons    map[string]int
	nodes      map[string]int // by sinfo's long state name
	noResp     int
	cpus, gpus aiot
	partitions []string
	partCPUs   map[string]aiot
}

// nodeUse is what the running jobs hold on a node.
type nodeUse struct{ cpus, gpus int }

// countCluster counts the figures in one pass over the jobs and one over
// the nodes, under the state's read lock (the caller's View), which holds
// Raft's applies back meanwhile. results are the last pass's, for the
// pending reasons. It reads a few fields of each job and copies none: the
// time goes to fetching the jobs' records from memory (100,000 jobs:
// 20 to 60 ms on a busy 2-core machine, BenchmarkCountCluster; squeue's
// copy of every job costs more).
func countCluster(cfg *config.Config, st *fsm.State, results map[uint64]sched.JobResult) *clusterFigures {
	f := &clusterFigures{
		partJobs: map[string]*jobCounts{}, reasons: map[string]int{},
		nodes: map[string]int{}, partCPUs: map[string]aiot{},
	}
	use := map[string]nodeUse{}
	part := func(p string) *jobCounts {
		c := f.partJobs[p]
		if c == nil {
			c = &jobCounts{}
			f.partJobs[p] = c
		}
		return c
	}
	// The last partition seen: most jobs are in the same few, so most
	// jobs cost no map lookup for theirs.
	lastPart, lastCounts := "", (*jobCounts)(nil)
	for _, j := range st.Jobs {
		i := stateIndex(j.State)
		if i < 0 {
			continue
		}
		f.jobs[i]++
		switch p := j.Spec.Partition; {
		case lastCounts != nil && p == lastPart:
			lastCounts[i]++
		case !strings.Contains(p, ","):
			lastPart, lastCounts = p, part(p)
			lastCounts[i]++
		default:
			for _, p := range strings.Split(p, ",") {
				part(strings.TrimSpace(p))[i]++
			}
		}
		switch j.State {
		case api.StatePending:
			f.reasons[pendingReason(j, results)]++
		case api.StateRunning, api.StateCompleting:
			for _, a := range j.Alloc {
				u := use[a.Node]
				u.cpus += a.CPUs
				for _, g := range a.Gres {
					if g.Name == "gpu" {
						u.gpus += len(g.Indices)
					}
				}
				use[a.Node] = u
			}
		}
	}
	perNode := make(map[string]aiot, len(cfg.Nodes))
	for _, n := range cfg.Nodes {
		ns := st.Nodes[n.Name]
		u := use[n.Name]
		state := sinfoState(ns, n.CPUs, u.cpus)
		f.nodes[state]++
		if ns != nil && ns.NoResp {
			f.noResp++
		}
		// Drained and down nodes' free CPUs are "other", as sinfo's %C
		// counts them (commands/format: cpuCounts).
		usable := state != "drained" && state != "draining" && state != "down"
		c := split(n.CPUs, u.cpus, usable)
		perNode[n.Name] = c
		f.cpus = add(f.cpus, c)
		gpus := 0
		for _, g := range n.Gres {
			if g.Name == "gpu" {
				gpus += g.Count
			}
		}
		f.gpus = add(f.gpus, split(gpus, u.gpus, usable))
	}
	for _, p := range cfg.Partitions {
		f.partitions = append(f.partitions, p.Name)
		var t aiot
		for _, n := range p.Nodes {
			t = add(t, perNode[n])
		}
		f.partCPUs[p.Name] = t
	}
	return f
}

// split is a node's %C figures: of total, alloc are allocated and the rest
// idle, or other on a node that takes no work.
func split(total, alloc int, usable bool) aiot {
	alloc = min(alloc, total)
	if usable {
		return aiot{alloc, total - alloc, 0, total}
	}
	return aiot{alloc, 0, total - alloc, total}
}

func add(a, b aiot) aiot {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

// sinfoState is a node's state by sinfo's long name (sinfo -o %T, without
// the * of a node not responding), worked out as nodesView works out
// api.Node.State (TestSinfoStateMatchesNodesView).
func sinfoState(ns *fsm.NodeState, cpus, alloc int) string {
	switch {
	case ns == nil || ns.State == "UNKNOWN":
		return "unknown"
	case ns.State == "DOWN" || ns.State == "ADMIN_DOWN":
		return "down"
	case ns.State == "DRAIN" && alloc > 0:
		return "draining"
	case ns.State == "DRAIN":
		return "drained"
	case alloc == 0:
		return "idle"
	case alloc >= cpus:
		return "allocated"
	}
	return "mixed"
}

// pendingReason is the reason squeue shows for a pending job, as
// schedView.overlay gives it (TestPendingReasonMatchesOverlay): the
// hold's, else the last pass's, else the state's, else None.
func pendingReason(j *api.Job, results map[uint64]sched.JobResult) string {
	reason := j.Reason
	switch j.Hold {
	case "user":
		reason = sched.ReasonJobHeldUser
	case "admin":
		reason = sched.ReasonJobHeldAdmin
	case api.HoldRequeue:
		reason = api.ReasonRequeueHeld
	}
	if r, ok := results[j.ID]; ok && r.Reason != "" {
		reason = r.Reason
	}
	if reason == "" {
		reason = api.ReasonNone
	}
	return reason
}
