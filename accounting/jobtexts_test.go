package accounting

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"
)

// TestJobSelectorsAndTexts: QOS, constraints and reason come back as
// written; the script and environment only with Filter.Texts, and nil
// where they were not stored.
func TestJobSelectorsAndTexts(t *testing.T) {
	s := openTemp(t)
	a := job(7, "ann", 1000)
	a.QOS, a.Constraints, a.Reason = "high", "gpu&fast", "Resources"
	script := "#!/bin/sh\necho hi\n"
	a.Script, a.Env = &script, []string{"A=1", "B=two words"}
	b := job(8, "bob", 1001) // stored without script and environment
	if err := s.UpsertBatch([]JobRecord{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	rows := mustQuery(t, s, Filter{})
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	got := rows[0].Job
	if got.QOS != "high" || got.Constraints != "gpu&fast" || got.Reason != "Resources" {
		t.Errorf("selectors %+v", got)
	}
	if got.Script != nil || got.Env != nil {
		t.Errorf("texts without Filter.Texts: %v %v", got.Script, got.Env)
	}
	rows = mustQuery(t, s, Filter{Texts: true})
	if got := rows[0].Job; got.Script == nil || *got.Script != script || !reflect.DeepEqual(got.Env, a.Env) {
		t.Errorf("texts %v %v", got.Script, got.Env)
	}
	if got := rows[1].Job; got.Script != nil || got.Env != nil {
		t.Errorf("job 8 has texts %v %v", got.Script, got.Env)
	}
	// An update without texts (the flag turned off) clears them; an
	// empty reason keeps the stored one.
	a.Reason = ""
	a.Script, a.Env = nil, nil
	if err := s.UpsertJob(a); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, s, Filter{Texts: true})[0].Job; got.Script != nil || got.Env != nil || got.Reason != "Resources" {
		t.Errorf("texts after update %v %v", got.Script, got.Env)
	}
}

// TestMigrateToSelectors: a database of schema 2 opens, keeps its rows,
// reads empty QOS, constraints and reason and no texts, and takes new
// rows with them.
func TestMigrateToSelectors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acct.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migrations[0], migrations[1], "PRAGMA user_version = 2", "PRAGMA application_id = 1752195937",
		`INSERT INTO jobs VALUES (3, 'old', 'debug', 'root', 'ann', 'ann', 1000, 1000, 1, 1, 1, 0, 60, 'node1', 'COMPLETED', 0, 0, NULL, '/tmp', 1, 2, 3)`,
		`INSERT INTO steps VALUES (3, 'batch', 0, 'batch', 'node1', 1, 1, 'COMPLETED', 0, 0, 2, 3, 10, 'node1', 0, 0)`} {
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
	rows := mustQuery(t, s, Filter{Texts: true})
	if len(rows) != 2 || rows[0].Job.Name != "old" || rows[0].Job.QOS != "" || rows[0].Job.Script != nil ||
		rows[1].Step == nil || rows[1].Step.MaxRSSKB != 10 {
		t.Fatalf("rows after the upgrade %+v", rows)
	}
	if v := rawPragma(t, path, "user_version"); v != int64(schemaVersion) {
		t.Errorf("user_version %v", v)
	}
	j := job(4, "ann", 1000)
	j.QOS = "normal"
	if err := s.UpsertJob(j); err != nil {
		t.Fatal(err)
	}
	if rows := mustQuery(t, s, Filter{JobIDs: []uint64{4}}); len(rows) != 1 || rows[0].Job.QOS != "normal" {
		t.Errorf("new row %+v", rows)
	}
}
