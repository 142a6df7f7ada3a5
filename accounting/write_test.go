package accounting

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestUpsertJobRoundTrip(t *testing.T) {
	s := openTemp(t)
	want := JobRecord{
		JobID: 42, Name: "train", Partition: "gpu", Account: "ml",
		User: "alice", Group: "staff", UID: 1000, GID: 50,
		AllocCPUs: 8, AllocNodes: 2, ReqCPUs: 8, ReqMemMB: 64000, TimeLimitMin: 1440,
		NodeList: "node[1-2]", State: "CANCELLED", ExitCode: 0, Signal: 15,
		CancelledBy: u32(1000), WorkDir: "/home/alice/run",
		Submit: time.Unix(1_700_000_000, 123_456_789), Start: at(10), End: at(3600),
	}
	if err := s.UpsertJob(want); err != nil {
		t.Fatal(err)
	}
	rows := mustQuery(t, s, Filter{})
	if len(rows) != 1 || rows[0].Step != nil {
		t.Fatalf("rows = %v, want one job row", ids(rows))
	}
	if got := normJob(rows[0].Job); !reflect.DeepEqual(got, normJob(want)) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, normJob(want))
	}
	// Zero times stay zero, and a nil CancelledBy stays nil.
	p := JobRecord{JobID: 43, User: "bob", UID: 1001, State: "PENDING", Submit: at(1)}
	if err := s.UpsertJob(p); err != nil {
		t.Fatal(err)
	}
	got := mustQuery(t, s, Filter{JobIDs: []uint64{43}})[0].Job
	if !got.Start.IsZero() || !got.End.IsZero() || got.CancelledBy != nil || !got.Submit.Equal(at(1)) {
		t.Errorf("pending job came back as %+v", got)
	}
}

func TestStateTransitionsUpdateOneRow(t *testing.T) {
	s := openTemp(t)
	j := JobRecord{JobID: 5, Name: "sim", Partition: "debug", User: "alice", UID: 1000,
		ReqCPUs: 4, State: "PENDING", Submit: at(0)}
	if err := s.UpsertJob(j); err != nil {
		t.Fatal(err)
	}
	j.State, j.Start, j.NodeList, j.AllocCPUs, j.AllocNodes = "RUNNING", at(5), "node[1-2]", 4, 2
	if err := s.UpsertJob(j); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertStep(step(5, "batch", "RUNNING")); err != nil {
		t.Fatal(err)
	}
	rows := mustQuery(t, s, Filter{JobsOnly: true})
	if len(rows) != 1 || rows[0].Job.State != "RUNNING" || rows[0].Job.NodeList != "node[1-2]" {
		t.Fatalf("after RUNNING: %+v", rows)
	}
	j.State, j.End, j.ExitCode = "COMPLETED", at(65), 0
	if err := s.UpsertJob(j); err != nil {
		t.Fatal(err)
	}
	rows = mustQuery(t, s, Filter{})
	if got := ids(rows); !equalStrings(got, []string{"5", "5.batch"}) {
		t.Fatalf("rows = %v, want [5 5.batch]: updating a job must keep its steps", got)
	}
	got := rows[0].Job
	if got.State != "COMPLETED" || !got.Start.Equal(at(5)) || !got.End.Equal(at(65)) || got.AllocCPUs != 4 {
		t.Errorf("after COMPLETED: %+v", got)
	}
	st := step(5, "batch", "COMPLETED")
	st.End = at(65)
	if err := s.UpsertStep(st); err != nil {
		t.Fatal(err)
	}
	rows = mustQuery(t, s, Filter{})
	if len(rows) != 2 || rows[1].Step.State != "COMPLETED" || !rows[1].Step.End.Equal(at(65)) {
		t.Errorf("step after update: %+v", rows)
	}
}

// event is one accounting write, as the FSM would make while applying a log
// entry.
type event struct {
	job  *JobRecord
	step *StepRecord
}

