package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/fsm"
	"hpc/sched"
)

// scraped is one scrape of a node's /metrics, parsed.
type scraped map[string]*dto.MetricFamily

// scrape GETs the node's /metrics over HTTP on its API port, as
// Prometheus does, and parses the text format.
func scrape(t *testing.T, d *Daemon) scraped {
	t.Helper()
	resp, err := http.Get("http://" + d.addr(d.cfg.APIPort) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

// get is the value of the series of name whose labels include those given
// ("k=v" each): a gauge's or counter's value, a histogram's count. ok is
// false when there is no such series.
func (s scraped) get(name string, labels ...string) (v float64, ok bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// want is a series' value, a missing series failing the test.
func (s scraped) want(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.get(name, labels...)
	if !ok {
		t.Fatalf("no series %s%v", name, labels)
	}
	return v
}

// expect is a figure a scrape should show (eventually: the leader's loop
// and the state move on their own).
type expect struct {
	name   string
	labels []string
	value  float64
}

func e(name string, value float64, labels ...string) expect { return expect{name, labels, value} }

// scrapeUntil scrapes d until every figure is as expected, and returns
// that scrape.
func scrapeUntil(t *testing.T, d *Daemon, what string, want ...expect) scraped {
	t.Helper()
	var s scraped
	waitUntil(t, 30*time.Second, what, func() (bool, string) {
		s = scrape(t, d)
		var off []string
		for _, w := range want {
			if v, ok := s.get(w.name, w.labels...); !ok || v != w.value {
				off = append(off, fmt.Sprintf("%s%v=%v (present %v), want %v", w.name, w.labels, v, ok, w.value))
			}
		}
		return len(off) == 0, strings.Join(off, "; ")
	})
	return s
}

// A job submitted held, released, run and ended moves the leader's
// figures: jobs by state and partition, the pending reason, nodes by
// state, CPUs and GPUs allocated; the scheduler's passes, Raft's commits
// and the node's launches are counted.
func TestMetricsFollowAJob(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	s0 := scrapeUntil(t, d, "an idle cluster",
		e("hpc_raft_leader", 1), e("slurm_jobs_pending", 0), e("slurm_jobs_running", 0),
		e("slurm_nodes_idle", 1), e("hpc_nodes", 1, "state=idle"), e("slurm_nodes_alloc", 0),
		e("slurm_cpus_total", 2), e("slurm_cpus_idle", 2), e("slurm_cpus_alloc", 0),
		e("slurm_gpus_total", 2), e("slurm_gpus_alloc", 0),
		e("slurm_partition_cpus_total", 2, "partition=gpu"),
		e("hpc_gossip_members", 1, "state=alive"), e("hpc_gossip_members", 0, "state=dead"))
	if v := s0.want(t, "hpc_raft_term"); v < 1 {
		t.Errorf("term %v", v)
	}
	if v := s0.want(t, "hpc_leader_changes_total"); v < 1 {
		t.Errorf("leader changes %v, want at least its own election", v)
	}
	commits0 := s0.want(t, "hpc_raft_commit_seconds")
	passes0 := s0.want(t, "hpc_scheduler_pass_seconds")
	if _, ok := s0.get("hpc_step_launch_seconds", "kind=batch"); ok {
		t.Error("a launch counted before any job")
	}
	if _, ok := s0.get("go_goroutines"); !ok {
		t.Error("no Go figures")
	}

	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	id, err := cl.Submit(ctx, api.JobSpec{WorkDir: dir, Partition: "gpu", Gres: "gpu:1", Hold: true,
		Script: "#!/bin/sh\nwhile [ ! -e " + gate + " ]; do sleep 0.05; done\n"})
	if err != nil {
		t.Fatal(err)
	}
	s1 := scrapeUntil(t, d, "the held job",
		e("slurm_jobs_pending", 1), e("slurm_partition_jobs_pending", 1, "partition=gpu"),
		e("slurm_partition_jobs_pending", 0, "partition=debug"),
		e("hpc_partition_jobs", 1, "partition=gpu", "state=PENDING"),
		e("hpc_jobs_pending_reason", 1, "reason="+sched.ReasonJobHeldUser))
	if c := s1.want(t, "hpc_raft_commit_seconds"); c <= commits0 {
		t.Errorf("raft commits %v after a submit, %v before", c, commits0)
	}

	if _, err := cl.JobControl(ctx, api.JobControlRequest{JobIDs: []uint64{id}, Action: "release"}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateRunning)
	s2 := scrapeUntil(t, d, "the running job",
		e("slurm_jobs_pending", 0), e("slurm_jobs_running", 1),
		e("hpc_partition_jobs", 1, "partition=gpu", "state=RUNNING"),
		e("slurm_cpus_alloc", 1), e("slurm_cpus_idle", 1), e("slurm_nodes_mix", 1), e("slurm_nodes_idle", 0),
		e("hpc_nodes", 1, "state=mixed"), e("slurm_gpus_alloc", 1), e("slurm_gpus_idle", 1),
		e("slurm_partition_cpus_allocated", 1, "partition=debug"),
		e("hpc_step_launch_seconds", 1, "kind=batch"))
	if p := s2.want(t, "hpc_scheduler_pass_seconds"); p <= passes0 {
		t.Errorf("scheduler passes %v after a release, %v before", p, passes0)
	}
	if _, ok := s2.get("hpc_jobs_pending_reason", "reason="+sched.ReasonJobHeldUser); ok {
		t.Error("a pending reason left when nothing pends")
	}
	// An srun step in the job: its tasks' launch is counted apart.
	if err := cl.RunStep(ctx, api.StepRequest{JobID: id, Argv: []string{"true"}}, func(*api.StepEvent) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	scrapeUntil(t, d, "the step's launch", e("hpc_step_launch_seconds", 1, "kind=srun"), e("hpc_step_launch_seconds", 1, "kind=batch"))

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateCompleted)
	scrapeUntil(t, d, "the ended job",
		e("slurm_jobs_running", 0), e("slurm_jobs_completed", 1),
		e("hpc_partition_jobs", 1, "partition=gpu", "state=COMPLETED"),
		e("slurm_cpus_alloc", 0), e("slurm_gpus_alloc", 0), e("slurm_nodes_idle", 1))
}

// A job that starts ahead of a job of higher priority waiting for
// resources is a backfill start: counted once, as sdiag counts it.
func TestMetricsBackfill(t *testing.T) {
	d, cl := startOne(t) // one node of 2 CPUs
	ctx := context.Background()
	submit := func(cpus int, limit int64) uint64 {
		t.Helper()
		id, err := cl.Submit(ctx, api.JobSpec{WorkDir: t.TempDir(), CPUsPerTask: cpus, TimeLimitMin: limit, Script: "#!/bin/sh\nsleep 300\n"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	scrapeUntil(t, d, "no backfill yet", e("hpc_backfill_starts_total", 0))
	waitJob(t, cl, submit(1, 10), api.StateRunning)
	wide := submit(2, 10) // waits for the first job's end
	short := submit(1, 1) // ends before that: backfilled
	waitJob(t, cl, short, api.StateRunning)
	s := scrapeUntil(t, d, "the backfill start", e("hpc_backfill_starts_total", 1), e("slurm_jobs_running", 2),
		e("hpc_jobs_pending_reason", 1, "reason="+sched.ReasonResources), e("slurm_cpus_alloc", 2), e("slurm_nodes_alloc", 1))
	if diag, err := cl.Diag(ctx); err != nil || float64(diag.BackfilledJobs) != s.want(t, "hpc_backfill_starts_total") {
		t.Errorf("sdiag's backfilled jobs %+v %v", diag, err)
	}
	if j := waitJob(t, cl, wide, api.StatePending); j.Reason != sched.ReasonResources {
		t.Errorf("the wide job waits for %q", j.Reason)
	}
}

// metricsConf: two controller-only hosts (a leader and a follower) and one
// compute-only node.
const metricsConf = `ClusterName=t
SlurmctldHost=ctl1(NET.10)
SlurmctldHost=ctl2(NET.11)
HpcApiPort=26837
HpcRaftPort=26838
HpcGossipPort=26839
SlurmdTimeout=10
NodeName=node1 NodeAddr=NET.1 CPUs=2 RealMemory=1000
PartitionName=debug Nodes=node1 Default=YES MaxTime=60
`

// Every node serves /metrics: the leader the cluster-wide figures, a
// follower its Raft figures and no cluster-wide ones (each is exported
// once in the cluster), a compute-only node its gossip view and its
// launches.
func TestMetricsOnEveryNode(t *testing.T) {
	l := newCtlLab(t, metricsConf)
	l.start("ctl1")
	l.start("ctl2")
	l.start("node1")
	st := l.status("node1", map[string]string{"ctl1": "", "ctl2": ""})
	follower := "ctl1"
	if st.Leader == "ctl1" {
		follower = "ctl2"
	}
	lead, fol, node := l.nodes[st.Leader].Daemon(), l.nodes[follower].Daemon(), l.nodes["node1"].Daemon()
	for _, d := range []*Daemon{lead, fol, node} {
		scrapeUntil(t, d, d.o.Name+"'s gossip", e("hpc_gossip_members", 3, "state=alive"), e("hpc_gossip_members", 0, "state=dead"))
	}
	ls := scrapeUntil(t, lead, "the leader's figures", e("hpc_raft_leader", 1), e("slurm_nodes_idle", 1), e("slurm_jobs_pending", 0))
	fs := scrapeUntil(t, fol, "the follower's figures", e("hpc_raft_leader", 0))
	if lt, ft := ls.want(t, "hpc_raft_term"), fs.want(t, "hpc_raft_term"); lt != ft {
		t.Errorf("leader's term %v, follower's %v", lt, ft)
	}
	if v := fs.want(t, "hpc_leader_changes_total"); v < 1 {
		t.Errorf("the follower saw %v leaders take office", v)
	}
	for _, name := range []string{"slurm_jobs_pending", "slurm_nodes_idle", "slurm_cpus_total"} {
		if _, ok := fs.get(name); ok {
			t.Errorf("a follower exports %s", name)
		}
	}
	ns := scrape(t, node)
	for _, name := range []string{"hpc_raft_term", "slurm_jobs_pending"} {
		if _, ok := ns.get(name); ok {
			t.Errorf("a compute-only node exports %s", name)
		}
	}

	// A job runs on the compute node: its launch is counted there.
	id, err := l.client("node1").Submit(context.Background(), api.JobSpec{WorkDir: t.TempDir(), Script: "#!/bin/sh\ntrue\n"})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, l.client("node1"), id, api.StateCompleted)
	scrapeUntil(t, node, "the compute node's launch", e("hpc_step_launch_seconds", 1, "kind=batch"))
	scrapeUntil(t, lead, "the leader's count", e("slurm_jobs_completed", 1))
}

// sinfoState names each node state as nodesView's api.Node.State reads in
// sinfo's long form.
func TestSinfoStateMatchesNodesView(t *testing.T) {
	cfg := testConfig(t)
	long := map[string]string{
		api.NodeIdle: "idle", api.NodeMixed: "mixed", api.NodeAllocated: "allocated",
		api.NodeDown: "down", api.NodeUnknown: "unknown",
		api.NodeIdle + "+DRAIN": "drained", api.NodeMixed + "+DRAIN": "draining", api.NodeAllocated + "+DRAIN": "draining",
	}
	cpus := cfg.Nodes[0].CPUs
	for _, state := range []string{"", "UNKNOWN", "UP", "DOWN", "ADMIN_DOWN", "DRAIN"} {
		for _, alloc := range []int{0, 1, cpus} {
			for _, noResp := range []bool{false, true} {
				st := &fsm.State{Jobs: map[uint64]*api.Job{}, Nodes: map[string]*fsm.NodeState{}}
				var ns *fsm.NodeState
				if state != "" {
					ns = &fsm.NodeState{State: state, NoResp: noResp}
					st.Nodes[cfg.Nodes[0].Name] = ns
				}
				if alloc > 0 {
					st.Jobs[1] = &api.Job{ID: 1, State: api.StateRunning, Alloc: []api.NodeAlloc{{Node: cfg.Nodes[0].Name, CPUs: alloc}}}
				}
				view := strings.TrimSuffix(nodesView(cfg, st).Nodes[0].State, "*")
				if got := sinfoState(ns, cpus, alloc); got != long[view] {
					t.Errorf("state %q alloc %d: %q, nodesView says %q", state, alloc, got, view)
				}
			}
		}
	}
}

// pendingReason gives the reason overlay gives.
func TestPendingReasonMatchesOverlay(t *testing.T) {
	v := newSchedView()
	v.store(sched.Result{Jobs: []sched.JobResult{
		{JobID: 1, Reason: sched.ReasonPriority}, {JobID: 2, Reason: sched.ReasonDependency}, {JobID: 3},
	}})
	jobs := []api.Job{
		{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5, Reason: sched.ReasonBeginTime},
		{ID: 6, Hold: "user"}, {ID: 7, Hold: "admin"}, {ID: 8, Hold: api.HoldRequeue},
	}
	for _, j := range jobs {
		j.State = api.StatePending
		cp := j
		v.overlay(&cp)
		want := cp.Reason
		if want == "" {
			want = api.ReasonNone
		}
		if got := pendingReason(&j, v.lastResults()); got != want {
			t.Errorf("job %d: %q, overlay says %q", j.ID, got, want)
		}
	}
}

// countCluster counts jobs by state and partition (a job pending in two
// partitions in each), CPUs and GPUs as sinfo's %C does (a drained node's
// free ones are other), and pending reasons.
func TestCountCluster(t *testing.T) {
	cfg := testConfig(t) // node[1-3], 2 CPUs each; node2 and node3 gpu:2
	st := &fsm.State{
		Jobs: map[uint64]*api.Job{
			1: {ID: 1, State: api.StateRunning, Spec: api.JobSpec{Partition: "debug"},
				Alloc: []api.NodeAlloc{{Node: "node2", CPUs: 1, Gres: []api.GresAlloc{{Name: "gpu", Indices: []int{0}}}}}},
			2: {ID: 2, State: api.StatePending, Spec: api.JobSpec{Partition: "debug,gpu"}},
			3: {ID: 3, State: api.StatePending, Spec: api.JobSpec{Partition: "debug"}, Hold: "user"},
			4: {ID: 4, State: api.StateCompleted, Spec: api.JobSpec{Partition: "gpu"}},
		},
		Nodes: map[string]*fsm.NodeState{
			"node1": {State: "DRAIN"}, "node2": {State: "UP"}, "node3": {State: "UP", NoResp: true},
		},
	}
	f := countCluster(cfg, st, map[uint64]sched.JobResult{2: {JobID: 2, Reason: sched.ReasonResources}})
	check := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("jobs", f.jobs, jobCounts{2, 1, 0, 1})
	check("debug", *f.partJobs["debug"], jobCounts{2, 1})
	check("gpu", *f.partJobs["gpu"], jobCounts{1, 0, 0, 1})
	check("reasons", f.reasons, map[string]int{sched.ReasonResources: 1, sched.ReasonJobHeldUser: 1})
	check("nodes", f.nodes, map[string]int{"drained": 1, "mixed": 1, "idle": 1})
	check("not responding", f.noResp, 1)
	check("cpus", f.cpus, aiot{1, 3, 2, 6})
	gpus := 0
	for _, n := range cfg.Nodes {
		for _, g := range n.Gres {
			gpus += g.Count
		}
	}
	check("gpus total", f.gpus[3], gpus)
	check("gpus alloc", f.gpus[0], 1)
	check("partitions", len(f.partitions), len(cfg.Partitions))
}

// A scrape's pass over 100,000 jobs, the FSM's read lock held.
func BenchmarkCountCluster(b *testing.B) {
	cfg, err := config.LabConfig(3)
	if err != nil {
		b.Fatal(err)
	}
	st := &fsm.State{Jobs: map[uint64]*api.Job{}, Nodes: map[string]*fsm.NodeState{}}
	for _, n := range cfg.Nodes {
		st.Nodes[n.Name] = &fsm.NodeState{State: "UP"}
	}
	results := map[uint64]sched.JobResult{}
	for i := range uint64(100_000) {
		j := &api.Job{ID: i + 1, State: api.StatePending, Spec: api.JobSpec{Partition: "debug"}}
		switch i % 10 {
		case 0:
			j.State = api.StateRunning
			j.Alloc = []api.NodeAlloc{{Node: cfg.Nodes[int(i)%len(cfg.Nodes)].Name, CPUs: 1}}
		case 1:
			j.State = api.StateCompleted
		default:
			results[j.ID] = sched.JobResult{JobID: j.ID, Reason: sched.ReasonPriority}
		}
		st.Jobs[j.ID] = j
	}
	b.ReportAllocs()
	for b.Loop() {
		countCluster(cfg, st, results)
	}
}

// Two scrapes at once are answered; a third meanwhile gets 503 rather
// than a third pass over the state under its lock.
func TestMetricsScrapesInFlight(t *testing.T) {
	d := &Daemon{metrics: &daemonMetrics{inFlight: make(chan struct{}, 2)}}
	d.metrics.inFlight <- struct{}{}
	d.metrics.inFlight <- struct{}{}
	rec := httptest.NewRecorder()
	d.serveMetrics(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a third scrape: %d, want 503", rec.Code)
	}
}

// A scraper that takes gzip gets it; one that gives gzip a weight of zero,
// or names only other encodings, gets plain text.
func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"gzip": true, "deflate, gzip;q=0.5": true, "gzip; q=1": true, "identity, gzip": true,
		"": false, "deflate": false, "gzip;q=0": false, "gzip; q=0.0": false, "x-gzip": false,
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if h != "" {
			r.Header.Set("Accept-Encoding", h)
		}
		if got := acceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", h, got, want)
		}
	}
}
