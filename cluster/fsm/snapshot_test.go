package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/accounting"
	"hpc/cluster/api"
)

// A snapshot is the state as it was when Snapshot returned, whatever is
// applied before Persist runs: every operation of the legacy log applied
// after a snapshot leaves what that snapshot persists unchanged.
func TestSnapshotIsolatedFromLaterApplies(t *testing.T) {
	entries := readLegacyLog(t)
	for cut := 0; cut < len(entries); cut++ {
		f, _ := testFSM(t, testConfig(t))
		for i, e := range entries[:cut] {
			f.Apply(&raft.Log{Index: uint64(i + 1), Data: e})
		}
		before := persisted(t, f)
		snap, err := f.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range entries[cut:] {
			f.Apply(&raft.Log{Index: uint64(cut + i + 1), Data: e})
		}
		sink := &memSink{}
		if err := snap.Persist(sink); err != nil {
			t.Fatal(err)
		}
		snap.Release()
		if sink.String() != string(before) {
			t.Fatalf("snapshot taken after entry %d changed under later entries:\n%s\nwant\n%s", cut, sink.String(), before)
		}
	}
}

// manyJobs is an FSM holding n jobs, a tenth of them running.
func manyJobs(tb testing.TB, n int) *FSM {
	tb.Helper()
	cfg := testConfig(&testing.T{})
	cfg.MaxJobCount = n + 10
	f := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	env := make([]string, 40)
	for i := range env {
		env[i] = fmt.Sprintf("VAR%d=some value of a typical environment variable", i)
	}
	spec := api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\nsleep 600\n", WorkDir: "/home/ann", Env: env, Hold: true}
	idx := uint64(0)
	apply := func(op Op) {
		data, err := Encode(op)
		if err != nil {
			tb.Fatal(err)
		}
		idx++
		if r := f.Apply(&raft.Log{Index: idx, Data: data}).(Result); r.Err != nil {
			tb.Fatal(r.Err)
		}
	}
	for i := 0; i < n; i++ {
		apply(&Submit{Time: t0, Job: &api.Job{Spec: spec, UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "root"}})
	}
	var starts []JobStart
	for id := uint64(1); id <= uint64(n); id += 10 {
		starts = append(starts, JobStart{JobID: id, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1}}})
	}
	apply(&Start{Time: t0, Starts: starts})
	return f
}

// BenchmarkApplyDuringSnapshot measures, at 100,000 jobs, how long
// Snapshot holds the FSM's lock (snapshot-ms) and the latency of Applies
// made while the snapshot is persisted (apply-p50-us, apply-max-us).
// Before Snapshot copied and Persist encoded, Snapshot encoded the whole
// state under the lock and every Apply waited for it.
func BenchmarkApplyDuringSnapshot(b *testing.B) {
	f := manyJobs(b, 100_000)
	reasons, _ := Encode(&Reasons{Reasons: map[uint64]string{2: "Priority", 3: "Resources"}})
	var lockNs, persistNs int64
	var lat []time.Duration
	idx := uint64(1 << 20)
	for b.Loop() {
		t0 := time.Now()
		snap, err := f.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		lockNs += int64(time.Since(t0))
		var wg sync.WaitGroup
		done := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			t1 := time.Now()
			if err := snap.Persist(&discardSink{}); err != nil {
				b.Error(err)
			}
			persistNs += int64(time.Since(t1))
		}()
	applies:
		for {
			select {
			case <-done:
				break applies
			default:
			}
			idx++
			t2 := time.Now()
			f.Apply(&raft.Log{Index: idx, Data: reasons})
			lat = append(lat, time.Since(t2))
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		snap.Release()
	}
	n := float64(b.N)
	b.ReportMetric(float64(lockNs)/n/1e6, "snapshot-ms")
	b.ReportMetric(float64(persistNs)/n/1e6, "persist-ms")
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "apply-p50-us")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "apply-max-us")
		b.ReportMetric(float64(len(lat))/n, "applies/op")
	}
}

type discardSink struct{}

func (discardSink) Write(p []byte) (int, error) { return len(p), nil }
func (discardSink) Close() error                { return nil }
func (discardSink) ID() string                  { return "discard" }
func (discardSink) Cancel() error               { return nil }

// The JSON a snapshot persists is the state's own encoding, byte for byte
// what encoding/json writes for it (the snapshot is written as encoded).
func TestSnapshotEncodesState(t *testing.T) {
	f := manyJobs(t, 50)
	var want []byte
	f.View(func(st *State) { want, _ = json.Marshal(st) })
	got := persisted(t, f)
	if !reflect.DeepEqual(append(want, '\n'), got) {
		t.Error("a snapshot differs from the state's encoding")
	}
}

