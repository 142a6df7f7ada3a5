package accounting

import (
	"context"
	"database/sql"
	"database/sql/driver"
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
	return s.writeTx(func(w *rowWriter) error {
		return w.upsertAll(jobs, steps)
	})
}

// Reset deletes every job and step row. The schema stays.
func (s *Store) Reset() error {
	return s.writeTx((*rowWriter).deleteAll)
}

// ReplaceAll makes the store hold exactly jobs and steps, in one transaction:
// a reader sees either the old contents or the new ones, and on error the
// old contents stay. Use it when Raft restores a snapshot.
func (s *Store) ReplaceAll(jobs []JobRecord, steps []StepRecord) error {
	return s.writeTx(func(w *rowWriter) error {
		if err := w.deleteAll(); err != nil {
			return err
		}
		return w.upsertAll(jobs, steps)
	})
}

// rowWriter writes rows on the write connection at the driver's level: its
// upserts are prepared once on that connection, and each row's values are
// bound from one reused argument list. Through database/sql, converting
// each row's 29 arguments was a fifth of what a follower allocated while
// submits went in, and a tenth of the time a row took (BenchmarkUpsertBatch).
// A rowWriter is used only inside writeTx, which holds the connection.
type rowWriter struct {
	conn      *sqlite3.SQLiteConn
	job, step *sqlite3.SQLiteStmt
	args      []driver.NamedValue
}

// writeTx runs fn in a write transaction (BEGIN IMMEDIATE, the write
// connection's _txlock) and commits it, or rolls it back if fn fails.
func (s *Store) writeTx(fn func(*rowWriter) error) error {
	return s.onWriter(func(w *rowWriter) error {
		tx, err := w.conn.BeginTx(context.Background(), driver.TxOptions{})
		if err != nil {
			return fmt.Errorf("accounting: %w", classify(err))
		}
		if err := fn(w); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("accounting: commit: %w", classify(err))
		}
		return nil
	})
}

// prepareWriter prepares the store's rowWriter on the write connection.
func (s *Store) prepareWriter() error {
	return s.onWriter(func(*rowWriter) error { return nil })
}

// onWriter runs fn with the store's rowWriter, holding the write
// connection.
func (s *Store) onWriter(fn func(*rowWriter) error) error {
	conn, err := s.write.Conn(context.Background())
	if err != nil {
		return fmt.Errorf("accounting: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		w, err := s.writerOn(dc)
		if err != nil {
			return err
		}
		return fn(w)
	})
}

// writerOn is the store's rowWriter on driver connection dc, its upserts
// prepared on dc the first time (again if database/sql replaced the
// connection).
func (s *Store) writerOn(dc any) (*rowWriter, error) {
	c, ok := dc.(*sqlite3.SQLiteConn)
	if !ok {
		return nil, fmt.Errorf("accounting: the write connection is a %T", dc)
	}
	if s.rows != nil && s.rows.conn == c {
		return s.rows, nil
	}
	s.rows.close()
	w := &rowWriter{conn: c}
	for _, p := range []struct {
		sql string
		to  **sqlite3.SQLiteStmt
	}{{upsertJobSQL, &w.job}, {upsertStepSQL, &w.step}} {
		st, err := c.Prepare(p.sql)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("accounting: prepare: %w", classify(err))
		}
		*p.to = st.(*sqlite3.SQLiteStmt)
	}
	s.rows = w
	return w, nil
}

// close finalizes w's statements; a nil w is nothing to close.
func (w *rowWriter) close() error {
	if w == nil {
		return nil
	}
	var errs []error
	for _, st := range []*sqlite3.SQLiteStmt{w.job, w.step} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// exec runs st with vals as its positional arguments.
func (w *rowWriter) exec(st *sqlite3.SQLiteStmt, vals ...driver.Value) error {
	w.args = w.args[:0]
	for i, v := range vals {
		w.args = append(w.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	_, err := st.ExecContext(context.Background(), w.args)
	clear(w.args) // the row's values are not kept alive by the next batch
	return err
}

func (w *rowWriter) deleteAll() error {
	for _, table := range []string{"steps", "jobs"} {
		if _, err := w.conn.ExecContext(context.Background(), "DELETE FROM "+table, nil); err != nil {
			return fmt.Errorf("accounting: delete %s: %w", table, classify(err))
		}
	}
	return nil
}

func (w *rowWriter) upsertAll(jobs []JobRecord, steps []StepRecord) error {
	for i := range jobs {
		if err := w.execJob(&jobs[i]); err != nil {
			return err
		}
	}
	for i := range steps {
		if err := w.execStep(&steps[i]); err != nil {
			return err
		}
	}
	return nil
}

// nullable is n's value, or NULL.
func nullable(n sql.NullInt64) driver.Value {
	if !n.Valid {
		return nil
	}
	return n.Int64
}

func (w *rowWriter) execJob(r *JobRecord) error {
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
	var cancelledBy, script, env driver.Value
	if r.CancelledBy != nil {
		cancelledBy = int64(*r.CancelledBy)
	}
	if r.Script != nil {
		script = *r.Script
	}
	if r.Env != nil {
		env = jsonArg(r.Env)
	}
	err = w.exec(w.job, id, r.Name, r.Partition, r.Account, r.User, r.Group,
		int64(r.UID), int64(r.GID), int64(r.AllocCPUs), int64(r.AllocNodes), int64(r.ReqCPUs), r.ReqMemMB, r.TimeLimitMin,
		r.NodeList, r.State, int64(r.ExitCode), int64(r.Signal), cancelledBy, r.WorkDir,
		nullable(times[0]), nullable(times[1]), nullable(times[2]), r.QOS, r.Constraints, r.Reason, script, env,
		int64(r.ArrayJobID), int64(r.ArrayTaskID))
	if err != nil {
		return fmt.Errorf("accounting: job %d: %w", r.JobID, classify(err))
	}
	return nil
}

func (w *rowWriter) execStep(r *StepRecord) error {
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
	err = w.exec(w.step, id, r.Step, order, r.Name, r.NodeList, int64(r.AllocCPUs),
		int64(r.NTasks), r.State, int64(r.ExitCode), int64(r.Signal), nullable(start), nullable(end),
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
