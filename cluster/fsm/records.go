package fsm

import (
	"sort"
	"strings"

	"hpc/accounting"
	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/hostlist"
)

// The accounting projection: the rows of the SQLite store (sacct) that
// follow from a job record. Apply writes them after each entry; Restore
// writes them for every job of a snapshot.

// recordJob writes a job's accounting rows: the job, its batch step (an
// allocation made by srun or salloc has none, as in Slurm) and its steps.
func (f *FSM) recordJob(j *api.Job) error {
	return f.acct.UpsertBatch([]accounting.JobRecord{f.storedJobRecord(j)}, jobStepRecords(j))
}

// storedJobRecord is jobRecord with the batch script and environment kept
// as slurm.conf's AccountingStoreFlags (job_script, job_env) asks, as
// slurmctld sends them to slurmdbd: for batch jobs only.
func (f *FSM) storedJobRecord(j *api.Job) accounting.JobRecord {
	r := jobRecord(j)
	if j.Spec.Script == "" || j.Spec.Script == api.HolderScript {
		return r
	}
	script, env := storeFlags(f.Config())
	if script {
		s := j.Spec.Script
		r.Script = &s
	}
	if env {
		r.Env = append([]string{}, j.Spec.Env...)
	}
	return r
}

// storeFlags reads AccountingStoreFlags (key and values in any case).
func storeFlags(cfg *config.Config) (script, env bool) {
	if cfg == nil {
		return false, false
	}
	for k, v := range cfg.Raw {
		if !strings.EqualFold(k, "AccountingStoreFlags") {
			continue
		}
		for _, flag := range strings.Split(v, ",") {
			switch strings.ToLower(strings.TrimSpace(flag)) {
			case "job_script":
				script = true
			case "job_env":
				env = true
			}
		}
	}
	return script, env
}

// recordAll writes the rows of every job of st, in id order. Upsert, not
// replace: rows of jobs purged from the state before the snapshot stay.
func (f *FSM) recordAll(st *State) error {
	ids := make([]uint64, 0, len(st.Jobs))
	for id := range st.Jobs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	var jobs []accounting.JobRecord
	var steps []accounting.StepRecord
	for _, id := range ids {
		j := st.Jobs[id]
		jobs = append(jobs, f.storedJobRecord(j))
		steps = append(steps, jobStepRecords(j)...)
	}
	return f.acct.UpsertBatch(jobs, steps)
}

// jobStepRecords are the step rows of a job.
func jobStepRecords(j *api.Job) []accounting.StepRecord {
	var steps []accounting.StepRecord
	if !j.StartTime.IsZero() && j.Spec.Script != api.HolderScript {
		steps = append(steps, batchStepRecord(j))
	}
	return append(steps, StepRecords(j)...)
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
		ReqCPUs:      j.Spec.ReqCPUs(),
		ReqMemMB:     j.Spec.MemPerNodeMB,
		TimeLimitMin: j.Spec.TimeLimitMin,
		NodeList:     hostlist.Compress(j.NodeNames()),
		State:        string(j.State),
		WorkDir:      j.Spec.WorkDir,
		Submit:       j.SubmitTime,
		Start:        j.StartTime,
		End:          j.EndTime,
		QOS:          j.Spec.QOS,
		Constraints:  j.Spec.Constraint,
		Reason:       dbReason(j),
		ArrayJobID:   j.ArrayJobID,
		ArrayTaskID:  j.ArrayTaskID,
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

// dbReason is the reason a pending job waits for, as slurmctld keeps it
// for the database (state_reason_prev_db): Priority and Resources, every
// job's lot, are not kept. "" leaves the stored reason as it is, so a job
// that started keeps the last reason it waited for.
func dbReason(j *api.Job) string {
	if j.State != api.StatePending {
		return ""
	}
	switch j.Reason {
	case "", api.ReasonNone, "Priority", "Resources":
		return ""
	}
	return j.Reason
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
