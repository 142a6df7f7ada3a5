package sched

import (
	"runtime"
	"sync"
	"testing"
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
