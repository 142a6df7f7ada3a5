package cluster

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"hpc/cluster/api"
)

// TestSortByID: lists short (compared) and long (by radix), ids small and
// spread over all 64 bits, repeated or not, come out in id order.
func TestSortByID(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 255, 256, 1000, 70000} {
		for _, idOf := range []func() uint64{
			func() uint64 { return 1 + rng.Uint64N(uint64(n)+1) },
			func() uint64 { return rng.Uint64() },
			func() uint64 { return 1<<40 + rng.Uint64N(3) }, // few bytes differ, many repeats
		} {
			jobs := make([]*api.Job, n)
			for i := range jobs {
				jobs[i] = &api.Job{ID: idOf()}
			}
			want := slices.Clone(jobs)
			slices.SortStableFunc(want, func(a, b *api.Job) int { return cmp.Compare(a.ID, b.ID) })
			sortByID(jobs)
			for i := range jobs {
				if jobs[i].ID != want[i].ID {
					t.Fatalf("n=%d: at %d id %d, want %d", n, i, jobs[i].ID, want[i].ID)
				}
			}
		}
	}
}

// BenchmarkSortByID: squeue's list of 100,000 jobs as the state's map
// gives them (no order).
func BenchmarkSortByID(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	jobs := make([]*api.Job, 100000)
	for i := range jobs {
		jobs[i] = &api.Job{ID: uint64(i + 1)}
	}
	for b.Loop() {
		b.StopTimer()
		rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
		b.StartTimer()
		sortByID(jobs)
	}
}
