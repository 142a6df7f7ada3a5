package fsm

import (
	"hpc/cluster/api"
	"hpc/sched"
)

// errAccountingPolicy is Slurm's text for ESLURM_ACCOUNTING_POLICY.
const errAccountingPolicy = "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"

// submitLimit checks the submission of job j, n jobs in all (an array's
// tasks count one each, as in Slurm), against the submit limits of its QoS
// and associations (MaxSubmitJobsPerUser, GrpSubmitJobs, MaxSubmitJobs),
// counting the user's pending and running jobs. Slurm refuses such a
// submission, and sbatch prints the reason first:
//
//	sbatch: error: AssocMaxSubmitJobLimit
//	sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)
//
// Apply calls it, so two submissions racing for the last place cannot both
// get it.
func (st *State) submitLimit(j *api.Job, n int) error {
	if !st.Acct.HasSubmitLimits() {
		return nil
	}
	snap := sched.Snapshot{}
	snap.QOS, snap.Assocs = st.Acct.SchedInputs()
	for _, o := range st.Jobs {
		switch {
		case o.State == api.StatePending,
			o.State == api.StateCompleting && o.Preempted == "REQUEUE": // back to the queue soon
			snap.Pending = append(snap.Pending, sched.Job{ID: o.ID, User: o.User, Account: o.Account, QOS: o.Spec.QOS})
		case o.State == api.StateRunning:
			snap.Running = append(snap.Running, sched.RunningJob{ID: o.ID, User: o.User, Account: o.Account, QOS: o.Spec.QOS})
		}
	}
	// The job's own id is not given yet: ids from NextJobID on are free.
	job := sched.Job{ID: st.NextJobID, User: j.User, Account: j.Account, QOS: j.Spec.QOS}
	for k := 1; k < n; k++ {
		extra := job
		extra.ID += uint64(k)
		snap.Pending = append(snap.Pending, extra)
	}
	if reason := sched.SubmitLimit(&snap, &job); reason != "" {
		return &api.Error{Message: errAccountingPolicy, Detail: reason}
	}
	return nil
}
