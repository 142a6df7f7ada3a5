package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// dashGet GETs path from d's web side with the headers and returns the
// status and body.
func dashGet(t *testing.T, d *Daemon, path string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+d.addr(d.cfg.APIPort)+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// dashPost posts an action as JSON.
func dashPost(t *testing.T, d *Daemon, a dashAction, hdr map[string]string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(a)
	req, _ := http.NewRequest(http.MethodPost, "http://"+d.addr(d.cfg.APIPort)+"/hpc/dashboard/action", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestDashboard serves the page, a snapshot, the event stream and a job's
// detail to an anonymous viewer (never a script) and to users with
// tokens, and refuses actions to the anonymous viewer and to a user who
// does not own the job, as scancel and scontrol would.
func TestDashboard(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	me, _ := user.Current()
	if me.Uid != "0" {
		t.Skip("makes a token for another user: needs root")
	}

	code, hdr, body := dashGet(t, d, "/", nil)
	if code != http.StatusOK || !strings.Contains(string(body), "<title>hpc dashboard</title>") || !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("GET /: %d %v\n%s", code, hdr, body)
	}
	if code, hdr, _ := dashGet(t, d, "/ui/app.js", nil); code != http.StatusOK || !strings.Contains(hdr.Get("Content-Type"), "javascript") {
		t.Errorf("GET /ui/app.js: %d %v", code, hdr)
	}

	const secret = "echo the-secret-line"
	jid, err := cl.Submit(ctx, api.JobSpec{Name: "dash", Script: "#!/bin/sh\n" + secret + "\nsleep 300\n", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var st dashState
	waitUntil(t, 20*time.Second, "the job running in the snapshot", func() (bool, string) {
		_, _, body := dashGet(t, d, "/hpc/dashboard/state", nil)
		if strings.Contains(string(body), "the-secret-line") {
			t.Fatalf("the anonymous snapshot holds the script:\n%s", body)
		}
		st = dashState{}
		_ = json.Unmarshal(body, &st)
		return len(st.Jobs) == 1 && st.Jobs[0].State == string(api.StateRunning) && len(st.Nodes) == 1 && len(st.Nodes[0].Jobs) == 1, string(body)
	})
	if !st.Viewer.Anonymous || st.Cluster.Leader != "node1" || st.Cluster.ServedBy != "node1" || st.Cluster.Term == 0 {
		t.Errorf("viewer and cluster: %+v %+v", st.Viewer, st.Cluster)
	}
	if n := st.Nodes[0]; n.State != "mix" && n.State != "alloc" || n.AllocCPUs == 0 {
		t.Errorf("node with a job: %+v", n)
	}

	// The event stream's first event is the snapshot.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.addr(d.cfg.APIPort)+"/hpc/dashboard/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("events: Content-Type %q", ct)
	}
	ev := readEvent(t, bufio.NewReader(resp.Body))
	resp.Body.Close()
	if !strings.HasPrefix(ev, "event: state\ndata: {") || !strings.Contains(ev, `"name":"dash"`) || strings.Contains(ev, `"now":"0001`) {
		t.Errorf("first event: %.300q", ev)
	}

	rootTok, err := cl.Token(ctx, api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	nobodyTok, err := cl.Token(ctx, api.TokenRequest{User: "nobody", Lifespan: 300})
	if err != nil {
		t.Fatal(err)
	}
	root := map[string]string{"Authorization": "Bearer " + rootTok}
	nobody := map[string]string{"Cookie": tokenCookie + "=" + nobodyTok}

	// The script: to its owner only.
	var det dashJobDetail
	_, _, body = dashGet(t, d, "/hpc/dashboard/job?id="+itoa(jid), nil)
	if err := json.Unmarshal(body, &det); err != nil || det.Script != "" || det.ScriptNote == "" || strings.Contains(string(body), "the-secret-line") || det.Job.ID != jid {
		t.Errorf("anonymous detail: %v %s", err, body)
	}
	_, _, body = dashGet(t, d, "/hpc/dashboard/job?id="+itoa(jid), nobody)
	det = dashJobDetail{}
	if json.Unmarshal(body, &det); det.Script != "" || det.ScriptNote != api.ErrUserIDMissing {
		t.Errorf("nobody's detail of root's job: %s", body)
	}
	_, _, body = dashGet(t, d, "/hpc/dashboard/job?id="+itoa(jid), root)
	det = dashJobDetail{}
	if json.Unmarshal(body, &det); !strings.Contains(det.Script, secret) || len(det.Acct) == 0 {
		t.Errorf("the owner's detail: %s", body)
	}

	// Actions: not for the anonymous viewer, nor for a user who does not
	// own the job; the owner's hold, release and cancel work.
	if code, out := dashPost(t, d, dashAction{Action: "cancel", JobID: jid}, nil); code != http.StatusForbidden {
		t.Errorf("anonymous cancel: %d %s", code, out)
	}
	if code, out := dashPost(t, d, dashAction{Action: "cancel", JobID: jid}, nobody); code != http.StatusForbidden || !strings.Contains(out, api.ErrAccessDenied) {
		t.Errorf("nobody's cancel of root's job: %d %s", code, out)
	}
	if code, out := dashPost(t, d, dashAction{Action: "drain", Node: "node1", Reason: "x"}, nobody); code != http.StatusForbidden {
		t.Errorf("nobody's drain: %d %s", code, out)
	}
	if code, out := dashPost(t, d, dashAction{Action: "drain", Node: "node1", Reason: "fan"}, root); code != http.StatusOK {
		t.Errorf("root's drain: %d %s", code, out)
	}
	waitUntil(t, 10*time.Second, "node1 draining", func() (bool, string) {
		_, _, body := dashGet(t, d, "/hpc/dashboard/state", root)
		st = dashState{}
		_ = json.Unmarshal(body, &st)
		return len(st.Nodes) == 1 && st.Nodes[0].State == "drng" && st.Nodes[0].Reason == "fan", string(body)
	})
	if code, out := dashPost(t, d, dashAction{Action: "resume", Node: "node1"}, root); code != http.StatusOK {
		t.Errorf("root's resume: %d %s", code, out)
	}
	if code, out := dashPost(t, d, dashAction{Action: "cancel", JobID: jid}, root); code != http.StatusOK {
		t.Errorf("the owner's cancel: %d %s", code, out)
	}
	waitUntil(t, 20*time.Second, "the job cancelled", func() (bool, string) {
		j, _ := d.fsm.Job(jid)
		return j != nil && j.State == api.StateCancelled, fmt.Sprintf("%+v", j)
	})
	if code, out := dashPost(t, d, dashAction{Action: "cancel", JobID: jid}, root); code != http.StatusBadRequest || !strings.Contains(out, api.ErrAlreadyDone) {
		t.Errorf("cancel of a finished job: %d %s", code, out)
	}

	// A form of another site cannot post an action.
	req, _ = http.NewRequest(http.MethodPost, "http://"+d.addr(d.cfg.APIPort)+"/hpc/dashboard/action", strings.NewReader("action=cancel"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+rootTok)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a form post: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// readEvent reads one server-sent event (up to its blank line), skipping
// the retry: field and comments.
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var ev strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v (so far %q)", err, ev.String())
		}
		switch {
		case line == "\n" && ev.Len() > 0:
			return ev.String()
		case line == "\n", strings.HasPrefix(line, "retry:"), strings.HasPrefix(line, ":"):
		default:
			ev.WriteString(line)
		}
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func TestNodeStateCompact(t *testing.T) {
	for _, c := range []struct {
		state      string
		alloc, cpu int
		want       string
		noResp     bool
	}{
		{"IDLE", 0, 4, "idle", false},
		{"MIXED", 2, 4, "mix", false},
		{"ALLOCATED", 4, 4, "alloc", false},
		{"IDLE+DRAIN", 0, 4, "drain", false},
		{"MIXED+DRAIN", 2, 4, "drng", false},
		{"ALLOCATED+DRAIN*", 4, 4, "drng", true},
		{"DOWN*", 0, 4, "down", true},
		{"IDLE*", 0, 4, "idle", true},
		{"UNKNOWN", 0, 4, "unk", false},
	} {
		got, noResp := nodeStateCompact(api.Node{State: c.state, AllocCPUs: c.alloc, CPUs: c.cpu})
		if got != c.want || noResp != c.noResp {
			t.Errorf("%s: %s %v, want %s %v", c.state, got, noResp, c.want, c.noResp)
		}
	}
}

func TestCommonSwitch(t *testing.T) {
	topo := []config.Switch{
		{Name: "s1", Nodes: []string{"n1", "n2"}},
		{Name: "s2", Nodes: []string{"n3", "n4"}},
		{Name: "s3", Nodes: []string{"n5"}},
		{Name: "mid", Switches: []string{"s1", "s2"}},
		{Name: "top", Switches: []string{"mid", "s3"}},
	}
	leaf := leafSwitches(topo)
	for nodes, want := range map[string]string{
		"n1": "s1", "n1,n2": "s1", "n2,n3": "mid", "n1,n4,n3": "mid", "n1,n5": "top", "n9": "", "": "",
	} {
		var list []string
		if nodes != "" {
			list = strings.Split(nodes, ",")
		}
		if got := commonSwitch(topo, leaf, list); got != want {
			t.Errorf("%s: %q, want %q", nodes, got, want)
		}
	}
	if got := commonSwitch(nil, nil, []string{"n1"}); got != "" {
		t.Errorf("no topology: %q", got)
	}
}

// TestDashHub: a stream that does not read holds only the newest
// snapshot, so publishing never waits for it; a node takes dashMaxStreams
// streams, and a feed stops with its last stream.
func TestDashHub(t *testing.T) {
	d, _ := startOne(t)
	h := newDashHub(d)
	var chans []chan []byte
	for range dashMaxStreams {
		ch, ok := h.subscribe(anonymous)
		if !ok {
			t.Fatalf("stream %d refused", len(chans)+1)
		}
		chans = append(chans, ch)
	}
	if _, ok := h.subscribe(anonymous); ok {
		t.Errorf("stream %d admitted", dashMaxStreams+1)
	}
	h.mu.Lock()
	feeds, subs := len(h.feeds), 0
	if f := h.feeds[viewerKey(anonymous)]; f != nil {
		subs = len(f.subs)
	}
	h.mu.Unlock()
	if feeds != 1 || subs != dashMaxStreams {
		t.Fatalf("%d feeds, %d streams on the viewer's, for one viewer's %d streams", feeds, subs, dashMaxStreams)
	}
	// A feed of its own (no loop publishes to it) with streams that never
	// read.
	slow := &dashFeed{subs: map[chan []byte]bool{}}
	slowChans := []chan []byte{make(chan []byte, 1), make(chan []byte, 1)}
	for _, ch := range slowChans {
		slow.subs[ch] = true
	}
	done := make(chan struct{})
	go func() {
		for i := range 100 {
			h.publish(slow, []byte(strconv.Itoa(i)))
			h.publish(slow, []byte(strconv.Itoa(i))) // the same again: not sent
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("publishing waited for streams that do not read")
	}
	for _, ch := range slowChans {
		if got := string(<-ch); got != "99" || len(ch) != 0 {
			t.Errorf("a stream that did not read holds %q, want the newest only", got)
		}
	}
	for _, ch := range chans {
		h.unsubscribe(anonymous, ch)
	}
	waitUntil(t, 10*time.Second, "the feed to stop", func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.feeds) == 0 && h.streams == 0, fmt.Sprintf("%d feeds, %d streams", len(h.feeds), h.streams)
	})
}

// TestDashboardAnonymousPrivateData: under PrivateData=jobs the anonymous
// viewer, who asks as a uid no account has, sees none of nobody's jobs
// (the labs' submitter): no row, no detail, no output, no accounting
// row; nobody, signed in, sees its own.
func TestDashboardAnonymousPrivateData(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("submits as nobody: needs root")
	}
	d, cl := startOneConf(t, "PrivateData=jobs\n", func(*Options) {})
	ctx := context.Background()
	for p := d.o.Dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	privacyUsers(t, d)
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"nobody"}, Accounts: []string{"physics"}})
	dir, err := os.MkdirTemp("", "dashpriv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	jid, msg := submitAs(t, d, nobodyID, api.JobSpec{Name: "nobodys", Script: "#!/bin/sh\necho nobodys-line\nsleep 300\n", WorkDir: dir})
	if msg != "" {
		t.Fatal(msg)
	}
	waitJob(t, cl, jid, api.StateRunning)

	v := d.viewer(anonymous.Identity)
	if j := (&api.Job{UID: anonymousUID}); v.owns(j) || v.listed(j) || v.whole(j) || v.operator {
		t.Errorf("the anonymous viewer owns a job of its own uid: %+v", v)
	}
	if uid := v.acctUID(true); uid == nil || *uid != anonymousUID {
		t.Errorf("the anonymous viewer's sacct rows are not limited to its own: %v", uid)
	}
	var rows api.AcctResponse
	if code, body := askAs(t, d, anonymous.Identity, d.handleAcct, http.MethodGet, "/api/acct?all=1", nil, &rows); code != http.StatusOK || len(rows.Rows) != 0 {
		t.Errorf("sacct -a as the anonymous viewer: %d %s", code, body)
	}

	_, _, body := dashGet(t, d, "/hpc/dashboard/state", nil)
	var st dashState
	if err := json.Unmarshal(body, &st); err != nil || len(st.Jobs) != 0 || st.Counts != (dashJobCounts{}) || len(st.Nodes) != 1 || len(st.Nodes[0].Jobs) != 0 || st.Viewer.User != "(anonymous)" {
		t.Errorf("the anonymous snapshot: %v %s", err, body)
	}
	for _, path := range []string{"/hpc/dashboard/job?id=" + itoa(jid), "/hpc/dashboard/job/output?id=" + itoa(jid)} {
		code, _, body := dashGet(t, d, path, nil)
		if code == http.StatusOK || strings.Contains(string(body), "nobodys") {
			t.Errorf("anonymous %s: %d %s", path, code, body)
		}
	}

	tok, err := cl.Token(ctx, api.TokenRequest{User: "nobody", Lifespan: 300})
	if err != nil {
		t.Fatal(err)
	}
	nobody := map[string]string{"Cookie": tokenCookie + "=" + tok}
	_, _, body = dashGet(t, d, "/hpc/dashboard/state", nobody)
	st = dashState{}
	if json.Unmarshal(body, &st); len(st.Jobs) != 1 || st.Jobs[0].ID != jid || st.Counts.Running != 1 {
		t.Errorf("nobody's snapshot: %s", body)
	}
	var det dashJobDetail
	_, _, body = dashGet(t, d, "/hpc/dashboard/job?id="+itoa(jid), nobody)
	if json.Unmarshal(body, &det); !strings.Contains(det.Script, "nobodys-line") || len(det.Acct) == 0 || det.Acct[0].JobID != itoa(jid) || det.Acct[0].State != "RUNNING" {
		t.Errorf("nobody's detail: %s", body)
	}
	if _, err := cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{jid}}); err != nil {
		t.Fatal(err)
	}
}

