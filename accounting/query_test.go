package accounting

import (
	"math"
	"testing"
	"time"
)

func TestStepOrder(t *testing.T) {
	s := openTemp(t)
	if err := s.UpsertJob(job(3, "alice", 1000)); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertJob(job(12, "alice", 1000)); err != nil {
		t.Fatal(err)
	}
	// Written in a scrambled order, and job 12 first.
	for _, name := range []string{"2", "10", "extern", "0", "batch", "1", "interactive"} {
		if err := s.UpsertStep(step(12, name, "RUNNING")); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"0", "batch"} {
		if err := s.UpsertStep(step(3, name, "RUNNING")); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"3", "3.batch", "3.0",
		"12", "12.batch", "12.extern", "12.interactive", "12.0", "12.1", "12.2", "12.10"}
	rows := mustQuery(t, s, Filter{})
	if got := ids(rows); !equalStrings(got, want) {
		t.Fatalf("order = %v\nwant    %v", got, want)
	}
	for _, r := range rows {
		if r.Step != nil && r.Step.JobID != r.Job.JobID {
			t.Errorf("step %v attached to job %d", r.Step, r.Job.JobID)
		}
	}
}

// fixture stores jobs of three users in several states and partitions:
//
//	1 alice debug COMPLETED  (steps batch, 0)
//	2 bob   gpu   FAILED     (step batch)
//	3 alice gpu   RUNNING    (steps batch, extern)
//	4 carol debug PENDING
//	5 bob   debug CANCELLED  (never started)
func fixture(t *testing.T) *Store {
	t.Helper()
	s := openTemp(t)
	mk := func(id uint64, user string, uid uint32, part, state string) JobRecord {
		j := job(id, user, uid)
		j.Partition, j.State = part, state
		return j
	}
	j1 := mk(1, "alice", 1000, "debug", "COMPLETED")
	j1.Submit, j1.Start, j1.End = at(0), at(10), at(100)
	j2 := mk(2, "bob", 1001, "gpu", "FAILED")
	j2.Submit, j2.Start, j2.End, j2.ExitCode = at(20), at(30), at(200), 1
	j3 := mk(3, "alice", 1000, "gpu", "RUNNING")
	j3.Submit, j3.Start = at(150), at(160)
	j4 := mk(4, "carol", 1002, "debug", "PENDING")
	j4.Submit, j4.Start, j4.NodeList, j4.AllocCPUs = at(300), time.Time{}, "", 0
	j5 := mk(5, "bob", 1001, "debug", "CANCELLED")
	j5.Submit, j5.Start, j5.End, j5.CancelledBy = at(40), time.Time{}, at(50), u32(0)
	steps := []StepRecord{
		step(1, "batch", "COMPLETED"), step(1, "0", "COMPLETED"),
		step(2, "batch", "FAILED"),
		step(3, "extern", "RUNNING"), step(3, "batch", "RUNNING"),
	}
	if err := s.ReplaceAll([]JobRecord{j3, j1, j5, j2, j4}, steps); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestQueryFilters(t *testing.T) {
	s := fixture(t)
	cases := []struct {
		name string
		f    Filter
		want []string
	}{
		{"everything", Filter{},
			[]string{"1", "1.batch", "1.0", "2", "2.batch", "3", "3.batch", "3.extern", "4", "5"}},
		{"jobs only (-X)", Filter{JobsOnly: true}, []string{"1", "2", "3", "4", "5"}},
		{"job ids (-j)", Filter{JobIDs: []uint64{3, 1}}, []string{"1", "1.batch", "1.0", "3", "3.batch", "3.extern"}},
		{"job ids, -X", Filter{JobIDs: []uint64{3, 1}, JobsOnly: true}, []string{"1", "3"}},
		{"unknown job id", Filter{JobIDs: []uint64{999999}}, []string{}},
		{"one user", Filter{UID: u32(1000)}, []string{"1", "1.batch", "1.0", "3", "3.batch", "3.extern"}},
		{"uid 0 is a user, not everyone", Filter{UID: u32(0)}, []string{}},
		{"states", Filter{States: []string{"FAILED", "PENDING"}}, []string{"2", "2.batch", "4"}},
		{"short state codes, any case", Filter{States: []string{"cd", "R"}, JobsOnly: true}, []string{"1", "3"}},
		{"state with decoration", Filter{States: []string{"CANCELLED+"}}, []string{"5"}},
		{"partitions", Filter{Partitions: []string{"gpu"}, JobsOnly: true}, []string{"2", "3"}},
		{"combined", Filter{UID: u32(1001), States: []string{"failed"}, Partitions: []string{"gpu", "debug"}},
			[]string{"2", "2.batch"}},
		{"ids and user disagree", Filter{JobIDs: []uint64{2}, UID: u32(1000)}, []string{}},
		// The window keeps jobs alive at some moment of it.
		{"start after: ended jobs before it drop out", Filter{StartAfter: at(120), JobsOnly: true},
			[]string{"2", "3", "4"}},
		{"end before: jobs submitted after it drop out", Filter{EndBefore: at(100), JobsOnly: true},
			[]string{"1", "2", "5"}},
		{"window", Filter{StartAfter: at(60), EndBefore: at(160), JobsOnly: true},
			[]string{"1", "2", "3"}},
		{"window bounds are inclusive", Filter{StartAfter: at(200), EndBefore: at(150), JobsOnly: true},
			[]string{"2", "3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ids(mustQuery(t, s, c.f)); !equalStrings(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestQueryStepRowsCarryTheirJob(t *testing.T) {
	s := fixture(t)
	rows := mustQuery(t, s, Filter{JobIDs: []uint64{2}})
	if len(rows) != 2 || rows[1].Step == nil {
		t.Fatalf("rows = %v", ids(rows))
	}
	if rows[1].Job.Account != "root" || rows[1].Job.User != "bob" || rows[1].Job.Partition != "gpu" {
		t.Errorf("step row's job = %+v", rows[1].Job)
	}
	if rows[1].Step.State != "FAILED" || rows[1].Step.Name != "batch" {
		t.Errorf("step = %+v", rows[1].Step)
	}
}

func TestQueryRejectsBadFilter(t *testing.T) {
	s := fixture(t)
	if _, err := s.Query(Filter{JobIDs: []uint64{math.MaxUint64}}); err == nil {
		t.Error("Query accepted a job id SQLite cannot hold")
	}
}

func TestQueryManyJobIDs(t *testing.T) {
	s := openTemp(t)
	var jobs []JobRecord
	var want []uint64
	for i := uint64(1); i <= 3000; i++ {
		jobs = append(jobs, job(i, "alice", 1000))
		if i%2 == 0 {
			want = append(want, i)
		}
	}
	if err := s.ReplaceAll(jobs, nil); err != nil {
		t.Fatal(err)
	}
	// More ids than SQLite's old limit on bound parameters (999).
	rows := mustQuery(t, s, Filter{JobIDs: want})
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Job.JobID != want[i] {
			t.Fatalf("row %d is job %d, want %d", i, r.Job.JobID, want[i])
		}
	}
}

func TestUsageByUser(t *testing.T) {
	s := openTemp(t)
	rec := func(id uint64, user string, cpus int, start, end time.Time) JobRecord {
		j := job(id, user, 1000)
		j.AllocCPUs, j.Start, j.End = cpus, start, end
		j.State = "COMPLETED"
		if end.IsZero() {
			j.State = "RUNNING"
		}
		if start.IsZero() {
			j.State = "PENDING"
		}
		return j
	}
	since, now := at(20), at(300)
	jobs := []JobRecord{
		rec(1, "alice", 2, at(100), at(200)),         // 2 CPUs x 100 s = 200
		rec(2, "alice", 4, at(150), time.Time{}),     // running: 4 x (300-150) = 600
		rec(3, "bob", 1, at(0), at(50)),              // clipped by since: 1 x 30 = 30
		rec(4, "bob", 3, at(250), at(400)),           // clipped by now: 3 x 50 = 150
		rec(5, "carol", 8, time.Time{}, time.Time{}), // pending: nothing
		rec(6, "dave", 8, at(0), at(10)),             // ended before since: nothing
		rec(7, "erin", 8, at(310), time.Time{}),      // starts after now: nothing
	}
	if err := s.ReplaceAll(jobs, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.UsageByUser(since, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"alice": 800, "bob": 180}
	if len(got) != len(want) {
		t.Fatalf("usage = %v, want %v", got, want)
	}
	for user, w := range want {
		if math.Abs(got[user]-w) > 1e-6 {
			t.Errorf("usage[%s] = %v, want %v", user, got[user], w)
		}
	}
	// A zero since counts from the beginning.
	all, err := s.UsageByUser(time.Time{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(all["bob"]-(50+150)) > 1e-6 || math.Abs(all["dave"]-80) > 1e-6 {
		t.Errorf("usage from the beginning = %v", all)
	}
}

// An array's id selects all its tasks (sacct -j 7); a task keeps its
// array and index.
func TestQueryArrays(t *testing.T) {
	s := openTemp(t)
	var jobs []JobRecord
	for i, id := range []uint64{7, 8, 9} {
		j := job(id, "alice", 1000)
		j.ArrayJobID, j.ArrayTaskID = 7, i
		jobs = append(jobs, j)
	}
	jobs = append(jobs, job(10, "alice", 1000))
	if err := s.ReplaceAll(jobs, nil); err != nil {
		t.Fatal(err)
	}
	rows := mustQuery(t, s, Filter{JobIDs: []uint64{7}})
	if got := ids(rows); !equalStrings(got, []string{"7", "8", "9"}) {
		t.Fatalf("-j 7: %v", got)
	}
	if r := rows[2].Job; r.ArrayJobID != 7 || r.ArrayTaskID != 2 {
		t.Errorf("task 2 read back as %d_%d", r.ArrayJobID, r.ArrayTaskID)
	}
	if got := ids(mustQuery(t, s, Filter{JobIDs: []uint64{8, 10}})); !equalStrings(got, []string{"8", "10"}) {
		t.Errorf("-j 8,10: %v", got)
	}
}
