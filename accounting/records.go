package accounting

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// JobRecord is the accounting row of one job. Times are zero when unknown
// (a pending job has no Start, a running one no End). State is Slurm's full
// state name ("PENDING", "RUNNING", "COMPLETED", "CANCELLED", ...); the
// "CANCELLED by N" / "CANCELLED+" decoration is left to the formatter, which
// finds the uid in CancelledBy.
type JobRecord struct {
	JobID        uint64
	Name         string
	Partition    string
	Account      string
	User         string
	Group        string
	UID          uint32
	GID          uint32
	AllocCPUs    int
	AllocNodes   int
	ReqCPUs      int
	ReqMemMB     int64
	TimeLimitMin int64
	NodeList     string // Slurm hostlist, e.g. "node[1-2]"; "" before allocation
	State        string
	ExitCode     int
	Signal       int
	CancelledBy  *uint32 // uid that cancelled the job; nil if nobody did
	WorkDir      string
	Submit       time.Time
	Start        time.Time
	End          time.Time
	QOS          string `json:",omitempty"`
	Constraints  string `json:",omitempty"` // -C/--constraint as given
	// Reason is what the job waited for last (sacct's Reason, -R), as
	// slurmctld keeps it for the database: "Dependency", "JobHeldUser"...
	// Writing "" keeps the stored reason.
	Reason string `json:",omitempty"`
	// Script and Env are the batch script and its environment, kept only
	// where AccountingStoreFlags says job_script / job_env (nil: not
	// stored). Query returns them only with Filter.Texts.
	Script *string  `json:",omitempty"`
	Env    []string `json:",omitempty"`
	// ArrayJobID and ArrayTaskID are an array task's array and index
	// (ArrayJobID 0: not an array's task).
	ArrayJobID  uint64 `json:",omitempty"`
	ArrayTaskID int    `json:",omitempty"`
}

// StepRecord is the accounting row of one job step. Step is the part after
// the dot in sacct's JobID column: "batch", "extern", "interactive" or a
// step number ("0", "1", ...).
type StepRecord struct {
	JobID     uint64
	Step      string
	Name      string
	NodeList  string
	AllocCPUs int
	NTasks    int
	State     string
	ExitCode  int
	Signal    int
	Start     time.Time
	End       time.Time
	// Usage, as sacct shows it: the step's peak memory on its busiest
	// node (MaxRSS, MaxRSSNode) and the CPU time of its processes
	// (TotalCPU = UserCPU + SystemCPU). Zero: not measured.
	MaxRSSKB   int64
	MaxRSSNode string
	UserCPU    time.Duration
	SystemCPU  time.Duration
}

// Filter selects rows for Query. Zero values select everything.
type Filter struct {
	// JobIDs keeps only these jobs (sacct -j). Empty: all jobs.
	JobIDs []uint64
	// UID keeps only jobs of this user; nil keeps every user's (sacct -a).
	UID *uint32
	// States keeps only jobs whose state is one of these (sacct -s). Full
	// names and squeue's short codes are both accepted, in any case
	// ("completed", "CD", "CANCELLED+").
	States []string
	// Partitions keeps only jobs in one of these partitions (sacct -r).
	Partitions []string
	// StartAfter and EndBefore select jobs that existed at some moment of
	// the window [StartAfter, EndBefore], as sacct -S/-E do: a job is kept
	// unless it ended before StartAfter or was submitted after EndBefore.
	// Jobs that have not ended (no End) always pass StartAfter. Zero means
	// no bound.
	StartAfter time.Time
	EndBefore  time.Time
	// JobsOnly leaves out step rows (sacct -X).
	JobsOnly bool
	// Texts also reads the jobs' stored scripts and environments (sacct
	// -B, --env-vars); without it JobRecord.Script and Env are nil.
	Texts bool
}

// Row is one line of sacct: a job (Step == nil) or one of its steps, which
// carries its job's record for the job-level columns (account, user, ...).
type Row struct {
	Job  JobRecord
	Step *StepRecord
}

// ErrUnknownJob is returned (wrapped) when a step is written for a job the
// store has no row for.
var ErrUnknownJob = errors.New("no accounting record for job")

// ErrNotDatabase is returned (wrapped) by Open when the file is not an
// SQLite database, or is an SQLite database that belongs to something else.
var ErrNotDatabase = errors.New("not an hpc accounting database")

// ErrCorrupt is returned (wrapped) when SQLite finds the database file
// damaged. The store is a projection of the Raft log: moving the file aside
// and restarting rebuilds it.
var ErrCorrupt = errors.New("accounting database is damaged")

// Step sort keys: sacct lists batch, then extern, then interactive, then the
// numbered steps in ascending order. Names outside these sort after the
// numbered steps, alphabetically.
const (
	orderBatch       = -3
	orderExtern      = -2
	orderInteractive = -1
	orderOther       = math.MaxInt64
)

// stepOrder returns the sort key of a step name, or an error when the name
// cannot be a step.
func stepOrder(step string) (int64, error) {
	switch step {
	case "batch":
		return orderBatch, nil
	case "extern":
		return orderExtern, nil
	case "interactive":
		return orderInteractive, nil
	case "":
		return 0, errors.New("empty step name")
	}
	if n, err := strconv.ParseUint(step, 10, 32); err == nil {
		return int64(n), nil
	}
	if strings.ContainsAny(step, ". \t\r\n") {
		return 0, fmt.Errorf("invalid step name %q", step)
	}
	return orderOther, nil
}

// Bounds of what time.Time.UnixNano can represent.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// toNS converts a time to the stored form: NULL for the zero time, Unix
// nanoseconds otherwise.
func toNS(t time.Time) (sql.NullInt64, error) {
	if t.IsZero() {
		return sql.NullInt64{}, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return sql.NullInt64{}, fmt.Errorf("time %s out of range", t.Format(time.RFC3339))
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}, nil
}

// fromNS is the inverse of toNS; times come back in the local time zone.
func fromNS(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64)
}

// jobKey converts a job id to SQLite's signed integer.
func jobKey(id uint64) (int64, error) {
	if id == 0 || id > math.MaxInt64 {
		return 0, fmt.Errorf("invalid job id %d", id)
	}
	return int64(id), nil
}

// shortStates maps squeue's compact codes to full state names.
var shortStates = map[string]string{
	"PD":  "PENDING",
	"R":   "RUNNING",
	"CG":  "COMPLETING",
	"CD":  "COMPLETED",
	"F":   "FAILED",
	"CA":  "CANCELLED",
	"TO":  "TIMEOUT",
	"OOM": "OUT_OF_MEMORY",
	"NF":  "NODE_FAIL",
	"PR":  "PREEMPTED",
	"S":   "SUSPENDED",
	"BF":  "BOOT_FAIL",
	"DL":  "DEADLINE",
	"RQ":  "REQUEUED",
	"RV":  "REVOKED",
}

// normalizeState turns a user's state word into the stored full name.
func normalizeState(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	s = strings.TrimSuffix(s, "+")
	if strings.HasPrefix(s, "CANCELLED ") { // "CANCELLED by 0"
		s = "CANCELLED"
	}
	if full, ok := shortStates[s]; ok {
		return full
	}
	return s
}
