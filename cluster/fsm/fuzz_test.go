package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/acct"
	"hpc/cluster/api"
	"hpc/cluster/config"
)

// FuzzApply feeds arbitrary log entries to Apply: the input is split at
// each NUL byte (JSON has none, and no Type takes its value) into up to
// fuzzMaxEntries entries, applied in order to an FSM preloaded with a small
// valid state (fuzzPreloadOps). After each entry the state must keep its
// invariants (checkInvariants), a snapshot taken before the entry must
// still hold the state as it was then (copy on write), the state must
// encode and restore to the same encoding, and a second controller
// applying the same entries without snapshots must reach the same results
// and the same state. (The encodings are compared after every entry while
// the state is small, and after the last one in any case: an array
// submission adds a thousand jobs.) The FSMs have no accounting store (the
// fuzzer runs thousands of inputs a second); checkInvariants computes
// every job's accounting rows instead, so the projection runs on every
// state.
//
// Seeds are in testdata/fuzz/FuzzApply: typed-* is the typed encoding of
// each operation, legacy-* and sequence-* a few entries in a row. The
// crasher-* seeds are what the fuzzer found in Apply before it checked its
// payloads: a node set to state "" (nodestate-empty), a hold of "0"
// (hold-unknown), a legacy step whose nodes and task counts do not pair
// up (step-nodes-tasks-mismatch), a job started on a node the config does
// not have (start-unknown-node). The regress-* seeds are other such
// payloads: a submitted job carrying an allocation and a running step, an
// end at 9999-12-31 that requeues a job to a start no snapshot can encode,
// an end of a pending job.
func FuzzApply(f *testing.F) {
	cfg, preload := fuzzPreload(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		entries := bytes.Split(data, []byte{0})
		if len(entries) > fuzzMaxEntries {
			entries = entries[:fuzzMaxEntries]
		}
		a, b := fuzzFSM(t, cfg, preload), fuzzFSM(t, cfg, preload)
		for i, e := range entries {
			index := uint64(100 + i)
			var before []byte
			var snap raft.FSMSnapshot
			if i%2 == 0 && jobCount(a) <= fuzzCheckedJobs {
				before = stateJSON(t, a)
				var err error
				if snap, err = a.Snapshot(); err != nil {
					t.Fatal(err)
				}
			}
			ra := a.Apply(&raft.Log{Index: index, Data: e}).(Result)
			rb := b.Apply(&raft.Log{Index: index, Data: e}).(Result)
			if fmt.Sprint(ra) != fmt.Sprint(rb) {
				t.Fatalf("entry %d %q: results differ between controllers: %v and %v", i, e, ra, rb)
			}
			a.View(func(st *State) {
				if err := checkInvariants(cfg, st); err != nil {
					t.Fatalf("entry %d %q (result %v): %v", i, e, ra, err)
				}
			})
			if snap != nil {
				sink := &memSink{}
				if err := snap.Persist(sink); err != nil {
					t.Fatalf("entry %d %q: persist: %v", i, e, err)
				}
				snap.Release()
				if got := bytes.TrimSuffix([]byte(sink.String()), []byte("\n")); !bytes.Equal(got, before) {
					t.Fatalf("entry %d %q: a snapshot taken before it changed", i, e)
				}
			}
			if jobCount(a) > fuzzCheckedJobs && i < len(entries)-1 {
				continue
			}
			after := stateJSON(t, a)
			if !bytes.Equal(after, stateJSON(t, b)) {
				t.Fatalf("entry %d %q: the controllers' states differ", i, e)
			}
			restored := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err := restored.Restore(io.NopCloser(bytes.NewReader(after))); err != nil {
				t.Fatalf("entry %d %q: restore: %v", i, e, err)
			}
			if !bytes.Equal(stateJSON(t, restored), after) {
				t.Fatalf("entry %d %q: the state does not restore to itself", i, e)
			}
		}
	})
}

// fuzzMaxEntries bounds the entries of one input; fuzzCheckedJobs is the
// most jobs a state may have for its encodings to be compared after every
// entry.
const (
	fuzzMaxEntries  = 16
	fuzzCheckedJobs = 64
)

// fuzzFSM is an FSM without accounting in the preloaded state (the
// encoding of what fuzzPreloadOps made).
func fuzzFSM(t *testing.T, cfg *config.Config, preload []byte) *FSM {
	f := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := f.Restore(io.NopCloser(bytes.NewReader(preload))); err != nil {
		t.Fatal(err)
	}
	return f
}

func jobCount(f *FSM) (n int) {
	f.View(func(st *State) { n = len(st.Jobs) })
	return n
}

// stateJSON is the state's encoding, as a snapshot persists it.
func stateJSON(t *testing.T, f *FSM) []byte {
	var data []byte
	var err error
	f.View(func(st *State) { data, err = json.Marshal(st) })
	if err != nil {
		t.Fatalf("the state does not encode: %v", err)
	}
	return data
}

