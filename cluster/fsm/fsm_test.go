package fsm

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/accounting"
	"hpc/cluster/api"
	"hpc/cluster/config"
)

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.LabConfig(3)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testFSM(t *testing.T, cfg *config.Config) (*FSM, *accounting.Store) {
	t.Helper()
	st, err := accounting.Open(filepath.Join(t.TempDir(), "acct.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil))), st
}

// testLog is a log of commands covering every op: submits, a start, an end,
// a cancel of a pending job and of a running one, and a node failure.
func testLog() []Op {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	spec := api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp"}
	job := func() *api.Job {
		return &api.Job{Spec: spec, UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "ann"}
	}
	alloc := func(n string) []api.NodeAlloc { return []api.NodeAlloc{{Node: n, CPUs: 1, MemMB: 1000}} }
	return []Op{
		&NodeStateChange{Time: t0, Node: "node1", State: "UP"},
		&NodeStateChange{Time: t0, Node: "node2", State: "UP"},
		&Submit{Time: t0, Job: job()},
		&Submit{Time: t0.Add(time.Second), Job: job()},
		&Submit{Time: t0.Add(2 * time.Second), Job: job()},
		&Submit{Time: t0.Add(3 * time.Second), Job: job()},
		&Start{Time: t0.Add(4 * time.Second), Starts: []JobStart{
			{JobID: 1, Alloc: alloc("node1"), StdOut: "/tmp/slurm-1.out", StdErr: "/tmp/slurm-1.out"},
			{JobID: 2, Alloc: alloc("node2"), StdOut: "/tmp/slurm-2.out", StdErr: "/tmp/slurm-2.out"},
			{JobID: 4, Alloc: alloc("node1"), StdOut: "/tmp/slurm-4.out", StdErr: "/tmp/slurm-4.out"},
		}},
		&Reasons{Reasons: map[uint64]string{3: "Resources"}},
		&End{Time: t0.Add(9 * time.Second), End: api.JobEnd{JobID: 1, Node: "node1", ExitCode: 3}},
		&Cancel{Time: t0.Add(10 * time.Second), JobID: 3, UID: 1000},
		&Cancel{Time: t0.Add(11 * time.Second), JobID: 4, UID: 0},
		&End{Time: t0.Add(12 * time.Second), End: api.JobEnd{JobID: 4, Node: "node1", Signal: 15}},
		&NodeStateChange{Time: t0.Add(13 * time.Second), Node: "node2", State: "DOWN", Why: "Not responding"},
	}
}

func applyAll(t *testing.T, f *FSM, ops []Op, from uint64) []any {
	t.Helper()
	var out []any
	for i, op := range ops {
		data, err := Encode(op)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f.Apply(&raft.Log{Index: from + uint64(i), Data: data}))
	}
	return out
}

func acctDump(t *testing.T, st *accounting.Store) []accounting.Row {
	t.Helper()
	rows, err := st.Query(accounting.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		// Times come back in local time; compare instants.
		j := &rows[i].Job
		j.Submit, j.Start, j.End = j.Submit.UTC(), j.Start.UTC(), j.End.UTC()
		if s := rows[i].Step; s != nil {
			s.Start, s.End = s.Start.UTC(), s.End.UTC()
		}
	}
	return rows
}

func TestFSMStatesAndAccounting(t *testing.T) {
	cfg := testConfig(t)
	f, st := testFSM(t, cfg)
	res := applyAll(t, f, testLog(), 1)
	if r := res[2].(Result); r.JobID != 1 || r.Err != nil {
		t.Fatalf("first submit: %+v", r)
	}
	want := map[uint64]api.JobState{1: api.StateFailed, 2: api.StateNodeFail, 3: api.StateCancelled, 4: api.StateCancelled}
	for id, s := range want {
		j, _ := f.Job(id)
		if j.State != s {
			t.Errorf("job %d: %s, want %s", id, j.State, s)
		}
	}
	if j, _ := f.Job(1); j.ExitCode != 3 {
		t.Errorf("exit code %d", j.ExitCode)
	}
	if j, _ := f.Job(3); !j.StartTime.IsZero() || j.CancelledBy != 1000 {
		t.Errorf("pending cancel: %+v", j)
	}
	rows := acctDump(t, st)
	var got []string
	for _, r := range rows {
		name := r.Job.State
		if r.Step != nil {
			name = r.Step.Step + ":" + r.Step.State
		}
		got = append(got, name)
	}
	wantRows := []string{"FAILED", "batch:FAILED", "NODE_FAIL", "batch:CANCELLED", "CANCELLED", "CANCELLED", "batch:CANCELLED"}
	if !reflect.DeepEqual(got, wantRows) {
		t.Errorf("accounting rows %v, want %v", got, wantRows)
	}
	if rows[4].Job.CancelledBy == nil || *rows[4].Job.CancelledBy != 1000 {
		t.Errorf("cancelled-by not recorded: %+v", rows[4].Job)
	}
}

// Every controller applies the same log and writes the same accounting
// rows; a restarted controller (fresh memory, same SQLite file) replays the
// log over its store and the rows stay as they were.
func TestFSMDeterministicAndReplayable(t *testing.T) {
	cfg := testConfig(t)
	log := testLog()
	a, sa := testFSM(t, cfg)
	applyAll(t, a, log, 1)
	b, sb := testFSM(t, cfg)
	applyAll(t, b, log, 1)
	before := acctDump(t, sa)
	if !reflect.DeepEqual(before, acctDump(t, sb)) {
		t.Fatal("two controllers applying one log wrote different accounting rows")
	}
	restarted := New(cfg, sa, slog.New(slog.NewTextHandler(io.Discard, nil)))
	applyAll(t, restarted, log, 1)
	if !reflect.DeepEqual(before, acctDump(t, sa)) {
		t.Error("replaying the log changed the accounting rows")
	}
	for id := uint64(1); id <= 4; id++ {
		ja, _ := a.Job(id)
		jr, _ := restarted.Job(id)
		if !reflect.DeepEqual(ja, jr) {
			t.Errorf("job %d differs after replay", id)
		}
	}
}

func TestFSMSnapshotRestore(t *testing.T) {
	cfg := testConfig(t)
	a, _ := testFSM(t, cfg)
	applyAll(t, a, testLog(), 1)
	data := persisted(t, a)
	b, sb := testFSM(t, cfg)
	if err := b.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 4; id++ {
		ja, _ := a.Job(id)
		jb, _ := b.Job(id)
		if !reflect.DeepEqual(ja, jb) {
			t.Errorf("job %d differs after restore:\n%+v\n%+v", id, ja, jb)
		}
	}
	if rows := acctDump(t, sb); len(rows) != 7 {
		t.Errorf("restored accounting has %d rows, want 7", len(rows))
	}
	if err := b.Restore(io.NopCloser(strings.NewReader("not json"))); err == nil {
		t.Error("a corrupt snapshot restored without error")
	}
}

func TestFSMRejectsGarbage(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	r := f.Apply(&raft.Log{Index: 1, Data: []byte("\x00garbage")}).(Result)
	if r.Err == nil {
		t.Error("undecodable entry accepted")
	}
	r = f.Apply(&raft.Log{Index: 2, Data: []byte(`{"op":"explode"}`)}).(Result)
	if r.Err == nil {
		t.Error("unknown op accepted")
	}
	r = applyAll(t, f, []Op{&Cancel{JobID: 99}}, 3)[0].(Result)
	if r.Err == nil || r.Err.Error() != api.ErrInvalidJobID {
		t.Errorf("cancel of unknown job: %v", r.Err)
	}
}

type memSink struct{ strings.Builder }

func (m *memSink) ID() string    { return "mem" }
func (m *memSink) Cancel() error { return nil }
func (m *memSink) Close() error  { return nil }

// MaxJobCount, as slurmctld applies it: a submission that would bring the
// jobs held (finished ones not yet purged included) to MaxJobCount is
// refused with EAGAIN's text, an array counting one a task; a purge makes
// room again.
func TestMaxJobCount(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxJobCount = 4
	f, _ := testFSM(t, cfg)
	job := func(array string) *Submit {
		return &Submit{Job: &api.Job{UID: 1000, User: "ann", Spec: api.JobSpec{Name: "j", Partition: "debug", Script: "#!/bin/sh\n", WorkDir: "/tmp", Array: array}}}
	}
	res := applyAll(t, f, []Op{job(""), job(""), job(""), job(""), job("0-1")}, 1)
	for i, want := range []string{"", "", "", api.ErrTryAgain, api.ErrTryAgain} {
		got := ""
		if err := res[i].(Result).Err; err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("submit %d: %q, want %q", i+1, got, want)
		}
	}
	applyAll(t, f, []Op{&Cancel{JobID: 1}, &Purge{JobIDs: []uint64{1}}}, 10)
	if r := applyAll(t, f, []Op{job("")}, 20)[0].(Result); r.Err != nil {
		t.Errorf("after a purge: %v", r.Err)
	}
}