func apply(t *testing.T, s *Store, evs []event) {
	t.Helper()
	for i, ev := range evs {
		var err error
		if ev.job != nil {
			err = s.UpsertJob(*ev.job)
		} else {
			err = s.UpsertStep(*ev.step)
		}
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
}

// lifecycle is the accounting history of a few jobs, as the log would apply it.
func lifecycle() []event {
	var evs []event
	addJob := func(j JobRecord) { evs = append(evs, event{job: &j}) }
	addStep := func(st StepRecord) { evs = append(evs, event{step: &st}) }

	a := JobRecord{JobID: 1, Name: "a", Partition: "debug", User: "alice", UID: 1000, State: "PENDING", Submit: at(0)}
	b := JobRecord{JobID: 2, Name: "b", Partition: "gpu", User: "bob", UID: 1001, State: "PENDING", Submit: at(1)}
	addJob(a)
	addJob(b)
	a.State, a.Start, a.NodeList, a.AllocCPUs = "RUNNING", at(2), "node1", 1
	addJob(a)
	addStep(StepRecord{JobID: 1, Step: "batch", Name: "batch", State: "RUNNING", Start: at(2)})
	addStep(StepRecord{JobID: 1, Step: "0", Name: "hostname", State: "RUNNING", Start: at(3)})
	addStep(StepRecord{JobID: 1, Step: "0", Name: "hostname", State: "COMPLETED", Start: at(3), End: at(4)})
	b.State, b.End, b.CancelledBy = "CANCELLED", at(5), u32(0)
	addJob(b)
	addStep(StepRecord{JobID: 1, Step: "batch", Name: "batch", State: "FAILED", ExitCode: 3, Start: at(2), End: at(6)})
	a.State, a.End, a.ExitCode = "FAILED", at(6), 3
	addJob(a)
	return evs
}

func TestReplayIsIdempotent(t *testing.T) {
	evs := lifecycle()
	once := openTemp(t)
	apply(t, once, evs)
	want := dump(t, once)

	// Raft replays every entry after the last snapshot on restart: whatever
	// the snapshot point, replaying onto applied state changes nothing.
	for k := range evs {
		s := openTemp(t)
		apply(t, s, evs)
		apply(t, s, evs[k:])
		if got := dump(t, s); !reflect.DeepEqual(got, want) {
			t.Fatalf("replay from entry %d:\n got %v\nwant %v", k, got, want)
		}
	}
	// Applying each write twice in a row changes nothing either.
	twice := openTemp(t)
	for _, ev := range evs {
		apply(t, twice, []event{ev, ev})
	}
	if got := dump(t, twice); !reflect.DeepEqual(got, want) {
		t.Fatalf("each write twice:\n got %v\nwant %v", got, want)
	}
	// And the result is what the history says.
	rows := mustQuery(t, once, Filter{})
	if got := ids(rows); !equalStrings(got, []string{"1", "1.batch", "1.0", "2"}) {
		t.Fatalf("rows = %v", got)
	}
	if rows[0].Job.State != "FAILED" || rows[0].Job.ExitCode != 3 || rows[1].Step.State != "FAILED" ||
		rows[2].Step.State != "COMPLETED" || rows[3].Job.State != "CANCELLED" || rows[3].Job.CancelledBy == nil {
		t.Errorf("final rows wrong: %+v", rows)
	}
}

func TestStepOfUnknownJob(t *testing.T) {
	s := openTemp(t)
	err := s.UpsertStep(step(9, "batch", "RUNNING"))
	if !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("UpsertStep for a missing job: %v, want ErrUnknownJob", err)
	}
	if !strings.Contains(err.Error(), "9.batch") {
		t.Errorf("error should name the step: %v", err)
	}
	// A batch fails as a whole: the job before the bad step is not written.
	err = s.UpsertBatch([]JobRecord{job(1, "alice", 1000)}, []StepRecord{step(1, "batch", "RUNNING"), step(2, "batch", "RUNNING")})
	if !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("UpsertBatch: %v, want ErrUnknownJob", err)
	}
	if rows := mustQuery(t, s, Filter{}); len(rows) != 0 {
		t.Errorf("failed batch left rows: %v", ids(rows))
	}
	// Within one batch a step may follow its job.
	if err := s.UpsertBatch([]JobRecord{job(1, "alice", 1000)}, []StepRecord{step(1, "batch", "RUNNING")}); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustQuery(t, s, Filter{})); !equalStrings(got, []string{"1", "1.batch"}) {
		t.Errorf("rows = %v", got)
	}
}

