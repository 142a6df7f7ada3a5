package fsm

import (
	"strconv"
	"time"

	"hpc/accounting"
	"hpc/cluster/api"
	"hpc/cluster/hostlist"
)

// Steps (srun inside an allocation: JOBID.0, JOBID.1, ...) in the
// replicated state. Step records are copied on write (a new Steps slice
// each time), because readers hold shallow copies of jobs outside the
// lock. A step's accounting row is written here, under the lock, as
// recordJob writes only the job's own rows.

func (f *FSM) applyStepStart(op *StepStart) (Result, []uint64) {
	j := f.st.Jobs[op.JobID]
	switch {
	case j == nil:
		return Result{Err: &api.Error{Message: api.ErrInvalidJobID}}, nil
	case j.State != api.StateRunning || j.CancelRequested:
		return Result{Err: &api.Error{Message: api.ErrAlreadyDone}}, nil
	}
	if err := checkStep(j, &op.Step); err != nil {
		return Result{Err: err}, nil
	}
	if op.Step.Exclusive && !exclusiveFits(j, &op.Step) {
		// Planned by the leader against a state another step changed
		// since: the launcher asks again.
		return Result{Err: &api.Error{Message: api.ErrNodesBusy}}, nil
	}
	j = f.jobForWrite(op.JobID)
	s := op.Step
	s.ID = j.NextStepID
	s.State = api.StateRunning
	s.Start, s.End = op.Time, time.Time{}
	s.ExitCode, s.Signal, s.Usage = 0, 0, nil
	j.NextStepID++
	j.Steps = append(append([]api.Step(nil), j.Steps...), s)
	f.recordStep(j, &j.Steps[len(j.Steps)-1])
	return Result{JobID: uint64(s.ID)}, nil
}

func (f *FSM) applyStepEnd(op *StepEnd) (Result, []uint64) {
	j := f.st.Jobs[op.JobID]
	if j == nil {
		return Result{Err: &api.Error{Message: api.ErrInvalidJobID}}, nil
	}
	i := j.StepIndex(op.Step.ID)
	if i < 0 || j.Steps[i].State.Final() {
		return Result{}, nil // a repeated or stale report
	}
	j = f.jobForWrite(op.JobID)
	steps := append([]api.Step(nil), j.Steps...)
	e := &steps[i]
	e.ExitCode, e.Signal, e.End = op.Step.ExitCode, op.Step.Signal, op.Time
	e.State = j.StepEndState(op.Step)
	e.Usage = op.Step.Usage
	j.Steps = steps
	f.recordStep(j, e)
	return Result{JobID: uint64(e.ID)}, nil
}

// recordStep writes a step's accounting row.
func (f *FSM) recordStep(j *api.Job, s *api.Step) {
	if f.acct == nil {
		return
	}
	if err := f.acct.UpsertStep(stepRecord(j, s)); err != nil {
		f.log.Error("accounting write failed", "job", j.ID, "step", s.ID, "err", err)
	}
}

// CloseSteps ends the steps still running when their job ends (the
// launcher that would report them may be gone with a failed node): they
// end CANCELLED at the job's end. It returns their accounting rows. The
// FSM calls it, with its lock held, on a job record it may change.
func CloseSteps(j *api.Job, now time.Time) []accounting.StepRecord {
	var recs []accounting.StepRecord
	var steps []api.Step
	for i := range j.Steps {
		if j.Steps[i].State.Final() {
			continue
		}
		if steps == nil {
			steps = append([]api.Step(nil), j.Steps...)
		}
		s := &steps[i]
		s.State, s.End = api.StateCancelled, now
		if s.Signal == 0 {
			// A cancel or time limit sends SIGTERM first, as Slurm shows
			// (0:15); otherwise the step's node is gone.
			s.Signal = 9
			if j.CancelRequested || j.TimedOut || j.Preempted != "" {
				s.Signal = 15
			}
		}
		recs = append(recs, stepRecord(j, s))
	}
	if steps != nil {
		j.Steps = steps
	}
	return recs
}

// stepRecord is a step's accounting row.
func stepRecord(j *api.Job, s *api.Step) accounting.StepRecord {
	r := accounting.StepRecord{
		JobID:     j.ID,
		Step:      strconv.FormatUint(uint64(s.ID), 10),
		Name:      s.Name,
		NodeList:  hostlist.Compress(s.Nodes),
		AllocCPUs: s.NTasks() * max(s.CPUsPerTask, 1),
		NTasks:    s.NTasks(),
		State:     string(s.State),
		Start:     s.Start,
		End:       s.End,
	}
	if s.State.Final() {
		r.ExitCode, r.Signal = s.ExitCode, s.Signal
	}
	usageRecord(&r, s.Usage)
	return r
}

// StepRecords are the accounting rows of a job's srun steps.
func StepRecords(j *api.Job) []accounting.StepRecord {
	out := make([]accounting.StepRecord, 0, len(j.Steps))
	for i := range j.Steps {
		out = append(out, stepRecord(j, &j.Steps[i]))
	}
	return out
}

// exclusiveFits reports whether an exclusive step's CPUs are free of the
// job's other running exclusive steps on each of its nodes.
func exclusiveFits(j *api.Job, s *api.Step) bool {
	if j.Spec.Overcommit {
		return true
	}
	held := j.HeldCPUs()
	for k, n := range s.Nodes {
		cpus := 0
		for _, a := range j.Alloc {
			if a.Node == n {
				cpus = a.CPUs
			}
		}
		if held[n]+s.Tasks[k]*max(s.CPUsPerTask, 1) > cpus {
			return false
		}
	}
	return true
}
