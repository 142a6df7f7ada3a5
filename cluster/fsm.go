package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"hpc/accounting"
	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/hostlist"
)

// Operations carried by Raft log entries.
const (
	opSubmit    = "submit"     // a new job; the FSM assigns its id
	opStart     = "start"      // allocations decided by the leader's scheduler
	opReasons   = "reasons"    // pending reasons changed
	opEnd       = "end"        // a job's batch step ended on its node
	opCancel    = "cancel"     // scancel: pending jobs end now, running ones are marked
	opNodeState = "node-state" // a node came up or went down
	opTimeout   = "timeout"    // running jobs past their time limit are being killed
	opWarned    = "warned"     // running jobs got their --signal warning
	opPurge     = "purge"      // finished jobs older than MinJobAge leave the state
	opPreempt   = "preempt"    // running jobs preempted for others (requeue or cancel)
	opHold      = "hold"       // scontrol hold/release
	opRequeue   = "requeue"    // scontrol requeue: a running job goes back to pending
)

// command is one Raft log entry. Every field that Apply reads is in the
// entry, including the time: Apply never reads a clock, so every controller
// reaches the same state and writes the same accounting rows.
type command struct {
	Op     string            `json:"op"`
	Time   time.Time         `json:"time"`
	Job    *api.Job          `json:"job,omitempty"`
	Starts []jobStart        `json:"starts,omitempty"`
	Reason map[uint64]string `json:"reasons,omitempty"`
	End    *jobEnd           `json:"end,omitempty"`
	JobID  uint64            `json:"job_id,omitempty"`
	JobIDs []uint64          `json:"job_ids,omitempty"`
	UID    uint32            `json:"uid,omitempty"`
	Node   string            `json:"node,omitempty"`
	State  string            `json:"state,omitempty"`
	Why    string            `json:"why,omitempty"`
	// Update goes with opUpdateJob.
	Update *jobUpdate `json:"update,omitempty"`
	// Preempts and Hold go with opPreempt and opHold.
	Preempts []preemptMark `json:"preempts,omitempty"`
	Hold     string        `json:"hold,omitempty"`
	Acct     *acctOp       `json:"acct,omitempty"`
}

type jobStart struct {
	JobID     uint64          `json:"job_id"`
	Alloc     []api.NodeAlloc `json:"alloc"`
	Partition string          `json:"partition,omitempty"` // the one it runs in, of those it named
	// TimeLimitMin is the effective limit (its own or the partition's);
	// -1 is UNLIMITED.
	TimeLimitMin int64  `json:"time_limit_min,omitempty"`
	StdOut       string `json:"std_out"`
	StdErr       string `json:"std_err"`
}

type preemptMark struct {
	JobID uint64 `json:"job_id"`
	Mode  string `json:"mode"` // REQUEUE or CANCEL
}

// jobEnd is what a node's agent reports when a job's batch step ends.
type jobEnd struct {
	JobID    uint64    `json:"job_id"`
	Node     string    `json:"node"`
	ExitCode int       `json:"exit_code"`
	Signal   int       `json:"signal"`
	OOM      bool      `json:"oom"`
	Error    string    `json:"error,omitempty"` // the step could not start
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Usage is what the batch step used.
	Usage *api.StepUsage `json:"usage,omitempty"`
}

// applyResult is what Apply returns to the proposer.
type applyResult struct {
	JobID uint64
	Err   error
}

// nodeState is the replicated, changing part of a node's record; its
// capacity comes from the config.
type nodeState struct {
	State  string    `json:"state"` // UNKNOWN, UP, DOWN
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	// By is the uid that set an administrator's state; -1 for the
	// controller's own (Not responding).
	By int64 `json:"by"`
}

// state is the replicated controller state.
type state struct {
	NextJobID uint64                `json:"next_job_id"`
	Jobs      map[uint64]*api.Job   `json:"jobs"`
	Nodes     map[string]*nodeState `json:"nodes"`
	// Acct is what sacctmgr manages: QoS, accounts, users, associations
	// (acctmgr.go).
	Acct acctState `json:"acct"`
}

