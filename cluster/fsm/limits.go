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
	snap.QOS, snap.Assocs = st.Acct.SubmitInputs(j.User, j.Account)
	usage := st.submitUsage()
	usage[usageKey(j)] += n - 1 // an array's other tasks count as pending jobs already
	job := sched.Job{ID: st.NextJobID, User: j.User, Account: j.Account, QOS: j.Spec.QOS}
	if reason := sched.SubmitLimitOf(&snap, usage, &job); reason != "" {
		return &api.Error{Message: errAccountingPolicy, Detail: reason}
	}
	return nil
}

// submitCounted reports whether submit limits count job o: PENDING,
// RUNNING, or COMPLETING on its way back to the queue (requeued by
// preemption).
func submitCounted(o *api.Job) bool {
	return o.State == api.StatePending || o.State == api.StateRunning ||
		(o.State == api.StateCompleting && o.Preempted == "REQUEUE")
}

func usageKey(o *api.Job) sched.UsageKey {
	return sched.UsageKey{QOS: o.Spec.QOS, Account: o.Account, User: o.User}
}

// submitUsage is the jobs submit limits count, by QoS, account and user:
// the index's counts (one a key that has jobs), or without an index,
// counted from every job.
func (st *State) submitUsage() map[sched.UsageKey]int {
	u := map[sched.UsageKey]int{}
	if st.idx != nil {
		for k, c := range st.idx.usage {
			u[k] = c.n
		}
		return u
	}
	for _, o := range st.Jobs {
		if submitCounted(o) {
			u[usageKey(o)]++
		}
	}
	return u
}
