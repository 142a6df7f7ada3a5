package fsm

import (
	"hpc/accounting"
	"hpc/cluster/api"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stepLog is a job that runs, two steps (one of them cancelled by its job's
// end), and the job's end.
func stepLog() []Op {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	s := func(name string) api.Step {
		return api.Step{Name: name, Nodes: []string{"node1", "node2"}, Tasks: []int{2, 1}, CPUsPerTask: 1, Launcher: "node1"}
	}
	end := func(id uint32, code, sig int, hint api.JobState) api.Step {
		return api.Step{ID: id, ExitCode: code, Signal: sig, State: hint}
	}
	return []Op{
		&Submit{Time: t0, Job: &api.Job{Spec: api.JobSpec{Name: "j", Partition: "debug", Script: "#!/bin/sh\n"}, UID: 1000, User: "ann"}},
		&Start{Time: t0.Add(time.Second), Starts: []JobStart{{JobID: 1, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 2}, {Node: "node2", CPUs: 2}}}}},
		&StepStart{Time: t0.Add(2 * time.Second), JobID: 1, Step: s("hostname")},
		&StepEnd{Time: t0.Add(3 * time.Second), JobID: 1, Step: end(0, 3, 0, "")},
		&StepEnd{Time: t0.Add(4 * time.Second), JobID: 1, Step: end(0, 0, 0, "")}, // stale: ignored
		&StepStart{Time: t0.Add(5 * time.Second), JobID: 1, Step: s("sleep")},
		&StepStart{Time: t0.Add(5 * time.Second), JobID: 1, Step: s("python")},
		&StepEnd{Time: t0.Add(6 * time.Second), JobID: 1, Step: end(1, 0, 9, api.StateCancelled)},
		&StepEnd{Time: t0.Add(6 * time.Second), JobID: 1, Step: end(2, 0, 9, api.StateOutOfMemory)},
		&End{Time: t0.Add(7 * time.Second), End: api.JobEnd{JobID: 1, Node: "node1"}},
		&StepStart{Time: t0.Add(8 * time.Second), JobID: 1, Step: s("late")}, // refused: the job ended
		&StepStart{Time: t0.Add(8 * time.Second), JobID: 99, Step: s("nojob")},
	}
}

func TestFSMSteps(t *testing.T) {
	f, st := testFSM(t, testConfig(t))
	log := stepLog()
	res := applyAll(t, f, log[:3], 1)
	if r := res[2].(Result); r.Err != nil || r.JobID != 0 {
		t.Fatalf("first step: %+v", r)
	}
	j, _ := f.Job(1)
	before := j.Steps // a reader's shallow copy must never change under it
	res = applyAll(t, f, log[3:], 4)
	if !reflect.DeepEqual(before, []api.Step{{ID: 0, Name: "hostname", Nodes: []string{"node1", "node2"}, Tasks: []int{2, 1},
		CPUsPerTask: 1, Launcher: "node1", State: api.StateRunning, Start: log[2].(*StepStart).Time}}) {
		t.Errorf("a copy taken before the end changed: %+v", before)
	}
	if r := res[2].(Result); r.JobID != 1 || r.Err != nil {
		t.Errorf("second step: %+v", r)
	}
	if r := res[7].(Result); r.Err == nil || r.Err.Error() != api.ErrAlreadyDone {
		t.Errorf("step of an ended job: %+v", r)
	}
	if r := res[8].(Result); r.Err == nil || r.Err.Error() != api.ErrInvalidJobID {
		t.Errorf("step of no job: %+v", r)
	}
	j, _ = f.Job(1)
	got := map[uint32]string{}
	for _, s := range j.Steps {
		got[s.ID] = string(s.State)
	}
	want := map[uint32]string{0: "FAILED", 1: "CANCELLED", 2: "OUT_OF_MEMORY"}
	if !reflect.DeepEqual(got, want) || j.NextStepID != 3 {
		t.Errorf("steps %v (next %d), want %v", got, j.NextStepID, want)
	}
	if j.Steps[0].ExitCode != 3 || !j.Steps[0].End.Equal(log[3].(*StepEnd).Time) {
		t.Errorf("step 0 ended %+v", j.Steps[0])
	}
	// Accounting: sacct's 1.0, 1.1, 1.2 rows.
	rows, err := st.Query(accounting.Filter{JobIDs: []uint64{1}})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range rows {
		if r.Step != nil && r.Step.Step != "batch" {
			s := r.Step
			lines = append(lines, strings.Join([]string{s.Step, s.Name, s.NodeList, s.State, strconv.Itoa(s.ExitCode), strconv.Itoa(s.Signal), strconv.Itoa(s.NTasks), strconv.Itoa(s.AllocCPUs)}, "|"))
		}
	}
	wantRows := []string{"0|hostname|node[1-2]|FAILED|3|0|3|3", "1|sleep|node[1-2]|CANCELLED|0|9|3|3", "2|python|node[1-2]|OUT_OF_MEMORY|0|9|3|3"}
	if !reflect.DeepEqual(lines, wantRows) {
		t.Errorf("accounting rows %q, want %q", lines, wantRows)
	}
	// Replaying the log on another controller gives the same steps.
	f2, _ := testFSM(t, testConfig(t))
	applyAll(t, f2, log, 1)
	j2, _ := f2.Job(1)
	if !reflect.DeepEqual(j.Steps, j2.Steps) {
		t.Errorf("replay differs:\n%+v\n%+v", j.Steps, j2.Steps)
	}
}

