package accounting

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

const jobColumns = `j.job_id, j.name, j.partition_name, j.account, j.user_name,
	j.group_name, j.uid, j.gid, j.alloc_cpus, j.alloc_nodes, j.req_cpus,
	j.req_mem_mb, j.time_limit_min, j.node_list, j.state, j.exit_code, j.signal,
	j.cancelled_by, j.work_dir, j.submit_ns, j.start_ns, j.end_ns,
	j.qos, j.constraints, j.reason, j.array_job_id, j.array_task_id`

// textColumns are the stored script and environment (Filter.Texts).
const textColumns = `, j.script, j.env`

const stepColumns = `s.job_id, s.step, s.name, s.node_list, s.alloc_cpus,
	s.ntasks, s.state, s.exit_code, s.signal, s.start_ns, s.end_ns,
	s.max_rss_kb, s.max_rss_node, s.user_cpu_us, s.sys_cpu_us`

// Query returns the rows f selects in sacct's order: by job id, each job
// followed by its steps (batch, extern, interactive, then numbered steps in
// ascending order). Filters apply to jobs; a selected job brings all its
// steps unless f.JobsOnly. The result reflects one consistent moment: a write
// committed during the query is either wholly in it or not at all.
func (s *Store) Query(f Filter) ([]Row, error) {
	where, args, err := f.sql()
	if err != nil {
		return nil, fmt.Errorf("accounting: %w", err)
	}
	tx, err := s.read.Begin()
	if err != nil {
		return nil, fmt.Errorf("accounting: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	jobs, err := queryJobs(tx, where, args, f.Texts)
	if err != nil {
		return nil, fmt.Errorf("accounting: query jobs: %w", classify(err))
	}
	var steps []StepRecord
	if !f.JobsOnly && len(jobs) > 0 {
		if steps, err = querySteps(tx, where, args); err != nil {
			return nil, fmt.Errorf("accounting: query steps: %w", classify(err))
		}
	}

	rows := make([]Row, 0, len(jobs)+len(steps))
	k := 0
	for _, j := range jobs {
		rows = append(rows, Row{Job: j})
		for k < len(steps) && steps[k].JobID == j.JobID {
			rows = append(rows, Row{Job: j, Step: &steps[k]})
			k++
		}
	}
	return rows, nil
}

// sql renders the filter as a WHERE clause over jobs aliased j.
func (f Filter) sql() (string, []any, error) {
	var conds []string
	var args []any
	if len(f.JobIDs) > 0 {
		ids := make([]int64, len(f.JobIDs))
		for i, id := range f.JobIDs {
			k, err := jobKey(id)
			if err != nil {
				return "", nil, err
			}
			ids[i] = k
		}
		// A job array's id names all its tasks, as sacct -j reads it.
		conds = append(conds, "(j.job_id IN (SELECT value FROM json_each(?)) OR j.array_job_id IN (SELECT value FROM json_each(?)))")
		args = append(args, jsonArg(ids), jsonArg(ids))
	}
	if f.UID != nil {
		conds = append(conds, "j.uid = ?")
		args = append(args, int64(*f.UID))
	}
	if len(f.States) > 0 {
		states := make([]string, len(f.States))
		for i, st := range f.States {
			states[i] = normalizeState(st)
		}
		conds = append(conds, "j.state IN (SELECT value FROM json_each(?))")
		args = append(args, jsonArg(states))
	}
	if len(f.Partitions) > 0 {
		conds = append(conds, "j.partition_name IN (SELECT value FROM json_each(?))")
		args = append(args, jsonArg(f.Partitions))
	}
	if !f.StartAfter.IsZero() {
		ns, err := toNS(f.StartAfter)
		if err != nil {
			return "", nil, fmt.Errorf("start bound: %w", err)
		}
		conds = append(conds, "(j.end_ns IS NULL OR j.end_ns >= ?)")
		args = append(args, ns)
	}
	if !f.EndBefore.IsZero() {
		ns, err := toNS(f.EndBefore)
		if err != nil {
			return "", nil, fmt.Errorf("end bound: %w", err)
		}
		conds = append(conds, "(coalesce(j.submit_ns, j.start_ns) IS NULL OR coalesce(j.submit_ns, j.start_ns) <= ?)")
		args = append(args, ns)
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// jsonArg encodes a list for json_each; lists of ints and strings always
// encode.
func jsonArg(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func queryJobs(tx *sql.Tx, where string, args []any, texts bool) ([]JobRecord, error) {
	var out []JobRecord
	err := eachJob(tx, where, args, texts, func(r *JobRecord) error {
		out = append(out, *r)
		return nil
	})
	return out, err
}

// eachJob calls fn with every job row where selects, in id order.
func eachJob(tx *sql.Tx, where string, args []any, texts bool, fn func(r *JobRecord) error) error {
	cols := jobColumns
	if texts {
		cols += textColumns
	}
	rows, err := tx.Query("SELECT "+cols+" FROM jobs j"+where+" ORDER BY j.job_id", args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	// Integers scan into int64: database/sql converts to other integer
	// types through strings.
	var (
		id, uid, gid, allocCPUs, allocNodes, reqCPUs, exitCode, signal int64
		arrayJob, arrayTask                                            int64
		cancelledBy, submit, start, end                                sql.NullInt64
		script, env                                                    sql.NullString
	)
	for rows.Next() {
		var r JobRecord
		dest := []any{&id, &r.Name, &r.Partition, &r.Account, &r.User,
			&r.Group, &uid, &gid, &allocCPUs, &allocNodes, &reqCPUs,
			&r.ReqMemMB, &r.TimeLimitMin, &r.NodeList, &r.State, &exitCode, &signal,
			&cancelledBy, &r.WorkDir, &submit, &start, &end, &r.QOS, &r.Constraints, &r.Reason,
			&arrayJob, &arrayTask}
		if texts {
			dest = append(dest, &script, &env)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if script.Valid {
			s := script.String
			r.Script = &s
		}
		if env.Valid {
			if err := json.Unmarshal([]byte(env.String), &r.Env); err != nil {
				return fmt.Errorf("job %d: stored environment: %w", id, err)
			}
			if r.Env == nil {
				r.Env = []string{}
			}
		}
		r.JobID, r.UID, r.GID = uint64(id), uint32(uid), uint32(gid)
		r.ArrayJobID, r.ArrayTaskID = uint64(arrayJob), int(arrayTask)
		r.AllocCPUs, r.AllocNodes, r.ReqCPUs = int(allocCPUs), int(allocNodes), int(reqCPUs)
		r.ExitCode, r.Signal = int(exitCode), int(signal)
		if cancelledBy.Valid {
			by := uint32(cancelledBy.Int64)
			r.CancelledBy = &by
		}
		r.Submit, r.Start, r.End = fromNS(submit), fromNS(start), fromNS(end)
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}

func querySteps(tx *sql.Tx, where string, args []any) ([]StepRecord, error) {
	var out []StepRecord
	err := eachStep(tx, where, args, func(r *StepRecord) error {
		out = append(out, *r)
		return nil
	})
	return out, err
}

// eachStep calls fn with every step row of the jobs where selects, in
// sacct's order.
func eachStep(tx *sql.Tx, where string, args []any, fn func(r *StepRecord) error) error {
	rows, err := tx.Query("SELECT "+stepColumns+" FROM steps s JOIN jobs j ON j.job_id = s.job_id"+
		where+" ORDER BY s.job_id, s.step_order, s.step", args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		id, allocCPUs, ntasks, exitCode, signal int64
		start, end                              sql.NullInt64
		userUS, sysUS                           int64
	)
	for rows.Next() {
		var r StepRecord
		if err := rows.Scan(&id, &r.Step, &r.Name, &r.NodeList, &allocCPUs,
			&ntasks, &r.State, &exitCode, &signal, &start, &end,
			&r.MaxRSSKB, &r.MaxRSSNode, &userUS, &sysUS); err != nil {
			return err
		}
		r.JobID = uint64(id)
		r.AllocCPUs, r.NTasks = int(allocCPUs), int(ntasks)
		r.ExitCode, r.Signal = int(exitCode), int(signal)
		r.Start, r.End = fromNS(start), fromNS(end)
		r.UserCPU, r.SystemCPU = time.Duration(userUS)*time.Microsecond, time.Duration(sysUS)*time.Microsecond
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// UsageByUser returns the CPU-seconds each user's jobs used between since
// and now, keyed by user name: for every job that started, AllocCPUs times
// the part of [Start, End] inside [since, now], where a job with no End yet
// (running) counts up to now. Jobs that never started count nothing.
func (s *Store) UsageByUser(since, now time.Time) (map[string]float64, error) {
	lo, err := toNS(since)
	if err != nil {
		return nil, fmt.Errorf("accounting: usage since: %w", err)
	}
	if !lo.Valid {
		lo = sql.NullInt64{Int64: minTime.UnixNano(), Valid: true}
	}
	hi, err := toNS(now)
	if err != nil || !hi.Valid {
		return nil, fmt.Errorf("accounting: usage: invalid end time %v", now)
	}
	rows, err := s.read.Query(`
SELECT user_name,
	sum(alloc_cpus * ((min(coalesce(end_ns, ?2), ?2) - max(start_ns, ?1)) / 1e9))
FROM jobs
WHERE start_ns IS NOT NULL AND alloc_cpus > 0
	AND start_ns < ?2 AND coalesce(end_ns, ?2) > ?1
GROUP BY user_name`, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("accounting: usage: %w", classify(err))
	}
	defer rows.Close()
	out := make(map[string]float64)
	for rows.Next() {
		var user string
		var cpuSec float64
		if err := rows.Scan(&user, &cpuSec); err != nil {
			return nil, fmt.Errorf("accounting: usage: %w", classify(err))
		}
		out[user] = cpuSec
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("accounting: usage: %w", classify(err))
	}
	return out, nil
}
