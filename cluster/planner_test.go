package cluster

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"hpc/sched"
)

// plannerWorld is a small cluster whose state a test changes the way the
// controller's state changes, building the scheduler's snapshot from it as
// Daemon.snapshot does (lists sorted by id).
type plannerWorld struct {
	rng     *rand.Rand
	now     time.Time
	cfg     sched.Config
	nodes   []sched.Node
	parts   []sched.Partition
	topo    []sched.Switch
	qos     []sched.QOS
	assocs  []sched.Assoc
	usage   []sched.Usage
	running map[uint64]sched.RunningJob
	pending map[uint64]sched.Job
	nextID  uint64
	users   [][2]string
}

func newPlannerWorld(seed uint64) *plannerWorld {
	rng := rand.New(rand.NewPCG(seed, 11))
	w := &plannerWorld{rng: rng, now: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC),
		running: map[uint64]sched.RunningJob{}, pending: map[uint64]sched.Job{}, nextID: 1}
	switch seed % 3 {
	case 0: // priority/basic
		w.cfg = sched.Config{DefMemPerCPU: 1000}
	case 1:
		w.cfg = sched.Config{PriorityWeightAge: 1000, PriorityWeightFairshare: 10000, PriorityWeightQOS: 2000,
			PriorityDecayHalfLife: 7 * 24 * time.Hour, DefMemPerCPU: 1000}
	default:
		w.cfg = sched.Config{PriorityWeightAge: 1000, PriorityWeightFairshare: 10000, PriorityWeightQOS: 2000,
			PriorityDecayHalfLife: 7 * 24 * time.Hour, DefMemPerCPU: 1000, PriorityCalcPeriod: 5 * time.Minute,
			BackfillMaxJobTest: 8, PreemptType: "preempt/qos", PreemptMode: sched.PreemptCancel}
	}
	var all, gpus []string
	n := 12 + rng.IntN(20)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("c%02d", i)
		cpus := []int{8, 16, 32}[rng.IntN(3)]
		node := sched.Node{Name: name, CPUs: cpus, MemMB: int64(cpus) * 4000, Features: []string{[]string{"ib", "eth"}[rng.IntN(2)]}}
		if i%4 == 3 {
			node.Gres = []sched.Gres{{Name: "gpu", Count: 2}, {Name: "gpu", Type: "t4", Count: 2}}
			gpus = append(gpus, name)
		}
		w.nodes = append(w.nodes, node)
		all = append(all, name)
	}
	w.parts = []sched.Partition{
		{Name: "batch", Nodes: all, Default: true, MaxTime: 2 * 24 * time.Hour, DefaultTime: time.Hour},
		{Name: "short", Nodes: all[:n/2], MaxTime: time.Hour, PriorityTier: 2},
		{Name: "gpu", Nodes: gpus, MaxTime: 24 * time.Hour},
	}
	for i := 0; i*4 < n; i++ {
		w.topo = append(w.topo, sched.Switch{Name: fmt.Sprintf("leaf%d", i), Nodes: all[i*4 : min(i*4+4, n)]})
	}
	var leaves []string
	for _, s := range w.topo {
		leaves = append(leaves, s.Name)
	}
	w.topo = append(w.topo, sched.Switch{Name: "top", Switches: leaves})
	w.qos = []sched.QOS{{Name: "normal"}, {Name: "high", Priority: 10, Preempt: []string{"low"}},
		{Name: "low", Limits: sched.Limits{MaxJobsPerUser: 3}}}
	for a := 0; a < 3; a++ {
		acct := fmt.Sprintf("a%d", a)
		w.assocs = append(w.assocs, sched.Assoc{Account: acct, Shares: 1 + a})
		for u := 0; u < 3; u++ {
			user := fmt.Sprintf("u%d%d", a, u)
			w.assocs = append(w.assocs, sched.Assoc{Account: acct, User: user})
			w.users = append(w.users, [2]string{acct, user})
		}
	}
	for i := 0; i < 10; i++ {
		w.submit()
	}
	return w
}

func (w *plannerWorld) submit() {
	rng := w.rng
	u := w.users[rng.IntN(len(w.users))]
	j := sched.Job{ID: w.nextID, User: u[1], Account: u[0], SubmitTime: w.now,
		TimeLimit: time.Duration(1+rng.IntN(90)) * time.Minute, NTasks: 1 + rng.IntN(12)}
	w.nextID++
	switch rng.IntN(8) {
	case 0:
		j.Partitions = []string{"short", "batch"}
	case 1:
		j.Partitions = []string{"gpu"}
		j.GPUsPerTask, j.NTasks = 1, 1+rng.IntN(3)
	case 2:
		j.Nodes = 2 + rng.IntN(2)
	case 3:
		j.Exclusive, j.Nodes, j.NTasks = true, 1, 1
	case 4:
		j.Constraint = "ib"
	}
	switch rng.IntN(10) {
	case 0:
		j.QOS = "high"
	case 1, 2:
		j.QOS = "low"
	}
	switch rng.IntN(12) {
	case 0:
		j.Hold = sched.HoldUser
	case 1:
		j.Dependency = sched.DependencyPending
	case 2:
		j.BeginTime = w.now.Add(time.Duration(rng.IntN(120)) * time.Second)
	}
	w.pending[j.ID] = j
}