// FSM is the Raft state machine of the controller. Its contract, as
// hashicorp/raft's FSM interface asks:
//   - Apply is deterministic: the same log gives the same state and the same
//     accounting rows on every controller. It reads no clock and no local
//     files; everything it needs is in the entry.
//   - Apply may be replayed after a restart (entries after the last
//     snapshot), so its accounting writes are idempotent upserts.
//   - Snapshot copies the state under the lock and returns; Persist does the
//     encoding and I/O.
//   - Restore replaces the state and rewrites the accounting store.
type FSM struct {
	cfg  *config.Config
	acct *accounting.Store
	log  *slog.Logger

	mu      sync.RWMutex
	st      state
	changed chan struct{} // closed and replaced after every Apply

	// notify, when set, is called after each Apply with the op name
	// (outside the lock); the leader's loop uses it to wake up.
	notify func(op string)
}

func newFSM(cfg *config.Config, acct *accounting.Store, log *slog.Logger) *FSM {
	f := &FSM{cfg: cfg, acct: acct, log: log, changed: make(chan struct{})}
	f.st = emptyState(cfg)
	return f
}

func emptyState(cfg *config.Config) state {
	st := state{NextJobID: 1, Jobs: map[uint64]*api.Job{}, Nodes: map[string]*nodeState{}, Acct: newAcctState()}
	for _, n := range cfg.Nodes {
		st.Nodes[n.Name] = &nodeState{State: "UNKNOWN"}
	}
	return st
}

// Apply implements raft.FSM.
func (f *FSM) Apply(l *raft.Log) any {
	var c command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return applyResult{Err: fmt.Errorf("undecodable log entry %d: %w", l.Index, err)}
	}
	f.mu.Lock()
	res, touched := f.apply(&c)
	ch := f.changed
	f.changed = make(chan struct{})
	var recs []*api.Job
	for _, id := range touched {
		if j := f.st.Jobs[id]; j != nil {
			cp := *j
			recs = append(recs, &cp)
		}
	}
	f.mu.Unlock()
	if f.acct != nil {
		for _, j := range recs {
			if err := f.recordJob(j); err != nil {
				f.log.Error("accounting write failed", "job", j.ID, "err", err)
			}
		}
	}
	// Waiters (sbatch --wait) hear of the change once accounting has it,
	// so an sacct right after sees the end.
	close(ch)
	if f.notify != nil {
		f.notify(c.Op)
	}
	return res
}

