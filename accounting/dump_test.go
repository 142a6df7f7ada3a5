package accounting

import (
	"reflect"
	"testing"
)

// A dump reads the rows as they were when it began, while writes go on,
// scripts and environments included; ReplaceAll of what it read gives a
// store with the same rows.
func TestDumpIsOneMoment(t *testing.T) {
	s := openTemp(t)
	j := job(1, "ann", 1000)
	script := "#!/bin/sh\ntrue\n"
	j.Script, j.Env, j.Reason = &script, []string{"A=1"}, "Dependency"
	if err := s.UpsertBatch([]JobRecord{j, job(2, "bob", 1001)}, []StepRecord{step(1, "batch", "RUNNING"), step(1, "0", "RUNNING")}); err != nil {
		t.Fatal(err)
	}
	want := mustQuery(t, s, Filter{Texts: true})
	d, err := s.BeginDump()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	done := job(1, "ann", 1000)
	done.State, done.End = "COMPLETED", at(9)
	if err := s.UpsertBatch([]JobRecord{done, job(3, "cy", 1002)}, []StepRecord{step(3, "batch", "RUNNING")}); err != nil {
		t.Fatal(err)
	}
	var jobs []JobRecord
	var steps []StepRecord
	if err := d.Jobs(func(r *JobRecord) error { jobs = append(jobs, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := d.Steps(func(r *StepRecord) error { steps = append(steps, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d.Close() // closing twice is harmless

	other := openTemp(t)
	if err := other.UpsertJob(job(7, "dan", 1003)); err != nil {
		t.Fatal(err)
	}
	if err := other.ReplaceAll(jobs, steps); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, other, Filter{Texts: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("the dump's rows:\n%+v\nwant\n%+v", got, want)
	}
}
