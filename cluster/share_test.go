package cluster

import (
	"context"
	"math"
	"testing"
	"time"

	"hpc/cluster/api"
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
