package accounting

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// TestStepUsageRoundTrip: what a step used comes back as written.
func TestStepUsageRoundTrip(t *testing.T) {
	s := openTemp(t)
	st := step(7, "batch", "COMPLETED")
	st.MaxRSSKB, st.MaxRSSNode = 123456, "node2"
	st.UserCPU, st.SystemCPU = 1500*time.Millisecond, 250*time.Microsecond
	if err := s.UpsertBatch([]JobRecord{job(7, "ann", 1000)}, []StepRecord{st}); err != nil {
		t.Fatal(err)
	}
	rows := mustQuery(t, s, Filter{JobIDs: []uint64{7}})
	if len(rows) != 2 || rows[1].Step == nil {
		t.Fatalf("rows %+v", rows)
	}
	got := *rows[1].Step
	if got.MaxRSSKB != 123456 || got.MaxRSSNode != "node2" || got.UserCPU != 1500*time.Millisecond || got.SystemCPU != 250*time.Microsecond {
		t.Errorf("usage %+v", got)
	}
}

// TestMigrateToUsage: a database of schema 1 (before usage was kept)
// opens, keeps its rows, and its steps read as not measured.
func TestMigrateToUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acct.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migrations[0], "PRAGMA user_version = 1", "PRAGMA application_id = 1752195937",
		`INSERT INTO jobs VALUES (3, 'old', 'debug', 'root', 'ann', 'ann', 1000, 1000, 1, 1, 1, 0, 60, 'node1', 'COMPLETED', 0, 0, NULL, '/tmp', 1, 2, 3)`,
		`INSERT INTO steps VALUES (3, 'batch', 0, 'batch', 'node1', 1, 1, 'COMPLETED', 0, 0, 2, 3)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := mustQuery(t, s, Filter{})
	if len(rows) != 2 || rows[1].Step == nil || rows[1].Step.MaxRSSKB != 0 || rows[1].Step.State != "COMPLETED" {
		t.Fatalf("rows after the upgrade %+v", rows)
	}
	if v := rawPragma(t, path, "user_version"); v != int64(schemaVersion) {
		t.Errorf("user_version %v", v)
	}
}
