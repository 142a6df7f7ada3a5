package format

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"hpc/cluster/api"
)

// TestSortedJobsAsStablePasses: squeue's one sort orders jobs as Slurm's
// way does: by id, then stable passes by start time (descending) and by
// each -S key from the last to the first.
func TestSortedJobsAsStablePasses(t *testing.T) {
	now := time.Unix(2e9, 0)
	var letters []byte
	for l, c := range jobSortKeys() {
		if c != nil {
			letters = append(letters, l)
		}
	}
	slices.Sort(letters)
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 9))
		jobs := make([]api.Job, 30)
		for i := range jobs {
			jobs[i] = randomJob(rng)
			jobs[i].ID = uint64(rng.IntN(1000)) + uint64(i)*1000 // distinct, in no order
			jobs[i].Spec.Partition = []string{"debug", "gpu"}[rng.IntN(2)]
		}
		var spec []byte
		for range rng.IntN(4) {
			if len(spec) > 0 {
				spec = append(spec, ',')
			}
			if rng.IntN(2) == 0 {
				spec = append(spec, '-')
			}
			spec = append(spec, letters[rng.IntN(len(letters))])
		}
		want := make([]*api.Job, len(jobs))
		for i := range jobs {
			want[i] = &jobs[i]
		}
		sort.SliceStable(want, func(a, b int) bool { return want[a].ID < want[b].ID })
		sort.SliceStable(want, func(a, b int) bool { return startKey(want[a], now).After(startKey(want[b], now)) })
		keys, _ := parseSort(cmp.Or(string(spec), DefaultSqueueSort))
		for i := len(keys) - 1; i >= 0; i-- {
			k, c := keys[i], jobSortKeys()[keys[i].letter]
			sort.SliceStable(want, func(a, b int) bool {
				r := c(want[a], want[b], now)
				if k.reverse {
					r = -r
				}
				return r < 0
			})
		}
		got := sortedJobs(jobs, string(spec), now)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("seed %d, -S %q: place %d holds job %d, want %d", seed, spec, i, got[i].ID, want[i].ID)
			}
		}
	}
}
