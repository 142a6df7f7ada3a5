package format

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
	"hpc/internal/randfill"
)

// randomJob is a job with every field random, in one of squeue's states,
// with a hold or none and any --exclusive, sometimes a task of one of
// two arrays.
func randomJob(rng *rand.Rand) api.Job {
	var j api.Job
	randfill.Fill(rng, reflect.ValueOf(&j).Elem())
	states := []api.JobState{api.StatePending, api.StateRunning, api.StateCompleted, api.StateCancelled,
		api.StateFailed, api.StateTimeout, api.StateOutOfMemory, api.StateCompleting}
	j.State = states[rng.IntN(len(states))]
	j.Hold = []string{"", "", "user", "admin"}[rng.IntN(4)]
	j.Spec.Exclusive = []string{"", "exclusive", "user", "mcs", "oversubscribe"}[rng.IntN(5)]
	j.ArrayTasks = "" // squeue's own: set by CollapseArrays, never sent
	if rng.IntN(2) == 0 {
		j.ArrayJobID, j.ArrayTaskID, j.Restarts = 100+uint64(rng.IntN(2)), rng.IntN(8), 0
		if rng.IntN(2) == 0 {
			j.StartTime = time.Time{}
		}
	}
	return j
}

// wholeOf and briefOf are the job squeue reads from the controller's
// whole job and from its brief.
func wholeOf(j api.Job) api.Job {
	var out api.Job
	b, _ := json.Marshal(&j)
	_ = json.Unmarshal(b, &out)
	out.ArrayTasks = j.ArrayTasks
	return out
}

func briefOf(j api.Job) api.Job {
	b := j.Brief()
	out := b.Job()
	out.ArrayTasks = j.ArrayTasks
	return out
}

// TestBriefColumnsAsWhole: each squeue letter and sort key BriefSuffices
// accepts prints and sorts a job's brief as it does the whole job, and
// each one it does not accept differs for some job (so that the lists
// hold no letter they should not, and miss none they could hold).
func TestBriefColumnsAsWhole(t *testing.T) {
	now := time.Unix(2e9, 0)
	differs := map[byte]bool{}
	sortDiffers := map[byte]bool{}
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 3))
		a, b := randomJob(rng), randomJob(rng)
		if rng.IntN(3) == 0 {
			a.ArrayTasks = "1-3" // an array's record, as CollapseArrays leaves it
		}
		a, b = wholeOf(a), wholeOf(b)
		ba, bb := briefOf(a), briefOf(b)
		for letter, col := range squeueCols() {
			whole, _ := col.value(&a, now)
			brief, _ := col.value(&ba, now)
			if whole == brief {
				continue
			}
			differs[letter] = true
			if strings.IndexByte(briefLetters, letter) >= 0 {
				t.Errorf("seed %d: %%%c prints %q for the whole job, %q for its brief", seed, letter, whole, brief)
			}
		}
		for letter, cmp := range jobSortKeys() {
			if cmp == nil || cmp(&a, &b, now) == cmp(&ba, &bb, now) {
				continue
			}
			sortDiffers[letter] = true
			if strings.IndexByte(briefSortKeys, letter) >= 0 {
				t.Errorf("seed %d: -S %c compares whole jobs otherwise than their briefs", seed, letter)
			}
		}
	}
	for letter := range squeueCols() {
		if strings.IndexByte(briefLetters, letter) < 0 && !differs[letter] {
			t.Errorf("%%%c printed the same for every brief: add it to briefLetters", letter)
		}
	}
	for letter, cmp := range jobSortKeys() {
		if cmp != nil && strings.IndexByte(briefSortKeys, letter) < 0 && !sortDiffers[letter] {
			t.Errorf("-S %c sorted the same for every brief: add it to briefSortKeys", letter)
		}
	}
}

// TestBriefArraysAsWhole: squeue's array records (CollapseArrays) and its
// sorting by default come out the same from briefs as from whole jobs.
func TestBriefArraysAsWhole(t *testing.T) {
	now := time.Unix(2e9, 0)
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 5))
		var whole, briefs []api.Job
		for i := range 12 {
			j := randomJob(rng)
			j.ID = uint64(1000 + i)
			whole = append(whole, wholeOf(j))
			briefs = append(briefs, briefOf(j))
		}
		w := openapi.CollapseArrays(whole)
		b := openapi.CollapseArrays(briefs)
		if len(w) != len(b) {
			t.Fatalf("seed %d: %d records from whole jobs, %d from briefs", seed, len(w), len(b))
		}
		opts := SqueueOptions{Format: DefaultSqueueFormat + " %K %F %Q", Sort: ""}
		if got, want := Squeue(b, now, opts), Squeue(w, now, opts); got != want {
			t.Fatalf("seed %d: from briefs\n%s\nfrom whole jobs\n%s", seed, got, want)
		}
	}
}

func TestBriefSuffices(t *testing.T) {
	for _, c := range []struct {
		o    SqueueOptions
		want bool
	}{
		{SqueueOptions{}, true},
		{SqueueOptions{Long: true}, true},
		{SqueueOptions{Format: "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", Sort: "-t,i"}, true},
		{SqueueOptions{Format: "%i %S"}, false},     // expected start: not in a brief
		{SqueueOptions{Format: "%i %Z"}, false},     // work directory
		{SqueueOptions{Sort: "V"}, false},           // submit time
		{SqueueOptions{LongFormat: "jobid"}, false}, // -O: whole jobs
		{SqueueOptions{Format: "%i", LongFormat: "jobid"}, true},
	} {
		if got := BriefSuffices(c.o); got != c.want {
			t.Errorf("BriefSuffices(%+v) = %v, want %v", c.o, got, c.want)
		}
	}
}
