package cluster

import (
	"context"
	"net/http"
	"testing"

	"hpc/cluster/api"
)

// sdiag's counters follow what the leader did: a submission, its start
// and end, the requests by Slurm message type and by user; sdiag -r
// starts them over, for root and operators only.
func TestDiag(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	id, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := cl.Wait(ctx, id); err != nil || j.State != api.StateCompleted {
		t.Fatalf("job: %+v %v", j, err)
	}
	if _, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\n", WorkDir: "/tmp", Hold: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{id + 1}}); err != nil {
		t.Fatal(err)
	}
	st, err := cl.Diag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.JobsSubmitted != 2 || st.JobsStarted != 1 || st.JobsCompleted != 1 || st.JobsCanceled != 1 || st.JobsFailed != 0 {
		t.Errorf("job counters %+v", st)
	}
	if st.Cycles == 0 || st.CycleMax < st.CycleLast {
		t.Errorf("scheduling passes: %d, last %d, max %d", st.Cycles, st.CycleLast, st.CycleMax)
	}
	byType := map[string]api.DiagRPC{}
	for _, r := range st.ByType {
		byType[r.Name] = r
	}
	if r := byType["REQUEST_SUBMIT_BATCH_JOB"]; r.Count != 2 || r.ID != 4003 {
		t.Errorf("submits: %+v", r)
	}
	if r := byType["REQUEST_KILL_JOB"]; r.Count != 1 || r.ID != 5032 {
		t.Errorf("cancels: %+v", r)
	}
	if len(st.ByUser) != 1 || st.ByUser[0].Name != "root" || st.ByUser[0].Count < 4 {
		t.Errorf("by user: %+v", st.ByUser)
	}

	if code, _ := askAs(t, d, bobID, d.handleDiagReset, http.MethodPost, "/api/diag/reset", struct{}{}, nil); code != http.StatusForbidden {
		t.Errorf("an ordinary user's reset: %d", code)
	}
	if err := cl.DiagReset(ctx); err != nil {
		t.Fatal(err)
	}
	// Only the reset itself has been counted since.
	if st, _ := cl.Diag(ctx); st.JobsSubmitted != 0 || st.JobsCompleted != 0 || len(st.ByType) != 1 || st.ByType[0].Name != "REQUEST_STATS_INFO" {
		t.Errorf("after a reset: %+v", st)
	}
}
