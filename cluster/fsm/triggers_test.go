package fsm

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
)

func applyOne(t *testing.T, f *FSM, op Op) Result {
	t.Helper()
	data, err := Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	return f.Apply(&raft.Log{Index: 1, Data: data}).(Result)
}

func errMsg(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func triggers(f *FSM) []Trigger {
	var out []Trigger
	f.View(func(st *State) {
		for _, t := range st.Triggers.All() {
			out = append(out, *t)
		}
	})
	return out
}

// Set, its refusals, events recorded by node and job changes, fired and
// clear: the whole life of triggers through Apply.
func TestTriggerOps(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	log := testLog() // jobs 1..4; job 2 runs on node2 until node2 goes DOWN
	tl := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	for _, op := range log[:9] {
		applyOne(t, f, op)
	}
	set := func(tr api.Trigger) string {
		return errMsg(applyOne(t, f, &TriggerSet{Time: t0, Trigger: tr}).Err)
	}
	prog := "/usr/sbin/notify"
	for _, c := range []struct {
		tr   api.Trigger
		want string
	}{
		{api.Trigger{ResType: "node", ResID: "*", Types: []string{"down"}, Program: prog}, ""},                          // 1
		{api.Trigger{ResType: "node", ResID: "node[1-2]", Types: []string{"up"}, Program: prog, Perm: true}, ""},        // 2
		{api.Trigger{ResType: "job", ResID: "2", Types: []string{"fini"}, Offset: 30, UID: 1000, Program: prog}, ""},    // 3
		{api.Trigger{ResType: "job", ResID: "2", Types: []string{"time"}, Offset: -60, UID: 1000, Program: prog}, ""},   // 4
		{api.Trigger{ResType: "node", ResID: "node3", Types: []string{"down"}, Program: prog}, ""},                      // 5
		{api.Trigger{ResType: "slurmctld", Types: []string{"primary_slurmctld_failure"}, Program: prog}, ""},            // 6
		{api.Trigger{ResType: "node", ResID: "*", Types: []string{"down"}, Program: prog}, api.ErrTriggerDup},           // dup of 1
		{api.Trigger{ResType: "job", ResID: "99", Types: []string{"fini"}, Program: prog}, api.ErrInvalidJobID},         // no job
		{api.Trigger{ResType: "job", ResID: "1", Types: []string{"fini"}, Program: prog}, api.ErrAlreadyDone},           // ended
		{api.Trigger{ResType: "node", ResID: "nosuch", Types: []string{"down"}, Program: prog}, api.ErrInvalidNodeName}, // no node
		{api.Trigger{ResType: "node", Types: []string{"bogus"}, Program: prog}, "malformed entry"},
	} {
		if got := set(c.tr); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("set %+v: %q, want %q", c.tr, got, c.want)
		}
	}
	if ts := triggers(f); len(ts) != 6 || ts[0].ID != 1 || ts[5].ID != 6 || ts[2].JobID != 2 || len(ts[1].Nodes) != 2 {
		t.Fatalf("triggers: %+v", ts)
	}

	// node2 goes DOWN: the all-node down trigger gets node2; job 2 ends
	// NODE_FAIL, so its fini trigger is due 30s after; node3's trigger
	// and the up trigger wait.
	applyOne(t, f, log[len(log)-1])
	ts := triggers(f)
	if e := ts[0].Event; e == nil || e.Arg != "node2" || !e.Due.Equal(tl.Add(13*time.Second)) {
		t.Errorf("down event: %+v", e)
	}
	if e := ts[2].Event; e == nil || e.Arg != "2" || !e.Due.Equal(tl.Add(43*time.Second)) || e.Key == ts[0].Event.Key {
		t.Errorf("fini event: %+v", e)
	}
	if ts[1].Event != nil || ts[4].Event != nil || ts[5].Event != nil {
		t.Errorf("events not raised: %+v %+v %+v", ts[1].Event, ts[4].Event, ts[5].Event)
	}
	// The time limit is the leader's to see: the job's end stands for it.
	if key, at, ok := TimeLimitEvent(f.jobCopy(2)); !ok || key == "" || !at.Equal(tl.Add(13*time.Second)) {
		t.Errorf("time limit event of an ended job: %q %v %v", key, at, ok)
	}

	// Fired: once; a second time (another leader, a replay) is refused.
	fired := func(id uint32, key string) error {
		return applyOne(t, f, &TriggerFired{Time: t0.Add(time.Minute), ID: id, Key: key}).Err
	}
	if err := fired(1, ts[0].Event.Key); err != nil {
		t.Fatal(err)
	}
	if err := fired(1, ts[0].Event.Key); !errors.Is(err, ErrTriggerStale) {
		t.Errorf("fired twice: %v", err)
	}
	if err := fired(4, "t2@1"); err != nil {
		t.Errorf("time trigger fired: %v", err)
	}
	// node2 back UP: the permanent up trigger fires and stays.
	applyOne(t, f, &NodeStateChange{Time: t0.Add(2 * time.Minute), Node: "node2", State: "UP"})
	ts = triggers(f)
	if len(ts) != 4 || ts[0].ID != 2 || ts[0].Event == nil || ts[0].Event.Arg != "node2" {
		t.Fatalf("after up: %+v", ts)
	}
	if err := fired(2, ts[0].Event.Key); err != nil {
		t.Fatal(err)
	}
	if ts = triggers(f); ts[0].ID != 2 || ts[0].Event != nil || ts[0].Fired == "" {
		t.Errorf("permanent trigger after firing: %+v", ts[0])
	}
	// A drained node resumed is no return from DOWN.
	applyOne(t, f, &NodeStateChange{Time: t0.Add(3 * time.Minute), Node: "node1", State: "DRAIN"})
	applyOne(t, f, &NodeStateChange{Time: t0.Add(3 * time.Minute), Node: "node1", State: "UP"})
	if ts = triggers(f); ts[0].Event != nil {
		t.Errorf("up event from DRAIN: %+v", ts[0].Event)
	}

	// Clear: another user's is refused, a missing one is ESRCH, root's
	// and the owner's work.
	clr := func(uid uint32, c api.TriggerClearRequest) string {
		return errMsg(applyOne(t, f, &TriggerClear{Time: t0, UID: uid, Clear: c}).Err)
	}
	if got := clr(2000, api.TriggerClearRequest{ID: 3}); got != api.ErrAccessDenied {
		t.Errorf("clear of another's: %q", got)
	}
	if got := clr(2000, api.TriggerClearRequest{ID: 77}); got != api.ErrNoSuchProcess {
		t.Errorf("clear of none: %q", got)
	}
	if got := clr(0, api.TriggerClearRequest{}); got != api.ErrInvalidArgument {
		t.Errorf("clear of nothing named: %q", got)
	}
	if got := clr(1000, api.TriggerClearRequest{JobID: 2}); got != "" {
		t.Errorf("owner's clear: %q", got)
	}
	if got := clr(0, api.TriggerClearRequest{UID: 0, UserSet: true}); got != "" {
		t.Errorf("root's clear: %q", got)
	}
	if ts = triggers(f); len(ts) != 0 {
		t.Errorf("left: %+v", ts)
	}
}

