package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/hashicorp/raft"

	"hpc/accounting"
	"hpc/cluster/acct"
	"hpc/cluster/api"
	"hpc/cluster/config"
)

// Result is what Apply returns to the proposer.
type Result struct {
	// JobID is the new job's id (Submit) or the new step's (StepStart).
	JobID uint64
	Err   error
	// Batch is each submission's result, in order (SubmitBatch).
	Batch []Result
}

// NodeState is the replicated, changing part of a node's record; its
// capacity comes from the config.
type NodeState struct {
	State  string    `json:"state"` // UNKNOWN, UP, DOWN, DRAIN, ADMIN_DOWN
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	// By is the uid that set an administrator's state; -1 for the
	// controller's own (Not responding).
	By int64 `json:"by"`
	// NoResp is set while the controller does not hear the node (gossip
	// suspects it): no new work goes there, and it shows Slurm's `*`.
	NoResp bool `json:"no_resp,omitempty"`
}

// State is the replicated controller state. Readers get it through View,
// under the FSM's read lock, and must not change it or keep pointers into
// it past their function.
type State struct {
	NextJobID uint64                `json:"next_job_id"`
	Jobs      map[uint64]*api.Job   `json:"jobs"`
	Nodes     map[string]*NodeState `json:"nodes"`
	// Acct is what sacctmgr manages: QoS, accounts, users, associations.
	Acct acct.State `json:"acct"`
	// Triggers are strigger's (triggers.go): replaced, never changed in
	// place, so a snapshot shares them.
	Triggers *TriggerState `json:"triggers,omitempty"`
	// Partitions are the live partitions once scontrol or a reconfigure
	// with ReconfigFlags changed them (nil: the configuration's); Conf the
	// files of the last scontrol reconfigure (nil: those the daemon started
	// with). Both are replaced, never changed in place (partitions.go).
	Partitions []config.Partition `json:"partitions,omitempty"`
	Conf       *config.Files      `json:"conf,omitempty"`
	// Tokens are the recent submissions' tokens (tokens.go).
	Tokens *SubmitTokens `json:"submit_tokens,omitempty"`

	// idx is which jobs the leader's loop reads (index.go): the live
	// state's only.
	idx *jobIndex
}

// FSM is the Raft state machine of the controller. Its contract, as
// hashicorp/raft's FSM interface asks:
//   - Apply is deterministic: the same log gives the same state and the same
//     accounting rows on every controller. It reads no clock and no local
//     files; everything it needs is in the entry.
//   - Apply may be replayed after a restart (entries after the last
//     snapshot), so its accounting writes are idempotent upserts.
//   - Snapshot copies the state under the lock and returns; Persist does the
//     encoding and I/O, while Applies go on.
//   - Restore replaces the state and the accounting store: a snapshot
//     carries the store's rows as of its index.
//
// Jobs are copied on write: Apply never changes a job record in place once
// a reader or a snapshot may hold it (jobForWrite), and a job's slices are
// replaced, never written through, so a shallow copy of a job is a stable
// view of it.
type FSM struct {
	cfg *config.Config
	// live is cfg, readable without the lock (Config).
	live atomic.Pointer[config.Config]
	acct *accounting.Store
	log  *slog.Logger

	// boot is the configuration the daemon started with; cfg the live one
	// (partitions.go), replaced by Apply under mu.
	boot *config.Config

	mu      sync.RWMutex
	st      State
	changed chan struct{} // closed and replaced after every Apply

	// While a snapshot is alive (snapshots > 0), job records it shares
	// are copied before Apply changes them; owned holds the ids of those
	// already copied since the latest snapshot.
	snapshots int
	owned     map[uint64]bool
	// dirty are the jobs the entry being applied wrote: the index files
	// them again once it is applied.
	dirty []uint64

	// notify, when set, is called after each Apply with the entry's type
	// (outside the lock); the leader's loop uses it to wake up.
	notify func(Type)
}

// New returns the FSM of a new cluster; acct may be nil (no accounting).
func New(cfg *config.Config, acct *accounting.Store, log *slog.Logger) *FSM {
	f := &FSM{cfg: cfg, acct: acct, log: log, changed: make(chan struct{})}
	f.live.Store(cfg)
	f.boot = cfg
	f.st = emptyState(cfg)
	return f
}

// OnApply sets the function called after each Apply and Restore (with
// type 0), outside the lock. Call it before Raft starts.
func (f *FSM) OnApply(fn func(Type)) { f.notify = fn }

func emptyState(cfg *config.Config) State {
	st := State{NextJobID: 1, Jobs: map[uint64]*api.Job{}, Nodes: map[string]*NodeState{}, Acct: acct.New()}
	st.buildIndex()
	st.Acct.AddSlurmUser(cfg.SlurmUser)
	for _, n := range cfg.Nodes {
		st.Nodes[n.Name] = &NodeState{State: "UNKNOWN"}
	}
	return st
}

