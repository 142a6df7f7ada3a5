package sched

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// plannerStep makes a random change like the controller would: commit the
// last result's starts, end some running jobs, cancel and submit some
// jobs, move time on.
func plannerStep(rng *rand.Rand, pl *Planner, res Result, extra []Job, nextID *uint64) (Delta, []Job) {
	s := pl.Snapshot()
	var d Delta
	d.Now = s.Now.Add(time.Duration(rng.IntN(90)) * time.Second)
	if rng.IntN(3) > 0 {
		for _, st := range res.Starts {
			rj := RunningJob{ID: st.JobID, StartTime: s.Now, Alloc: st.Alloc, Partition: st.Partition}
			for _, j := range s.Pending {
				if j.ID == st.JobID {
					rj.User, rj.Account, rj.QOS = j.User, j.Account, j.QOS
				}
			}
			if st.TimeLimit > 0 {
				rj.EndTime = s.Now.Add(st.TimeLimit)
			}
			d.Started = append(d.Started, rj)
		}
	}
	for i := 0; i < rng.IntN(3) && len(s.Running) > 0; i++ {
		d.Ended = append(d.Ended, s.Running[rng.IntN(len(s.Running))].ID)
	}
	if rng.IntN(4) == 0 && len(s.Pending) > 0 {
		d.Removed = append(d.Removed, s.Pending[rng.IntN(len(s.Pending))].ID)
	}
	for i := 0; i < rng.IntN(3) && len(extra) > 0; i++ {
		j := extra[0]
		extra = extra[1:]
		*nextID++
		j.ID = *nextID
		j.SubmitTime = d.Now
		d.Submitted = append(d.Submitted, j)
	}
	return d, extra
}

func diffResults(t *testing.T, what string, got, want Result) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	if !reflect.DeepEqual(got.Starts, want.Starts) {
		t.Fatalf("%s: starts differ:\n got %+v\nwant %+v", what, got.Starts, want.Starts)
	}
	if !reflect.DeepEqual(got.Preempt, want.Preempt) {
		t.Fatalf("%s: preempt differ:\n got %+v\nwant %+v", what, got.Preempt, want.Preempt)
	}
	if len(got.Jobs) != len(want.Jobs) {
		t.Fatalf("%s: %d job results, want %d", what, len(got.Jobs), len(want.Jobs))
	}
	for i := range got.Jobs {
		if !reflect.DeepEqual(got.Jobs[i], want.Jobs[i]) {
			t.Fatalf("%s: job %d differs:\n got %+v\nwant %+v", what, want.Jobs[i].JobID, got.Jobs[i], want.Jobs[i])
		}
	}
	t.Fatalf("%s: results differ", what)
}

func TestPlannerMatchesFreshPass(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		spec := smallSpec(rng)
		s := generate(spec, seed)
		more := generate(spec, seed+1000).Pending
		switch seed % 4 {
		case 0:
			s.Config = Config{DefMemPerCPU: 500} // priority/basic
		case 1:
			s.Config.PriorityCalcPeriod = 5 * time.Minute
		case 2:
			s.Config.PriorityCalcPeriod = 5 * time.Minute
			s.Config.BackfillMaxJobTest = 4
		case 3:
			s.Config.PriorityCalcPeriod = 5 * time.Minute
			s.Config.PreemptType = "preempt/qos"
			s.Config.PreemptMode = PreemptCancel
			s.QOS[1].Preempt = []string{"low"}
		}
		pl := NewPlanner(s)
		nextID := uint64(5_000_000)
		for step := 0; step < 25; step++ {
			got := pl.Plan()
			want := Schedule(pl.Snapshot())
			diffResults(t, fmt.Sprintf("seed %d step %d", seed, step), got, want)
			var d Delta
			d, more = plannerStep(rng, pl, got, more, &nextID)
			pl.Apply(d)
		}
		if testing.Verbose() {
			t.Logf("seed %d: %+v", seed, pl.stats)
		}
	}
}

// TestPlannerMatchesFreshPassMidSize drives mid-size clusters (flat or on
// a switch tree, GPUs in one or two pools a node, some with preemption or a
// small reservation cap, or none at all) mostly by one job ending at a time,
// as the benchmark does, with commits, submissions and cancellations in
// between; every pass must equal a fresh one.
func TestPlannerMatchesFreshPassMidSize(t *testing.T) {
	for seed := uint64(1); seed <= 16; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		spec := genSpec{nodes: 60 + rng.IntN(140), leafSize: []int{0, 8, 16}[rng.IntN(3)], fanout: 2 + rng.IntN(3),
			gpuEvery: []int{0, 5, 10}[rng.IntN(3)], fill: 0.5 + rng.Float64()*0.45, pending: 200 + rng.IntN(600),
			users: 20, accounts: 4, rich: rng.IntN(2) == 0}
		s := generate(spec, seed)
		more := generate(spec, seed+1000).Pending
		s.Config.PriorityCalcPeriod = 5 * time.Minute
		if seed%3 == 0 {
			// Many running jobs past their time limit: expected to end
			// at now+1, on many nodes at once, and again a second later
			// each pass.
			s.Now = s.Now.Add(3 * time.Hour)
		}
		switch seed % 5 {
		case 0:
			s.Config = Config{DefMemPerCPU: 500} // priority/basic: the horizon moves with now
		case 1:
			s.Config.BackfillMaxJobTest = 10 + rng.IntN(40)
		case 2:
			s.Config.BackfillMaxJobTest = -1
		case 3:
			s.Config.PreemptType = "preempt/qos"
			s.Config.PreemptMode = PreemptCancel
			s.QOS[1].Preempt = []string{"low"}
		}
		pl := NewPlanner(s)
		nextID := uint64(5_000_000)
		res := pl.Plan()
		for step := 0; step < 20; step++ {
			diffResults(t, fmt.Sprintf("seed %d step %d", seed, step), res, Schedule(pl.Snapshot()))
			var d Delta
			if rng.IntN(3) == 0 {
				d, more = plannerStep(rng, pl, res, more, &nextID)
			} else {
				snap := pl.Snapshot()
				d.Now = snap.Now.Add(time.Duration(rng.IntN(3)) * time.Second)
				for _, st := range res.Starts {
					rj := RunningJob{ID: st.JobID, StartTime: snap.Now, Alloc: st.Alloc, Partition: st.Partition}
					if st.TimeLimit > 0 {
						rj.EndTime = snap.Now.Add(st.TimeLimit)
					}
					d.Started = append(d.Started, rj)
				}
				d.Ended = []uint64{snap.Running[rng.IntN(len(snap.Running))].ID}
			}
			pl.Apply(d)
			res = pl.Plan()
		}
		if testing.Verbose() {
			t.Logf("seed %d: %+v", seed, pl.stats)
		}
	}
}