// fuzzT0 is the time of the preloaded entries.
var fuzzT0 = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

// fuzzPreloadOps is the state every fuzz input starts from, on a 3-node
// lab (node1; node2 and node3 with two GPUs each, 2 CPUs each): the nodes
// up, a QoS, then jobs 1 (running on node1, with an ended step and a
// running one), 2 (running on node2 and node3 with a GPU, a running step),
// 3-5 (an array 0-2%1: task 0 running on node1, the others pending), 6
// (pending, held), 7 (pending) and 8 (cancelled while pending).
func fuzzPreloadOps() []Op {
	t := func(s int) time.Time { return fuzzT0.Add(time.Duration(s) * time.Second) }
	job := func(user string, uid uint32, spec api.JobSpec) *api.Job {
		spec.Partition, spec.Script, spec.WorkDir = "debug", "#!/bin/sh\ntrue\n", "/tmp"
		return &api.Job{Spec: spec, UID: uid, GID: uid, User: user, Group: user, Account: "root"}
	}
	held := job("bob", 1001, api.JobSpec{Name: "held"})
	held.Hold = "user"
	return []Op{
		&NodeStateChange{Time: t(0), Node: "node1", State: "UP"},
		&NodeStateChange{Time: t(0), Node: "node2", State: "UP"},
		&NodeStateChange{Time: t(0), Node: "node3", State: "UP"},
		&Acctmgr{Time: t(0), Op: fuzzAcctOp()},
		&Submit{Time: t(1), Job: job("ann", 1000, api.JobSpec{Name: "one"})},
		&Submit{Time: t(1), Job: job("bob", 1001, api.JobSpec{Name: "two", Nodes: 2, NTasks: 2, Gres: "gpu:1"})},
		&Submit{Time: t(2), Job: job("ann", 1000, api.JobSpec{Name: "arr", Array: "0-2%1"})},
		&Submit{Time: t(2), Job: held},
		&Submit{Time: t(3), Job: job("ann", 1000, api.JobSpec{Name: "seven", CPUsPerTask: 2})},
		&Submit{Time: t(3), Job: job("ann", 1000, api.JobSpec{Name: "eight"})},
		&Start{Time: t(4), Starts: []JobStart{
			{JobID: 1, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1, Tasks: 1, MemMB: 1000}}, Partition: "debug", TimeLimitMin: 60, StdOut: "/tmp/1.out", StdErr: "/tmp/1.out"},
			{JobID: 2, Alloc: []api.NodeAlloc{
				{Node: "node2", CPUs: 1, Tasks: 1, MemMB: 1000, Gres: []api.GresAlloc{{Name: "gpu", Indices: []int{0}}}},
				{Node: "node3", CPUs: 1, Tasks: 1, MemMB: 1000, Gres: []api.GresAlloc{{Name: "gpu", Indices: []int{1}}}},
			}, Partition: "debug", TimeLimitMin: -1},
			{JobID: 3, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1, MemMB: 1000}}},
		}},
		&Reasons{Reasons: map[uint64]string{4: "JobArrayTaskLimit", 7: "Resources"}},
		&StepStart{Time: t(5), JobID: 1, Step: api.Step{Name: "hostname", Nodes: []string{"node1"}, Tasks: []int{1}, CPUsPerTask: 1, Launcher: "node1"}},
		&StepEnd{Time: t(6), JobID: 1, Step: api.Step{ID: 0, ExitCode: 1}},
		&StepStart{Time: t(6), JobID: 1, Step: api.Step{Name: "sleep", Nodes: []string{"node1"}, Tasks: []int{1}, CPUsPerTask: 1, Launcher: "node1"}},
		&StepStart{Time: t(7), JobID: 2, Step: api.Step{Name: "mpi", Nodes: []string{"node2", "node3"}, Tasks: []int{1, 1}, CPUsPerTask: 1, Launcher: "node2"}},
		&Cancel{Time: t(8), JobID: 8, UID: 1000},
	}
}

// fuzzAcctOp adds QoS "high" as root.
func fuzzAcctOp() acct.Op {
	return acct.Op{Req: api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}}, User: "root"}
}

// fuzzPreload applies fuzzPreloadOps on the FSM of a 3-node lab and
// returns the lab's config and the state's encoding.
func fuzzPreload(tb testing.TB) (*config.Config, []byte) {
	cfg, err := config.LabConfig(3)
	if err != nil {
		tb.Fatal(err)
	}
	f := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i, op := range fuzzPreloadOps() {
		data, err := Encode(op)
		if err != nil {
			tb.Fatal(err)
		}
		if r := f.Apply(&raft.Log{Index: uint64(i + 1), Data: data}).(Result); r.Err != nil {
			tb.Fatalf("preload entry %d: %v", i+1, r.Err)
		}
	}
	var data []byte
	f.View(func(st *State) {
		if err := checkInvariants(cfg, st); err != nil {
			tb.Fatalf("the preloaded state: %v", err)
		}
		data, _ = json.Marshal(st)
	})
	return cfg, data
}

