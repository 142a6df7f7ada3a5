package accounting

import (
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// The upserts update a row in place (ON CONFLICT DO UPDATE), never delete
// and re-insert it, so a job's steps survive every update of the job.
const upsertJobSQL = `
INSERT INTO jobs (job_id, name, partition_name, account, user_name, group_name,
	uid, gid, alloc_cpus, alloc_nodes, req_cpus, req_mem_mb, time_limit_min,
	node_list, state, exit_code, signal, cancelled_by, work_dir,
	submit_ns, start_ns, end_ns, qos, constraints, reason, script, env,
	array_job_id, array_task_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (job_id) DO UPDATE SET
	name = excluded.name,
	partition_name = excluded.partition_name,
	account = excluded.account,
	user_name = excluded.user_name,
	group_name = excluded.group_name,
	uid = excluded.uid,
	gid = excluded.gid,
	alloc_cpus = excluded.alloc_cpus,
	alloc_nodes = excluded.alloc_nodes,
	req_cpus = excluded.req_cpus,
	req_mem_mb = excluded.req_mem_mb,
	time_limit_min = excluded.time_limit_min,
	node_list = excluded.node_list,
	state = excluded.state,
	exit_code = excluded.exit_code,
	signal = excluded.signal,
	cancelled_by = excluded.cancelled_by,
	work_dir = excluded.work_dir,
	submit_ns = excluded.submit_ns,
	start_ns = excluded.start_ns,
	end_ns = excluded.end_ns,
	qos = excluded.qos,
	constraints = excluded.constraints,
	reason = CASE excluded.reason WHEN '' THEN jobs.reason ELSE excluded.reason END,
	script = excluded.script,
	env = excluded.env,
	array_job_id = excluded.array_job_id,
	array_task_id = excluded.array_task_id`

const upsertStepSQL = `
INSERT INTO steps (job_id, step, step_order, name, node_list, alloc_cpus,
	ntasks, state, exit_code, signal, start_ns, end_ns,
	max_rss_kb, max_rss_node, user_cpu_us, sys_cpu_us)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (job_id, step) DO UPDATE SET
	name = excluded.name,
	node_list = excluded.node_list,
	alloc_cpus = excluded.alloc_cpus,
	ntasks = excluded.ntasks,
	state = excluded.state,
	exit_code = excluded.exit_code,
	signal = excluded.signal,
	start_ns = excluded.start_ns,
	end_ns = excluded.end_ns,
	max_rss_kb = excluded.max_rss_kb,
	max_rss_node = excluded.max_rss_node,
	user_cpu_us = excluded.user_cpu_us,
	sys_cpu_us = excluded.sys_cpu_us`

// UpsertJob writes the whole record of a job: it inserts the row or, if the
// job is already there, replaces every column with r's values. Writing the
// same record twice leaves the same row, so replaying the Raft log is safe.
// The job's step rows are kept.
func (s *Store) UpsertJob(r JobRecord) error {
	return s.UpsertBatch([]JobRecord{r}, nil)
}

// UpsertStep writes the whole record of a step, like UpsertJob. The job must
// already have a row; otherwise the error wraps ErrUnknownJob.
func (s *Store) UpsertStep(r StepRecord) error {
	return s.UpsertBatch(nil, []StepRecord{r})
}

// UpsertBatch upserts jobs, then steps, in one transaction: all of them are
// written or, on error, none. It suits raft.BatchingFSM, and a job together
// with its steps (a step may belong to a job earlier in the same batch).
func (s *Store) UpsertBatch(jobs []JobRecord, steps []StepRecord) error {
	if len(jobs) == 0 && len(steps) == 0 {
		return nil
	}
	return s.inTx(func(tx *sql.Tx) error {
		return upsertAll(tx, s.upsertJob, s.upsertStep, jobs, steps)
	})
}

// Reset deletes every job and step row. The schema stays.
func (s *Store) Reset() error {
	return s.inTx(deleteAll)
}

// ReplaceAll makes the store hold exactly jobs and steps, in one transaction:
// a reader sees either the old contents or the new ones, and on error the
// old contents stay. Use it when Raft restores a snapshot.
func (s *Store) ReplaceAll(jobs []JobRecord, steps []StepRecord) error {
	return s.inTx(func(tx *sql.Tx) error {
		if err := deleteAll(tx); err != nil {
			return err
		}
		return upsertAll(tx, s.upsertJob, s.upsertStep, jobs, steps)
	})
}

func deleteAll(tx *sql.Tx) error {
	for _, table := range []string{"steps", "jobs"} {
		if _, err := tx.Exec("DELETE FROM " + table); err != nil {
			return fmt.Errorf("accounting: delete %s: %w", table, classify(err))
		}
	}
	return nil
}

// inTx runs fn in a write transaction and commits it, or rolls it back if fn
// fails.
func (s *Store) inTx(fn func(*sql.Tx) error) error {
	tx, err := s.write.Begin()
	if err != nil {
		return fmt.Errorf("accounting: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("accounting: commit: %w", classify(err))
	}
	return nil
}

func upsertAll(tx *sql.Tx, jobStmt, stepStmt *sql.Stmt, jobs []JobRecord, steps []StepRecord) error {
	if len(jobs) > 0 {
		st := tx.Stmt(jobStmt)
		defer st.Close()
		for i := range jobs {
			if err := execJob(st, &jobs[i]); err != nil {
				return err
			}
		}
	}
	if len(steps) > 0 {
		st := tx.Stmt(stepStmt)
		defer st.Close()
		for i := range steps {
			if err := execStep(st, &steps[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func execJob(st *sql.Stmt, r *JobRecord) error {
	id, err := jobKey(r.JobID)
	if err != nil {
		return fmt.Errorf("accounting: %w", err)
	}
	if r.State == "" {
		return fmt.Errorf("accounting: job %d: empty state", r.JobID)
	}
	var times [3]sql.NullInt64
	if times[0], err = toNS(r.Submit); err != nil {
		return fmt.Errorf("accounting: job %d: submit %w", r.JobID, err)
	}
	if times[1], err = toNS(r.Start); err != nil {
		return fmt.Errorf("accounting: job %d: start %w", r.JobID, err)
	}
	if times[2], err = toNS(r.End); err != nil {
		return fmt.Errorf("accounting: job %d: end %w", r.JobID, err)
	}
	var cancelledBy sql.NullInt64
	if r.CancelledBy != nil {
		cancelledBy = sql.NullInt64{Int64: int64(*r.CancelledBy), Valid: true}
	}
	var script, env sql.NullString
	if r.Script != nil {
		script = sql.NullString{String: *r.Script, Valid: true}
	}
	if r.Env != nil {
		env = sql.NullString{String: jsonArg(r.Env), Valid: true}
	}
	_, err = st.Exec(id, r.Name, r.Partition, r.Account, r.User, r.Group,
		int64(r.UID), int64(r.GID), r.AllocCPUs, r.AllocNodes, r.ReqCPUs, r.ReqMemMB, r.TimeLimitMin,
		r.NodeList, r.State, r.ExitCode, r.Signal, cancelledBy, r.WorkDir,
		times[0], times[1], times[2], r.QOS, r.Constraints, r.Reason, script, env,
		int64(r.ArrayJobID), r.ArrayTaskID)
	if err != nil {
		return fmt.Errorf("accounting: job %d: %w", r.JobID, classify(err))
	}
	return nil
}

func execStep(st *sql.Stmt, r *StepRecord) error {
	id, err := jobKey(r.JobID)
	if err != nil {
		return fmt.Errorf("accounting: step of %w", err)
	}
	order, err := stepOrder(r.Step)
	if err != nil {
		return fmt.Errorf("accounting: job %d: %w", r.JobID, err)
	}
	if r.State == "" {
		return fmt.Errorf("accounting: step %d.%s: empty state", r.JobID, r.Step)
	}
	start, err := toNS(r.Start)
	if err != nil {
		return fmt.Errorf("accounting: step %d.%s: start %w", r.JobID, r.Step, err)
	}
	end, err := toNS(r.End)
	if err != nil {
		return fmt.Errorf("accounting: step %d.%s: end %w", r.JobID, r.Step, err)
	}
	_, err = st.Exec(id, r.Step, order, r.Name, r.NodeList, r.AllocCPUs,
		r.NTasks, r.State, r.ExitCode, r.Signal, start, end,
		max(r.MaxRSSKB, 0), r.MaxRSSNode, max(r.UserCPU.Microseconds(), 0), max(r.SystemCPU.Microseconds(), 0))
	if err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintForeignKey {
			return fmt.Errorf("accounting: step %d.%s: %w %d", r.JobID, r.Step, ErrUnknownJob, r.JobID)
		}
		return fmt.Errorf("accounting: step %d.%s: %w", r.JobID, r.Step, classify(err))
	}
	return nil
}
