package sched

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// benchSpec is the benchmark cluster: 10,000 nodes in several
// partitions, GPUs on a tenth, a 3-level switch tree (leaves of 32 nodes,
// 8 leaves a middle switch, one core), 90% busy, 100,000 pending jobs.
var benchSpec = genSpec{nodes: 10000, leafSize: 32, fanout: 8, gpuEvery: 10, fill: 0.9,
	pending: 100000, users: 200, accounts: 10}

var (
	benchOnce sync.Once
	benchSnap Snapshot
)

func benchSnapshot() Snapshot {
	benchOnce.Do(func() { benchSnap = generate(benchSpec, 1) })
	return benchSnap
}

// BenchmarkSchedule is a full pass with backfill over the benchmark cluster.
func BenchmarkSchedule(b *testing.B) {
	s := benchSnapshot()
	b.ReportAllocs()
	var res Result
	for b.Loop() {
		res = Schedule(s)
	}
	reportPass(b, res)
}

func reportPass(b *testing.B, res Result) {
	reserved := 0
	for _, j := range res.Jobs {
		if !j.ExpectedStart.IsZero() && j.Reason != "" {
			reserved++
		}
	}
	b.ReportMetric(float64(len(res.Starts)), "starts")
	b.ReportMetric(float64(reserved), "reservations")
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapSys)/(1<<20), "heap-MiB")
}

// BenchmarkPlannerJobEnds is the decision after one job ends: on the
// benchmark cluster, with the last pass's starts committed (and planned, not
// timed), one running job ends a second later and the planner decides again
// (timed). Priorities are recalculated every 5 minutes (PriorityCalcPeriod),
// so the passes measured stay within one period; run it with
// -benchtime=100x or less. It reports the decisions redone per pass and,
// of their reservation searches, those that went over all nodes again
// (searches/pass; the others were worked out from the last pass's).
func BenchmarkPlannerJobEnds(b *testing.B) {
	for _, depth := range []int{0, 100} {
		name := depth
		if name == 0 {
			name = 500
		}
		b.Run(fmt.Sprintf("bf_max_job_test=%d", name), func(b *testing.B) { benchPlannerJobEnds(b, depth) })
	}
}

func benchPlannerJobEnds(b *testing.B, depth int) {
	s := benchSnapshot()
	s.Config.BackfillMaxJobTest = depth
	s.Config.PriorityCalcPeriod = 5 * time.Minute
	s.Now = s.Now.Add(time.Second)
	pl := NewPlanner(s)
	res := pl.Plan()
	commit := func(res Result) Delta {
		now := pl.Snapshot().Now
		d := Delta{}
		for _, st := range res.Starts {
			rj := RunningJob{ID: st.JobID, StartTime: now, Alloc: st.Alloc, Partition: st.Partition}
			if st.TimeLimit > 0 {
				rj.EndTime = now.Add(st.TimeLimit)
			}
			d.Started = append(d.Started, rj)
		}
		return d
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	var timed, searched int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Commit what the last passes started, as the controller does.
		for k := 0; k < 3 && len(res.Starts) > 0; k++ {
			pl.Apply(commit(res))
			res = pl.Plan()
		}
		before := pl.stats
		run := pl.Snapshot().Running
		d := Delta{Now: pl.Snapshot().Now.Add(time.Second), Ended: []uint64{run[rng.IntN(len(run))].ID}}
		b.StartTimer()
		pl.Apply(d)
		res = pl.Plan()
		b.StopTimer()
		timed += pl.stats.redone - before.redone
		searched += pl.stats.searched - before.searched
	}
	b.ReportMetric(float64(pl.stats.full), "full-passes")
	b.ReportMetric(float64(timed)/float64(b.N), "redone/pass")
	b.ReportMetric(float64(searched)/float64(b.N), "searches/pass")
}
