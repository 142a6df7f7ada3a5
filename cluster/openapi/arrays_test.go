package openapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
)

// TestCollapseArrays: each array's pending tasks that never started
// become the record of its lowest job id, in that record's place; jobs
// that are not such tasks stay as they are, in order, however many
// records before them were merged away.
func TestCollapseArrays(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := func(id, array uint64, tid int, state api.JobState) api.Job {
		return api.Job{ID: id, ArrayJobID: array, ArrayTaskID: tid, State: state, Spec: api.JobSpec{Name: fmt.Sprint("j", id)}}
	}
	jobs := []api.Job{
		{ID: 1, State: api.StateRunning, StartTime: started, Spec: api.JobSpec{Name: "j1"}},
		task(12, 10, 2, api.StatePending), // array 10: pending 0, 2, 3 (10's record)
		task(10, 10, 0, api.StatePending),
		{ID: 2, State: api.StatePending, Spec: api.JobSpec{Name: "j2"}},
		task(13, 10, 3, api.StatePending),
		task(11, 10, 1, api.StateCancelled),                                                           // dropped: its array still has pending tasks
		func() api.Job { j := task(14, 10, 4, api.StatePending); j.Hold = "JobHeldUser"; return j }(), // held on its own: split off
		func() api.Job { j := task(15, 10, 5, api.StateRunning); j.StartTime = started; return j }(),
		task(21, 20, 1, api.StateCancelled), // array 20: nothing pending, its cancelled tasks as one
		task(20, 20, 0, api.StateCancelled),
		{ID: 3, State: api.StatePending, Spec: api.JobSpec{Name: "j3"}},
	}
	got := CollapseArrays(jobs)
	var b strings.Builder
	for _, j := range got {
		fmt.Fprintf(&b, "%d:%s:%s:%s:%s ", j.ID, j.Spec.Name, j.State, j.ArrayTasks, j.Hold)
	}
	want := "1:j1:RUNNING:: 10:j10:PENDING:0,2-3: 2:j2:PENDING:: 14:j14:PENDING::JobHeldUser 15:j15:RUNNING:: 20:j20:CANCELLED:0-1: 3:j3:PENDING:: "
	if b.String() != want {
		t.Errorf("CollapseArrays:\n got %s\nwant %s", b.String(), want)
	}
}
