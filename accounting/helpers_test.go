package accounting

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// openTemp opens a store in a fresh temporary directory and closes it when
// the test ends.
func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "acct.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// at returns a fixed instant, sec seconds after a base time.
func at(sec int64) time.Time { return time.Unix(1_700_000_000+sec, 0) }

func u32(v uint32) *uint32 { return &v }

// job returns a plausible record of a running job.
func job(id uint64, user string, uid uint32) JobRecord {
	return JobRecord{
		JobID: id, Name: "wrap", Partition: "debug", Account: "root",
		User: user, Group: user, UID: uid, GID: uid,
		AllocCPUs: 2, AllocNodes: 1, ReqCPUs: 2, ReqMemMB: 1024, TimeLimitMin: 60,
		NodeList: "node1", State: "RUNNING", WorkDir: "/home/" + user,
		Submit: at(int64(id)), Start: at(int64(id) + 1),
	}
}

func step(id uint64, name, state string) StepRecord {
	return StepRecord{
		JobID: id, Step: name, Name: name, NodeList: "node1",
		AllocCPUs: 1, NTasks: 1, State: state, Start: at(int64(id) + 1),
	}
}

// mustQuery runs Query and fails the test on error.
func mustQuery(t testing.TB, s *Store, f Filter) []Row {
	t.Helper()
	rows, err := s.Query(f)
	if err != nil {
		t.Fatalf("Query(%+v): %v", f, err)
	}
	return rows
}

// ids renders rows as sacct's JobID column.
func ids(rows []Row) []string {
	out := []string{}
	for _, r := range rows {
		id := strconv.FormatUint(r.Job.JobID, 10)
		if r.Step != nil {
			id += "." + r.Step.Step
		}
		out = append(out, id)
	}
	return out
}

func equalStrings(a, b []string) bool { return reflect.DeepEqual(a, b) }

// dump reads every stored column of every row straight from the file, to
// compare stores independently of Query.
func dump(t testing.TB, s *Store) [][]any {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+uriPath(s.Path())+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out [][]any
	for _, q := range []string{
		"SELECT * FROM jobs ORDER BY job_id",
		"SELECT * FROM steps ORDER BY job_id, step",
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, vals)
		}
		rows.Close()
		out = append(out, []any{"--"})
	}
	return out
}

// sameRows compares rows field by field; times compare as instants.
func sameRows(a, b []Row) bool {
	return reflect.DeepEqual(normRows(a), normRows(b))
}

func normRows(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		r.Job = normJob(r.Job)
		if r.Step != nil {
			st := normStep(*r.Step)
			r.Step = &st
		}
		out[i] = r
	}
	return out
}

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func normJob(j JobRecord) JobRecord {
	j.Submit, j.Start, j.End = normTime(j.Submit), normTime(j.Start), normTime(j.End)
	return j
}

func normStep(s StepRecord) StepRecord {
	s.Start, s.End = normTime(s.Start), normTime(s.End)
	return s
}
