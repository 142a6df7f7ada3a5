package fsm

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
)

// indexAgrees checks the index against every job: the sets hold what
// scanning finds, no more.
func indexAgrees(t *testing.T, f *FSM, when string) {
	t.Helper()
	f.View(func(st *State) {
		var active, ready, tasks []uint64
		for id, j := range st.Jobs {
			if j.ArrayJobID != 0 && !j.State.Final() {
				tasks = append(tasks, id)
			}
			switch {
			case j.State != api.StatePending:
				active = append(active, id)
			case j.Hold == "":
				ready = append(ready, id)
			}
		}
		slices.Sort(active)
		slices.Sort(ready)
		gotA, gotR := slices.Sorted(maps.Keys(st.idx.active)), slices.Sorted(maps.Keys(st.idx.ready))
		slices.Sort(tasks)
		if gotT := slices.Sorted(maps.Keys(st.idx.tasks)); !slices.Equal(gotT, tasks) {
			t.Fatalf("%s: index tasks %v; the jobs say %v", when, gotT, tasks)
		}
		if !slices.Equal(gotA, active) || !slices.Equal(gotR, ready) {
			t.Fatalf("%s: index active %v ready %v; the jobs say active %v ready %v", when, gotA, gotR, active, ready)
		}
		var n int
		for range st.NotPending() {
			n++
		}
		if n != len(active) {
			t.Fatalf("%s: NotPending yields %d, want %d", when, n, len(active))
		}
		// The submit limits' counts: as counting every job gives them.
		idx := st.idx
		st.idx = nil
		want := st.submitUsage()
		st.idx = idx
		if got := st.submitUsage(); !maps.Equal(got, want) || len(idx.usage) != len(want) {
			t.Fatalf("%s: index usage %v (%d keys); the jobs say %v", when, got, len(idx.usage), want)
		}
		counted := 0
		for _, c := range want {
			counted += c
		}
		if len(st.idx.counted) != counted {
			t.Fatalf("%s: index counts %d jobs; the jobs say %d", when, len(st.idx.counted), counted)
		}
	})
}

// The index follows every entry of the old log (submits, starts, ends,
// cancels, requeues, holds, purges, ...) and a restore.
func TestIndexFollowsTheLog(t *testing.T) {
	entries := readLegacyLog(t)
	f, _ := testFSM(t, testConfig(t))
	for i, e := range entries {
		f.Apply(&raft.Log{Index: uint64(i + 1), Data: e, Type: raft.LogCommand})
		indexAgrees(t, f, fmt.Sprintf("after entry %d", i+1))
	}
	g, _ := testFSM(t, testConfig(t))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if err := g.Restore(io.NopCloser(strings.NewReader(sink.String()))); err != nil {
		t.Fatal(err)
	}
	indexAgrees(t, g, "after a restore")
}

// Held jobs are in neither set a pass reads; released, they are.
func TestIndexHoldRelease(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	res := applyOne(t, f, &Submit{Time: now, Job: &api.Job{Spec: api.JobSpec{Script: "#!/bin/sh\n", WorkDir: "/tmp", Hold: true}, Hold: "user"}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	id := res.JobID
	indexAgrees(t, f, "held")
	f.View(func(st *State) {
		for range st.Unheld() {
			t.Error("a held job is unheld")
		}
	})
	applyOne(t, f, &Hold{JobIDs: []uint64{id}, Hold: ""})
	indexAgrees(t, f, "released")
	applyOne(t, f, &Cancel{Time: now, JobID: id})
	indexAgrees(t, f, "cancelled")
	applyOne(t, f, &Purge{JobIDs: []uint64{id}})
	indexAgrees(t, f, "purged")
}

// An array's tasks are indexed until they end; ArrayThrottled reads them
// from the index.
func TestIndexArrayTasks(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	res := applyOne(t, f, &Submit{Time: now, Job: &api.Job{Spec: api.JobSpec{Script: "#!/bin/sh\n", WorkDir: "/tmp", Array: "0-2%1"}}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	indexAgrees(t, f, "submitted")
	f.View(func(st *State) {
		if th := st.ArrayThrottled(); len(th) != 2 || th[res.JobID] {
			t.Errorf("throttled %v: want the second and third task", th)
		}
	})
	applyOne(t, f, &Cancel{Time: now, JobID: res.JobID + 1})
	indexAgrees(t, f, "a task cancelled")
	f.View(func(st *State) {
		n := 0
		for range st.ArrayTasks() {
			n++
		}
		if n != 2 {
			t.Errorf("%d tasks not ended, want 2", n)
		}
	})
}