// Apply implements raft.FSM. It returns a Result.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch implements raft.BatchingFSM: the entries Raft committed
// together are applied in order under one lock, and their accounting rows
// written in one transaction (a transaction per job was a sixth of the
// leader's CPU under 64 concurrent submitters). Entries other than
// commands (Raft's configuration changes) change nothing here.
//
// The rows are written for every entry that touched a job, in order, not
// once with a job's last state in the batch: a row keeps the last reason
// its job waited for (a requeued job's BeginTime) when a later write has
// none, and step rows are never deleted, so an intermediate state leaves
// its mark. Raft hands the leader and each follower the same entries in
// batches of their own; only writing as one by one gives every controller
// the same rows.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	rows := newBatchRows() // the rows of each job each entry touched, in order
	defer rows.release()
	var types []Type
	f.mu.Lock()
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		op, err := Decode(l.Data)
		if err != nil {
			f.log.Warn("refused an undecodable log entry", "index", l.Index, "err", err)
			out[i] = Result{Err: fmt.Errorf("undecodable log entry %d: %w", l.Index, err)}
			continue
		}
		res, touched := f.apply(op)
		for _, id := range append(f.dirty, touched...) {
			f.st.reindex(id)
		}
		f.dirty = f.dirty[:0]
		if errors.Is(res.Err, errMalformed) {
			f.log.Warn("refused a malformed log entry", "index", l.Index, "type", op.Type(), "err", res.Err)
		}
		out[i] = res
		types = append(types, op.Type())
		if f.acct == nil {
			continue
		}
		for _, id := range touched {
			if j := f.st.Jobs[id]; j != nil {
				rows.add(f.cfg, j)
			}
		}
	}
	ch := f.changed
	f.changed = make(chan struct{})
	f.mu.Unlock()
	if len(rows.jobs) > 0 {
		if err := f.acct.UpsertBatch(rows.jobs, rows.steps); err != nil {
			f.log.Error("accounting write failed", "jobs", len(rows.jobs), "err", err)
		}
	}
	// Waiters (sbatch --wait) hear of the change once accounting has it,
	// so an sacct right after sees the end.
	close(ch)
	if f.notify != nil {
		for _, t := range types {
			f.notify(t)
		}
	}
	return out
}

// apply changes the state for one entry and returns the ids of the jobs
// whose accounting rows it changed. Called with f.mu held. It is the one
// place an operation is dispatched to its code.
func (f *FSM) apply(op Op) (Result, []uint64) {
	if err := checkTime("entry time", entryTime(op)); err != nil {
		return Result{Err: err}, nil
	}
	// Trigger events are noted once the entry has changed the state.
	defer f.noteTriggerEvents(op, f.triggerNodeBefore(op))
	switch op := op.(type) {
	case *Submit:
		return f.applySubmit(op)
	case *SubmitBatch:
		return f.applySubmitBatch(op)
	case *Start:
		return f.applyStart(op)
	case *Reasons:
		return f.applyReasons(op)
	case *End:
		return f.applyEnd(op)
	case *Cancel:
		return f.applyCancel(op)
	case *NodeStateChange:
		return f.applyNodeState(op)
	case *Timeout:
		return f.applyTimeout(op)
	case *Warned:
		return f.applyWarned(op)
	case *Purge:
		return f.applyPurge(op)
	case *Preempt:
		return f.applyPreempt(op)
	case *Hold:
		return f.applyHold(op)
	case *Requeue:
		return f.applyRequeue(op)
	case *UpdateJob:
		return f.applyUpdateJob(op)
	case *StepStart:
		return f.applyStepStart(op)
	case *StepEnd:
		return f.applyStepEnd(op)
	case *Acctmgr:
		return f.applyAcctmgr(op)
	case *TriggerSet:
		return f.applyTriggerSet(op)
	case *TriggerClear:
		return f.applyTriggerClear(op)
	case *TriggerFired:
		return f.applyTriggerFired(op)
	case *PartitionChange:
		return f.applyPartition(op)
	case *Reconfigure:
		return f.applyReconfigure(op)
	case *Launched:
		return f.applyLaunched(op)
	case *NodeResponding:
		return f.applyNodeResponding(op)
	case *LaunchFailed:
		return f.applyLaunchFailed(op)
	}
	return Result{Err: fmt.Errorf("no apply for %T", op)}, nil
}

// jobForWrite returns job id for Apply to change, first copying it if a
// live snapshot shares the record. Called with f.mu held.
func (f *FSM) jobForWrite(id uint64) *api.Job {
	f.dirty = append(f.dirty, id) // the index files it again after the entry
	j := f.st.Jobs[id]
	if j == nil || f.snapshots == 0 || f.owned[id] {
		return j
	}
	cp := *j
	f.st.Jobs[id] = &cp
	f.owned[id] = true
	return &cp
}

