package fsm

import (
	"bytes"
	"io"
	"log/slog"
	"testing"
	"unsafe"

	"hpc/cluster/api"
)

// Jobs submitted from one shell hold one copy of their equal environment
// variables and script, through the log and through a snapshot restored
// on another controller; a job's own values stay its own.
func TestSubmittedJobsShareEqualStrings(t *testing.T) {
	f := manyJobs(t, 3)
	shared := func(f *FSM, what string) {
		t.Helper()
		var jobs []*api.Job
		f.View(func(st *State) {
			for _, j := range st.Jobs {
				jobs = append(jobs, j)
			}
		})
		if len(jobs) < 2 {
			t.Fatalf("%s: %d jobs", what, len(jobs))
		}
		a, b := jobs[0].Spec, jobs[1].Spec
		if len(a.Env) == 0 || unsafe.StringData(a.Env[3]) != unsafe.StringData(b.Env[3]) ||
			unsafe.StringData(a.Script) != unsafe.StringData(b.Script) {
			t.Errorf("%s: two jobs' equal environment and script are separate copies", what)
		}
		if a.Env[3] != b.Env[3] || a.Env[3] == a.Env[4] {
			t.Errorf("%s: environment %q", what, a.Env[:5])
		}
	}
	shared(f, "applied")
	var buf bytes.Buffer
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&bufSink{&buf}); err != nil {
		t.Fatal(err)
	}
	g := New(testConfig(t), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	shared(g, "restored")
}

type bufSink struct{ *bytes.Buffer }

func (bufSink) Close() error  { return nil }
func (bufSink) ID() string    { return "buf" }
func (bufSink) Cancel() error { return nil }