// step changes the world as the controller would, mostly a little.
func (w *plannerWorld) step(res sched.Result) string {
	rng := w.rng
	w.now = w.now.Add(time.Duration(rng.IntN(40)) * time.Second)
	// The leader commits the starts (those that preempt nothing).
	for _, st := range res.Starts {
		if len(st.Preempts) > 0 {
			continue
		}
		j := w.pending[st.JobID]
		delete(w.pending, st.JobID)
		rj := sched.RunningJob{ID: j.ID, User: j.User, Account: j.Account, QOS: j.QOS, Partition: st.Partition,
			StartTime: w.now, Alloc: st.Alloc}
		if rj.QOS == "" {
			rj.QOS = "normal"
		}
		if st.TimeLimit > 0 {
			rj.EndTime = w.now.Add(st.TimeLimit)
		}
		w.running[j.ID] = rj
	}
	for _, p := range res.Preempt {
		w.end(p.JobID)
	}
	switch k := rng.IntN(20); {
	case k < 6:
		if id, ok := w.any(w.running); ok {
			w.end(id)
		}
		return "end"
	case k < 10:
		w.submit()
		return "submit"
	case k < 11:
		if id, ok := w.anyJob(); ok {
			delete(w.pending, id)
		}
		return "cancel"
	case k < 12:
		if id, ok := w.anyJob(); ok {
			j := w.pending[id]
			j.Hold = [3]sched.Hold{sched.HoldNone, sched.HoldUser, sched.HoldAdmin}[rng.IntN(3)]
			w.pending[id] = j
		}
		return "hold"
	case k < 13:
		for id, j := range w.pending {
			if j.Dependency == sched.DependencyPending {
				j.Dependency = sched.DependencySatisfied
				w.pending[id] = j
			}
		}
		return "dependency"
	case k < 14:
		i := rng.IntN(len(w.nodes))
		w.nodes = slices.Clone(w.nodes)
		w.nodes[i].State = sched.NodeState(rng.IntN(3))
		for id, rj := range w.running {
			if w.nodes[i].State == sched.NodeDown && slices.ContainsFunc(rj.Alloc, func(a sched.Alloc) bool { return a.Node == w.nodes[i].Name }) {
				delete(w.running, id)
			}
		}
		return "node"
	case k < 15:
		w.qos = slices.Clone(w.qos)
		w.qos[2].Limits.MaxJobsPerUser = 1 + rng.IntN(4)
		return "qos"
	case k < 16:
		if id, ok := w.any(w.running); ok {
			// Requeued: back to pending with the same id.
			rj := w.running[id]
			delete(w.running, id)
			w.pending[id] = sched.Job{ID: id, User: rj.User, Account: rj.Account, QOS: rj.QOS, SubmitTime: w.now,
				TimeLimit: 30 * time.Minute, NTasks: 2}
		}
		return "requeue"
	}
	return "time"
}

func (w *plannerWorld) end(id uint64) {
	rj, ok := w.running[id]
	if !ok {
		return
	}
	delete(w.running, id)
	cpus := 0
	for _, a := range rj.Alloc {
		cpus += a.CPUs
	}
	// Accounting has it (in id order, as the controller reads it).
	w.usage = append(slices.Clone(w.usage), sched.Usage{Account: rj.Account, User: rj.User, CPUs: cpus, Start: rj.StartTime, End: w.now})
}

func (w *plannerWorld) any(m map[uint64]sched.RunningJob) (uint64, bool) {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return 0, false
	}
	slices.Sort(ids)
	return ids[w.rng.IntN(len(ids))], true
}

func (w *plannerWorld) anyJob() (uint64, bool) {
	ids := make([]uint64, 0, len(w.pending))
	for id := range w.pending {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return 0, false
	}
	slices.Sort(ids)
	return ids[w.rng.IntN(len(ids))], true
}

func (w *plannerWorld) snapshot() sched.Snapshot {
	s := sched.Snapshot{Now: w.now, Config: w.cfg, Nodes: w.nodes, Partitions: w.parts, Topology: w.topo,
		QOS: w.qos, Assocs: w.assocs, Usage: w.usage}
	for _, rj := range w.running {
		s.Running = append(s.Running, rj)
	}
	for _, j := range w.pending {
		s.Pending = append(s.Pending, j)
	}
	sort.Slice(s.Running, func(a, b int) bool { return s.Running[a].ID < s.Running[b].ID })
	sort.Slice(s.Pending, func(a, b int) bool { return s.Pending[a].ID < s.Pending[b].ID })
	return s
}

