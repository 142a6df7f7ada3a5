package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
)

func tokenSubmit(at time.Time, token string, uid uint32) *Submit {
	spec := api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp"}
	return &Submit{Time: at, Token: token, Job: &api.Job{Spec: spec, UID: uid, GID: uid, User: "ann", Group: "ann", Account: "ann"}}
}

func submitID(t *testing.T, r any) uint64 {
	t.Helper()
	res := r.(Result)
	if res.Err != nil {
		t.Fatalf("submit refused: %v", res.Err)
	}
	return res.JobID
}

// A Submit whose token is remembered creates nothing and answers the
// first one's id; one without a token, or with another, is a new job.
func TestSubmitTokenOnce(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	out := applyAll(t, f, []Op{
		tokenSubmit(t0, "tok-a", 1000),
		tokenSubmit(t0.Add(time.Second), "tok-a", 1000),
		tokenSubmit(t0.Add(2*time.Second), "", 1000),
		tokenSubmit(t0.Add(3*time.Second), "", 1000),
		tokenSubmit(t0.Add(4*time.Second), "tok-b", 1000),
		tokenSubmit(t0.Add(5*time.Second), "tok-a", 1000),
	}, 1)
	got := make([]uint64, len(out))
	for i, r := range out {
		got[i] = submitID(t, r)
	}
	if want := []uint64{1, 1, 2, 3, 4, 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ids %v, want %v", got, want)
	}
	var n int
	f.View(func(st *State) { n = len(st.Jobs) })
	if n != 4 {
		t.Errorf("%d jobs, want 4", n)
	}
	// Another user's submission with a held token is refused.
	r := applyAll(t, f, []Op{tokenSubmit(t0.Add(6*time.Second), "tok-a", 1001)}, 7)[0].(Result)
	if r.Err == nil {
		t.Errorf("another user's copy of a token answered job %d", r.JobID)
	}
}

// A token is forgotten TokenTTL after its submission (by the entries'
// times), and beyond MaxTokens newer ones.
func TestSubmitTokenForgotten(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	ids := applyAll(t, f, []Op{
		tokenSubmit(t0, "old", 1000),
		tokenSubmit(t0.Add(TokenTTL-time.Second), "old", 1000),
		tokenSubmit(t0.Add(TokenTTL+time.Second), "old", 1000),
	}, 1)
	if a, b, c := submitID(t, ids[0]), submitID(t, ids[1]), submitID(t, ids[2]); a != 1 || b != 1 || c != 2 {
		t.Errorf("ids %d %d %d, want 1 1 2 (forgotten after %v)", a, b, c, TokenTTL)
	}

	var tk SubmitTokens
	at := t0
	for i := 0; i < MaxTokens+5; i++ {
		tk.forget(at, MaxTokens-1)
		tk.remember(fmt.Sprint("t", i), uint64(i+1), 1000, at)
	}
	if len(tk.List) != MaxTokens {
		t.Errorf("%d tokens held, want %d", len(tk.List), MaxTokens)
	}
	if _, ok := tk.lookup("t4"); ok {
		t.Error("token t4 still held beyond MaxTokens newer ones")
	}
	if e, ok := tk.lookup("t5"); !ok || e.JobID != 6 {
		t.Errorf("token t5: %+v %v", e, ok)
	}
	// The index rebuilt from the list (as after a restore) agrees.
	fresh := SubmitTokens{List: tk.List}
	if e, ok := fresh.lookup(fmt.Sprint("t", MaxTokens+4)); !ok || e.JobID != MaxTokens+5 {
		t.Errorf("rebuilt index: %+v %v", e, ok)
	}
}