// apply changes the state for one command and returns the ids of the jobs
// it touched. Called with f.mu held.
func (f *FSM) apply(c *command) (applyResult, []uint64) {
	st := &f.st
	switch c.Op {
	case opSubmit:
		// A job array is one job per index, with consecutive ids; the
		// array's id is the first one's.
		indices := []int{-1}
		if c.Job.Spec.Array != "" {
			var err error
			if indices, _, err = parseArray(c.Job.Spec.Array); err != nil {
				return applyResult{Err: err}, nil
			}
		}
		// Submit limits (MaxSubmitJobs...) are checked here, against the
		// jobs as they are when the entry applies.
		if err := st.submitLimit(c.Job, len(indices)); err != nil {
			return applyResult{Err: err}, nil
		}
		first := st.NextJobID
		ids := make([]uint64, 0, len(indices))
		for _, idx := range indices {
			j := *c.Job
			j.ID = st.NextJobID
			st.NextJobID++
			if idx >= 0 {
				j.ArrayJobID, j.ArrayTaskID = first, idx
			}
			j.State = api.StatePending
			j.Reason = api.ReasonNone
			j.SubmitTime = c.Time
			st.Jobs[j.ID] = &j
			ids = append(ids, j.ID)
		}
		return applyResult{JobID: first}, ids
	case opStart:
		var ids []uint64
		var cpus *cpuUse
		for _, s := range c.Starts {
			j := st.Jobs[s.JobID]
			if j == nil || j.State != api.StatePending {
				continue // cancelled while the leader was deciding
			}
			j.State = api.StateRunning
			j.Reason = api.ReasonNone
			j.Warned = false
			j.Alloc = s.Alloc
			if cpus == nil {
				cpus = newCPUUse(f.cfg, st)
			}
			cpus.assign(j.Alloc)
			j.BatchHost = s.Alloc[0].Node
			j.StartTime = c.Time
			j.StdOut, j.StdErr = s.StdOut, s.StdErr
			if s.Partition != "" {
				j.Spec.Partition = s.Partition
			}
			if s.TimeLimitMin != 0 {
				j.Spec.TimeLimitMin = s.TimeLimitMin
			}
			ids = append(ids, j.ID)
		}
		return applyResult{}, ids
	case opReasons:
		for id, r := range c.Reason {
			if j := st.Jobs[id]; j != nil && j.State == api.StatePending {
				j.Reason = r
			}
		}
		return applyResult{}, nil
	case opEnd:
		e := c.End
		j := st.Jobs[e.JobID]
		if j == nil || j.State.Final() || j.BatchHost != e.Node {
			return applyResult{}, nil // a replayed or stale report
		}
		f.finish(j, e, c.Time)
		return applyResult{}, []uint64{j.ID}
	case opCancel:
		j := st.Jobs[c.JobID]
		if j == nil {
			return applyResult{Err: &api.Error{Message: api.ErrInvalidJobID}}, nil
		}
		if j.State.Final() {
			return applyResult{Err: &api.Error{Message: api.ErrAlreadyDone}}, nil
		}
		j.CancelRequested = true
		j.CancelledBy = c.UID
		switch j.State {
		case api.StatePending:
			j.State = api.StateCancelled
			j.Reason = api.ReasonNone
			j.EndTime = c.Time
		case api.StateRunning:
			// Its processes are being killed: COMPLETING until the node
			// reports the end, as slurmctld shows it (CG).
			j.State = api.StateCompleting
		}
		return applyResult{}, []uint64{j.ID}
	case opWarned:
		for _, id := range c.JobIDs {
			if j := st.Jobs[id]; j != nil && j.State == api.StateRunning {
				j.Warned = true
			}
		}
		return applyResult{}, nil
	case opTimeout:
		var ids []uint64
		for _, id := range c.JobIDs {
			if j := st.Jobs[id]; j != nil && j.State == api.StateRunning && !j.TimedOut {
				j.TimedOut = true
				j.State = api.StateCompleting
				ids = append(ids, id)
			}
		}
		return applyResult{}, ids
	case opPreempt:
		var ids []uint64
		for _, m := range c.Preempts {
			if j := st.Jobs[m.JobID]; j != nil && j.State == api.StateRunning && j.Preempted == "" {
				j.Preempted = m.Mode
				j.RequeueDelay = m.Mode == "REQUEUE"
				j.State = api.StateCompleting
				ids = append(ids, j.ID)
			}
		}
		return applyResult{}, ids
	case opHold:
		for _, id := range c.JobIDs {
			j := st.Jobs[id]
			switch {
			case j == nil:
				return applyResult{Err: &api.Error{Message: api.ErrInvalidJobID}}, nil
			case j.State != api.StatePending:
				return applyResult{Err: &api.Error{Message: api.ErrJobNotPendingOrRun}}, nil
			}
		}
		for _, id := range c.JobIDs {
			st.Jobs[id].Hold = c.Hold
		}
		return applyResult{}, c.JobIDs
	case opRequeue:
		var ids []uint64
		for _, id := range c.JobIDs {
			if j := st.Jobs[id]; j != nil && j.State == api.StateRunning {
				j.Preempted = "REQUEUE"
				j.RequeueHold = c.Hold == api.HoldRequeue // a failed prolog's
				j.State = api.StateCompleting
				ids = append(ids, id)
			}
		}
		return applyResult{}, ids
	case opPurge:
		// Accounting keeps their rows; only the in-memory records go.
		for _, id := range c.JobIDs {
			if j := st.Jobs[id]; j != nil && j.State.Final() {
				delete(st.Jobs, id)
			}
		}
		return applyResult{}, nil
	case opNodeState:
		ns := st.Nodes[c.Node]
		if ns == nil {
			return applyResult{Err: fmt.Errorf("unknown node %s", c.Node)}, nil
		}
		ns.State, ns.Reason, ns.Since, ns.By = c.State, c.Why, c.Time, -1
		if c.State == "DRAIN" || c.State == "ADMIN_DOWN" {
			ns.By = int64(c.UID)
		}
		var ids []uint64
		if c.State == "DOWN" || c.State == "ADMIN_DOWN" {
			// Jobs running on a node that is gone end as NODE_FAIL.
			for _, j := range st.Jobs {
				if (j.State != api.StateRunning && j.State != api.StateCompleting) || !allocatedOn(j, c.Node) {
					continue
				}
				j.State = api.StateNodeFail
				j.Reason = "NodeDown"
				j.EndTime = c.Time
				closeSteps(j, c.Time)
				ids = append(ids, j.ID)
			}
			sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
		}
		return applyResult{}, ids
	}
	if res, touched, ok := f.applyStepOp(c); ok {
		return res, touched
	}
	if c.Op == opUpdateJob {
		return f.applyUpdateJob(c)
	}
	if res, ok := f.applyAcctOp(c); ok {
		return res, nil
	}
	return applyResult{Err: fmt.Errorf("unknown op %q", c.Op)}, nil
}

