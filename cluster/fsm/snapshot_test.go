package fsm

import (
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

// The JSON a snapshot persists is the state's own encoding.
func TestSnapshotEncodesState(t *testing.T) {
	f := manyJobs(t, 50)
	var want []byte
	f.View(func(st *State) { want, _ = json.Marshal(st) })
	got := persisted(t, f)
	if !reflect.DeepEqual(append(want, '\n'), got) {
		t.Error("a snapshot differs from the state's encoding")
	}
}
