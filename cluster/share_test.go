package cluster

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"hpc/accounting"
	"hpc/cluster/api"
	"hpc/sched"
)

// sshare's and sreport's data: after a job has run, its user has raw usage,
// fair-share factors lie in [0,1], normalized shares sum to 1 among
// siblings, and the report window counts the job's CPU time.
func TestShareAndReport(t *testing.T) {
	_, cl := startOneConf(t, "PriorityType=priority/multifactor\nPriorityWeightFairshare=1000\n", func(*Options) {})
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute)
	id, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 1\n", WorkDir: dir, NTasks: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateCompleted)
	var resp *api.ShareResponse
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err = cl.Share(ctx)
		if err == nil && len(resp.Rows) > 1 && resp.Rows[0].RawUsage > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("share: %+v %v", resp, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp.Rows[0].Account != "root" || resp.Rows[0].Depth != 0 {
		t.Fatalf("first row %+v, want root", resp.Rows[0])
	}
	sums := map[string]float64{} // parent account -> NormShares of its children
	var stack []string
	ran := false
	for _, r := range resp.Rows {
		if r.Depth > 0 {
			sums[stack[r.Depth-1]] += r.NormShares
		}
		if r.User == "" {
			stack = append(stack[:r.Depth], r.Account)
		} else {
			if r.FairShare < 0 || r.FairShare > 1 {
				t.Errorf("%s/%s fair-share %v outside [0,1]", r.Account, r.User, r.FairShare)
			}
			if r.User == "root" && r.RawUsage > 1 {
				ran = true
			}
		}
	}
	if !ran {
		t.Errorf("root user has no raw usage after a 2-CPU job: %+v", resp.Rows)
	}
	for acct, s := range sums {
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("NormShares under %s sum to %v", acct, s)
		}
	}

	rep, err := cl.Report(ctx, start, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	used := 0.0
	for _, u := range rep.Usage {
		if u.User == "root" {
			used += u.CPUSeconds
		}
	}
	if used <= 1 || rep.TotalCPUs <= 0 || len(rep.Assocs) == 0 || rep.Assocs[0].Account != "root" {
		t.Errorf("report: used %v, %+v", used, rep)
	}
	if _, err := cl.Report(ctx, start, start); err == nil {
		t.Error("an empty window was accepted")
	}
}

// Fair-share's past usage counts a job that ended after the last read of
// accounting (from the state, which still holds it), and counts it once
// when accounting has it too; jobs still pending, running or that never
// started count nothing here.
func TestUsageCountsJobsJustEnded(t *testing.T) {
	acct, err := accounting.Open(filepath.Join(t.TempDir(), "acct.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer acct.Close()
	now := time.Now().Truncate(time.Second)
	ran := &api.Job{ID: 7, Account: "a", User: "u", State: api.StateCompleted,
		StartTime: now.Add(-20 * time.Second), EndTime: now.Add(-10 * time.Second),
		Alloc: []api.NodeAlloc{{Node: "n1", CPUs: 2}, {Node: "n2", CPUs: 1}}}
	never := &api.Job{ID: 8, Account: "b", User: "u", State: api.StateCancelled, EndTime: now}
	running := &api.Job{ID: 9, Account: "b", User: "u", State: api.StateRunning, StartTime: now,
		Alloc: []api.NodeAlloc{{Node: "n1", CPUs: 1}}}
	var ended []sched.Usage
	for _, j := range []*api.Job{ran, never, running} {
		if u, ok := endedUsage(j); ok {
			ended = append(ended, u)
		}
	}
	if len(ended) != 1 || ended[0].JobID != 7 || ended[0].CPUs != 3 || ended[0].Account != "a" {
		t.Fatalf("ended usage %+v, want job 7's 3 CPUs under a", ended)
	}
	v := newSchedView()
	got := v.usageFor(acct, now, 0, ended) // accounting is read: empty
	if len(got) != 1 || got[0].JobID != 7 {
		t.Fatalf("with an empty accounting, usage %+v, want job 7 from the state", got)
	}
	// Accounting now has the job; within 30 s it is not read again, and
	// after that it is, and the job counts once either way.
	if err := acct.UpsertJob(accounting.JobRecord{JobID: 7, Account: "a", User: "u", AllocCPUs: 3,
		Submit: ran.StartTime, Start: ran.StartTime, End: ran.EndTime, State: "COMPLETED"}); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{now.Add(time.Second), now.Add(31 * time.Second)} {
		got = v.usageFor(acct, at, 0, ended)
		if len(got) != 1 || got[0].JobID != 7 || got[0].CPUs != 3 {
			t.Fatalf("at +%v usage %+v, want job 7 once", at.Sub(now), got)
		}
	}
	// The cache is not grown by the state's jobs.
	if len(v.usage) != 1 {
		t.Fatalf("cached usage %+v", v.usage)
	}
	later := sched.Usage{JobID: 10, Account: "b", User: "u", CPUs: 1, Start: now, End: now.Add(time.Second)}
	if got = v.usageFor(acct, now.Add(32*time.Second), 0, append(ended, later)); len(got) != 2 || len(v.usage) != 1 {
		t.Fatalf("usage %+v (cache %+v), want jobs 7 and 10 with 7 alone cached", got, v.usage)
	}
}
