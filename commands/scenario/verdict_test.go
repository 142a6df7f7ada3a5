package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// at is t0 plus seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// ran is a job that ran on nodes from start to end and ended in state.
func ran(id uint64, name string, start, end float64, state api.JobState, nodes ...string) api.Job {
	j := api.Job{ID: id, Spec: api.JobSpec{Name: name}, State: state, SubmitTime: at(0), StartTime: at(start), EndTime: at(end)}
	for _, n := range nodes {
		j.Alloc = append(j.Alloc, api.NodeAlloc{Node: n, CPUs: 2})
	}
	return j
}

func TestJudgeBackfill(t *testing.T) {
	good := backfillObs{
		blocker:        ran(1, "bf-blocker", 0, 6, api.StateCompleted, "node1"),
		wide:           ran(2, "bf-wide", 6.1, 7.5, api.StateCompleted, "node1", "node2", "node3"),
		shorts:         []api.Job{ran(3, "bf-short", 0.3, 1.6, api.StateCompleted, "node2"), ran(4, "bf-short", 0.3, 1.6, api.StateCompleted, "node3")},
		firstExpected:  at(180),
		latestExpected: at(180),
		t0:             t0,
	}
	if res, sum, ev := judgeBackfill(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	} else if !strings.Contains(strings.Join(ev, "\n"), "strict FIFO (computed, not run)") {
		t.Errorf("the evidence does not say FIFO was computed: %v", ev)
	}
	cases := map[string]func(o *backfillObs){
		// Backfill that delays the reserved job is no backfill.
		"wide delayed": func(o *backfillObs) { o.wide.StartTime = at(190) },
		// The reservation was not kept: it moved later once the short
		// jobs were queued.
		"expected start moved": func(o *backfillObs) { o.latestExpected = at(240) },
		// FIFO behaviour: a short job waited for the wide one.
		"no backfill": func(o *backfillObs) {
			o.shorts[1].StartTime, o.shorts[1].EndTime = at(7.5), at(9)
		},
		"short failed":    func(o *backfillObs) { o.shorts[0].State = api.StateFailed },
		"never estimated": func(o *backfillObs) { o.firstExpected = time.Time{} },
	}
	for name, change := range cases {
		o := good
		o.shorts = append([]api.Job(nil), good.shorts...)
		change(&o)
		if res, sum, _ := judgeBackfill(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestJudgeGang(t *testing.T) {
	good := gangObs{
		blocker: ran(1, "gang-blocker", 0, 4.5, api.StateCompleted, "node1"),
		gang:    ran(2, "gang-3node", 4.6, 6, api.StateCompleted, "node1", "node2", "node3"),
		filler:  ran(3, "gang-filler", 0.3, 1.5, api.StateCompleted, "node2"),
		nodes:   []string{"node1", "node2", "node3"},
		looks:   20, idle: 20, t0: t0,
	}
	if res, sum, ev := judgeGang(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	cases := map[string]func(o *gangObs){
		"held while pending": func(o *gangObs) { o.held = 3 },
		"third node busy":    func(o *gangObs) { o.idle = 0 },
		"filler waited":      func(o *gangObs) { o.filler.StartTime = at(6) },
		"partial":            func(o *gangObs) { o.gang.Alloc = o.gang.Alloc[:2] },
		"never pending":      func(o *gangObs) { o.looks, o.idle = 0, 0 },
	}
	for name, change := range cases {
		o := good
		change(&o)
		if res, sum, _ := judgeGang(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestSimulateBinding(t *testing.T) {
	nodes := []string{"node1", "node2", "node3", "node4"}
	// The classic: two 3-node jobs on 4 nodes, pods bound in turn.
	sim := simulateBinding(nodes, []simJob{{"A", 3}, {"B", 3}})
	if !sim.Deadlocked || sim.Held != 4 || len(sim.Ran) != 0 {
		t.Errorf("two 3-node jobs on 4 nodes: %+v", sim)
	}
	if got := strings.Join(sim.Bound["A"], ","); got != "node1,node3" {
		t.Errorf("A bound %s", got)
	}
	// Two 2-node jobs fit side by side: no deadlock.
	if sim := simulateBinding(nodes, []simJob{{"A", 2}, {"B", 2}}); sim.Deadlocked || len(sim.Ran) != 2 {
		t.Errorf("two 2-node jobs on 4 nodes: %+v", sim)
	}
	// One job finishes and gives its nodes to the other.
	if sim := simulateBinding(nodes[:3], []simJob{{"A", 2}, {"B", 1}}); sim.Deadlocked || len(sim.Ran) != 2 {
		t.Errorf("2+1 on 3 nodes: %+v", sim)
	}
	// The size runKube picks deadlocks for every lab size it accepts.
	for n := 3; n <= 9; n++ {
		var ns []string
		for i := range n {
			ns = append(ns, string(rune('a'+i)))
		}
		k := min(n, (n+1)/2+1)
		if sim := simulateBinding(ns, []simJob{{"A", k}, {"B", k}}); !sim.Deadlocked {
			t.Errorf("%d nodes, two %d-node jobs: no deadlock: %+v", n, k, sim)
		}
	}
}

func TestJudgeKube(t *testing.T) {
	nodes := []string{"node1", "node2", "node3", "node4"}
	good := kubeObs{
		sim:   simulateBinding(nodes, []simJob{{"A", 3}, {"B", 3}}),
		nodes: 4, size: 3, t0: t0,
		real: []api.Job{
			ran(1, "kube-A", 0, 8, api.StateCompleted, "node1", "node2", "node3"),
			ran(2, "kube-B", 8, 16, api.StateCompleted, "node1", "node2", "node3"),
		},
	}
	res, sum, ev := judgeKube(good)
	if res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	// 4 nodes for 16 s, 2 x 3 nodes x 8 s busy: 16 idle node-seconds;
	// the deadlock's 64.
	if !strings.Contains(strings.Join(ev, "\n"), "simulated binder 64.0 (and growing for ever), Slurm co-allocation 16.0") {
		t.Errorf("idle node-seconds: %v", ev)
	}
	cases := map[string]func(o *kubeObs){
		"no deadlock in the simulation": func(o *kubeObs) { o.sim = simulateBinding(nodes, []simJob{{"A", 2}, {"B", 2}}) },
		"real job failed":               func(o *kubeObs) { o.real[1].State = api.StateNodeFail },
		"pending job held nodes":        func(o *kubeObs) { o.heldWhilePending = 1 },
		"ran on fewer nodes":            func(o *kubeObs) { o.real[0].Alloc = o.real[0].Alloc[:2] },
	}
	for name, change := range cases {
		o := good
		o.real = append([]api.Job(nil), good.real...)
		change(&o)
		if res, sum, _ := judgeKube(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestJudgeTopology(t *testing.T) {
	leaves := []leaf{{"s1", []string{"node1", "node2"}}, {"s2", []string{"node3", "node4"}}}
	good := topoObs{
		leaves: leaves,
		pair:   ran(1, "topo-pair", 0, 1, api.StateCompleted, "node1", "node2"),
		wait:   ran(4, "topo-switches", 3, 4, api.StateCompleted, "node1", "node2"),
		looks:  9, splitLooks: 9, t0: t0,
	}
	if res, sum, ev := judgeTopology(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	cases := map[string]func(o *topoObs){
		"pair spans leaves":     func(o *topoObs) { o.pair.Alloc[1].Node = "node3" },
		"switches job spans":    func(o *topoObs) { o.wait.Alloc[0].Node = "node4" },
		"never waited on split": func(o *topoObs) { o.splitLooks = 0 },
	}
	for name, change := range cases {
		o := good
		o.pair.Alloc = append([]api.NodeAlloc(nil), good.pair.Alloc...)
		o.wait.Alloc = append([]api.NodeAlloc(nil), good.wait.Alloc...)
		change(&o)
		if res, sum, _ := judgeTopology(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestJudgeAccounting(t *testing.T) {
	row := func(id uint64, name, state string, exit int, start, end float64) api.AcctRow {
		return api.AcctRow{JobID: id, JobName: name, State: state, ExitCode: exit, AllocCPUs: 1, User: "root", Account: "root", Start: at(start), End: at(end)}
	}
	rows := []api.AcctRow{row(1, "acct-ok", "COMPLETED", 0, 0, 3), row(2, "acct-fail", "FAILED", 3, 0, 3), row(3, "acct-cancel", "CANCELLED by 0", 0, 0, 1)}
	good := acctObs{
		ok: 1, failed: 2, cancelled: 3, rows: rows, user: "root", account: "root",
		reportCPUSec: 7, from: at(0), to: at(4), windowRows: rows,
		share: &api.ShareRow{Account: "root", User: "root", RawShares: 1, RawUsage: 7},
	}
	if res, sum, ev := judgeAccounting(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	cases := map[string]func(o *acctObs){
		"wrong exit code":   func(o *acctObs) { o.rows[1].ExitCode = 0 },
		"wrong state":       func(o *acctObs) { o.rows[0].State = "FAILED" },
		"missing row":       func(o *acctObs) { o.rows = o.rows[:2] },
		"sreport disagrees": func(o *acctObs) { o.reportCPUSec = 40 },
		"no sshare line":    func(o *acctObs) { o.share = nil },
	}
	for name, change := range cases {
		o := good
		o.rows = append([]api.AcctRow(nil), rows...)
		change(&o)
		if res, sum, _ := judgeAccounting(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestJudgePreemption(t *testing.T) {
	low := ran(1, "pre-low", 0, 0, api.StatePending)
	low.Restarts, low.Reason = 1, "BeginTime"
	good := preemptObs{lowNodes: []string{"node1", "node2"}, low: low, high: ran(2, "pre-high", 0.3, 1.4, api.StateCompleted, "node1"), t0: t0}
	if res, sum, ev := judgePreemption(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	notRequeued := good
	notRequeued.low.Restarts, notRequeued.low.State = 0, api.StateRunning
	if res, sum, _ := judgePreemption(notRequeued); res != Fail {
		t.Errorf("low job not requeued: %s %s, want FAIL", res, sum)
	}
	elsewhere := good
	elsewhere.high = ran(2, "pre-high", 0.3, 1.4, api.StateCompleted, "node9")
	if res, sum, _ := judgePreemption(elsewhere); res != Fail {
		t.Errorf("high job on a node the low job did not hold: %s %s, want FAIL", res, sum)
	}
}

func TestPrintVerdict(t *testing.T) {
	var b bytes.Buffer
	Print(&b, Verdict{Scenario: "gang", Result: Fail, Summary: "it held nodes", Evidence: []string{"looked 3 times"}, Differences: []string{"node2 is \"ALLOCATED\", was \"IDLE\""}}, false)
	want := "FAIL gang: it held nodes\n  - looked 3 times\n  lab NOT as found: node2 is \"ALLOCATED\", was \"IDLE\"\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestLabStateDiff(t *testing.T) {
	before := &labState{nodes: map[string]string{"node1": "IDLE"}, parts: []string{"debug:UP"}, acct: []string{"qos normal"}}
	now := &labState{active: []string{"7 RUNNING"}, nodes: map[string]string{"node1": "ALLOCATED"}, parts: []string{"debug:UP"}, acct: []string{"qos demo-low", "qos normal"}}
	got := strings.Join(before.diff(now), "\n")
	for _, want := range []string{"jobs not ended: 7 RUNNING", `node1 is "ALLOCATED", was "IDLE"`, "sacctmgr has qos demo-low"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	if d := before.diff(before); len(d) != 0 {
		t.Errorf("a state differs from itself: %v", d)
	}
	if before.busy() != "" || now.busy() == "" {
		t.Errorf("busy: %q %q", before.busy(), now.busy())
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"-J", "x", "--wrap", "sleep 1; exit 3", "--switches=1@5:00"})
	if want := `-J x --wrap 'sleep 1; exit 3' --switches=1@5:00`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestJudgeGPUs(t *testing.T) {
	job := ran(1, "wrap", 0, 1, api.StateCompleted, "node3")
	job.Alloc[0].Gres = []api.GresAlloc{{Name: "gpu", Indices: []int{1}}}
	files := []string{"/dev/g0", "/dev/g1"}
	good := gpuObs{job: job, files: files, output: "CUDA_VISIBLE_DEVICES=1\n/dev/g0 refused\n/dev/g1 opened\n"}
	if res, sum, ev := judgeGPUs(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	// Without a devices cgroup the other GPU opens: FAIL.
	open := good
	open.output = "CUDA_VISIBLE_DEVICES=1\n/dev/g0 opened\n/dev/g1 opened\n"
	if res, sum, _ := judgeGPUs(open); res != Fail {
		t.Errorf("other device opened: %s %s, want FAIL", res, sum)
	}
	noEnv := good
	noEnv.output = "CUDA_VISIBLE_DEVICES=\n/dev/g0 refused\n/dev/g1 opened\n"
	if res, sum, _ := judgeGPUs(noEnv); res != Fail {
		t.Errorf("no CUDA_VISIBLE_DEVICES: %s %s, want FAIL", res, sum)
	}
	two := good
	two.job.Alloc = []api.NodeAlloc{{Node: "node3", Gres: []api.GresAlloc{{Name: "gpu", Indices: []int{0, 1}}}}}
	if res, sum, _ := judgeGPUs(two); res != Fail {
		t.Errorf("two GPUs given: %s %s, want FAIL", res, sum)
	}
}

func TestJudgeFairshare(t *testing.T) {
	good := fsObs{from: at(0), to: at(60),
		cpuSec: map[string]float64{fsBig: 350, fsSmall: 130},
		jobs:   map[string]int{fsBig: 35, fsSmall: 13},
		shares: map[string]int{fsBig: 3, fsSmall: 1}}
	if res, sum, ev := judgeFairshare(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	} else if !strings.Contains(strings.Join(ev, "\n"), "0.73 of the usage") {
		t.Errorf("the evidence lacks the figures: %v", ev)
	}
	cases := map[string]func(o *fsObs){
		// FIFO or an even split: the shares made no difference.
		"even split": func(o *fsObs) { o.cpuSec[fsBig], o.cpuSec[fsSmall] = 240, 240 },
		// The small account starved.
		"starved": func(o *fsObs) { o.cpuSec[fsSmall], o.jobs[fsSmall] = 0, 0 },
		// Nothing ran at all.
		"nothing": func(o *fsObs) { o.cpuSec, o.jobs = map[string]float64{}, map[string]int{} },
	}
	for name, change := range cases {
		o := good
		o.cpuSec = map[string]float64{fsBig: 350, fsSmall: 130}
		o.jobs = map[string]int{fsBig: 35, fsSmall: 13}
		change(&o)
		if res, sum, _ := judgeFairshare(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestJudgeNodeFailure(t *testing.T) {
	good := nodeFailObs{firstNode: "node2", killed: at(1), down: at(8.5), downReason: "Not responding",
		requeued: at(8.6), timeout: 6, t0: t0}
	good.final = ran(5, "nf-requeue", 9, 18, api.StateCompleted, "node3")
	good.final.Restarts = 1
	if res, sum, ev := judgeNodeFailure(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	cases := map[string]func(o *nodeFailObs){
		"never down":      func(o *nodeFailObs) { o.down = time.Time{} },
		"down too soon":   func(o *nodeFailObs) { o.down = at(2) },
		"not requeued":    func(o *nodeFailObs) { o.final.Restarts = 0 },
		"same node":       func(o *nodeFailObs) { o.final.Alloc = []api.NodeAlloc{{Node: "node2", CPUs: 2}} },
		"ended NODE_FAIL": func(o *nodeFailObs) { o.final.State = api.StateNodeFail },
	}
	for name, change := range cases {
		o := good
		change(&o)
		if res, sum, _ := judgeNodeFailure(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestJudgeFailover(t *testing.T) {
	mk := func() failoverObs {
		o := failoverObs{oldLeader: "node1", newLeader: "node2", killed: at(2), elected: at(4),
			running: []uint64{1, 2}, pending: []uint64{3}, ids: []uint64{1, 2, 3}, t0: t0,
			final: map[uint64]api.Job{
				1: ran(1, "fo-0", 0.5, 5, api.StateCompleted, "node2"),
				2: ran(2, "fo-1", 0.5, 5, api.StateCompleted, "node3"),
				3: ran(3, "fo-2", 5.2, 9, api.StateCompleted, "node2"),
			},
			completedRows: map[uint64]int{1: 1, 2: 1, 3: 1}}
		return o
	}
	if res, sum, ev := judgeFailover(mk()); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	cases := map[string]func(o *failoverObs){
		"no new leader": func(o *failoverObs) { o.newLeader = "" },
		"lost":          func(o *failoverObs) { delete(o.final, 3) },
		"twice":         func(o *failoverObs) { o.completedRows[2] = 2 },
		"requeued":      func(o *failoverObs) { j := o.final[1]; j.Restarts = 1; o.final[1] = j },
		"failed":        func(o *failoverObs) { j := o.final[2]; j.State = api.StateNodeFail; o.final[2] = j },
		"pending never started late": func(o *failoverObs) {
			j := o.final[3]
			j.StartTime = at(1)
			o.final[3] = j
		},
	}
	for name, change := range cases {
		o := mk()
		change(&o)
		if res, sum, _ := judgeFailover(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestJudgeContainers(t *testing.T) {
	good := containerObs{image: "/lab/images/busybox",
		host:    ran(1, "ct-host", 0.2, 0.4, api.StateCompleted, "node1"),
		inImage: ran(2, "ct-image", 0.2, 0.5, api.StateCompleted, "node2"),
		hostOut: "os-release: PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nprograms in /bin: 1203\n",
		imgOut:  "os-release: none\nprograms in /bin: 98\n",
		want:    []string{"os-release: none", "programs in /bin: 98"}}
	if res, sum, ev := judgeContainers(good); res != Pass {
		t.Errorf("good run: %s %s %v", res, sum, ev)
	}
	cases := map[string]func(o *containerObs){
		// --container-image ignored: both ran on the node's files.
		"image ignored": func(o *containerObs) { o.imgOut = o.hostOut },
		// Both in the image: the plain job saw the same.
		"same":   func(o *containerObs) { o.hostOut = o.imgOut },
		"failed": func(o *containerObs) { o.inImage.State = api.StateFailed },
		"empty":  func(o *containerObs) { o.hostOut = "" },
	}
	for name, change := range cases {
		o := good
		change(&o)
		if res, sum, _ := judgeContainers(o); res != Fail {
			t.Errorf("%s: %s %s, want FAIL", name, res, sum)
		}
	}
}

func TestInImage(t *testing.T) {
	img := t.TempDir()
	os.MkdirAll(filepath.Join(img, "usr", "lib"), 0o755)
	os.MkdirAll(filepath.Join(img, "etc"), 0o755)
	os.WriteFile(filepath.Join(img, "usr", "lib", "os-release"), []byte("PRETTY_NAME=\"Tiny\"\n"), 0o644)
	os.Symlink("../usr/lib/os-release", filepath.Join(img, "etc", "os-release"))
	os.Symlink("usr/lib", filepath.Join(img, "bin"))
	got, err := imageProbe(img)
	if err != nil || strings.Join(got, "|") != `os-release: PRETTY_NAME="Tiny"|programs in /bin: 1` {
		t.Errorf("imageProbe: %q %v", got, err)
	}
}
