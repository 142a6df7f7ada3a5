package accounting

import (
	"fmt"
	"testing"
)

// BenchmarkUpsertJob measures one FSM write: an update of an existing job
// (its state changing), each in its own transaction.
func BenchmarkUpsertJob(b *testing.B) {
	s := openTemp(b)
	const live = 1000
	for i := uint64(1); i <= live; i++ {
		if err := s.UpsertJob(job(i, "alice", 1000)); err != nil {
			b.Fatal(err)
		}
	}
	states := []string{"PENDING", "RUNNING", "COMPLETED"}
	for i := 0; b.Loop(); i++ {
		j := job(uint64(i%live)+1, "alice", 1000)
		j.State = states[i%len(states)]
		if err := s.UpsertJob(j); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpsertBatch measures the per-job cost when a batch of 64 log
// entries is applied in one transaction (raft.BatchingFSM).
func BenchmarkUpsertBatch(b *testing.B) {
	s := openTemp(b)
	batch := make([]JobRecord, 64)
	next := uint64(1)
	for b.Loop() {
		for k := range batch {
			batch[k] = job(next, "alice", 1000)
			next++
		}
		if err := s.UpsertBatch(batch, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/job")
}

// BenchmarkQuery10k queries a store of 10,000 jobs with a batch step each,
// held by 100 users.
func BenchmarkQuery10k(b *testing.B) {
	s := openTemp(b)
	const n = 10_000
	jobs := make([]JobRecord, 0, n)
	steps := make([]StepRecord, 0, n)
	for i := uint64(1); i <= n; i++ {
		uid := uint32(1000 + i%100)
		j := job(i, fmt.Sprintf("user%d", uid), uid)
		if i%4 == 0 {
			j.State = "COMPLETED"
			j.End = at(int64(i) + 100)
		}
		jobs = append(jobs, j)
		steps = append(steps, step(i, "batch", j.State))
	}
	if err := s.ReplaceAll(jobs, steps); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		f    Filter
		rows int
	}{
		{"all", Filter{}, 2 * n},
		{"jobs-only", Filter{JobsOnly: true}, n},
		{"one-user", Filter{UID: u32(1042)}, 2 * n / 100},
		{"one-state", Filter{States: []string{"CD"}, JobsOnly: true}, n / 4},
		{"one-job", Filter{JobIDs: []uint64{4242}}, 2},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := s.Query(c.f)
				if err != nil {
					b.Fatal(err)
				}
				if len(rows) != c.rows {
					b.Fatalf("%d rows, want %d", len(rows), c.rows)
				}
			}
		})
	}
}
