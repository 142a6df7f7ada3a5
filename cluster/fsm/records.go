package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"hpc/accounting"
	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/hostlist"
)

// The accounting projection: the rows of the SQLite store (sacct) that
// follow from a job record. Apply writes them after each entry. A snapshot
// carries the store's rows as they were at its index, and Restore makes the
// store hold exactly those: the rows of jobs purged from the state, and the
// reason a job waited for before it started, follow from entries a
// follower that installs the snapshot never sees.

// batchRows are the accounting rows a batch of entries writes, in order:
// each job's as the entry that touched it left the job, projected under
// the state's lock (ApplyBatch), so nothing of the job is copied to be
// written after it. The batch's rows go in one transaction.
type batchRows struct {
	jobs  []accounting.JobRecord
	steps []accounting.StepRecord
	// cfg is the configuration script and env were read from: an entry of
	// the batch may change AccountingStoreFlags for the entries after it.
	cfg         *config.Config
	script, env bool
}

// rowsPool keeps batchRows' slices from one batch to the next: growing
// them anew for each batch was about 760 bytes a job on every controller
// (BenchmarkApplySubmitBatch).
// Slices longer than maxPooledRows (a restore's, a huge batch's) are not
// kept.
var rowsPool = sync.Pool{New: func() any { return new(batchRows) }}

const maxPooledRows = 4096

func newBatchRows() *batchRows { return rowsPool.Get().(*batchRows) }

// release returns b to the pool, its rows dropped (nothing they point to
// is kept alive by it).
func (b *batchRows) release() {
	if cap(b.jobs) > maxPooledRows || cap(b.steps) > maxPooledRows {
		return
	}
	clear(b.jobs)
	clear(b.steps)
	*b = batchRows{jobs: b.jobs[:0], steps: b.steps[:0]}
	rowsPool.Put(b)
}

// add projects job j's rows under cfg: the job, its batch step (an
// allocation made by srun or salloc has none, as in Slurm) and its steps.
func (b *batchRows) add(cfg *config.Config, j *api.Job) {
	if cfg != b.cfg { // the zero flags are a nil configuration's
		b.cfg = cfg
		b.script, b.env = storeFlags(cfg)
	}
	b.jobs = append(b.jobs, storedJobRecord(j, b.script, b.env))
	b.steps = append(b.steps, jobStepRecords(j)...)
}

// storedJobRecord is jobRecord with the batch script and environment kept
// as slurm.conf's AccountingStoreFlags (job_script, job_env) asks, as
// slurmctld sends them to slurmdbd: for batch jobs only.
func storedJobRecord(j *api.Job, script, env bool) accounting.JobRecord {
	r := jobRecord(j)
	if j.Spec.Script == "" || j.Spec.Script == api.HolderScript {
		return r
	}
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

// recordAll writes the rows of every job of st, in id order: the restore
// of a snapshot written before snapshots carried the rows. Upsert, not
// replace: rows of jobs purged from the state before the snapshot stay.
func (f *FSM) recordAll(st *State) error {
	ids := make([]uint64, 0, len(st.Jobs))
	for id := range st.Jobs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	var rows batchRows
	cfg := f.Config()
	for _, id := range ids {
		rows.add(cfg, st.Jobs[id])
	}
	return f.acct.UpsertBatch(rows.jobs, rows.steps)
}

// acctLine is one JSON value of a snapshot's accounting section, which
// follows the state: a job row, then (after every job's) a step row, and
// last the counts, so that a section cut short fails to restore rather
// than losing rows. A line of none of these kinds is skipped, for a later
// version's additions.
type acctLine struct {
	Job  *accounting.JobRecord  `json:"job,omitempty"`
	Step *accounting.StepRecord `json:"step,omitempty"`
	End  *acctEnd               `json:"end,omitempty"`
}

type acctEnd struct {
	Jobs  int `json:"jobs"`
	Steps int `json:"steps"`
}

// acctRows are the rows a snapshot carries.
type acctRows struct {
	jobs  []accounting.JobRecord
	steps []accounting.StepRecord
}

// writeAcctRows writes the accounting section of a snapshot from d.
func writeAcctRows(enc *json.Encoder, d *accounting.Dump) error {
	var end acctEnd
	err := d.Jobs(func(r *accounting.JobRecord) error {
		end.Jobs++
		return enc.Encode(acctLine{Job: r})
	})
	if err == nil {
		err = d.Steps(func(r *accounting.StepRecord) error {
			end.Steps++
			return enc.Encode(acctLine{Step: r})
		})
	}
	if err != nil {
		return err
	}
	return enc.Encode(acctLine{End: &end})
}

// readAcctRows reads the accounting section that follows the state in a
// snapshot; nil, nil when there is none (a snapshot of an earlier version).
func readAcctRows(dec *json.Decoder) (*acctRows, error) {
	rows := &acctRows{}
	for first := true; ; first = false {
		var line acctLine
		err := dec.Decode(&line)
		if errors.Is(err, io.EOF) {
			if first {
				return nil, nil
			}
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, fmt.Errorf("accounting rows: %w", err)
		}
		switch {
		case line.Job != nil:
			rows.jobs = append(rows.jobs, *line.Job)
		case line.Step != nil:
			rows.steps = append(rows.steps, *line.Step)
		case line.End != nil:
			if line.End.Jobs != len(rows.jobs) || line.End.Steps != len(rows.steps) {
				return nil, fmt.Errorf("accounting rows: %d jobs and %d steps, the section says %d and %d",
					len(rows.jobs), len(rows.steps), line.End.Jobs, line.End.Steps)
			}
			return rows, nil
		}
	}
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
