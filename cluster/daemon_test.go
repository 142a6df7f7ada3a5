package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/peer"
	"hpc/exec"
)

func TestMain(m *testing.M) {
	exec.InitIfChild()
	os.Exit(m.Run())
}

// testConfig is the config of a 3-node lab.
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.LabConfig(3)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startOne starts a real one-node cluster (Raft, gossip, API, plain-process
// agent) on a loopback address of its own.
func startOne(t testing.TB) (*Daemon, *api.Client) {
	t.Helper()
	return startOneWith(t, func(*Options) {})
}

func startOneWith(t testing.TB, edit func(*Options)) (*Daemon, *api.Client) {
	t.Helper()
	return startOneConf(t, "", edit)
}

// startOneConf starts a one-node cluster whose config has extra lines.
func startOneConf(t testing.TB, extra string, edit func(*Options)) (*Daemon, *api.Client) {
	t.Helper()
	text, err := config.Lab(1)
	if err != nil {
		t.Fatal(err)
	}
	// A loopback address of its own, so tests running side by side (other
	// packages, other checkouts) never meet.
	addr := fmt.Sprintf("127.66.%d.", 1+rand.IntN(250))
	text = strings.ReplaceAll(text, "127.0.1.", addr) + "\nHpcApiPort=26817\nHpcRaftPort=26818\nHpcGossipPort=26819\n" + extra
	cfg, err := config.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := Options{
		Name: "node1", Config: cfg, Dir: dir, Key: []byte("0123456789abcdef0123456789abcdef"),
		Socket: filepath.Join(dir, "s"), ForcePlain: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	edit(&o)
	d, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Shutdown)
	cl := api.NewClient(filepath.Join(dir, "s"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := cl.Nodes(context.Background())
		if err == nil && resp.Nodes[0].State == api.NodeIdle {
			testUserAssoc(t, d)
			return d, cl
		}
		if time.Now().After(deadline) {
			t.Fatalf("node never came up: %v %+v", err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDaemonSurvivesGarbage(t *testing.T) {
	d, cl := startOne(t)
	addr := d.addr(d.cfg.APIPort)

	// Raw bytes that are not HTTP at all.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("\x00\x01\x02 this is not http\r\n\r\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.ReadAll(c)
	c.Close()

	// Well-formed HTTP without TLS reaches the web routes only: the API
	// is not among them.
	resp, err := http.Post("http://"+addr+"/api/submit", "application/json", strings.NewReader(`{"spec":{"script":"#!/bin/sh\ntrue\n","work_dir":"/tmp"}}`))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
			t.Errorf("plain HTTP to the API port: %s", resp.Status)
		}
	}
	// A node of this cluster whose request is signed with another key
	// cannot pose as a user either.
	body := []byte(`{"job_id":1}`)
	req, _ := http.NewRequest(http.MethodPost, peer.URL(addr, "/api/cancel"), bytes.NewReader(body))
	peer.Sign([]byte("some other cluster's key, 32 by!"), req, peer.Identity{UID: 0}, body)
	if resp, err := d.peers.HTTP.Do(req); err != nil {
		t.Errorf("request signed with another key: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("request signed with another key: %s", resp.Status)
		}
	}

	// Garbage JSON from a local client: a clear error, nothing committed.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", cl.Socket)
	}}}
	resp, err = hc.Post("http://x/api/submit", "application/json", strings.NewReader("{{{ not json"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), api.ErrUnexpectedMessage) {
		t.Errorf("garbage submit: %s %s", resp.Status, b)
	}
	if jobs, err := cl.Jobs(context.Background()); err != nil || len(jobs) != 0 {
		t.Errorf("jobs after garbage: %v %v", jobs, err)
	}

	// The node still works: a real job runs to completion.
	id, err := cl.Submit(context.Background(), api.JobSpec{Script: "#!/bin/sh\nexit 0\n", WorkDir: t.TempDir()})
	if err != nil || id != 1 {
		t.Fatalf("submit after garbage: %d %v", id, err)
	}
	j, err := cl.Wait(context.Background(), id)
	if err != nil || j.State != api.StateCompleted {
		t.Fatalf("job: %+v %v", j, err)
	}
	_, err = cl.Submit(context.Background(), api.JobSpec{Partition: "nosuch", Script: "#!/bin/sh\n", WorkDir: "/tmp"})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Message != api.ErrInvalidPartition {
		t.Errorf("unknown partition: %v", err)
	}
}

// A job past its time limit is killed and ends TIMEOUT. The controller's
// clock is moved forward instead of waiting a real minute.
func TestTimeLimit(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	_, cl := startOneWith(t, func(o *Options) { o.Clock = clock })
	ctx := context.Background()
	id, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 300\n", WorkDir: t.TempDir(), TimeLimitMin: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 300\n", WorkDir: t.TempDir(), TimeLimitMin: 10})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateRunning)
	waitJob(t, cl, other, api.StateRunning)
	skew.Store(int64(90 * time.Second))
	j := waitJob(t, cl, id, api.StateTimeout)
	if j.EndTime.Sub(j.StartTime) < time.Minute {
		t.Errorf("ended %v after start", j.EndTime.Sub(j.StartTime))
	}
	if o := waitJob(t, cl, other, api.StateRunning); o.TimedOut {
		t.Error("a job within its limit was marked timed out")
	}
	cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{other}})
	waitJob(t, cl, other, api.StateCancelled)
}