// Entries applied as Raft's batches leave the same state and the same
// accounting rows as entries applied one by one, however they are cut;
// a configuration entry in a batch changes nothing and answers nil.
func TestApplyBatchEqualsApply(t *testing.T) {
	cfg := testConfig(t)
	one, oneAcct := testFSM(t, cfg)
	applyAll(t, one, testLog(), 1)
	for _, size := range []int{2, 3, len(testLog())} {
		f, st := testFSM(t, cfg)
		var logs []*raft.Log
		for i, op := range testLog() {
			data, err := Encode(op)
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
		}
		logs = append(logs[:1], append([]*raft.Log{{Index: 99, Type: raft.LogConfiguration}}, logs[1:]...)...)
		for i := 0; i < len(logs); i += size {
			batch := logs[i:min(i+size, len(logs))]
			res := f.ApplyBatch(batch)
			for k, l := range batch {
				if l.Type == raft.LogConfiguration && res[k] != nil {
					t.Errorf("a configuration entry answered %v", res[k])
				}
			}
		}
		for id := uint64(1); id <= 4; id++ {
			a, _ := one.Job(id)
			b, _ := f.Job(id)
			if a.State != b.State || a.ExitCode != b.ExitCode || !a.EndTime.Equal(b.EndTime) {
				t.Errorf("batches of %d: job %d %s/%d, one by one %s/%d", size, id, b.State, b.ExitCode, a.State, a.ExitCode)
			}
		}
		if got, want := acctDump(t, st), acctDump(t, oneAcct); !reflect.DeepEqual(got, want) {
			t.Errorf("batches of %d: accounting rows differ:\n%+v\nwant\n%+v", size, got, want)
		}
	}
}