// Snapshot implements raft.FSM. Under the lock it copies what Apply
// changes in place (the job map, the node records) and shares the job
// records, which Apply copies before changing while the snapshot lives;
// Persist encodes the copy without the lock.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	var dump *accounting.Dump
	if f.acct != nil {
		// Raft asks for a snapshot on the goroutine that applies entries,
		// and Apply has written every entry's rows before it returns: the
		// rows read now are those of the snapshot's index.
		d, err := f.acct.BeginDump()
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		dump = d
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := State{NextJobID: f.st.NextJobID, Acct: f.st.Acct,
		Jobs: make(map[uint64]*api.Job, len(f.st.Jobs)), Nodes: make(map[string]*NodeState, len(f.st.Nodes))}
	st.Triggers = f.st.Triggers // never changed in place
	// Partitions and Conf are replaced, never changed in place.
	st.Partitions, st.Conf = f.st.Partitions, f.st.Conf
	st.Tokens = f.st.Tokens.shared() // appended to, never changed in place
	for id, j := range f.st.Jobs {
		st.Jobs[id] = j
	}
	for n, s := range f.st.Nodes {
		cp := *s
		st.Nodes[n] = &cp
	}
	f.snapshots++
	f.owned = map[uint64]bool{}
	return &snapshot{f: f, st: st, dump: dump}, nil
}

type snapshot struct {
	f    *FSM
	st   State
	dump *accounting.Dump // nil: no accounting
	once sync.Once
}

// Persist implements raft.FSMSnapshot: it encodes the state as JSON,
// followed by the accounting rows (records.go), which a follower that
// installs the snapshot cannot derive from the state: those of jobs purged
// from it, and the reasons jobs waited for before they started.
//
// The state is written as it is encoded (go-json-experiment/json, in
// encoding/json's semantics, which Restore reads): encoding/json's
// Encoder would hold all of it in memory first, 16 MB with 5,000 jobs
// submitted from a shell, and the heap would keep that room.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	err := jsonv2.MarshalWrite(sink, &s.st, jsonv1.DefaultOptionsV1())
	if err == nil {
		_, err = sink.Write([]byte("\n"))
	}
	enc := json.NewEncoder(sink)
	if err == nil && s.dump != nil {
		err = writeAcctRows(enc, s.dump)
		s.dump.Close()
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("snapshot: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot: Apply stops copying records for it.
func (s *snapshot) Release() {
	if s.dump != nil {
		s.dump.Close()
	}
	s.once.Do(s.f.unshare)
}

// unshare ends one snapshot's or lender's hold on the job records.
func (f *FSM) unshare() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snapshots--; f.snapshots == 0 {
		f.owned = nil
	}
}

// LendJobs lends job records to read after the lock is released, for a
// long answer (a job list) encoded at the client's pace: pick, under the
// lock, adds the records wanted. Until release is called, Apply copies a
// record before changing it, as it does for a snapshot, so the lent
// records stay as they were; nothing waits on the reader.
func (f *FSM) LendJobs(pick func(st *State, add func(*api.Job))) (jobs []*api.Job, release func()) {
	f.mu.Lock()
	pick(&f.st, func(j *api.Job) { jobs = append(jobs, j) })
	f.snapshots++
	f.owned = map[uint64]bool{}
	f.mu.Unlock()
	var once sync.Once
	return jobs, func() { once.Do(f.unshare) }
}

// Restore implements raft.FSM. The accounting store is made to hold
// exactly the snapshot's rows; a snapshot written before snapshots carried
// them rewrites the rows of its jobs only.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	dec := json.NewDecoder(rc)
	var st State
	if err := dec.Decode(&st); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	rows, err := readAcctRows(dec)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	fresh := emptyState(f.cfg)
	for n, s := range st.Nodes {
		fresh.Nodes[n] = s
	}
	st.Nodes = fresh.Nodes
	st.Acct.FillDefaults()
	live, err := liveConfig(f.boot, &st)
	if err != nil { // a reconfigure's files this binary no longer parses
		f.log.Error("snapshot's configuration does not parse: keeping the daemon's", "err", err)
		st.Conf = nil
		live, _ = liveConfig(f.boot, &st)
	}
	if st.Jobs == nil {
		st.Jobs = map[uint64]*api.Job{}
	}
	for _, j := range st.Jobs {
		internSpec(&j.Spec) // intern.go
	}
	if f.acct != nil {
		if rows != nil {
			err = f.acct.ReplaceAll(rows.jobs, rows.steps)
		} else {
			err = f.recordAll(&st)
		}
		if err != nil {
			return fmt.Errorf("restore accounting: %w", err)
		}
	}
	f.mu.Lock()
	st.buildIndex()
	f.st = st
	f.setConfig(live)
	ch := f.changed
	f.changed = make(chan struct{})
	if f.snapshots > 0 {
		f.owned = map[uint64]bool{} // the new records are not shared, but be safe
	}
	f.mu.Unlock()
	close(ch)
	if f.notify != nil {
		f.notify(0)
	}
	return nil
}

// View runs fn with a read lock on the state. fn must not change it.
func (f *FSM) View(fn func(st *State)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(&f.st)
}

// Job returns a copy of a job (nil if there is none) and a channel closed
// at the next change of the state.
func (f *FSM) Job(id uint64) (*api.Job, <-chan struct{}) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	j := f.st.Jobs[id]
	if j == nil {
		return nil, f.changed
	}
	cp := *j
	return &cp, f.changed
}

// sortedIDs returns ids in increasing order.
func sortedIDs(ids []uint64) []uint64 {
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	return ids
}
