package sched

import (
	"math"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func fairshares(t *testing.T, s Snapshot) map[string]float64 {
	t.Helper()
	s.Config.PriorityWeightFairshare = 1000
	res := Schedule(s)
	out := map[string]float64{}
	for i, j := range res.Jobs {
		out[s.Pending[i].User] = j.Factors.Fairshare
	}
	return out
}

func TestFairTree(t *testing.T) {
	s := lab(4)
	s.Assocs = []Assoc{
		{Account: "a"}, {Account: "b"},
		{Account: "a", User: "a1"}, {Account: "a", User: "a2"}, {Account: "b", User: "b1"},
	}
	hour := func(u string, acct string, cpus int) Usage {
		return Usage{Account: acct, User: u, CPUs: cpus, Start: t0.Add(-time.Hour), End: t0}
	}
	// a1 used 100 CPU-hours, b1 10, a2 nothing. At the root, b's level
	// fairshare (0.5 / (10/110)) beats a's (0.5 / (100/110)), so b1 ranks
	// first; under a, a2 (no usage: infinite) beats a1.
	s.Usage = []Usage{hour("a1", "a", 100), hour("b1", "b", 10)}
	s.Pending = []Job{{ID: 1, User: "a1", Account: "a"}, {ID: 2, User: "a2", Account: "a"}, {ID: 3, User: "b1", Account: "b"}}
	fs := fairshares(t, s)
	if !near(fs["b1"], 1) || !near(fs["a2"], 2.0/3) || !near(fs["a1"], 1.0/3) {
		t.Fatalf("fairshare %v", fs)
	}
	// Shares tilt it: a with 20 shares has level fairshare
	// (20/21)/(100/110) > (1/21)/(10/110).
	s.Assocs[0].Shares = 20
	fs = fairshares(t, s)
	if !near(fs["a2"], 1) || !near(fs["a1"], 2.0/3) || !near(fs["b1"], 1.0/3) {
		t.Fatalf("fairshare with shares %v", fs)
	}
	// No usage anywhere: everyone ties at the top rank.
	s.Usage = nil
	fs = fairshares(t, s)
	for u, f := range fs {
		if !near(f, 1) {
			t.Fatalf("tie: %s has %v", u, f)
		}
	}
	// Running jobs count as usage too.
	s.Assocs[0].Shares = 0
	s.Running = []RunningJob{{ID: 9, User: "b1", Account: "b", StartTime: t0.Add(-time.Hour), Alloc: []Alloc{{Node: "node1", CPUs: 1}}}}
	fs = fairshares(t, s)
	if !near(fs["a1"], 1) || !near(fs["a2"], 1) || !near(fs["b1"], 1.0/3) {
		t.Fatalf("with running usage %v", fs)
	}
}

func TestFairTreeSubAccountsAndTies(t *testing.T) {
	s := lab(1)
	// root -> proj -> {x, y}; root -> z. Users under each.
	s.Assocs = []Assoc{
		{Account: "proj"}, {Account: "x", Parent: "proj"}, {Account: "y", Parent: "proj"}, {Account: "z"},
		{Account: "x", User: "ux"}, {Account: "y", User: "uy"}, {Account: "z", User: "uz"}, {Account: "z", User: "uz2"},
	}
	use := func(acct, u string, cpus int) Usage {
		return Usage{Account: acct, User: u, CPUs: cpus, Start: t0.Add(-time.Hour), End: t0}
	}
	// proj used 30 (ux 20, uy 10), z used 10 (uz 10, uz2 0). Root: z
	// (0.5/(10/40)=2) before proj (0.5/(30/40)=0.67). In z: uz2 (inf)
	// then uz (0.5/1). In proj: y (0.5/(10/30)=1.5) then x (0.75).
	s.Usage = []Usage{use("x", "ux", 20), use("y", "uy", 10), use("z", "uz", 10)}
	s.Pending = []Job{
		{ID: 1, User: "ux", Account: "x"}, {ID: 2, User: "uy", Account: "y"},
		{ID: 3, User: "uz", Account: "z"}, {ID: 4, User: "uz2", Account: "z"},
	}
	fs := fairshares(t, s)
	want := map[string]float64{"uz2": 1, "uz": 0.75, "uy": 0.5, "ux": 0.25}
	for u, f := range want {
		if !near(fs[u], f) {
			t.Fatalf("%s: %v, want %v (all %v)", u, fs[u], f, fs)
		}
	}
	// Tied accounts merge their children: x and y with equal usage tie,
	// so ux and uy are ranked together by their own level fairshare.
	s.Usage = []Usage{use("x", "ux", 10), use("y", "uy", 10), use("z", "uz", 100)}
	fs = fairshares(t, s)
	if !near(fs["ux"], 1) || !near(fs["uy"], 1) || !near(fs["uz2"], 0.5) || !near(fs["uz"], 0.25) {
		t.Fatalf("merged ties %v", fs)
	}
}

func TestDecay(t *testing.T) {
	h := 3600.0
	got := decayed(1, 0, 3600, 3600, h)
	want := 3600 / math.Ln2 * 0.5
	if math.Abs(got-want) > 1e-6 {
		t.Fatalf("decayed = %v, want %v", got, want)
	}
	if got := decayed(2, 0, 100, 1000, 0); got != 200 {
		t.Fatalf("no decay = %v", got)
	}
	if got := decayed(1, 100, 200, 50, h); got != 0 {
		t.Fatalf("future usage = %v", got)
	}
	// A usage an hour old weighs half of a fresh one.
	old := decayed(1, 0, 10, 3610, h)
	fresh := decayed(1, 3600, 3610, 3610, h)
	if math.Abs(old/fresh-0.5) > 1e-9 {
		t.Fatalf("old/fresh = %v", old/fresh)
	}
}

func TestMultifactorPriority(t *testing.T) {
	s := lab(4) // 4 nodes, 8 CPUs
	s.Config = Config{
		PriorityWeightAge: 1000, PriorityWeightFairshare: 10000, PriorityWeightJobSize: 1000,
		PriorityWeightPartition: 1000, PriorityWeightQOS: 2000,
	}
	s.Partitions = append(s.Partitions, Partition{Name: "big", Nodes: s.Partitions[0].Nodes, PriorityJobFactor: 4})
	s.Partitions[0].PriorityJobFactor = 1
	s.QOS = []QOS{{Name: "normal"}, {Name: "high", Priority: 100}}
	s.Assocs = []Assoc{{Account: "a"}, {Account: "a", User: "u"}}
	s.Pending = []Job{
		// Age 3.5 of 7 days: 500. Fairshare 1 (no usage): 10000. Size
		// (1/4 + 1/8)/2: 187.5. Partition 1/4: 250. QoS 0.
		{ID: 1, User: "u", Account: "a", SubmitTime: t0.Add(-84 * time.Hour), Partitions: []string{"debug"}},
		// Age capped at 1: 1000; size (2/4+4/8)/2: 500; partition 1:
		// 1000; QoS high: 2000; nice 100.
		{ID: 2, User: "u", Account: "a", SubmitTime: t0.Add(-30 * 24 * time.Hour), Nodes: 2, NTasks: 4,
			Partitions: []string{"big"}, QOS: "high", Nice: 100},
		// Not eligible yet: no age.
		{ID: 3, User: "u", Account: "a", SubmitTime: t0.Add(-time.Hour), BeginTime: t0.Add(time.Hour)},
		// An administrator's priority wins.
		{ID: 4, User: "u", Account: "a", Priority: 7},
	}
	res := Schedule(s)
	if p := res.Jobs[0].Priority; p != 10937 {
		t.Fatalf("job 1 priority %d, factors %+v", p, res.Jobs[0].Weighted)
	}
	if w := res.Jobs[0].Weighted; !near(w.Age, 500) || !near(w.JobSize, 187.5) || !near(w.Partition, 250) || !near(w.Fairshare, 10000) {
		t.Fatalf("job 1 weighted %+v", w)
	}
	if p := res.Jobs[1].Priority; p != 1000+10000+500+1000+2000-100 {
		t.Fatalf("job 2 priority %d, factors %+v", p, res.Jobs[1].Weighted)
	}
	if f := res.Jobs[2].Factors; f.Age != 0 {
		t.Fatalf("job 3 age %v", f.Age)
	}
	if p := res.Jobs[3].Priority; p != 7 {
		t.Fatalf("job 4 priority %d", p)
	}
	// Job 2 outranks job 1: it starts first even though 1 was listed first.
	if res.Starts[0].JobID != 2 {
		t.Fatalf("first start %d", res.Starts[0].JobID)
	}
	s.Config.PriorityFavorSmall = true
	res = Schedule(s)
	if f := res.Jobs[0].Factors.JobSize; !near(f, (0.75+0.875)/2) {
		t.Fatalf("favor small size factor %v", f)
	}
}

func TestPriorityCalcPeriod(t *testing.T) {
	s := lab(1)
	s.Config = Config{PriorityWeightAge: 1000, PriorityMaxAge: 1000 * time.Second, PriorityCalcPeriod: 5 * time.Minute}
	s.Now = time.Unix(3000+299, 0)
	s.Pending = []Job{{ID: 1, SubmitTime: time.Unix(2500, 0)}}
	// Priorities are as of 3000, the last multiple of 5 minutes: age 500.
	if p := Schedule(s).Jobs[0].Priority; p != 500 {
		t.Fatalf("priority %d", p)
	}
	s.Now = time.Unix(3300, 0)
	if p := Schedule(s).Jobs[0].Priority; p != 800 {
		t.Fatalf("priority %d", p)
	}
}