// sameResult fails the test unless the planner's result is Schedule's:
// the same starts and preemptions in the same order, and the same word on
// every pending job (the planner lists them in its own order).
func sameResult(t *testing.T, what string, got, want sched.Result) {
	t.Helper()
	if !reflect.DeepEqual(got.Starts, want.Starts) {
		t.Fatalf("%s: starts\n got %+v\nwant %+v", what, got.Starts, want.Starts)
	}
	if !reflect.DeepEqual(got.Preempt, want.Preempt) {
		t.Fatalf("%s: preemptions\n got %+v\nwant %+v", what, got.Preempt, want.Preempt)
	}
	if len(got.Jobs) != len(want.Jobs) {
		t.Fatalf("%s: %d job results, want %d", what, len(got.Jobs), len(want.Jobs))
	}
	byID := map[uint64]sched.JobResult{}
	for _, r := range got.Jobs {
		byID[r.JobID] = r
	}
	for _, r := range want.Jobs {
		if !reflect.DeepEqual(byID[r.JobID], r) {
			t.Fatalf("%s: job %d\n got %+v\nwant %+v", what, r.JobID, byID[r.JobID], r)
		}
	}
}

// The leader's planner decides what a fresh pass over the same snapshot
// decides, pass after pass, whatever changed in between; it rebuilds only
// for what it cannot follow.
func TestLeaderPlannerMatchesSchedule(t *testing.T) {
	kinds := map[string]int{}
	var builds, passes int
	for seed := uint64(1); seed <= 30; seed++ {
		w := newPlannerWorld(seed)
		var lp leaderPlanner
		last := ""
		for step := 0; step < 40; step++ {
			snap := w.snapshot()
			want := sched.Schedule(snap)
			before := lp.builds
			got := lp.plan(snap)
			sameResult(t, fmt.Sprintf("seed %d step %d (after %s)", seed, step, last), got, want)
			if step > 0 && lp.builds > before {
				kinds[last]++
			}
			last = w.step(got)
		}
		builds += lp.builds
		passes += lp.passes
	}
	t.Logf("%d passes, %d rebuilds (after: %v)", passes, builds, kinds)
	if builds*3 > passes {
		t.Fatalf("the planner was rebuilt in %d of %d passes", builds, passes)
	}
}

// What the planner rebuilds for: changes it cannot take as jobs and time.
func TestLeaderPlannerRebuilds(t *testing.T) {
	w := newPlannerWorld(4)
	var lp leaderPlanner
	lp.plan(w.snapshot())
	if lp.builds != 1 {
		t.Fatalf("%d builds, want 1", lp.builds)
	}
	w.submit()
	w.now = w.now.Add(time.Second)
	lp.plan(w.snapshot())
	if lp.builds != 1 {
		t.Fatalf("a submit rebuilt the planner")
	}
	w.nodes = slices.Clone(w.nodes)
	w.nodes[0].State = sched.NodeDrain
	lp.plan(w.snapshot())
	if lp.builds != 2 {
		t.Fatalf("a node drained and the planner was not rebuilt")
	}
	w.qos = slices.Clone(w.qos)
	w.qos[1].Priority++
	lp.plan(w.snapshot())
	if lp.builds != 3 {
		t.Fatalf("a QoS changed and the planner was not rebuilt")
	}
	lp.reset()
	lp.plan(w.snapshot())
	if lp.builds != 4 {
		t.Fatalf("reset did not rebuild the planner")
	}
}

// sameJob and sameRunning compare every field, so that a field added to
// sched.Job or sched.RunningJob cannot slip past the planner.
func TestLeaderPlannerComparesEveryField(t *testing.T) {
	check := func(name string, v any, same func(a, b reflect.Value) bool) {
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumField(); i++ {
			a := reflect.New(typ).Elem()
			b := reflect.New(typ).Elem()
			setSome(b.Field(i))
			if same(a, b) {
				t.Errorf("%s: a change of %s goes unseen", name, typ.Field(i).Name)
			}
		}
	}
	check("sameJob", sched.Job{}, func(a, b reflect.Value) bool {
		x, y := a.Interface().(sched.Job), b.Interface().(sched.Job)
		return sameJob(&x, &y)
	})
	check("sameRunning", sched.RunningJob{}, func(a, b reflect.Value) bool {
		x, y := a.Interface().(sched.RunningJob), b.Interface().(sched.RunningJob)
		return sameRunning(&x, &y)
	})
}

// setSome gives v a value other than its zero value (for a slice, one
// element that is not zero).
func setSome(v reflect.Value) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Unix(1, 0)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		setSome(s.Index(0))
		v.Set(s)
	case reflect.Struct:
		setSome(v.Field(0))
	default:
		panic("setSome: " + v.Kind().String())
	}
}