// A job requeued and started again within one batch of entries: applied
// one by one, the requeue writes the job's row with the reason it waits
// for (BeginTime), and the start leaves that reason, as slurmctld keeps
// the last reason a job waited for. The batch must leave the same row,
// whatever entries Raft hands the FSM together: the leader and each
// follower batch the same log differently, and their accounting rows
// must not differ.
func TestApplyBatchKeepsWaitReason(t *testing.T) {
	cfg := testConfig(t)
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	alloc := func(n string) []api.NodeAlloc { return []api.NodeAlloc{{Node: n, CPUs: 1, MemMB: 1000}} }
	ops := []Op{
		&NodeStateChange{Time: t0, Node: "node1", State: "UP"},
		&NodeStateChange{Time: t0, Node: "node2", State: "UP"},
		&Submit{Time: t0, Job: &api.Job{Spec: api.JobSpec{Name: "rq", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp"},
			UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "ann"}},
		&Start{Time: t0.Add(time.Second), Starts: []JobStart{{JobID: 1, Alloc: alloc("node1")}}},
		&NodeStateChange{Time: t0.Add(5 * time.Second), Node: "node1", State: "DOWN", Why: "Not responding", Requeue: true},
		&Start{Time: t0.Add(6 * time.Second), Starts: []JobStart{{JobID: 1, Alloc: alloc("node2")}}},
	}
	one, oneAcct := testFSM(t, cfg)
	applyAll(t, one, ops, 1)
	if j, _ := one.Job(1); j.Restarts != 1 || j.State != api.StateRunning {
		t.Fatalf("one by one: job 1 %s after %d restarts; the test wants it requeued and running", j.State, j.Restarts)
	}
	want := acctDump(t, oneAcct)
	if want[0].Job.Reason != "BeginTime" {
		t.Fatalf("one by one: the row's reason is %q, want BeginTime", want[0].Job.Reason)
	}
	f, st := testFSM(t, cfg)
	var logs []*raft.Log
	for i, op := range ops {
		data, err := Encode(op)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
	}
	f.ApplyBatch(logs[:4])
	f.ApplyBatch(logs[4:]) // the requeue and the second start together
	if got := acctDump(t, st); !reflect.DeepEqual(got, want) {
		t.Errorf("requeue and start in one batch: rows\n%+v\nwant (one by one)\n%+v", got, want)
	}
}
