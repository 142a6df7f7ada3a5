package accounting

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// One writer (the FSM) and several readers (API handlers) at once. Each
// write puts a job and its two steps in one transaction, then later finishes
// it, so a reader must always see every job with both steps, jobs in order,
// and never fewer jobs than it saw before. Run with -race.
func TestConcurrentReadersAndWriter(t *testing.T) {
	s := openTemp(t)
	const jobs = 300
	const readers = 4

	writeErr := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); i <= jobs; i++ {
			j := job(i, "alice", 1000)
			if err := s.UpsertBatch([]JobRecord{j},
				[]StepRecord{step(i, "0", "RUNNING"), step(i, "batch", "RUNNING")}); err != nil {
				writeErr <- err
				return
			}
			if i%3 == 0 { // finish an earlier job
				k := i - 2
				fin := job(k, "alice", 1000)
				fin.State, fin.End = "COMPLETED", at(int64(k)+60)
				if err := s.UpsertJob(fin); err != nil {
					writeErr <- err
					return
				}
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := 0
			for finished := false; !finished; {
				select {
				case <-done:
					finished = true // one last read after the writer stopped
				default:
				}
				f := Filter{}
				if r%2 == 1 {
					f.UID = u32(1000)
				}
				rows, err := s.Query(f)
				if err != nil {
					errs <- err
					return
				}
				if err := checkShape(rows); err != nil {
					errs <- err
					return
				}
				n := len(rows) / 3
				if n < seen {
					errs <- fmt.Errorf("reader %d saw %d jobs after %d", r, n, seen)
					return
				}
				seen = n
				if _, err := s.UsageByUser(at(0), at(10_000)); err != nil {
					errs <- err
					return
				}
			}
			if seen != jobs {
				errs <- fmt.Errorf("reader %d: final read saw %d jobs, want %d", r, seen, jobs)
			}
		}()
	}
	wg.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case err := <-writeErr:
		t.Fatalf("writer: %v", err)
	default:
	}
}

// checkShape verifies rows are job, job.batch, job.0 triples in job order.
func checkShape(rows []Row) error {
	if len(rows)%3 != 0 {
		return fmt.Errorf("%d rows: not whole job+2 steps groups: %v", len(rows), ids(rows))
	}
	var last uint64
	for i := 0; i < len(rows); i += 3 {
		j := rows[i]
		if j.Step != nil || j.Job.JobID <= last {
			return fmt.Errorf("row %d: %v out of order", i, ids(rows[i:i+1]))
		}
		last = j.Job.JobID
		b, z := rows[i+1], rows[i+2]
		if b.Step == nil || b.Step.Step != "batch" || z.Step == nil || z.Step.Step != "0" ||
			b.Step.JobID != last || z.Step.JobID != last {
			return fmt.Errorf("job %d: steps %v", last, ids(rows[i:i+3]))
		}
	}
	return nil
}

// Two stores on one file (a second process, say) see each other's writes.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acct.db")
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.UpsertJob(job(1, "alice", 1000)); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustQuery(t, b, Filter{})); !equalStrings(got, []string{"1"}) {
		t.Errorf("second store sees %v", got)
	}
	if err := b.UpsertJob(job(2, "bob", 1001)); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustQuery(t, a, Filter{})); !equalStrings(got, []string{"1", "2"}) {
		t.Errorf("first store sees %v", got)
	}
}
