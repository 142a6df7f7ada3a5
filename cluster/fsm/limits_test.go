package fsm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
)

// TestSubmitLimitCounts: a submit limit counts the jobs the state holds
// when the submit applies: those of the same batch before it, an array's
// tasks each, and no longer a job cancelled.
func TestSubmitLimitCounts(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	limit := 3
	f.mu.Lock()
	f.st.Acct.QOS["normal"].MaxSubmitJobsPerUser = &limit
	f.mu.Unlock()
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	job := func(user, array string) *api.Job {
		return &api.Job{Spec: api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Array: array},
			UID: 1000, GID: 1000, User: user, Group: user, Account: "root"}
	}
	refused := func(r Result) bool { return r.Err != nil && strings.Contains(r.Err.Error(), errAccountingPolicy) }
	out := applyAll(t, f, []Op{&SubmitBatch{Time: t0, Jobs: []BatchSubmit{
		{Job: job("ann", "")}, {Job: job("bob", "")}, {Job: job("ann", "")}, {Job: job("ann", "")}, {Job: job("ann", "")},
	}}}, 1)
	batch := out[0].(Result).Batch
	for i, want := range []bool{false, false, false, false, true} {
		if refused(batch[i]) != want {
			t.Fatalf("batch submit %d: %+v, refused: %v", i, batch[i], want)
		}
	}
	indexAgrees(t, f, "after the batch")
	if r := applyAll(t, f, []Op{&Cancel{Time: t0, JobID: batch[0].JobID, UID: 0}}, 2)[0].(Result); r.Err != nil {
		t.Fatal(r.Err)
	}
	out = applyAll(t, f, []Op{&Submit{Time: t0, Job: job("ann", "0-1")}, &Submit{Time: t0, Job: job("ann", "")}, &Submit{Time: t0, Job: job("bob", "0-1")}}, 3)
	for i, want := range []bool{true, false, false} {
		if r := out[i].(Result); refused(r) != want {
			t.Fatalf("submit %d after the cancel: %+v, refused: %v", i, r, want)
		}
	}
	indexAgrees(t, f, "after the arrays")
}

// BenchmarkSubmitWithLimits: one submit to a state of 100,000 jobs while
// a submit limit is set (a QoS's MaxSubmitJobsPerUser), on a site's
// association tree (50 accounts, 1,000 users): every controller checks it
// as it applies the entry.
func BenchmarkSubmitWithLimits(b *testing.B) {
	f := manyJobs(b, 100_000)
	f.cfg.MaxJobCount = 1 << 30
	limit := 1 << 30
	f.mu.Lock()
	f.st.Acct.QOS["normal"].MaxSubmitJobsPerUser = &limit
	for i := range 50 {
		acct := fmt.Sprint("a", i)
		f.st.Acct.Accounts[acct] = &api.Account{Name: acct}
		f.st.Acct.Assocs[acct+"/"] = &api.Assoc{Account: acct, Parent: "root", Shares: 1}
	}
	for i := range 1000 {
		u, acct := fmt.Sprint("u", i), fmt.Sprint("a", i%50)
		f.st.Acct.Users[u] = &api.AcctUser{Name: u, DefaultAccount: acct}
		f.st.Acct.Assocs[acct+"/"+u] = &api.Assoc{Account: acct, User: u, Shares: 1}
	}
	f.mu.Unlock()
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	data, err := Encode(&Submit{Time: t0, Job: &api.Job{Spec: api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true},
		UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "root"}})
	if err != nil {
		b.Fatal(err)
	}
	idx := uint64(1 << 20)
	for b.Loop() {
		idx++
		if r := f.Apply(&raft.Log{Index: idx, Data: data}).(Result); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}