func TestInvalidRecords(t *testing.T) {
	s := openTemp(t)
	if err := s.UpsertJob(job(1, "alice", 1000)); err != nil {
		t.Fatal(err)
	}
	noState := job(2, "alice", 1000)
	noState.State = ""
	farFuture := job(3, "alice", 1000)
	farFuture.End = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := map[string]JobRecord{
		"job id 0":     job(0, "alice", 1000),
		"huge job id":  job(math.MaxUint64, "alice", 1000),
		"empty state":  noState,
		"time in 3000": farFuture,
	}
	for name, j := range jobs {
		if err := s.UpsertJob(j); err == nil {
			t.Errorf("%s: UpsertJob accepted %+v", name, j)
		}
	}
	steps := map[string]StepRecord{
		"empty step name":  step(1, "", "RUNNING"),
		"dotted step name": step(1, "1.0", "RUNNING"),
		"empty state":      step(1, "batch", ""),
	}
	for name, st := range steps {
		if err := s.UpsertStep(st); err == nil {
			t.Errorf("%s: UpsertStep accepted %+v", name, st)
		}
	}
	if got := ids(mustQuery(t, s, Filter{})); !equalStrings(got, []string{"1"}) {
		t.Errorf("invalid records left rows: %v", got)
	}
}

func TestResetAndReplaceAll(t *testing.T) {
	s := openTemp(t)
	apply(t, s, lifecycle())

	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if rows := mustQuery(t, s, Filter{}); len(rows) != 0 {
		t.Fatalf("after Reset: %v", ids(rows))
	}
	// Writes after Reset work as on a new store.
	apply(t, s, lifecycle())

	newJobs := []JobRecord{job(10, "carol", 1002), job(11, "dave", 1003)}
	newSteps := []StepRecord{step(11, "0", "RUNNING"), step(10, "batch", "RUNNING"), step(11, "batch", "RUNNING")}
	if err := s.ReplaceAll(newJobs, newSteps); err != nil {
		t.Fatal(err)
	}
	rows := mustQuery(t, s, Filter{})
	if got := ids(rows); !equalStrings(got, []string{"10", "10.batch", "11", "11.batch", "11.0"}) {
		t.Fatalf("after ReplaceAll: %v", got)
	}
	if rows[0].Job.User != "carol" || rows[2].Job.User != "dave" {
		t.Errorf("wrong contents: %+v", rows)
	}
	before := dump(t, s)

	// A ReplaceAll that fails (a step without its job) changes nothing.
	err := s.ReplaceAll([]JobRecord{job(20, "erin", 1004)}, []StepRecord{step(21, "batch", "RUNNING")})
	if !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("ReplaceAll with an orphan step: %v, want ErrUnknownJob", err)
	}
	if got := dump(t, s); !reflect.DeepEqual(got, before) {
		t.Errorf("failed ReplaceAll changed the store:\n got %v\nwant %v", got, before)
	}

	// ReplaceAll with nothing empties the store.
	if err := s.ReplaceAll(nil, nil); err != nil {
		t.Fatal(err)
	}
	if rows := mustQuery(t, s, Filter{}); len(rows) != 0 {
		t.Errorf("after ReplaceAll(nil, nil): %v", ids(rows))
	}
}