// checkInvariants says what is wrong with a state that Apply made, or nil.
func checkInvariants(cfg *config.Config, st *State) error {
	for _, n := range cfg.Nodes {
		ns := st.Nodes[n.Name]
		if ns == nil {
			return fmt.Errorf("node %s has no state", n.Name)
		}
		if ns.State != "UNKNOWN" && !validNodeState(ns.State) {
			return fmt.Errorf("node %s in state %q", n.Name, ns.State)
		}
	}
	for id, j := range st.Jobs {
		if err := checkJob(cfg, st, id, j); err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		// The accounting projection runs on every job.
		jobRecord(j)
		jobStepRecords(j)
	}
	st.ArrayThrottled()
	return nil
}

func checkJob(cfg *config.Config, st *State, id uint64, j *api.Job) error {
	switch {
	case j.ID != id || id == 0:
		return fmt.Errorf("recorded under id %d", id)
	case id >= st.NextJobID:
		return fmt.Errorf("not below NextJobID %d", st.NextJobID)
	case j.ArrayJobID > id:
		return fmt.Errorf("array id %d after its own", j.ArrayJobID)
	case !validHold(j.Hold):
		return fmt.Errorf("hold %q", j.Hold)
	}
	switch j.State {
	case api.StatePending:
		if len(j.Alloc) > 0 || j.BatchHost != "" {
			return fmt.Errorf("pending with an allocation %+v on %q", j.Alloc, j.BatchHost)
		}
	case api.StateRunning, api.StateCompleting:
		if err := checkRunAlloc(cfg, j); err != nil {
			return err
		}
	case api.StateCancelled: // pending or running when cancelled
	default:
		if !j.State.Final() {
			return fmt.Errorf("unknown state %q", j.State)
		}
		// Only a job that ran ends in these states.
		if len(j.Alloc) == 0 {
			return fmt.Errorf("%s without having run", j.State)
		}
	}
	seen := map[uint32]bool{}
	for _, s := range j.Steps {
		switch {
		case s.ID >= j.NextStepID:
			return fmt.Errorf("step %d not below NextStepID %d", s.ID, j.NextStepID)
		case seen[s.ID]:
			return fmt.Errorf("two steps %d", s.ID)
		case len(s.Nodes) != len(s.Tasks):
			return fmt.Errorf("step %d: %d nodes, %d task counts", s.ID, len(s.Nodes), len(s.Tasks))
		case s.State == api.StateRunning && j.State != api.StateRunning && j.State != api.StateCompleting:
			return fmt.Errorf("step %d running in a job %s", s.ID, j.State)
		case s.State != api.StateRunning && !s.State.Final():
			return fmt.Errorf("step %d in state %q", s.ID, s.State)
		}
		seen[s.ID] = true
		if s.State == api.StateRunning {
			for _, n := range s.Nodes {
				if !j.AllocatedOn(n) {
					return fmt.Errorf("step %d on node %q outside the allocation", s.ID, n)
				}
			}
		}
	}
	return nil
}

// checkRunAlloc checks the allocation of a running or completing job: on
// nodes of the config, each once, with as many CPU ids as CPUs, each a CPU
// of the node.
func checkRunAlloc(cfg *config.Config, j *api.Job) error {
	if len(j.Alloc) == 0 {
		return fmt.Errorf("%s without an allocation", j.State)
	}
	if j.BatchHost != j.Alloc[0].Node {
		return fmt.Errorf("batch host %q, first node %q", j.BatchHost, j.Alloc[0].Node)
	}
	nodes := map[string]bool{}
	for _, a := range j.Alloc {
		n := cfg.Node(a.Node)
		if n == nil || nodes[a.Node] {
			return fmt.Errorf("allocation on %q (twice, or not in the config)", a.Node)
		}
		nodes[a.Node] = true
		if len(a.CPUIDs) != a.CPUs || a.CPUs < 1 {
			return fmt.Errorf("%d CPUs on %s, CPU ids %v", a.CPUs, a.Node, a.CPUIDs)
		}
		if !slices.IsSorted(a.CPUIDs) || len(slices.Compact(slices.Clone(a.CPUIDs))) != len(a.CPUIDs) {
			return fmt.Errorf("CPU ids %v on %s", a.CPUIDs, a.Node)
		}
		for _, c := range a.CPUIDs {
			if c < 0 || c >= nodeCPUs(n) {
				return fmt.Errorf("CPU id %d on %s, which has %d", c, a.Node, nodeCPUs(n))
			}
		}
	}
	return nil
}