func waitJob(t *testing.T, cl *api.Client, id uint64, want api.JobState) api.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		jobs, err := cl.Jobs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.ID == id && j.State == want {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d never reached %s: %+v", id, want, jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stopping a daemon whose steps are plain processes (no containers) stops
// them too: nothing could re-attach to them, and left running they would
// be lost.
func TestStopPlainStopsSteps(t *testing.T) {
	d, cl := startOne(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	id, err := cl.Submit(context.Background(), api.JobSpec{WorkDir: dir, Script: "#!/bin/sh\necho $$ > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "\nexec sleep 300\n"})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, id, api.StateRunning)
	var pid int
	for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never started")
		}
	}
	d.Stop()
	for deadline := time.Now().Add(20 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("a plain step outlived its stopped daemon")
		}
	}
}

// Job lists leave out batch scripts and environments, which squeue and
// sinfo never print and which are most of a job's size; a caller who may
// see them asks for whole jobs.
func TestJobListsLeaveOutScripts(t *testing.T) {
	_, cl := startOne(t)
	ctx := context.Background()
	id, err := cl.Submit(ctx, api.JobSpec{WorkDir: t.TempDir(), Script: "#!/bin/sh\ntrue\n", Env: []string{"A=1"}, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	brief, err := cl.Jobs(ctx)
	if err != nil || len(brief) != 1 || brief[0].ID != id {
		t.Fatalf("jobs: %+v %v", brief, err)
	}
	if j := brief[0]; j.Spec.Script != "" || j.Spec.Env != nil || !j.Withheld || !j.HasScript() {
		t.Errorf("a job list carries the script or environment: %+v", j.Spec)
	}
	whole, err := cl.JobsWhole(ctx)
	if err != nil || len(whole) != 1 || whole[0].Spec.Script != "#!/bin/sh\ntrue\n" || len(whole[0].Spec.Env) == 0 || whole[0].Withheld {
		t.Errorf("whole jobs: %+v %v", whole, err)
	}
}

// Profiles are served to root on the local socket, to no one else.
func TestProfilesRootOnly(t *testing.T) {
	for _, c := range []struct {
		id   peer.Identity
		tls  bool
		want int
	}{
		{peer.Identity{UID: 0}, false, http.StatusOK},
		{peer.Identity{UID: 1000}, false, http.StatusForbidden},
		{peer.Identity{Node: true}, false, http.StatusForbidden},
		{peer.Identity{UID: 0}, true, http.StatusForbidden}, // root on another node
	} {
		req := httptest.NewRequest(http.MethodGet, "/debug/pprof/goroutine", nil)
		req.SetPathValue("name", "goroutine")
		req = req.WithContext(peer.WithIdentity(req.Context(), c.id))
		if c.tls {
			req.TLS = &tls.ConnectionState{}
		}
		rec := httptest.NewRecorder()
		rootOnly(namedProfile)(rec, req)
		if rec.Code != c.want {
			t.Errorf("%+v tls=%v: %d, want %d", c.id, c.tls, rec.Code, c.want)
		}
	}
}

// An execution trace is served to root for the seconds asked; a second one
// asked while it runs is refused (the runtime records one at a time).
func TestExecTraceRootOnly(t *testing.T) {
	get := func(id peer.Identity) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/debug/pprof/trace?seconds=1", nil)
		req = req.WithContext(peer.WithIdentity(req.Context(), id))
		rec := httptest.NewRecorder()
		rootOnly(execTrace)(rec, req)
		return rec
	}
	if rec := get(peer.Identity{UID: 1000}); rec.Code != http.StatusForbidden {
		t.Errorf("uid 1000: %d, want %d", rec.Code, http.StatusForbidden)
	}
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- get(peer.Identity{UID: 0}) }()
	deadline := time.Now().Add(5 * time.Second)
	for !trace.IsEnabled() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if rec := get(peer.Identity{UID: 0}); rec.Code != http.StatusConflict {
		t.Errorf("a second trace while one runs: %d, want %d", rec.Code, http.StatusConflict)
	}
	rec := <-first
	// A trace begins with its header, "go 1.N trace".
	if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.HasPrefix(body, "go 1.") || len(body) < 1000 {
		t.Errorf("trace: %d, %d bytes, starting %.16q", rec.Code, len(body), body)
	}
}

// One cancel request for many jobs (a filtered scancel) cancels each and
// answers each in the order asked, an unknown id with its error.
func TestCancelManyInOneRequest(t *testing.T) {
	_, cl := startOne(t)
	ctx := context.Background()
	var ids []uint64
	for range 40 {
		id, err := cl.Submit(ctx, api.JobSpec{WorkDir: t.TempDir(), Script: "#!/bin/sh\ntrue\n", Hold: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	ask := append([]uint64{9999}, ids...)
	res, err := cl.Cancel(ctx, api.CancelRequest{JobIDs: ask})
	if err != nil || len(res) != len(ask) {
		t.Fatalf("cancel: %d results, %v", len(res), err)
	}
	for i, r := range res {
		want := ""
		if i == 0 {
			want = api.ErrInvalidJobID
		}
		if r.JobID != ask[i] || r.Error != want {
			t.Errorf("result %d: %+v, want job %d error %q", i, r, ask[i], want)
		}
	}
	jobs, _ := cl.Jobs(ctx)
	for _, j := range jobs {
		if j.State != api.StateCancelled {
			t.Errorf("job %d %s after the cancel", j.ID, j.State)
		}
	}
}

// An agent-only node forwards to a controller that answered lately; one
// that did not is passed over while another is live, and used when none
// is.
func TestAgentForwardsToAnsweringController(t *testing.T) {
	d := &Daemon{}
	meta := func(api string) []byte { b, _ := json.Marshal(nodeMeta{API: api, Ctl: true}); return b }
	d.memberCopy = map[string]memberlist.Node{
		"ctl1":  {Name: "ctl1", Meta: meta("10.0.0.1:7817")},
		"ctl2":  {Name: "ctl2", Meta: meta("10.0.0.2:7817")},
		"node4": {Name: "node4", Meta: []byte(`{"api":"10.0.0.4:7817"}`)},
	}
	if got, _ := d.leaderAPI(); got != "10.0.0.1:7817" {
		t.Fatalf("first choice %q", got)
	}
	d.ctlFailed("10.0.0.1:7817")
	if got, _ := d.leaderAPI(); got != "10.0.0.2:7817" {
		t.Errorf("after ctl1 failed: %q, want ctl2", got)
	}
	d.ctlFailed("10.0.0.2:7817")
	if got, err := d.leaderAPI(); err != nil || (got != "10.0.0.1:7817" && got != "10.0.0.2:7817") {
		t.Errorf("both failed: %q %v, want one of them still", got, err)
	}
}

// TestSnapshotThreshold: Raft snapshots a state of many jobs less often,
// in proportion (half its jobs, in steps of the base threshold), and a
// controller whose threshold changed still commits.
func TestSnapshotThreshold(t *testing.T) {
	for jobs, want := range map[int]uint64{0: 4096, 5000: 4096, 8191: 4096, 16384: 8192, 100000: 49152} {
		if got := snapshotThreshold(jobs); got != want {
			t.Errorf("%d jobs: threshold %d, want %d", jobs, got, want)
		}
	}
	d, cl := startOne(t)
	d.retuneSnapshots()
	if got := d.raft.ReloadableConfig().SnapshotThreshold; got != raftSnapshotThreshold {
		t.Errorf("empty state: threshold %d", got)
	}
	d.setSnapshotThreshold(100000)
	if got := d.raft.ReloadableConfig().SnapshotThreshold; got != 49152 {
		t.Errorf("100,000 jobs: threshold %d", got)
	}
	if _, err := cl.Submit(context.Background(), api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: t.TempDir(), Hold: true}); err != nil {
		t.Fatal(err)
	}
	d.retuneSnapshots()
	if got := d.raft.ReloadableConfig().SnapshotThreshold; got != raftSnapshotThreshold {
		t.Errorf("one job: threshold %d", got)
	}
}

// TestSnapshotKeepsTrailingLogs: after a snapshot a controller's log holds
// raftTrailingLogs entries behind its head and no more: what it drops was
// read back through BoltDB's memory map and stayed in its resident memory.
func TestSnapshotKeepsTrailingLogs(t *testing.T) {
	d, _ := startOne(t)
	// A barrier is an entry of its own, written and committed.
	for range raftTrailingLogs + 200 {
		if err := d.await(d.raft.Barrier(applyTimeout)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.await(d.raft.Snapshot()); err != nil {
		t.Fatal(err)
	}
	first, err := d.bolt.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err := d.bolt.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if kept := last - first + 1; kept != raftTrailingLogs {
		t.Errorf("the log holds entries %d-%d after a snapshot: %d, want %d", first, last, kept, raftTrailingLogs)
	}
}

// unanswered is a Raft future nothing answers, as hashicorp/raft leaves one
// it had queued when it shut down.
type unanswered struct{ never chan struct{} }

func (u unanswered) Error() error  { <-u.never; return nil }
func (u unanswered) Index() uint64 { return 0 }

// answered is a Raft future already answered with err.
type answered struct{ err error }

func (a answered) Error() error  { return a.err }
func (a answered) Index() uint64 { return 1 }

// A wait on a Raft future ends with the future's answer, or with the
// daemon's stop when nothing will ever answer it (before, the leader loop's
// wait on such a Barrier hung the daemon's stop).
func TestAwaitEndsWithTheDaemon(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	d := &Daemon{ctx: ctx}
	boom := errors.New("boom")
	if err := d.await(answered{boom}); err != boom {
		t.Errorf("answered: %v, want %v", err, boom)
	}
	got := make(chan error, 1)
	go func() { got <- d.await(unanswered{make(chan struct{})}) }()
	select {
	case err := <-got:
		t.Fatalf("returned %v before the daemon stopped", err)
	case <-time.After(50 * time.Millisecond):
	}
	stop()
	select {
	case err := <-got:
		if !errors.Is(err, raft.ErrRaftShutdown) {
			t.Errorf("after the stop: %v, want %v", err, raft.ErrRaftShutdown)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5 s after the daemon stopped")
	}
}
