package accounting

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func rawPragma(t *testing.T, path, pragma string) any {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+uriPath(path)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v any
	if err := db.QueryRow("PRAGMA " + pragma).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", pragma, err)
	}
	return v
}

func TestOpenCreatesSchema(t *testing.T) {
	// A directory that does not exist yet, with URI-special characters.
	path := filepath.Join(t.TempDir(), "state dir?#%", "acct.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got := mustQuery(t, s, Filter{}); len(got) != 0 {
		t.Fatalf("new store has rows: %v", ids(got))
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not created at %s: %v", path, err)
	}
	if v := rawPragma(t, path, "user_version"); v != int64(schemaVersion) {
		t.Errorf("user_version = %v, want %d", v, schemaVersion)
	}
	if v := rawPragma(t, path, "application_id"); v != int64(applicationID) {
		t.Errorf("application_id = %v, want %#x", v, applicationID)
	}
	if v := rawPragma(t, path, "journal_mode"); v != "wal" {
		t.Errorf("journal_mode = %v, want wal", v)
	}
	for _, table := range []string{"jobs", "steps"} {
		db, _ := sql.Open("sqlite3", "file:"+uriPath(path)+"?mode=ro")
		var n int
		err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", table).Scan(&n)
		db.Close()
		if err != nil || n != 1 {
			t.Errorf("table %s: count %d, err %v", table, n, err)
		}
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acct.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j := job(7, "alice", 1000)
	j.CancelledBy = u32(0)
	if err := s.UpsertBatch([]JobRecord{j}, []StepRecord{step(7, "batch", "RUNNING")}); err != nil {
		t.Fatal(err)
	}
	before := mustQuery(t, s, Filter{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for i := range 2 { // reopening twice must not re-run migrations
		s, err = Open(path)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		after := mustQuery(t, s, Filter{})
		if len(after) != 2 || !sameRows(before, after) {
			t.Fatalf("reopen %d: rows %v, want %v", i, after, before)
		}
		if after[0].Job.CancelledBy == nil || *after[0].Job.CancelledBy != 0 {
			t.Fatalf("CancelledBy lost: %v", after[0].Job.CancelledBy)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if v := rawPragma(t, path, "user_version"); v != int64(schemaVersion) {
		t.Errorf("user_version = %v after reopen, want %d", v, schemaVersion)
	}
}

func TestOpenRejectsNonDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "acct.db")
	garbage := []byte(strings.Repeat("this is not an sqlite database\n", 200))
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on a text file")
	}
	t.Log(err)
	if !errors.Is(err, ErrNotDatabase) {
		t.Errorf("error does not wrap ErrNotDatabase: %v", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move the file aside") {
		t.Errorf("error should name the file and say what to do: %v", err)
	}
	// The file must be left as it was.
	if b, _ := os.ReadFile(path); string(b) != string(garbage) {
		t.Error("Open modified the non-database file")
	}
}

func TestOpenRejectsOtherProgramsDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE jobs (x TEXT); INSERT INTO jobs VALUES ('mine')"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open accepted another program's database")
	}
	t.Log(err)
	if !errors.Is(err, ErrNotDatabase) || !strings.Contains(err.Error(), "another program") {
		t.Errorf("unclear error: %v", err)
	}
}

func TestOpenRejectsNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acct.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, _ := sql.Open("sqlite3", path)
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err = Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a newer schema")
	}
	if !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), "upgrade hpc") {
		t.Errorf("unclear error: %v", err)
	}
}

func TestOpenBadPaths(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"", ":memory:", "file:x.db", dir} {
		s, err := Open(p)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
	// An empty file is a new database to SQLite, and so to us.
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(empty)
	if err != nil {
		t.Fatalf("Open(empty file): %v", err)
	}
	s.Close()
}

func TestCorruptPagesGiveErrorsNotPanics(t *testing.T) {
	// From byte 100 the schema page is damaged (Open notices); from the
	// second page on only table pages are (the first read notices).
	for _, from := range []int{100, 4096} {
		t.Run(strconv.Itoa(from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "acct.db")
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var jobs []JobRecord
			for i := uint64(1); i <= 500; i++ {
				jobs = append(jobs, job(i, "alice", 1000))
			}
			if err := s.ReplaceAll(jobs, nil); err != nil {
				t.Fatal(err)
			}
			s.Close() // checkpoints the WAL into the file

			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := from; i < len(b); i++ {
				b[i] = byte(i * 7)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}

			s, err = Open(path)
			if err != nil {
				t.Log(err)
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotDatabase) {
					t.Errorf("Open: error wraps neither ErrCorrupt nor ErrNotDatabase: %v", err)
				}
				return
			}
			defer s.Close()
			_, err = s.Query(Filter{})
			if err == nil {
				t.Fatal("Query on a corrupt file returned no error")
			}
			t.Log(err)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("Query error does not wrap ErrCorrupt: %v", err)
			}
			err = s.UpsertJob(job(250, "alice", 1000))
			if err == nil {
				t.Fatal("UpsertJob on a corrupt file returned no error")
			}
			t.Log(err)
			if !errors.Is(err, ErrCorrupt) || strings.Count(err.Error(), "damaged") != 1 {
				t.Errorf("UpsertJob error: %v", err)
			}
		})
	}
}

// The database is 0640, and so are the files SQLite makes beside it; one
// made wider before is tightened.
func TestStoreFileMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "acct.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertBatch([]JobRecord{{JobID: 1, Name: "x", State: "PENDING"}}, nil); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, _ := e.Info()
		if fi.Mode().Perm()&0o007 != 0 {
			t.Errorf("%s is %v", e.Name(), fi.Mode())
		}
	}
	s.Close()
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("reopened: %v", fi.Mode())
	}
}