func TestCloseSteps(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := &api.Job{ID: 3, Steps: []api.Step{{ID: 0, State: api.StateCompleted}, {ID: 1, State: api.StateRunning, Nodes: []string{"node1"}, Tasks: []int{1}}}}
	old := j.Steps
	recs := CloseSteps(j, now)
	if len(recs) != 1 || recs[0].Step != "1" || recs[0].State != "CANCELLED" || recs[0].Signal != 9 {
		t.Errorf("records %+v", recs)
	}
	if j.Steps[1].State != api.StateCancelled || !j.Steps[1].End.Equal(now) || old[1].State != api.StateRunning {
		t.Errorf("steps %+v, old %+v", j.Steps, old)
	}
	if len(StepRecords(j)) != 2 {
		t.Errorf("stepRecords %+v", StepRecords(j))
	}
}

// Exclusive steps (srun --exclusive) hold their CPUs: one planned against
// a state another such step has changed since is refused as busy, and the
// CPUs come back when a step ends.
func TestExclusiveStepCPUs(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	one := func(node string) api.Step {
		return api.Step{Name: "x", Nodes: []string{node}, Tasks: []int{1}, CPUsPerTask: 1, Launcher: "node1", Exclusive: true}
	}
	log := []Op{
		&Submit{Time: t0, Job: &api.Job{Spec: api.JobSpec{Name: "j", Partition: "debug", Script: "#!/bin/sh\n"}, UID: 1000, User: "ann"}},
		&Start{Time: t0, Starts: []JobStart{{JobID: 1, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1}, {Node: "node2", CPUs: 1}}}}},
		&StepStart{Time: t0, JobID: 1, Step: one("node1")},
		&StepStart{Time: t0, JobID: 1, Step: one("node1")}, // node1's one CPU is held
		&StepStart{Time: t0, JobID: 1, Step: one("node2")},
		&StepEnd{Time: t0, JobID: 1, Step: api.Step{ID: 0}},
		&StepStart{Time: t0, JobID: 1, Step: one("node1")}, // free again
	}
	res := applyAll(t, f, log, 1)
	for i, want := range []string{"", "", "", api.ErrNodesBusy, "", "", ""} {
		r := res[i].(Result)
		if got := ""; r.Err != nil {
			got = r.Err.Error()
			if got != want {
				t.Errorf("entry %d: %q, want %q", i, got, want)
			}
		} else if want != "" {
			t.Errorf("entry %d: accepted, want %q", i, want)
		}
	}
}