// finish records a job's end. Called with f.mu held.
// requeueDelay is how long a preempted, requeued job waits before it may
// start again (slurmctld's batch_requeue_fini: 121 s).
const requeueDelay = 121 * time.Second

func (f *FSM) finish(j *api.Job, e *jobEnd, now time.Time) {
	j.ExitCode, j.Signal = e.ExitCode, e.Signal
	j.BatchUsage = e.Usage
	j.EndTime = now
	closeSteps(j, now) // steps whose launcher did not report end with the job
	switch {
	case j.CancelRequested:
		j.State = api.StateCancelled
	case j.TimedOut:
		j.State = api.StateTimeout
	case j.Preempted == "REQUEUE":
		// Back to the queue with the same id, as slurmctld requeues. A
		// preempted job may not start again for 121 s, as under Slurm:
		// otherwise, older than the job that preempted it, it could
		// take its place back at once and be preempted again, for ever.
		if j.RequeueDelay {
			if b := now.Add(requeueDelay); j.Spec.Begin.Before(b) {
				j.Spec.Begin = b
			}
			j.RequeueDelay = false
		}
		if j.RequeueHold {
			// A job whose prolog failed waits held for scontrol release
			// ("launch failed requeued held"), as under Slurm.
			j.Hold, j.RequeueHold = api.HoldRequeue, false
		}
		j.State, j.Reason = api.StatePending, "BeginTime"
		j.Alloc, j.BatchHost, j.StdOut, j.StdErr = nil, "", "", ""
		j.StartTime, j.EndTime = time.Time{}, time.Time{}
		j.Preempted, j.Restarts = "", j.Restarts+1
		j.ExitCode, j.Signal = 0, 0
		return
	case j.Preempted == "CANCEL":
		j.State = api.StatePreempted
	case e.OOM:
		j.State = api.StateOutOfMemory
	case e.Error != "":
		j.State = api.StateFailed
		j.Reason = e.Error
		if j.ExitCode == 0 {
			j.ExitCode = 1
		}
	case e.ExitCode != 0 || e.Signal != 0:
		j.State = api.StateFailed
	default:
		j.State = api.StateCompleted
	}
}

func allocatedOn(j *api.Job, node string) bool {
	for _, a := range j.Alloc {
		if a.Node == node {
			return true
		}
	}
	return false
}

// recordJob writes a job's accounting rows: the job, its batch step (an
// allocation made by srun or salloc has none, as in Slurm) and its steps.
func (f *FSM) recordJob(j *api.Job) error {
	return f.acct.UpsertBatch([]accounting.JobRecord{jobRecord(j)}, jobStepRecords(j))
}

// jobStepRecords are the step rows of a job.
func jobStepRecords(j *api.Job) []accounting.StepRecord {
	var steps []accounting.StepRecord
	if !j.StartTime.IsZero() && j.Spec.Script != api.HolderScript {
		steps = append(steps, batchStepRecord(j))
	}
	return append(steps, stepRecords(j)...)
}