// A controller that was down while jobs ran, ended and were purged from
// the state catches up from the leader's snapshot: its accounting store
// then holds exactly the leader's rows, the purged jobs' and the reason a
// job waited for before it started included, though neither follows from
// the snapshot's state; and the two stay equal under the entries after it.
func TestSnapshotCarriesAccounting(t *testing.T) {
	cfg := testConfig(t)
	leader, la := testFSM(t, cfg)
	follower, fa := testFSM(t, cfg)
	log := testLog()
	applyAll(t, leader, log[:6], 1)
	applyAll(t, follower, log[:6], 1) // then it stops
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	spec := api.JobSpec{Name: "late", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp"}
	applyAll(t, leader, append(log[6:],
		&Submit{Time: t0, Job: &api.Job{Spec: spec, UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "ann"}},
		&Reasons{Reasons: map[uint64]string{5: "Dependency"}},
		&UpdateJob{JobID: 5, Update: JobUpdate{Name: "later"}}, // writes the row, with the reason
		&Start{Time: t0.Add(time.Second), Starts: []JobStart{{JobID: 5, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1, MemMB: 1000}}}}},
		&Purge{JobIDs: []uint64{1, 3, 4}},
	), 7)
	leader.View(func(st *State) {
		if len(st.Jobs) != 2 {
			t.Fatalf("the leader holds %d jobs, want 2 (1, 3 and 4 purged)", len(st.Jobs))
		}
	})
	if rows := acctTexts(t, la); len(rows) != 9 || rows[8].Job.Reason != "Dependency" {
		t.Fatalf("the leader's rows: %+v", rows)
	}

	data := persisted(t, leader)
	if err := follower.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(acctTexts(t, fa), acctTexts(t, la)) {
		t.Errorf("restored rows:\n%+v\nthe leader's:\n%+v", acctTexts(t, fa), acctTexts(t, la))
	}
	if got := persisted(t, follower); string(got) != string(data) {
		t.Errorf("the restored controller's snapshot differs from the leader's:\n%s\nwant\n%s", got, data)
	}
	next := []Op{&End{Time: t0.Add(time.Minute), End: api.JobEnd{JobID: 5, Node: "node1"}}}
	applyAll(t, leader, next, 100)
	applyAll(t, follower, next, 100)
	if a, b := persisted(t, leader), persisted(t, follower); string(a) != string(b) {
		t.Errorf("after the next entry:\n%s\nthe leader's:\n%s", b, a)
	}

	// A section cut short is refused, and the store keeps its rows.
	before := acctTexts(t, fa)
	cut := data[:bytes.LastIndex(data[:len(data)-1], []byte("\n"))+1]
	if err := follower.Restore(io.NopCloser(bytes.NewReader(cut))); err == nil {
		t.Error("a snapshot without the end of its accounting rows restored")
	}
	if !reflect.DeepEqual(acctTexts(t, fa), before) {
		t.Error("a refused snapshot changed the accounting rows")
	}

	// A snapshot of an earlier version, the state alone, still restores:
	// the rows of its jobs.
	old, oa := testFSM(t, cfg)
	state := data[:bytes.IndexByte(data, '\n')+1]
	if err := old.Restore(io.NopCloser(bytes.NewReader(state))); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, r := range acctTexts(t, oa) {
		if r.Step == nil {
			ids = append(ids, r.Job.JobID)
		}
	}
	if !reflect.DeepEqual(ids, []uint64{2, 5}) {
		t.Errorf("rows of a state-only snapshot: jobs %v, want [2 5]", ids)
	}
}

// acctTexts is every row of st, scripts and environments included.
func acctTexts(t *testing.T, st *accounting.Store) []accounting.Row {
	t.Helper()
	rows, err := st.Query(accounting.Filter{Texts: true})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// Job records lent for a long answer (LendJobs) stay as they were while
// later entries change the jobs, as a snapshot's do; released, the state
// stops copying for them.
func TestLentJobsIsolatedFromLaterApplies(t *testing.T) {
	entries := readLegacyLog(t)
	for cut := 0; cut < len(entries); cut++ {
		f, _ := testFSM(t, testConfig(t))
		for i, e := range entries[:cut] {
			f.Apply(&raft.Log{Index: uint64(i + 1), Data: e})
		}
		jobs, release := f.LendJobs(func(st *State, add func(*api.Job)) {
			for _, j := range st.Jobs {
				add(j)
			}
		})
		var want int
		f.View(func(st *State) { want = len(st.Jobs) })
		if len(jobs) != want {
			t.Fatalf("lent %d of %d jobs", len(jobs), want)
		}
		before, _ := json.Marshal(jobs)
		for i, e := range entries[cut:] {
			f.Apply(&raft.Log{Index: uint64(cut + i + 1), Data: e})
		}
		after, _ := json.Marshal(jobs)
		if string(before) != string(after) {
			t.Fatalf("records lent after entry %d changed under later entries:\n%s\nwant\n%s", cut, after, before)
		}
		release()
		release() // twice is once
		f.View(func(*State) {})
		if f.snapshots != 0 || f.owned != nil {
			t.Fatalf("after release: %d holders, owned %v", f.snapshots, f.owned)
		}
	}
}
