package fsm

import (
	"errors"
	"fmt"
	"time"

	"hpc/cluster/acct"
	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// The job operations. Each is called by apply with f.mu held, and returns
// the Result and the ids of the jobs whose accounting rows changed.

func (f *FSM) applySubmit(op *Submit) (Result, []uint64) {
	st := &f.st
	if op.Job == nil {
		return Result{Err: errors.New("submit entry without a job")}, nil
	}
	if err := checkSubmit(op.Job); err != nil {
		return Result{Err: err}, nil
	}
	if res, dup := f.submitToken(op); dup {
		return res, nil // a client's retry of a committed submission
	}
	internSpec(&op.Job.Spec) // intern.go
	// A job array is one job per index, with consecutive ids; the array's
	// id is the first one's.
	indices := []int{-1}
	if op.Job.Spec.Array != "" {
		var err error
		if indices, err = jobspec.CheckArray(op.Job.Spec.Array, f.cfg.MaxArraySize); err != nil {
			return Result{Err: err}, nil
		}
	}
	// MaxJobCount, as slurmctld counts it: every job it holds, finished
	// ones not yet purged included.
	if len(st.Jobs)+len(indices) >= f.cfg.MaxJobCount {
		return Result{Err: &api.Error{Message: api.ErrTryAgain, Detail: fmt.Sprintf("MaxJobCount limit from slurm.conf reached (%d)", f.cfg.MaxJobCount)}}, nil
	}
	// Submit limits (MaxSubmitJobs...) are checked here, against the jobs
	// as they are when the entry applies.
	if err := st.submitLimit(op.Job, len(indices)); err != nil {
		return Result{Err: err}, nil
	}
	first := st.NextJobID
	ids := make([]uint64, 0, len(indices))
	for k, idx := range indices {
		var j *api.Job
		if k == len(indices)-1 {
			// The entry's own record becomes the last job: apply's
			// operations are decoded afresh from the log (ApplyBatch), so
			// nothing else holds it, and a copy would be a second
			// allocation of every submitted job on every controller.
			*op.Job = submitted(op.Job)
			j = op.Job
		} else {
			c := submitted(op.Job)
			j = &c
		}
		j.ID = st.NextJobID
		st.NextJobID++
		if idx >= 0 {
			j.ArrayJobID, j.ArrayTaskID = first, idx
		}
		j.State = api.StatePending
		j.Reason = api.ReasonNone
		j.SubmitTime = op.Time
		st.Jobs[j.ID] = j
		st.reindex(j.ID) // the next submit of a batch counts it (submitLimit)
		f.dirty = append(f.dirty, j.ID)
		if f.owned != nil {
			f.owned[j.ID] = true // a new record: no snapshot holds it
		}
		ids = append(ids, j.ID)
	}
	f.rememberToken(op, first)
	return Result{JobID: first}, ids
}

// applySubmitBatch applies each submission of op in order, as its own
// Submit entry would apply: one refused leaves the others as they are.
func (f *FSM) applySubmitBatch(op *SubmitBatch) (Result, []uint64) {
	if len(op.Jobs) == 0 {
		return Result{Err: badEntry("a submit batch without jobs")}, nil
	}
	out := make([]Result, len(op.Jobs))
	var ids []uint64
	for i, s := range op.Jobs {
		res, touched := f.applySubmit(&Submit{Time: op.Time, Job: s.Job, Token: s.Token})
		out[i] = res
		ids = append(ids, touched...)
	}
	return Result{Batch: out}, ids
}

func (f *FSM) applyStart(op *Start) (Result, []uint64) {
	for i := range op.Starts {
		if err := f.checkStart(&op.Starts[i]); err != nil {
			return Result{Err: err}, nil
		}
	}
	var ids []uint64
	var cpus *cpuUse
	for _, s := range op.Starts {
		if j := f.st.Jobs[s.JobID]; j == nil || j.State != api.StatePending {
			continue // cancelled while the leader was deciding
		}
		if len(s.Alloc) == 0 {
			continue // nothing to start it on
		}
		j := f.jobForWrite(s.JobID)
		j.State = api.StateRunning
		j.Reason = api.ReasonNone
		j.Warned = false
		j.Alloc = s.Alloc
		if cpus == nil {
			cpus = newCPUUse(f.cfg, &f.st)
		}
		cpus.assign(j.Alloc)
		j.BatchHost = s.Alloc[0].Node
		j.StartTime = op.Time
		j.StdOut, j.StdErr = s.StdOut, s.StdErr
		if s.Partition != "" {
			j.Spec.Partition = s.Partition
		}
		if s.TimeLimitMin != 0 {
			j.Spec.TimeLimitMin = s.TimeLimitMin
		}
		ids = append(ids, j.ID)
	}
	return Result{}, ids
}

func (f *FSM) applyReasons(op *Reasons) (Result, []uint64) {
	for id, r := range op.Reasons {
		if j := f.st.Jobs[id]; j != nil && j.State == api.StatePending && j.Reason != r {
			f.jobForWrite(id).Reason = r
		}
	}
	return Result{}, nil
}

func (f *FSM) applyEnd(op *End) (Result, []uint64) {
	e := &op.End
	j := f.st.Jobs[e.JobID]
	if j == nil || (j.State != api.StateRunning && j.State != api.StateCompleting) || j.BatchHost != e.Node {
		return Result{}, nil // a replayed or stale report
	}
	if !e.Run.IsZero() && !e.Run.Equal(j.StartTime) {
		// The end of an earlier run of the job (requeued, preempted), a
		// node's resent report whose answer was lost: the run now going
		// is not it. Reports without Run (older entries, ends the leader
		// decides itself) apply as before.
		return Result{}, nil
	}
	j = f.jobForWrite(e.JobID)
	finish(j, e, op.Time)
	return Result{}, []uint64{j.ID}
}

func (f *FSM) applyCancel(op *Cancel) (Result, []uint64) {
	j, err := f.unfinishedJob(op.JobID)
	if err != nil {
		return Result{Err: err}, nil
	}
	j.CancelRequested = true
	j.CancelledBy = op.UID
	switch j.State {
	case api.StatePending:
		j.State = api.StateCancelled
		j.Reason = api.ReasonNone
		j.EndTime = op.Time
	case api.StateRunning:
		// Its processes are being killed: COMPLETING until the node
		// reports the end, as slurmctld shows it (CG).
		j.State = api.StateCompleting
	}
	return Result{}, []uint64{j.ID}
}

func (f *FSM) applyWarned(op *Warned) (Result, []uint64) {
	for _, id := range op.JobIDs {
		if j := f.st.Jobs[id]; j != nil && j.State == api.StateRunning {
			f.jobForWrite(id).Warned = true
		}
	}
	return Result{}, nil
}

func (f *FSM) applyTimeout(op *Timeout) (Result, []uint64) {
	var ids []uint64
	for _, id := range op.JobIDs {
		if j := f.st.Jobs[id]; j != nil && j.State == api.StateRunning && !j.TimedOut {
			j = f.jobForWrite(id)
			j.TimedOut = true
			j.State = api.StateCompleting
			ids = append(ids, id)
		}
	}
	return Result{}, ids
}

func (f *FSM) applyPreempt(op *Preempt) (Result, []uint64) {
	for _, m := range op.Preempts {
		if m.Mode != "REQUEUE" && m.Mode != "CANCEL" {
			return Result{Err: badEntry("unknown preempt mode %q", m.Mode)}, nil
		}
	}
	var ids []uint64
	for _, m := range op.Preempts {
		if j := f.st.Jobs[m.JobID]; j != nil && j.State == api.StateRunning && j.Preempted == "" {
			j = f.jobForWrite(m.JobID)
			j.Preempted = m.Mode
			j.RequeueDelay = m.Mode == "REQUEUE"
			j.State = api.StateCompleting
			ids = append(ids, j.ID)
		}
	}
	return Result{}, ids
}

func (f *FSM) applyHold(op *Hold) (Result, []uint64) {
	if !validHold(op.Hold) {
		return Result{Err: badEntry("unknown hold %q", op.Hold)}, nil
	}
	for _, id := range op.JobIDs {
		j := f.st.Jobs[id]
		switch {
		case j == nil:
			return Result{Err: &api.Error{Message: api.ErrInvalidJobID}}, nil
		case j.State != api.StatePending:
			return Result{Err: &api.Error{Message: api.ErrJobNotPendingOrRun}}, nil
		}
	}
	for _, id := range op.JobIDs {
		f.jobForWrite(id).Hold = op.Hold
	}
	return Result{}, op.JobIDs
}

func (f *FSM) applyRequeue(op *Requeue) (Result, []uint64) {
	if op.Hold != "" && op.Hold != api.HoldRequeue {
		return Result{Err: badEntry("unknown requeue hold %q", op.Hold)}, nil
	}
	var ids []uint64
	for _, id := range op.JobIDs {
		if j := f.st.Jobs[id]; j != nil && j.State == api.StateRunning {
			j = f.jobForWrite(id)
			j.Preempted = "REQUEUE"
			j.RequeueHold = op.Hold == api.HoldRequeue // a failed prolog's
			j.State = api.StateCompleting
			ids = append(ids, id)
		}
	}
	return Result{}, ids
}

func (f *FSM) applyPurge(op *Purge) (Result, []uint64) {
	// Accounting keeps their rows; only the in-memory records go.
	for _, id := range op.JobIDs {
		if j := f.st.Jobs[id]; j != nil && j.State.Final() {
			delete(f.st.Jobs, id)
			f.dirty = append(f.dirty, id)
		}
	}
	return Result{}, nil
}

func (f *FSM) applyNodeState(op *NodeStateChange) (Result, []uint64) {
	ns := f.st.Nodes[op.Node]
	if ns == nil {
		return Result{Err: fmt.Errorf("unknown node %s", op.Node)}, nil
	}
	if !validNodeState(op.State) {
		return Result{Err: badEntry("unknown node state %q", op.State)}, nil
	}
	ns.State, ns.Reason, ns.Since, ns.By = op.State, op.Why, op.Time, -1
	if op.State == "DRAIN" || op.State == "ADMIN_DOWN" {
		ns.By = int64(op.UID)
	}
	if op.State != "DOWN" && op.State != "ADMIN_DOWN" {
		return Result{}, nil
	}
	// Jobs running on a node that is gone end as NODE_FAIL, or go back to
	// the queue if they may (a batch job, not salloc's or srun's
	// allocation, whose --requeue or JobRequeue allows it).
	var ids []uint64
	for id, j := range f.st.Jobs {
		if (j.State != api.StateRunning && j.State != api.StateCompleting) || !j.AllocatedOn(op.Node) {
			continue
		}
		j = f.jobForWrite(id)
		if op.Requeue && j.Spec.Script != api.HolderScript && !j.CancelRequested && !j.TimedOut && f.mayRequeue(j) {
			CloseSteps(j, op.Time)
			requeue(j, op.Time)
			ids = append(ids, j.ID)
			continue
		}
		j.State = api.StateNodeFail
		j.Reason = "NodeDown"
		j.EndTime = op.Time
		CloseSteps(j, op.Time)
		ids = append(ids, j.ID)
	}
	return Result{}, sortedIDs(ids)
}

func (f *FSM) applyUpdateJob(op *UpdateJob) (Result, []uint64) {
	if err := f.checkUpdate(&op.Update); err != nil {
		return Result{Err: err}, nil
	}
	j, err := f.unfinishedJob(op.JobID)
	if err != nil {
		return Result{Err: err}, nil
	}
	u := &op.Update
	if u.TimeLimitMin != 0 {
		j.Spec.TimeLimitMin = u.TimeLimitMin
	}
	if u.Partition != "" {
		j.Spec.Partition = u.Partition
	}
	if u.Nodes != 0 {
		j.Spec.Nodes = u.Nodes
	}
	if u.Name != "" {
		j.Spec.Name = u.Name
	}
	if u.Begin != nil && j.State == api.StatePending {
		j.Spec.Begin = *u.Begin
	}
	return Result{}, []uint64{j.ID}
}

func (f *FSM) applyAcctmgr(op *Acctmgr) (Result, []uint64) {
	if op.Op.Version != f.st.Acct.Version {
		return Result{Err: acct.ErrChanged}, nil
	}
	next := f.st.Acct.Clone()
	if _, err := next.Apply(&op.Op, f.cfg.ClusterName); err != nil {
		return Result{Err: err}, nil
	}
	next.Version++
	f.st.Acct = next
	return Result{}, nil
}

// unfinishedJob returns job id for Apply to change, or Slurm's error for a
// job that is unknown or has ended.
func (f *FSM) unfinishedJob(id uint64) (*api.Job, error) {
	j := f.st.Jobs[id]
	if j == nil {
		return nil, &api.Error{Message: api.ErrInvalidJobID}
	}
	if j.State.Final() {
		return nil, &api.Error{Message: api.ErrAlreadyDone}
	}
	return f.jobForWrite(id), nil
}

// requeueDelay is how long a preempted, requeued job waits before it may
// start again (slurmctld's batch_requeue_fini: 121 s).
const requeueDelay = 121 * time.Second

// finish records a job's end, e, at now. Called with f.mu held, on a job
// record Apply may change.
func finish(j *api.Job, e *api.JobEnd, now time.Time) {
	j.ExitCode, j.Signal = e.ExitCode, e.Signal
	j.BatchUsage = e.Usage
	j.EndTime = now
	CloseSteps(j, now) // steps whose launcher did not report end with the job
	switch {
	case j.CancelRequested:
		j.State = api.StateCancelled
	case j.TimedOut:
		j.State = api.StateTimeout
	case j.Preempted == "REQUEUE":
		requeue(j, now)
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

// requeue sends an ended run back to the queue with the same id, as
// slurmctld requeues.
func requeue(j *api.Job, now time.Time) {
	// A preempted job may not start again for 121 s, as under Slurm:
	// otherwise, older than the job that preempted it, it could take its
	// place back at once and be preempted again, for ever.
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
	j.Launched = false
}
