package accounting

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// applicationID marks the file as ours (PRAGMA application_id): "hpca".
const applicationID = 0x68706361

// busyTimeoutMS is how long a connection waits on a lock held by another
// connection (a checkpoint, another process) before giving up.
const busyTimeoutMS = 10000

// migrations[i] takes the schema from version i to version i+1 (PRAGMA
// user_version). Append only: never edit a migration that has shipped.
var migrations = []string{
	// 1: jobs and steps.
	`
CREATE TABLE jobs (
	job_id         INTEGER PRIMARY KEY CHECK (job_id > 0),
	name           TEXT    NOT NULL,
	partition_name TEXT    NOT NULL,
	account        TEXT    NOT NULL,
	user_name      TEXT    NOT NULL,
	group_name     TEXT    NOT NULL,
	uid            INTEGER NOT NULL,
	gid            INTEGER NOT NULL,
	alloc_cpus     INTEGER NOT NULL,
	alloc_nodes    INTEGER NOT NULL,
	req_cpus       INTEGER NOT NULL,
	req_mem_mb     INTEGER NOT NULL,
	time_limit_min INTEGER NOT NULL,
	node_list      TEXT    NOT NULL,
	state          TEXT    NOT NULL,
	exit_code      INTEGER NOT NULL,
	signal         INTEGER NOT NULL,
	cancelled_by   INTEGER,
	work_dir       TEXT    NOT NULL,
	submit_ns      INTEGER,
	start_ns       INTEGER,
	end_ns         INTEGER
) STRICT;
CREATE INDEX jobs_uid ON jobs (uid, job_id);
CREATE INDEX jobs_end ON jobs (end_ns);
CREATE TABLE steps (
	job_id     INTEGER NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
	step       TEXT    NOT NULL,
	step_order INTEGER NOT NULL,
	name       TEXT    NOT NULL,
	node_list  TEXT    NOT NULL,
	alloc_cpus INTEGER NOT NULL,
	ntasks     INTEGER NOT NULL,
	state      TEXT    NOT NULL,
	exit_code  INTEGER NOT NULL,
	signal     INTEGER NOT NULL,
	start_ns   INTEGER,
	end_ns     INTEGER,
	PRIMARY KEY (job_id, step)
) STRICT, WITHOUT ROWID;
CREATE INDEX steps_order ON steps (job_id, step_order, step);
`,
	// 2: what steps used (sacct's MaxRSS, MaxRSSNode, UserCPU, SystemCPU).
	`
ALTER TABLE steps ADD COLUMN max_rss_kb   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN max_rss_node TEXT    NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN user_cpu_us  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN sys_cpu_us   INTEGER NOT NULL DEFAULT 0;
`,
	// 3: what sacct selects jobs by (-q, -C, -R) and shows (QOS,
	// Constraints, Reason), and the batch script and environment where
	// slurm.conf's AccountingStoreFlags asks for them (NULL: not stored).
	`
ALTER TABLE jobs ADD COLUMN qos         TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN constraints TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN reason      TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN script      TEXT;
ALTER TABLE jobs ADD COLUMN env         TEXT;
`,
	// 4: job arrays (sacct's JobID 12_3, -j 12_3 and -j 12 for them all):
	// the array's id (0: not an array task) and the task's index.
	`
ALTER TABLE jobs ADD COLUMN array_job_id  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN array_task_id INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_array ON jobs (array_job_id) WHERE array_job_id != 0;
`,
}

// schemaVersion is the schema version this package writes.
var schemaVersion = len(migrations)

// Store is the accounting database. It is safe for concurrent use: writes go
// through a single connection, one at a time; reads use a separate pool of
// read-only connections and, thanks to WAL mode, never wait for a writer.
//
// Durability: the file runs in WAL mode with synchronous=NORMAL, so a commit
// does not wait for fsync. A crash never damages the file, but a power loss
// may drop the last commits. That is safe because the store is a projection
// of the Raft log, which is durable: on restart Raft restores its snapshot
// and replays the log after it, rewriting whatever was lost (about 6x faster
// writes than synchronous=FULL; see BenchmarkUpsertJob).
type Store struct {
	path  string
	write *sql.DB // one read-write connection
	read  *sql.DB // read-only connections
	// rows writes rows on the write connection (write.go), its upserts
	// prepared by Open.
	rows *rowWriter
}

