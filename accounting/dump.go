package accounting

import (
	"database/sql"
	"fmt"
	"sync"
)

// Dump reads every row of the store as it was when BeginDump returned,
// whatever is written meanwhile: a Raft snapshot carries the rows as of its
// index while the FSM goes on applying. It holds a read transaction, so
// close it.
type Dump struct {
	tx   *sql.Tx
	once sync.Once
}

// BeginDump starts a Dump.
func (s *Store) BeginDump() (*Dump, error) {
	tx, err := s.read.Begin()
	if err != nil {
		return nil, fmt.Errorf("accounting: %w", err)
	}
	// SQLite fixes what a read transaction sees at its first read, not at
	// BEGIN: read now, so that writes committed before Jobs runs stay out.
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM (SELECT 1 FROM jobs LIMIT 1)").Scan(&n); err != nil {
		_ = tx.Rollback()
		return nil, fmt.Errorf("accounting: dump: %w", classify(err))
	}
	return &Dump{tx: tx}, nil
}

// Jobs calls fn with every job row, its script and environment included,
// in id order.
func (d *Dump) Jobs(fn func(r *JobRecord) error) error {
	if err := eachJob(d.tx, "", nil, true, fn); err != nil {
		return fmt.Errorf("accounting: dump jobs: %w", classify(err))
	}
	return nil
}

// Steps calls fn with every step row, by job and in sacct's order.
func (d *Dump) Steps(fn func(r *StepRecord) error) error {
	if err := eachStep(d.tx, "", nil, fn); err != nil {
		return fmt.Errorf("accounting: dump steps: %w", classify(err))
	}
	return nil
}

// Close ends the read transaction; closing again does nothing.
func (d *Dump) Close() {
	d.once.Do(func() { _ = d.tx.Rollback() })
}
