package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"hpc/cluster/api"
)

// fakeLeader commits the ends sent to it, after refusing the first few
// (no leader).
type fakeLeader struct {
	mu       sync.Mutex
	refuse   int
	received []api.JobEnd
}

func (l *fakeLeader) send(_ context.Context, e api.JobEnd) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refuse > 0 {
		l.refuse--
		return errors.New("no leader")
	}
	l.received = append(l.received, e)
	return nil
}

// An end is on disk before it is reported; a daemon that dies before the
// leader committed it leaves it there, and the next one resends it and
// removes it once committed. A torn temporary file is never read.
func TestOutboxSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ob := &outbox{dir: filepath.Join(dir, "outbox"), log: log}
	run := time.Date(2026, 12, 2, 1, 0, 0, 123456789, time.UTC)
	end := api.JobEnd{JobID: 12, Node: "node2", ExitCode: 7, Run: run, Start: run, End: run.Add(3 * time.Second),
		Usage: &api.StepUsage{MaxRSSKB: 2048, MaxRSSNode: "node2", UserCPU: time.Second}}
	path, err := ob.put(end)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("entry %s: %v %v", path, fi, err)
	}
	if !ob.has(12) || ob.has(1) {
		t.Error("has")
	}

	// The daemon dies while the leader is away: nothing was committed.
	ctx, cancel := context.WithCancel(context.Background())
	dead := &fakeLeader{refuse: 1 << 30}
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	if ob.deliver(ctx, path, end, dead.send) {
		t.Fatal("delivered to no leader")
	}
	// A write torn by the crash, and a stray file.
	torn := filepath.Join(ob.dir, outboxTemp+"123")
	if err := os.WriteFile(torn, []byte(`{"job_id":13,"exit`), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * outboxTempAge)
	os.Chtimes(torn, old, old)
	fresh := filepath.Join(ob.dir, outboxTemp+"456")
	os.WriteFile(fresh, []byte(`{"job_id":14`), 0o600)
	os.WriteFile(filepath.Join(ob.dir, "15.0.json"), []byte(`{"job_id":15,`), 0o600)

	// The next daemon finds the end, whole, and nothing else.
	ob2 := &outbox{dir: ob.dir, log: log}
	ents := ob2.pending()
	if len(ents) != 1 || ents[0].path != path {
		t.Fatalf("pending after the restart: %+v", ents)
	}
	got := ents[0].end
	if !got.Run.Equal(run) || !got.End.Equal(end.End) {
		t.Errorf("times: %v %v", got.Run, got.End)
	}
	got.Run, got.Start, got.End = end.Run, end.Start, end.End
	if !reflect.DeepEqual(got, end) {
		t.Errorf("entry read back %+v, want %+v", got, end)
	}
	if _, err := os.Stat(torn); !os.IsNotExist(err) {
		t.Error("an old torn temporary file was kept")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a temporary file being written was removed")
	}

	// It is resent until committed, then removed.
	leader := &fakeLeader{refuse: 2}
	if !ob2.deliver(context.Background(), ents[0].path, ents[0].end, leader.send) {
		t.Fatal("not delivered")
	}
	if len(leader.received) != 1 || leader.received[0].ExitCode != 7 || !leader.received[0].Run.Equal(run) {
		t.Errorf("the leader got %+v", leader.received)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("a committed end is still in the outbox")
	}
	if len(ob2.pending()) != 0 || ob2.has(12) {
		t.Error("outbox not empty")
	}
}

// A second end of the same job and run replaces the first; another run's
// is an entry of its own.
func TestOutboxEntriesPerRun(t *testing.T) {
	ob := &outbox{dir: filepath.Join(t.TempDir(), "outbox"), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r1 := time.Unix(1000, 5)
	r2 := time.Unix(2000, 0)
	p1, _ := ob.put(api.JobEnd{JobID: 3, ExitCode: 1, Run: r1})
	p1b, _ := ob.put(api.JobEnd{JobID: 3, ExitCode: 2, Run: r1})
	p2, _ := ob.put(api.JobEnd{JobID: 3, ExitCode: 3, Run: r2})
	p0, _ := ob.put(api.JobEnd{JobID: 4})
	if p1 != p1b || p1 == p2 || p0 == "" {
		t.Fatalf("paths %s %s %s %s", p1, p1b, p2, p0)
	}
	ents := ob.pending()
	codes := map[string]int{}
	for _, e := range ents {
		codes[filepath.Base(e.path)] = e.end.ExitCode
	}
	want := map[string]int{"3.1000000000005.json": 2, "3.2000000000000.json": 3, "4.0.json": 0}
	if !reflect.DeepEqual(codes, want) {
		t.Errorf("entries %v, want %v", codes, want)
	}
}

// A step's end is kept as a job's is: the next daemon finds it whole and
// resends it; an entry that does not hold a step end is dropped.
func TestOutboxStepEnds(t *testing.T) {
	ob := &outbox{dir: filepath.Join(t.TempDir(), "outbox"), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rep := api.StepEndReport{JobID: 7, Step: api.Step{ID: 2, ExitCode: 3, Usage: &api.StepUsage{MaxRSSKB: 10}}}
	path := ob.stepPath(&rep)
	if err := writeWhole(path, rep); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ob.dir, "steps", "8.0.json"), []byte(`{"job_id":9,"step":{"id":0}}`), 0o600)
	ents := ob.pendingSteps()
	if len(ents) != 1 || ents[0].path != path || !reflect.DeepEqual(ents[0].rep, rep) {
		t.Fatalf("pending step ends: %+v", ents)
	}
	if _, err := os.Stat(filepath.Join(ob.dir, "steps", "8.0.json")); !os.IsNotExist(err) {
		t.Error("an entry whose name does not match its step was kept")
	}
	// Job ends and step ends do not mix.
	if len(ob.pending()) != 0 {
		t.Error("a step end read as a job end")
	}
	tries := 0
	if !ob.resend(context.Background(), path, stepName(&rep), func(context.Context) error {
		if tries++; tries < 3 {
			return errors.New("no leader")
		}
		return nil
	}) || tries != 3 {
		t.Fatalf("resend: %d tries", tries)
	}
	if len(ob.pendingSteps()) != 0 {
		t.Error("a committed step end is still in the outbox")
	}
	if !refused(&api.Error{Message: api.ErrInvalidJobID}) || refused(&api.Error{Message: api.ErrNoLeader}) || refused(errors.New("connection refused")) {
		t.Error("refused: the leader's answers and failures to reach it are told apart wrongly")
	}
}