// Open opens the accounting database at path, creating the file (and its
// directory) and the schema if needed, and upgrading an older schema. It
// fails with an error wrapping ErrNotDatabase when the file is not an SQLite
// database or belongs to another program.
func Open(path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("accounting: %q: the accounting store needs a plain file path", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("accounting: %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("accounting: %w", err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("accounting: %s is a directory, not a database file", abs)
	}
	if err := ownerGroupOnly(abs); err != nil {
		return nil, fmt.Errorf("accounting: %w", err)
	}

	s := &Store{path: abs}
	fail := func(err error) (*Store, error) {
		s.closeAll()
		return nil, describeOpenError(abs, err)
	}

	base := "file:" + uriPath(abs)
	s.write, err = sql.Open("sqlite3", fmt.Sprintf(
		"%s?_busy_timeout=%d&_foreign_keys=1&_synchronous=NORMAL&_txlock=immediate",
		base, busyTimeoutMS))
	if err != nil {
		return fail(err)
	}
	s.write.SetMaxOpenConns(1)
	s.write.SetMaxIdleConns(1)
	s.write.SetConnMaxLifetime(0)
	s.write.SetConnMaxIdleTime(0)

	if err := s.migrate(); err != nil {
		return fail(err)
	}

	s.read, err = sql.Open("sqlite3", fmt.Sprintf("%s?mode=ro&_busy_timeout=%d", base, busyTimeoutMS))
	if err != nil {
		return fail(err)
	}
	s.read.SetMaxOpenConns(max(4, runtime.NumCPU()))
	s.read.SetMaxIdleConns(max(4, runtime.NumCPU()))
	if err := s.read.Ping(); err != nil {
		return fail(err)
	}
	// The upserts are prepared now, so a schema they do not fit fails here.
	if err := s.prepareWriter(); err != nil {
		return fail(err)
	}
	return s, nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. The store must not be used afterwards.
func (s *Store) Close() error {
	if s.write != nil {
		// Let SQLite refresh its planner statistics; failure is harmless.
		_, _ = s.write.Exec("PRAGMA optimize")
	}
	return s.closeAll()
}

func (s *Store) closeAll() error {
	var errs []error
	errs = append(errs, s.rows.close())
	for _, db := range []*sql.DB{s.read, s.write} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	s.rows, s.read, s.write = nil, nil, nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("accounting: close %s: %w", s.path, err)
	}
	return nil
}

// migrate switches the file to WAL mode, checks that it is ours, and brings
// its schema up to schemaVersion.
func (s *Store) migrate() error {
	var mode string
	if err := s.write.QueryRow("PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("cannot use WAL journal mode (got %q); is the file on a network filesystem?", mode)
	}

	tx, err := s.write.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit

	var appID, version, objects int
	if err := tx.QueryRow("PRAGMA application_id").Scan(&appID); err != nil {
		return err
	}
	if err := tx.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if err := tx.QueryRow("SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		return err
	}
	switch {
	case appID == 0 && version == 0 && objects == 0:
		// A new, empty database.
	case appID == 0:
		return fmt.Errorf("%w: it is an SQLite database of another program (it has tables but no hpc schema)", ErrNotDatabase)
	case appID != applicationID:
		return fmt.Errorf("%w: it is an SQLite database of another program (application_id %#x)", ErrNotDatabase, appID)
	case version > len(migrations):
		return fmt.Errorf("schema version %d is newer than this hpc understands (%d); upgrade hpc", version, len(migrations))
	}
	if version == len(migrations) {
		return nil // up to date; the transaction only read
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return err
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.Exec(migrations[v]); err != nil {
			return fmt.Errorf("schema migration to version %d: %w", v+1, err)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return err
	}
	return tx.Commit()
}

// describeOpenError turns SQLite's terse open errors into sentences.
func describeOpenError(path string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrNotADB:
			return fmt.Errorf("accounting: %s: %w (%w); move the file aside and restart: the store is rebuilt from the Raft snapshot and log",
				path, ErrNotDatabase, err)
		case sqlite3.ErrCorrupt:
			return fmt.Errorf("accounting: %s: %w (%w); move the file aside and restart: the store is rebuilt from the Raft snapshot and log",
				path, ErrCorrupt, err)
		}
	}
	if errors.Is(err, ErrNotDatabase) {
		return fmt.Errorf("accounting: %s: %w; move the file aside or choose another path", path, err)
	}
	return fmt.Errorf("accounting: open %s: %w", path, err)
}

// classify marks SQLite's corruption errors with ErrCorrupt, so callers can
// tell a damaged file from a passing failure.
func classify(err error) error {
	var se sqlite3.Error
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	if errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// uriPath escapes a file path for an SQLite "file:" URI.
func uriPath(p string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(p)
}

// ownerGroupOnly makes the database file 0640 (others may not read every
// user's jobs), created so before SQLite opens it, so that its journal
// and WAL files, which SQLite makes with the database's mode, are too.
// An existing file is only ever tightened.
func ownerGroupOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if m := fi.Mode().Perm(); m&^0o640 != 0 {
		return f.Chmod(m & 0o640)
	}
	return nil
}
