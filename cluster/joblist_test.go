package cluster

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"hpc/cluster/api"
)

// scontrol show job ID asks for one job: the list holds that job, or the
// whole array when the id is an array's or one of its tasks'; the full
// list holds every job, by id, with its count first; squeue's briefs
// are those jobs' briefs.
func TestJobListOne(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	spec := api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true, TimeLimitMin: 1}
	plain, err := cl.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Array = "0-2"
	array, err := cl.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(jobs []api.Job) []uint64 {
		var out []uint64
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	for _, c := range []struct {
		id   uint64
		want int
	}{{plain, 1}, {array, 3}, {array + 2, 3}, {array + 100, 0}} {
		jobs, err := cl.Job(ctx, c.id)
		if err != nil || len(jobs) != c.want {
			t.Errorf("job %d: %v %v, want %d jobs", c.id, ids(jobs), err, c.want)
		}
		for _, j := range jobs {
			if j.Spec.Script != "" || !j.Withheld {
				t.Errorf("job %d listed with its script", j.ID)
			}
		}
	}
	all, err := cl.Jobs(ctx)
	if err != nil || len(all) != 4 || cap(all) != 4 {
		t.Fatalf("all: %v (cap %d) %v", ids(all), cap(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID >= all[i].ID {
			t.Errorf("not by id: %v", ids(all))
		}
	}
	whole, err := cl.JobsWhole(ctx)
	if err != nil || len(whole) != 4 || whole[0].Spec.Script == "" {
		t.Errorf("whole: %d jobs, %v", len(whole), err)
	}
	// squeue's briefs: the same jobs, in the same order, each with a
	// brief's fields only (the held reason is the controller's).
	briefs, err := cl.JobsBrief(ctx)
	if err != nil || len(briefs) != len(all) {
		t.Fatalf("briefs: %v %v", ids(briefs), err)
	}
	for i, j := range briefs {
		b := all[i].Brief()
		if want := b.Job(); !reflect.DeepEqual(j, want) {
			t.Errorf("brief of job %d:\n%+v\nwant\n%+v", all[i].ID, j, want)
		}
		if j.Reason != "JobHeldUser" || j.Spec.WorkDir != "" || !j.SubmitTime.IsZero() {
			t.Errorf("brief of job %d: reason %q, work dir %q, submitted %v", j.ID, j.Reason, j.Spec.WorkDir, j.SubmitTime)
		}
	}
	// A client of the JSON briefs (brief=1) gets whole jobs in JSON.
	if code, body := askAs(t, d, rootID, d.handleJobs, http.MethodGet, "/api/jobs?brief=1", nil, nil); code != http.StatusOK || !strings.HasPrefix(body, `{"count":4,"jobs":[`) || !strings.Contains(body, `"work_dir"`) {
		t.Errorf("brief=1: %d %.80q", code, body)
	}
	code, _ := askAs(t, d, rootID, d.handleJobs, http.MethodGet, "/api/jobs?job=x", nil, nil)
	if code != http.StatusBadRequest {
		t.Errorf("job=x: %d", code)
	}
}
