package fsm

import (
	"time"

	"hpc/cluster/api"
)

// What the leader decided and a node has yet to carry out lives in the
// replicated state, so that a new leader finds it and carries it on:
//   - a launch: a RUNNING job whose batch host has not acknowledged it
//     (api.Job.Launched false) is launched again until it has (the node
//     starts a run once, however often it is asked);
//   - a kill: a COMPLETING job (cancelled, timed out, preempted, requeued)
//     is killed again until its end is committed;
//   - a node's responsiveness: gossip's suspicion, committed, keeps new
//     work off the node (NodeState.NoResp) and shows Slurm's `*`.
// A launch the node could not be reached for, and a run the node no longer
// has (it registers without it and its end never came), end through
// LaunchFailed: back to the queue, as slurmctld requeues a batch job whose
// launch failed or whose node lost it.

// The operations of the leader's intents.
const (
	TypeLaunched       Type = 22 // batch hosts acknowledged the launch of these runs
	TypeNodeResponding Type = 23 // gossip suspects a node, or hears it again
	TypeLaunchFailed   Type = 24 // a run that never started, or that its node lost
)

// Launched records that batch hosts started these runs.
type Launched struct {
	Runs []api.JobRun `json:"runs"`
}

// NodeResponding sets whether the controller hears a node.
type NodeResponding struct {
	Time       time.Time `json:"time"`
	Node       string    `json:"node"`
	Responding bool      `json:"responding"`
}

// LaunchFailed ends a run of a job the node never started (it could not
// be reached) or no longer has (Lost: it registers without it and no end
// came). A launch that failed sends the job back to the queue whatever its
// --requeue says, as under Slurm, since it never ran; after
// MaxLaunchRequeues in a row it waits held ("launch failed requeued
// held"). A lost run is requeued if the job may be (--requeue, or
// JobRequeue=1 and not --no-requeue), and ends NODE_FAIL otherwise. A job
// being killed anyway (cancelled, timed out) ends as it would have.
type LaunchFailed struct {
	Time time.Time  `json:"time"`
	Run  api.JobRun `json:"run"`
	Node string     `json:"node"`
	Why  string     `json:"why"`
	Lost bool       `json:"lost,omitempty"`
}

func (*Launched) Type() Type       { return TypeLaunched }
func (*NodeResponding) Type() Type { return TypeNodeResponding }
func (*LaunchFailed) Type() Type   { return TypeLaunchFailed }

// MaxLaunchRequeues is how many launch failures in a row requeue a job
// before it is held (slurmctld's MAX_BATCH_REQUEUE).
const MaxLaunchRequeues = 5

func (f *FSM) applyLaunched(op *Launched) (Result, []uint64) {
	for _, r := range op.Runs {
		j := f.st.Jobs[r.JobID]
		if j == nil || j.Launched || !j.StartTime.Equal(r.Run) ||
			(j.State != api.StateRunning && j.State != api.StateCompleting) {
			continue
		}
		j = f.jobForWrite(r.JobID)
		j.Launched = true
		j.LaunchFailures = 0
	}
	return Result{}, nil
}

func (f *FSM) applyNodeResponding(op *NodeResponding) (Result, []uint64) {
	ns := f.st.Nodes[op.Node]
	if ns == nil {
		return Result{Err: badEntry("unknown node %s", op.Node)}, nil
	}
	ns.NoResp = !op.Responding
	return Result{}, nil
}

func (f *FSM) applyLaunchFailed(op *LaunchFailed) (Result, []uint64) {
	j := f.st.Jobs[op.Run.JobID]
	if j == nil || j.BatchHost != op.Node || !j.StartTime.Equal(op.Run.Run) ||
		(j.State != api.StateRunning && j.State != api.StateCompleting) {
		return Result{}, nil // ended meanwhile, or a later run
	}
	j = f.jobForWrite(j.ID)
	if j.CancelRequested || j.TimedOut || j.Preempted == "CANCEL" {
		// It was being killed anyway: it ends as it would have.
		finish(j, &api.JobEnd{JobID: j.ID, Node: op.Node}, op.Time)
		return Result{}, []uint64{j.ID}
	}
	failures := j.LaunchFailures + 1
	if op.Lost {
		if !f.mayRequeue(j) {
			j.State, j.Reason, j.EndTime = api.StateNodeFail, op.Why, op.Time
			CloseSteps(j, op.Time)
			return Result{}, []uint64{j.ID}
		}
		failures = 0 // it ran: not a launch that keeps failing
	}
	requeue(j, op.Time)
	j.LaunchFailures = failures
	if failures >= MaxLaunchRequeues {
		j.Hold, j.LaunchFailures = api.HoldRequeue, 0
	}
	return Result{}, []uint64{j.ID}
}

// mayRequeue tells whether a job may be requeued after its node failed:
// its --requeue or --no-requeue, else slurm.conf's JobRequeue.
func (f *FSM) mayRequeue(j *api.Job) bool {
	if j.Spec.Requeue != nil {
		return *j.Spec.Requeue
	}
	return f.cfg.JobRequeue != 0
}