// TestDashJobsBounded: the dashboard's job list carries the first
// dashPendingKept pending jobs in squeue's order and counts the rest; the
// node grid still has every running job.
func TestDashJobsBounded(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	dir := t.TempDir()
	run, err := cl.Submit(ctx, api.JobSpec{Name: "run", Script: "#!/bin/sh\nsleep 300\n", WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, run, api.StateRunning)
	first, err := cl.Submit(ctx, api.JobSpec{Name: "held", Script: "#!/bin/sh\ntrue\n", WorkDir: dir, Array: "0-299", Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	var list dashJobList
	if code, body := askAs(t, d, rootID, d.handleDashJobs, http.MethodGet, "/api/dashboard/jobs", nil, &list); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if list.Counts != (dashJobCounts{Running: 1, Pending: 300}) || list.Shown != (dashJobCounts{Running: 1, Pending: dashPendingKept}) || len(list.Jobs) != 1+dashPendingKept {
		t.Fatalf("counts %+v, shown %+v, %d rows", list.Counts, list.Shown, len(list.Jobs))
	}
	// Equal priorities (held): the lowest ids, in id order after the
	// running job.
	for i, j := range list.Jobs[1:] {
		if j.ID != first+uint64(i) || j.State != string(api.StatePending) || j.Display != fmt.Sprintf("%d_%d", first, i) {
			t.Fatalf("row %d: %+v", i+1, j)
		}
	}
	if list.Jobs[0].ID != run || !slices.Equal(list.OnNode["node1"], []uint64{run}) {
		t.Errorf("the running job: %+v, on node1 %v", list.Jobs[0], list.OnNode)
	}
	cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{run, first}})
}

// TestFirstK: firstK keeps what a full sort's first k are.
func TestFirstK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 199, 200, 201, 1000} {
		for _, k := range []int{0, 1, 7, 200} {
			s := make([]int, n)
			for i := range s {
				s[i] = r.IntN(300)
			}
			want := slices.Clone(s)
			slices.Sort(want)
			want = want[:min(k, n)]
			if got := firstK(slices.Clone(s), k, func(a, b int) bool { return a < b }); !slices.Equal(got, want) {
				t.Errorf("n %d k %d: %v, want %v", n, k, got, want)
			}
		}
	}
}