func (f *FSM) jobCopy(id uint64) *api.Job {
	j, _ := f.Job(id)
	return j
}

// Triggers are in snapshots, and a snapshot keeps what it had while
// triggers change after it.
func TestTriggerSnapshot(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tr := api.Trigger{ResType: "node", ResID: "*", Types: []string{"down"}, Program: "/bin/true"}
	applyOne(t, f, &TriggerSet{Time: t0, Trigger: tr})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	applyOne(t, f, &NodeStateChange{Time: t0, Node: "node1", State: "UP"})
	applyOne(t, f, &NodeStateChange{Time: t0, Node: "node1", State: "DOWN"})
	applyOne(t, f, &TriggerClear{Time: t0, UID: 0, Clear: api.TriggerClearRequest{ID: 1}})
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	var st State
	snapshotState(t, []byte(sink.String()), &st)
	if ts := st.Triggers.All(); len(ts) != 1 || ts[0].Event != nil || ts[0].Program != "/bin/true" {
		t.Fatalf("snapshot's triggers: %+v", ts)
	}
	g, _ := testFSM(t, testConfig(t))
	if err := g.Restore(io.NopCloser(strings.NewReader(sink.String()))); err != nil {
		t.Fatal(err)
	}
	if ts := triggers(g); len(ts) != 1 || ts[0].ID != 1 {
		t.Fatalf("restored: %+v", ts)
	}
	// The restored state goes on numbering after it.
	applyOne(t, g, &TriggerSet{Time: t0, Trigger: api.Trigger{ResType: "node", ResID: "*", Types: []string{"up"}, Program: "/bin/true"}})
	if ts := triggers(g); len(ts) != 2 || ts[1].ID != 2 {
		t.Fatalf("after restore: %+v", ts)
	}
}