// Snapshots keep the tokens: a restored FSM answers a retry with the first
// id, and a snapshot is not changed by tokens remembered after it.
func TestSubmitTokenSnapshot(t *testing.T) {
	cfg := testConfig(t)
	a, _ := testFSM(t, cfg)
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	applyAll(t, a, []Op{tokenSubmit(t0, "tok-a", 1000), tokenSubmit(t0, "tok-b", 1000)}, 1)
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	before := persisted(t, a)
	for i := 0; i < 50; i++ { // appended beyond what the snapshot holds
		applyAll(t, a, []Op{tokenSubmit(t0.Add(time.Duration(i)*time.Second), fmt.Sprint("later", i), 1000)}, uint64(3+i))
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if sink.String() != string(before) {
		t.Fatalf("snapshot changed under later submits:\n%s\nwant\n%s", sink.String(), before)
	}
	if !bytes.Contains(before, []byte(`"tok-b"`)) {
		t.Fatalf("snapshot holds no tokens: %s", before)
	}
	b, _ := testFSM(t, cfg)
	if err := b.Restore(io.NopCloser(bytes.NewReader(before))); err != nil {
		t.Fatal(err)
	}
	out := applyAll(t, b, []Op{tokenSubmit(t0.Add(time.Minute), "tok-b", 1000), tokenSubmit(t0.Add(time.Minute), "tok-c", 1000)}, 3)
	if id := submitID(t, out[0]); id != 2 {
		t.Errorf("retry after restore answered %d, want 2", id)
	}
	if id := submitID(t, out[1]); id != 3 {
		t.Errorf("new submit after restore got %d, want 3", id)
	}
	// A replayed log gives the same answers (deterministic).
	c, _ := testFSM(t, cfg)
	ops := []Op{tokenSubmit(t0, "x", 1000), tokenSubmit(t0, "x", 1000)}
	for i, op := range ops {
		data, _ := Encode(op)
		if r := c.Apply(&raft.Log{Index: uint64(i + 1), Data: data}).(Result); r.JobID != 1 {
			t.Errorf("entry %d answered %d, want 1", i+1, r.JobID)
		}
	}
}

// A SubmitBatch applies as its submissions would one by one, in order and
// at the batch's time: the same ids, the same refusals (each its own), the
// same tokens remembered, the same state and the same accounting rows.
func TestSubmitBatchAsSubmits(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	bad := tokenSubmit(t0, "", 1000)
	bad.Job.Hold = "nobody" // refused: no such hold
	subs := []*Submit{
		tokenSubmit(t0, "tok-a", 1000),
		bad,
		tokenSubmit(t0, "tok-a", 1000), // the first one's id
		tokenSubmit(t0, "", 1000),
		tokenSubmit(t0, "tok-a", 1001), // another user's copy: refused
		tokenSubmit(t0, "tok-b", 1000),
	}
	batch := &SubmitBatch{Time: t0}
	for _, s := range subs {
		batch.Jobs = append(batch.Jobs, BatchSubmit{Job: s.Job, Token: s.Token})
	}
	cfg := testConfig(t)
	fb, acctB := testFSM(t, cfg)
	res := applyAll(t, fb, []Op{batch}, 1)[0].(Result)
	fs, acctS := testFSM(t, cfg)
	ops := make([]Op, len(subs))
	for i, s := range subs {
		ops[i] = s
	}
	one := applyAll(t, fs, ops, 1)
	if res.Err != nil || len(res.Batch) != len(subs) {
		t.Fatalf("batch result %+v", res)
	}
	for i, r := range one {
		want := r.(Result)
		if got := res.Batch[i]; got.JobID != want.JobID || fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
			t.Errorf("submission %d: %d %v in the batch, %d %v alone", i, got.JobID, got.Err, want.JobID, want.Err)
		}
	}
	if ids := []uint64{res.Batch[0].JobID, res.Batch[2].JobID, res.Batch[3].JobID, res.Batch[5].JobID}; fmt.Sprint(ids) != "[1 1 2 3]" {
		t.Errorf("ids %v, want [1 1 2 3]", ids)
	}
	if res.Batch[1].Err == nil || res.Batch[4].Err == nil {
		t.Errorf("refusals: %v, %v", res.Batch[1].Err, res.Batch[4].Err)
	}
	if b, s := stateJSON(t, fb), stateJSON(t, fs); !bytes.Equal(b, s) {
		t.Errorf("states differ:\nbatch %s\nalone %s", b, s)
	}
	if b, s := fmt.Sprint(acctDump(t, acctB)), fmt.Sprint(acctDump(t, acctS)); b != s || len(acctDump(t, acctB)) != 3 {
		t.Errorf("accounting differs:\nbatch %s\nalone %s", b, s)
	}
	// A batch without jobs is a malformed entry.
	if r := applyAll(t, fb, []Op{&SubmitBatch{Time: t0}}, 2)[0].(Result); r.Err == nil {
		t.Error("an empty batch applied")
	}
}
