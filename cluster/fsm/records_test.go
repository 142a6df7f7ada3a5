package fsm

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/accounting"
	"hpc/cluster/api"
)

// TestAccountingStoreFlags: the batch script and environment reach the
// accounting store only where AccountingStoreFlags asks for them; QOS,
// constraints and the reason a job waited for always do.
func TestAccountingStoreFlags(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	spec := api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp",
		QOS: "normal", Constraint: "fast", Env: []string{"A=1"}}
	log := []Op{
		&Submit{Time: t0, Job: &api.Job{Spec: spec, UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "ann"}},
	}
	for _, tc := range []struct {
		flags       string
		script, env bool
	}{{"", false, false}, {"job_script", true, false}, {"Job_Env,job_comment", false, true}, {"job_env,job_script", true, true}} {
		cfg := testConfig(t)
		if tc.flags != "" {
			cfg.Raw["accountingstoreflags"] = tc.flags
		}
		f, st := testFSM(t, cfg)
		applyAll(t, f, log, 1)
		rows, err := st.Query(accounting.Filter{Texts: true})
		if err != nil || len(rows) != 1 {
			t.Fatalf("%q: rows %+v %v", tc.flags, rows, err)
		}
		j := rows[0].Job
		if (j.Script != nil) != tc.script || (j.Script != nil && *j.Script != spec.Script) {
			t.Errorf("%q: script %v", tc.flags, j.Script)
		}
		if (j.Env != nil) != tc.env || (j.Env != nil && !reflect.DeepEqual(j.Env, spec.Env)) {
			t.Errorf("%q: env %v", tc.flags, j.Env)
		}
		if j.QOS != "normal" || j.Constraints != "fast" || j.Reason != "" {
			t.Errorf("%q: qos %q constraints %q reason %q", tc.flags, j.QOS, j.Constraints, j.Reason)
		}
	}
}

// TestDBReason: the reason kept for sacct is a pending job's, except
// Priority and Resources; "" keeps what the store has.
func TestDBReason(t *testing.T) {
	for _, tc := range []struct {
		state  api.JobState
		reason string
		want   string
	}{
		{api.StatePending, "BeginTime", "BeginTime"},
		{api.StatePending, "Dependency", "Dependency"},
		{api.StatePending, "Priority", ""},
		{api.StatePending, "Resources", ""},
		{api.StatePending, api.ReasonNone, ""},
		{api.StateRunning, api.ReasonNone, ""},
		{api.StateCompleted, "NodeDown", ""},
	} {
		j := &api.Job{State: tc.state, Reason: tc.reason}
		if got := jobRecord(j).Reason; got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.state, tc.reason, got, tc.want)
		}
	}
}

// BenchmarkApplySubmitBatch: a batch of 256 held submits applied with its
// accounting rows written, as every controller applies a burst; its bytes
// are garbage every controller collects.
func BenchmarkApplySubmitBatch(b *testing.B) {
	cfg := testConfig(&testing.T{})
	cfg.MaxJobCount = 1 << 30
	f, _ := testFSM(&testing.T{}, cfg)
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	subs := make([]BatchSubmit, 256)
	for i := range subs {
		subs[i].Job = &api.Job{Spec: api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true},
			UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "root"}
	}
	data, err := Encode(&SubmitBatch{Time: t0, Jobs: subs})
	if err != nil {
		b.Fatal(err)
	}
	idx := uint64(1)
	b.ReportAllocs()
	for b.Loop() {
		idx++
		if r := f.Apply(&raft.Log{Index: idx, Data: data}).(Result); r.Err != nil || len(r.Batch) != len(subs) {
			b.Fatalf("%+v", r)
		}
	}
}