func jobRecord(j *api.Job) accounting.JobRecord {
	r := accounting.JobRecord{
		JobID:        j.ID,
		Name:         j.Spec.Name,
		Partition:    j.Spec.Partition,
		Account:      j.Account,
		User:         j.User,
		Group:        j.Group,
		UID:          j.UID,
		GID:          j.GID,
		AllocCPUs:    j.AllocCPUs(),
		AllocNodes:   len(j.Alloc),
		ReqCPUs:      reqCPUs(&j.Spec),
		ReqMemMB:     j.Spec.MemPerNodeMB,
		TimeLimitMin: j.Spec.TimeLimitMin,
		NodeList:     hostlist.Compress(j.NodeNames()),
		State:        string(j.State),
		WorkDir:      j.Spec.WorkDir,
		Submit:       j.SubmitTime,
		Start:        j.StartTime,
		End:          j.EndTime,
	}
	if j.State.Final() && j.State != api.StateCancelled {
		r.ExitCode, r.Signal = j.ExitCode, j.Signal
	}
	if j.State == api.StateCancelled {
		by := j.CancelledBy
		r.CancelledBy = &by
	}
	if r.AllocCPUs == 0 {
		r.AllocCPUs = r.ReqCPUs
	}
	return r
}

func batchStepRecord(j *api.Job) accounting.StepRecord {
	cpus := 0
	if len(j.Alloc) > 0 {
		cpus = j.Alloc[0].CPUs
	}
	r := accounting.StepRecord{
		JobID:     j.ID,
		Step:      "batch",
		Name:      "batch",
		NodeList:  j.BatchHost,
		AllocCPUs: cpus,
		NTasks:    1,
		State:     string(j.State),
		Start:     j.StartTime,
		End:       j.EndTime,
	}
	if j.State.Final() {
		r.ExitCode, r.Signal = j.ExitCode, j.Signal
	}
	if j.State == api.StateNodeFail {
		r.State = string(api.StateCancelled)
	}
	usageRecord(&r, j.BatchUsage)
	return r
}

// usageRecord copies what a step used into its accounting row.
func usageRecord(r *accounting.StepRecord, u *api.StepUsage) {
	if u != nil {
		r.MaxRSSKB, r.MaxRSSNode, r.UserCPU, r.SystemCPU = u.MaxRSSKB, u.MaxRSSNode, u.UserCPU, u.SystemCPU
	}
}

// reqCPUs is the CPU count a job asks for.
func reqCPUs(s *api.JobSpec) int {
	tasks := s.NTasks
	if tasks <= 0 {
		tasks = max(s.Nodes, 1)
	}
	return tasks * max(s.CPUsPerTask, 1)
}

// Snapshot implements raft.FSM. It encodes the state under the read lock
// (a deep copy that later Applies cannot touch); Persist writes it out.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	data, err := json.Marshal(&f.st)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &fsmSnapshot{data: data}, nil
}

// Restore implements raft.FSM.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var st state
	if err := json.NewDecoder(rc).Decode(&st); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	fresh := emptyState(f.cfg)
	for n, s := range st.Nodes {
		fresh.Nodes[n] = s
	}
	st.Nodes = fresh.Nodes
	st.Acct.fillDefaults()
	if st.Jobs == nil {
		st.Jobs = map[uint64]*api.Job{}
	}
	if f.acct != nil {
		ids := make([]uint64, 0, len(st.Jobs))
		for id := range st.Jobs {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
		var jobs []accounting.JobRecord
		var steps []accounting.StepRecord
		for _, id := range ids {
			j := st.Jobs[id]
			jobs = append(jobs, jobRecord(j))
			steps = append(steps, jobStepRecords(j)...)
		}
		// Upsert, not replace: rows of jobs purged from the state before the
		// snapshot stay in accounting.
		if err := f.acct.UpsertBatch(jobs, steps); err != nil {
			return fmt.Errorf("restore accounting: %w", err)
		}
	}
	f.mu.Lock()
	f.st = st
	ch := f.changed
	f.changed = make(chan struct{})
	f.mu.Unlock()
	close(ch)
	if f.notify != nil {
		f.notify("restore")
	}
	return nil
}

type fsmSnapshot struct{ data []byte }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// view runs fn with a read lock on the state.
func (f *FSM) view(fn func(st *state)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(&f.st)
}

// job returns a copy of a job and a channel closed at the next change.
func (f *FSM) job(id uint64) (*api.Job, <-chan struct{}) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	j := f.st.Jobs[id]
	if j == nil {
		return nil, f.changed
	}
	cp := *j
	return &cp, f.changed
}