// TestPlannerHorizonMoves: without PriorityCalcPeriod the backfill window
// runs from now, so it reaches further each pass; with a short window many
// jobs find no reservation in it and may find one later.
func TestPlannerHorizonMoves(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		spec := genSpec{nodes: 40 + rng.IntN(60), leafSize: []int{0, 8}[rng.IntN(2)], fanout: 2, gpuEvery: 5,
			fill: 0.9, pending: 300, users: 12, accounts: 3}
		s := generate(spec, seed)
		s.Config = Config{DefMemPerCPU: 500, BackfillWindow: time.Duration(30+rng.IntN(90)) * time.Minute}
		if seed%2 == 0 {
			s.Config.PriorityWeightAge = 100 // multifactor: every pass a full one
		}
		pl := NewPlanner(s)
		res := pl.Plan()
		for step := 0; step < 25; step++ {
			diffResults(t, fmt.Sprintf("seed %d step %d", seed, step), res, Schedule(pl.Snapshot()))
			snap := pl.Snapshot()
			d := Delta{Now: snap.Now.Add(time.Duration(1+rng.IntN(600)) * time.Second)}
			if rng.IntN(2) == 0 {
				d.Ended = []uint64{snap.Running[rng.IntN(len(snap.Running))].ID}
			}
			pl.Apply(d)
			res = pl.Plan()
		}
	}
}

func TestPlannerOneJobEnds(t *testing.T) {
	s := generate(genSpec{nodes: 200, leafSize: 16, fanout: 4, gpuEvery: 10, fill: 0.9, pending: 2000, users: 20, accounts: 4}, 3)
	s.Config.PriorityCalcPeriod = 5 * time.Minute
	pl := NewPlanner(s)
	res := pl.Plan()
	var d Delta
	for _, st := range res.Starts {
		d.Started = append(d.Started, RunningJob{ID: st.JobID, StartTime: s.Now, EndTime: s.Now.Add(st.TimeLimit), Alloc: st.Alloc})
	}
	pl.Apply(d)
	diffResults(t, "after commit", pl.Plan(), Schedule(pl.Snapshot()))
	for i := 0; i < 20; i++ {
		snap := pl.Snapshot()
		pl.Apply(Delta{Now: snap.Now.Add(time.Second), Ended: []uint64{snap.Running[(i*37)%len(snap.Running)].ID}})
		diffResults(t, fmt.Sprintf("end %d", i), pl.Plan(), Schedule(pl.Snapshot()))
	}
	t.Logf("%+v", pl.stats)
	if pl.stats.incremental < 20 || pl.stats.kept == 0 || pl.stats.replanned == 0 {
		t.Fatalf("the planner did not replay: %+v", pl.stats)
	}
}

// TestPlannerDeltaTracking checks the replay's bookkeeping itself: at every
// job of a replayed walk, each node outside delta is exactly as the last
// walk had it at that job, and each node in delta has the last walk's
// state as its old state.
func TestPlannerDeltaTracking(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		spec := smallSpec(rng)
		s := generate(spec, seed)
		more := generate(spec, seed+1000).Pending
		s.Config.PriorityCalcPeriod = 5 * time.Minute
		pl := NewPlanner(s)
		prev, cur := map[uint64][]nstate{}, map[uint64][]nstate{}
		checked := 0
		pl.hook = func(p *pass, ji int32) {
			id := p.jobs[ji].spec.ID
			st := make([]nstate, len(p.ns))
			for i := range p.ns {
				st[i] = p.ns[i].clone()
			}
			cur[id] = st
			old, ok := prev[id]
			if p.rp == nil || !ok {
				return
			}
			checked++
			for n := range p.ns {
				if p.rp.inDelta[n] {
					if !p.rp.old[n].equal(&old[n]) {
						t.Fatalf("seed %d job %d: node %d in delta has the wrong old state\n have %+v\n want %+v", seed, id, n, p.rp.old[n], old[n])
					}
				} else if !p.ns[n].equal(&old[n]) {
					t.Fatalf("seed %d job %d: node %d outside delta changed\n new %+v\n old %+v", seed, id, n, p.ns[n], old[n])
				}
			}
		}
		nextID := uint64(5_000_000)
		for step := 0; step < 12; step++ {
			got := pl.Plan()
			prev, cur = cur, map[uint64][]nstate{}
			if pl.p.rp == nil && step > 0 && pl.stats.incremental == 0 {
				t.Fatalf("seed %d: no incremental pass", seed)
			}
			var d Delta
			d, more = plannerStep(rng, pl, got, more, &nextID)
			pl.Apply(d)
		}
		if checked == 0 {
			t.Fatalf("seed %d: nothing checked", seed)
		}
	}
}