// BenchmarkDashJobs compares the dashboard's bounded job list with the
// whole list (squeue's) on a queue of 10,000 pending jobs: time per answer
// and bytes per answer (answer-B).
func BenchmarkDashJobs(b *testing.B) {
	d, cl := startOneConf(b, "MaxJobCount=20000\n", func(*Options) {})
	ctx := context.Background()
	dir := b.TempDir()
	for range 10 {
		if _, err := cl.Submit(ctx, api.JobSpec{Name: "held", Script: "#!/bin/sh\ntrue\n", WorkDir: dir, Array: "0-999", Hold: true}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, path string
		h          handler
	}{
		{"dashboard", "/api/dashboard/jobs", d.handleDashJobs},
		{"whole-list", "/api/jobs", d.handleJobs},
	} {
		b.Run(c.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				code, body := askAs(b, d, rootID, c.h, http.MethodGet, c.path, nil, nil)
				if code != http.StatusOK {
					b.Fatalf("%d %.200s", code, body)
				}
				size = len(body)
			}
			b.ReportMetric(float64(size), "answer-B")
		})
	}
}

// TestDashAcctRows: the detail's accounting rows as sacct prints them.
func TestDashAcctRows(t *testing.T) {
	start := time.Date(2026, 12, 2, 4, 0, 0, 0, time.Local)
	by := uint32(0)
	rows := dashAcctRows([]api.AcctRow{
		{JobID: 12, JobName: "sim", Partition: "debug", Account: "physics", AllocCPUs: 4, State: "CANCELLED", Signal: 15,
			CancelledBy: &by, Start: start, End: start.Add(26*time.Hour + 3*time.Minute + 7*time.Second), NodeList: "node[1-2]", ReqMemMB: 4000},
		{JobID: 12, Step: "batch", JobName: "batch", AllocCPUs: 4, State: "RUNNING", Start: start,
			Usage: &api.StepUsage{MaxRSSKB: 2048, UserCPU: 1500 * time.Millisecond, SystemCPU: 250 * time.Millisecond}},
		{JobID: 13, State: "PENDING"},
	}, start.Add(90*time.Second))
	want := []dashAcct{
		{JobID: "12", JobName: "sim", Partition: "debug", Account: "physics", AllocCPUS: "4", State: "CANCELLED by 0", ExitCode: "0:15",
			Elapsed: "1-02:03:07", Start: "2026-12-02T04:00:00", End: "2026-12-03T06:03:07", NodeList: "node[1-2]", ReqMem: "4000M"},
		{JobID: "12.batch", JobName: "batch", AllocCPUS: "4", State: "RUNNING", ExitCode: "0:0", Elapsed: "00:01:30",
			Start: "2026-12-02T04:00:00", End: "Unknown", MaxRSS: "2048K", TotalCPU: "00:01.750", Since: start},
		{JobID: "13", AllocCPUS: "0", State: "PENDING", ExitCode: "0:0", Elapsed: "00:00:00", Start: "Unknown", End: "Unknown"},
	}
	if !slices.Equal(rows, want) {
		t.Errorf("got  %+v\nwant %+v", rows, want)
	}
}
