package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// job3 is a running job on three 2-CPU nodes.
func job3(ntasks, cpt int) *api.Job {
	return &api.Job{
		ID: 7, State: api.StateRunning,
		Spec: api.JobSpec{NTasks: ntasks, CPUsPerTask: cpt},
		Alloc: []api.NodeAlloc{
			{Node: "node1", CPUs: 2}, {Node: "node2", CPUs: 2}, {Node: "node3", CPUs: 2},
		},
	}
}

func TestPlanStep(t *testing.T) {
	cases := []struct {
		name  string
		job   *api.Job
		req   api.StepRequest
		nodes []string
		tasks []int
		cpt   int
		warn  string
		err   string
	}{
		{"job's tasks", job3(6, 0), api.StepRequest{}, []string{"node1", "node2", "node3"}, []int{2, 2, 2}, 1, "", ""},
		{"no -n: the allocation's tasks", job3(0, 0), api.StepRequest{}, []string{"node1", "node2", "node3"}, []int{2, 2, 2}, 1, "", ""},
		{"-n4 block", job3(6, 0), api.StepRequest{NTasks: 4}, []string{"node1", "node2", "node3"}, []int{2, 1, 1}, 1, "", ""},
		{"-n2 fewer than nodes", job3(6, 0), api.StepRequest{NTasks: 2}, []string{"node1", "node2"}, []int{1, 1}, 1, "", ""},
		{"-N2", job3(6, 0), api.StepRequest{Nodes: 2}, []string{"node1", "node2"}, []int{1, 1}, 1, "", ""},
		{"-N2 -n4", job3(6, 0), api.StepRequest{Nodes: 2, NTasks: 4}, []string{"node1", "node2"}, []int{2, 2}, 1, "", ""},
		{"-N3 -n1", job3(6, 0), api.StepRequest{Nodes: 3, NTasks: 1}, []string{"node1"}, []int{1}, 1,
			"can't run 1 processes on 3 nodes, setting nnodes to 1", ""},
		{"--ntasks-per-node", job3(6, 0), api.StepRequest{NTasksPerNode: 2, Nodes: 2}, []string{"node1", "node2"}, []int{2, 2}, 1, "", ""},
		{"-w first", job3(6, 0), api.StepRequest{NodeList: "node3", NTasks: 1}, []string{"node3"}, []int{1}, 1, "", ""},
		{"-w and -N", job3(6, 0), api.StepRequest{NodeList: "node[2-3]", Nodes: 3}, []string{"node2", "node3", "node1"}, []int{1, 1, 1}, 1, "", ""},
		{"-c2", job3(0, 0), api.StepRequest{CPUsPerTask: 2}, []string{"node1", "node2", "node3"}, []int{1, 1, 1}, 2, "", ""},
		{"job's -c", job3(3, 2), api.StepRequest{}, []string{"node1", "node2", "node3"}, []int{1, 1, 1}, 2, "", ""},
		{"too many tasks", job3(6, 0), api.StepRequest{NTasks: 7}, nil, nil, 0, "", api.ErrTooManyProcessors},
		{"-c3 on 2-CPU nodes", job3(0, 0), api.StepRequest{CPUsPerTask: 3}, nil, nil, 0, "", api.ErrTooManyProcessors},
		{"too many nodes", job3(6, 0), api.StepRequest{Nodes: 4}, nil, nil, 0, "", api.ErrConfigUnavailable},
		{"node outside the job", job3(6, 0), api.StepRequest{NodeList: "node9"}, nil, nil, 0, "", api.ErrConfigUnavailable},
		{"--ntasks-per-node over the CPUs", job3(6, 0), api.StepRequest{NTasksPerNode: 3}, nil, nil, 0, "", api.ErrTooManyProcessors},
		{"-N smaller than -w", job3(6, 0), api.StepRequest{NodeList: "node[1-3]", Nodes: 2}, nil, nil, 0, "", api.ErrNodeCountInvalid},
		// -O: full nodes first, then the rest round the nodes.
		{"-O -n8", job3(6, 0), api.StepRequest{NTasks: 8, Overcommit: true}, []string{"node1", "node2", "node3"}, []int{3, 3, 2}, 1, "", ""},
		{"-O -n4 -N1", job3(6, 0), api.StepRequest{NTasks: 4, Nodes: 1, Overcommit: true}, []string{"node1"}, []int{4}, 1, "", ""},
		{"-O -c3 on 2-CPU nodes", job3(0, 0), api.StepRequest{CPUsPerTask: 3, NTasks: 2, Overcommit: true}, []string{"node1", "node2"}, []int{1, 1}, 3, "", ""},
		{"-O --ntasks-per-node=4", job3(6, 0), api.StepRequest{NTasksPerNode: 4, Nodes: 2, Overcommit: true}, []string{"node1", "node2"}, []int{4, 4}, 1, "", ""},
		{"the job's -O", func() *api.Job { j := job3(12, 0); j.Spec.Overcommit = true; return j }(), api.StepRequest{},
			[]string{"node1", "node2", "node3"}, []int{4, 4, 4}, 1, "", ""},
	}
	for _, c := range cases {
		p, err := planStep(c.job, &c.req)
		if c.err != "" {
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Message != c.err {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(p.Nodes, c.nodes) || !reflect.DeepEqual(p.Tasks, c.tasks) || p.CPUsPerTask != c.cpt || p.Warning != c.warn {
			t.Errorf("%s: got %v %v cpt %d warn %q; want %v %v cpt %d warn %q", c.name, p.Nodes, p.Tasks, p.CPUsPerTask, p.Warning, c.nodes, c.tasks, c.cpt, c.warn)
		}
	}
}

// A real one-node cluster (plain processes): an allocation, a step with
// two tasks streaming their output, a signal, the release.
func TestStepsOneNode(t *testing.T) {
	_, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := cl.Submit(ctx, api.JobSpec{Name: "alloc", Script: api.HolderScript, WorkDir: t.TempDir(), NTasks: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := cl.WaitAllocation(ctx, id, nil)
	if err != nil || a.Job.State != api.StateRunning {
		t.Fatalf("allocation %+v %v", a, err)
	}
	if envValue(a.Env, "SLURM_JOB_ID") != strconv.FormatUint(id, 10) || envValue(a.Env, "SLURM_NTASKS") != "2" {
		t.Errorf("allocation env %q", a.Env)
	}
	type out struct {
		task, stream int
		data         string
	}
	var events []out
	var exits []api.TaskExit
	var done *api.StepDone
	err = cl.RunStep(ctx, api.StepRequest{JobID: id, Argv: []string{"sh", "-c", `echo "rank $RANK of $WORLD_SIZE on $SLURMD_NODENAME"; echo err >&2; exit $SLURM_PROCID`}, Env: []string{"PATH=/usr/bin:/bin"}},
		func(ev *api.StepEvent) error {
			switch {
			case ev.Stream != 0:
				events = append(events, out{ev.Task, ev.Stream, string(ev.Data)})
			case ev.Exit != nil:
				exits = append(exits, *ev.Exit)
			case ev.Done != nil:
				done = ev.Done
			}
			return nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range events {
		lines = append(lines, strings.Split(strings.TrimSuffix(e.data, "\n"), "\n")...)
	}
	slices.Sort(lines)
	if want := []string{"err", "err", "rank 0 of 2 on node1", "rank 1 of 2 on node1"}; !reflect.DeepEqual(lines, want) {
		t.Errorf("output %q, want %q", lines, want)
	}
	slices.SortFunc(exits, func(a, b api.TaskExit) int { return a.Task - b.Task })
	if want := []api.TaskExit{{Task: 0, Node: "node1"}, {Task: 1, Node: "node1", ExitCode: 1}}; !reflect.DeepEqual(exits, want) {
		t.Errorf("exits %+v", exits)
	}
	if done == nil || done.ExitCode != 1 || done.State != api.StateFailed {
		t.Errorf("done %+v", done)
	}

	// Ctrl-C reaches the tasks; a second one kills them.
	var mu sync.Mutex
	var stepID uint32
	ready := make(chan struct{})
	var once sync.Once
	errc := make(chan error, 1)
	var final *api.StepDone
	go func() {
		errc <- cl.RunStep(ctx, api.StepRequest{JobID: id, NTasks: 1,
			Argv: []string{"/bin/sh", "-c", `trap 'echo INT' INT; echo up; while :; do sleep 0.05; done`}},
			func(ev *api.StepEvent) error {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case ev.Step != nil:
					stepID = ev.Step.ID
				case ev.Stream != 0 && strings.Contains(string(ev.Data), "up"):
					once.Do(func() { close(ready) })
				case ev.Done != nil:
					final = ev.Done
				}
				return nil
			}, nil)
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("step never started")
	}
	mu.Lock()
	sid := stepID
	mu.Unlock()
	if err := cl.SignalStep(ctx, id, sid, 2); err != nil {
		t.Fatal(err)
	}
	if err := cl.SignalStep(ctx, id, sid, 9); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if final == nil || final.State != api.StateCancelled || final.Signal == 0 {
		t.Errorf("killed step: %+v", final)
	}
	if err := cl.SignalStep(ctx, id, sid, 2); err == nil {
		t.Error("signalling an ended step succeeded")
	}

	// Release: the job ends with the status given.
	if err := cl.Release(ctx, api.ReleaseRequest{JobID: id, ExitCode: 5}); err != nil {
		t.Fatal(err)
	}
	j, err := cl.Wait(ctx, id)
	if err != nil || j.State != api.StateFailed || j.ExitCode != 5 {
		t.Fatalf("released job %+v %v", j, err)
	}
	if len(j.Steps) != 2 || j.Steps[0].State != api.StateFailed || j.Steps[1].State != api.StateCancelled {
		t.Errorf("steps %+v", j.Steps)
	}
	// A step of a job that ended is refused.
	err = cl.RunStep(ctx, api.StepRequest{JobID: id, Argv: []string{"true"}}, func(*api.StepEvent) error { return nil }, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Message != api.ErrAlreadyDone {
		t.Errorf("step of an ended job: %v", err)
	}
}

// The launcher reads a node's stream of a step to its close once the
// node's end has come, so the connection goes back to the pool and the
// next call to the node reuses it. Here the node closes its stream a
// little after its end, as a node daemon does: closed unread, each
// stream cost a new connection (a TLS handshake between nodes).
func TestRelayStreamKeepsItsConnection(t *testing.T) {
	returned := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := peer.NewNDJSON(w)
		_ = out.Send(agent.TaskFrame{Task: 0, Stream: api.StreamStdout, Data: []byte("hi\n")})
		_ = out.Send(agent.TaskFrame{Exit: &api.TaskExit{Task: 0, Node: "node1"}})
		_ = out.Send(agent.TaskFrame{End: &agent.NodeEnd{}})
		time.Sleep(30 * time.Millisecond)
		returned <- struct{}{}
	}))
	defer srv.Close()
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var d Daemon
	const streams = 3
	for i := range streams {
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		closed := &closeSignal{ReadCloser: resp.Body, done: make(chan struct{})}
		resp.Body = closed
		rec := httptest.NewRecorder()
		exits, sent := map[int]api.TaskExit{}, map[int]api.TaskExit{}
		end, err := d.relayStream(resp, exits, sent, peer.NewNDJSON(rec), &attachHub{}, nil)
		if end == nil || err != nil || len(exits) != 1 || !strings.Contains(rec.Body.String(), `"stream":1`) {
			t.Fatalf("stream %d: end %+v, %v, exits %+v, relayed %q", i, end, err, exits, rec.Body.String())
		}
		<-returned
		// The stream is closed once read to its end; by then a stream read
		// to its end has given its connection back.
		select {
		case <-closed.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %d still open 10 s after the node's end", i)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d streams took %d connections, want 1", streams, n)
	}
}

// closeSignal is a body that says when it is closed.
type closeSignal struct {
	io.ReadCloser
	done chan struct{}
}

func (c *closeSignal) Close() error {
	err := c.ReadCloser.Close()
	close(c.done)
	return err
}

// envValue finds a variable in an environment list.
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// -O on a real one-node cluster (node1, 2 CPUs): the job asks 6 tasks
// and is given one task's CPU; its default step runs the 6 tasks on it.
func TestOvercommitOneNode(t *testing.T) {
	_, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := api.JobSpec{Name: "alloc", Script: api.HolderScript, WorkDir: t.TempDir(), NTasks: 6}
	if _, err := cl.Submit(ctx, spec); err == nil || !strings.Contains(err.Error(), api.ErrTooManyProcessors) {
		t.Fatalf("6 tasks on 2 CPUs without -O: %v", err)
	}
	spec.Overcommit = true
	id, err := cl.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	a, err := cl.WaitAllocation(ctx, id, nil)
	if err != nil || a.Job.State != api.StateRunning {
		t.Fatalf("allocation %+v %v", a, err)
	}
	if len(a.Job.Alloc) != 1 || a.Job.Alloc[0].CPUs != 1 {
		t.Errorf("alloc %+v, want one CPU on one node", a.Job.Alloc)
	}
	var exits []api.TaskExit
	err = cl.RunStep(ctx, api.StepRequest{JobID: id, Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}},
		func(ev *api.StepEvent) error {
			if ev.Exit != nil {
				exits = append(exits, *ev.Exit)
			}
			return nil
		}, nil)
	if err != nil || len(exits) != 6 {
		t.Errorf("step: %v, %d task exits, want 6", err, len(exits))
	}
	if err := cl.Release(ctx, api.ReleaseRequest{JobID: id}); err != nil {
		t.Fatal(err)
	}
}

// srun -K: the first task that fails has its launcher kill the step, so
// a sibling that would run on is cut short.
func TestKillOnBadExit(t *testing.T) {
	_, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := cl.Submit(ctx, api.JobSpec{Name: "alloc", Script: api.HolderScript, WorkDir: t.TempDir(), NTasks: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WaitAllocation(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	var exits []api.TaskExit
	err = cl.RunStep(ctx, api.StepRequest{JobID: id, KillOnBadExit: true, Env: []string{"PATH=/usr/bin:/bin"},
		Argv: []string{"sh", "-c", `if [ "$SLURM_PROCID" = 1 ]; then exit 3; fi; sleep 30; echo survived`}},
		func(ev *api.StepEvent) error {
			if ev.Exit != nil {
				exits = append(exits, *ev.Exit)
			}
			if ev.Stream != 0 && strings.Contains(string(ev.Data), "survived") {
				t.Error("a sibling of the failed task ran on")
			}
			return nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(exits, func(a, b api.TaskExit) int { return a.Task - b.Task })
	if len(exits) != 2 || exits[1].ExitCode != 3 || exits[0].Signal == 0 {
		t.Errorf("task ends %+v: want task 1 exit 3 and task 0 killed", exits)
	}
}

// runStepAsync runs a step of job id in the background; its events go to
// the returned channel, closed when the step is over.
func runStepAsync(ctx context.Context, t *testing.T, cl *api.Client, req api.StepRequest) <-chan api.StepEvent {
	t.Helper()
	evs := make(chan api.StepEvent, 256)
	go func() {
		defer close(evs)
		err := cl.RunStep(ctx, req, func(ev *api.StepEvent) error {
			evs <- *ev
			return nil
		}, nil)
		if err != nil {
			t.Errorf("step: %v", err)
		}
	}()
	return evs
}

// holder starts an allocation of ntasks on the one node and returns its id.
func holder(ctx context.Context, t *testing.T, cl *api.Client, ntasks int) uint64 {
	t.Helper()
	id, err := cl.Submit(ctx, api.JobSpec{Name: "alloc", Script: api.HolderScript, WorkDir: t.TempDir(), NTasks: ntasks})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WaitAllocation(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	return id
}

// Each task's end reaches srun as it comes (srun -W counts from the
// first), once, long before the step's end.
func TestStepTaskEndsAsTheyCome(t *testing.T) {
	_, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := holder(ctx, t, cl, 2)
	evs := runStepAsync(ctx, t, cl, api.StepRequest{JobID: id, Env: []string{"PATH=/usr/bin:/bin"},
		Argv: []string{"sh", "-c", `if [ "$SLURM_PROCID" = 1 ]; then exit 3; fi; sleep 2`}})
	var firstExit, done time.Time
	count := map[int]int{}
	for ev := range evs {
		switch {
		case ev.Exit != nil:
			count[ev.Exit.Task]++
			if firstExit.IsZero() {
				firstExit = time.Now()
				if ev.Exit.Task != 1 || ev.Exit.ExitCode != 3 {
					t.Errorf("first end %+v, want task 1's exit 3", ev.Exit)
				}
			}
		case ev.Done != nil:
			done = time.Now()
		}
	}
	if done.Sub(firstExit) < time.Second {
		t.Errorf("task 1's end came %v before the step's, want it as it happened", done.Sub(firstExit))
	}
	if count[0] != 1 || count[1] != 1 {
		t.Errorf("task ends %v, want each once", count)
	}
	_ = cl.Release(ctx, api.ReleaseRequest{JobID: id})
}

// srun --slurmd-debug (SLURMD_DEBUG in its environment): the node's log
// at that level comes on the step's stderr, as slurmstepd's does.
func TestStepSlurmdDebug(t *testing.T) {
	_, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := holder(ctx, t, cl, 1)
	for _, c := range []struct {
		level      string
		want, lack []string
	}{
		{"", nil, []string{"debug levels"}},
		{"2", []string{"debug levels are stderr='verbose'"}, []string{"debug:"}},
		{"3", []string{"stderr='debug'", "slurmstepd: debug:  "}, []string{"debug2:"}},
		{"4", []string{"stderr='debug2'", "slurmstepd: debug2: "}, nil},
	} {
		env := []string{"PATH=/usr/bin:/bin"}
		if c.level != "" {
			env = append(env, "SLURMD_DEBUG="+c.level)
		}
		var stderr strings.Builder
		for ev := range runStepAsync(ctx, t, cl, api.StepRequest{JobID: id, Env: env, Argv: []string{"true"}}) {
			if ev.Stream == api.StreamStderr {
				stderr.Write(ev.Data)
			}
		}
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("level %q: stderr %q lacks %q", c.level, stderr.String(), w)
			}
		}
		for _, w := range c.lack {
			if strings.Contains(stderr.String(), w) {
				t.Errorf("level %q: stderr %q has %q", c.level, stderr.String(), w)
			}
		}
	}
	_ = cl.Release(ctx, api.ReleaseRequest{JobID: id})
}

// sattach: an attached reader gets the step first, then its tasks' output
// from then on (one task's with a filter), and the step's end; its input
// reaches the task it names; --layout gets the step alone. srun's own
// stream is whole meanwhile.
func TestSattach(t *testing.T) {
	_, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := holder(ctx, t, cl, 2)
	// Each task says its lines until it reads "stop" (task 1 alone reads
	// input that is not srun's: srun gives input to all).
	evs := runStepAsync(ctx, t, cl, api.StepRequest{JobID: id, Env: []string{"PATH=/usr/bin:/bin"}, Input: "all",
		Argv: []string{"sh", "-c", `i=0; while :; do echo "t$SLURM_PROCID $i"; i=$((i+1)); if read -t 0.1 l 2>/dev/null || read l; then echo "t$SLURM_PROCID got $l"; [ "$l" = stop ] && exit 0; fi; done`}})
	var step *api.Step
	for ev := range evs {
		if ev.Step != nil {
			step = ev.Step
			break
		}
	}
	if step == nil {
		t.Fatal("no step")
	}
	srunDone := make(chan []string, 1)
	go func() {
		var lines []string
		for ev := range evs {
			if ev.Stream != 0 {
				lines = append(lines, string(ev.Data))
			}
		}
		srunDone <- lines
	}()

	var layout *api.Step
	err := cl.AttachStep(ctx, api.AttachRequest{JobID: id, StepID: step.ID, OutTask: -1, ErrTask: -1, Layout: true}, func(ev *api.AttachEvent) error {
		layout = ev.Step
		return nil
	})
	if err != nil || layout == nil || layout.NTasks() != 2 {
		t.Fatalf("layout %+v %v", layout, err)
	}

	var got strings.Builder
	var done *api.StepDone
	attached := make(chan struct{})
	go func() {
		<-attached
		in := api.AttachInput{StepInput: api.StepInput{JobID: id, StepID: step.ID, Data: []byte("hello\n")}, Task: 1}
		if err := cl.AttachInput(ctx, in); err != nil {
			t.Errorf("sattach input: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		// Both tasks stop: srun's input goes to all.
		if err := cl.StepInput(ctx, api.StepInput{JobID: id, StepID: step.ID, Data: []byte("stop\n")}); err != nil {
			t.Errorf("srun input: %v", err)
		}
	}()
	err = cl.AttachStep(ctx, api.AttachRequest{JobID: id, StepID: step.ID, OutTask: 1, ErrTask: -1}, func(ev *api.AttachEvent) error {
		switch {
		case ev.Step != nil:
			close(attached)
		case ev.Stream != 0:
			got.Write(ev.Data)
		case ev.Done != nil:
			done = ev.Done
		}
		return nil
	})
	if err != nil || done == nil {
		t.Fatalf("attach: %v, done %+v", err, done)
	}
	if s := got.String(); !strings.Contains(s, "t1 got hello") || strings.Contains(s, "t0 ") || !strings.Contains(s, "t1 got stop") {
		t.Errorf("sattach --output-filter=1 got %q", s)
	}
	lines := strings.Join(<-srunDone, "")
	if strings.Contains(lines, "t0 got hello") || !strings.Contains(lines, "t1 got hello") || !strings.Contains(lines, "t0 got stop") {
		t.Errorf("srun's output %q", lines)
	}
	// Over: attaching is refused as Slurm refuses a step that is gone.
	err = cl.AttachStep(ctx, api.AttachRequest{JobID: id, StepID: step.ID, OutTask: -1, ErrTask: -1}, func(*api.AttachEvent) error { return nil })
	if err == nil {
		t.Error("attached to a step that is over")
	}
	_ = cl.Release(ctx, api.ReleaseRequest{JobID: id})
}

// The fan-out to sattach readers never blocks: a reader that does not
// keep up loses what its queue cannot hold, and is told so.
func TestAttachHubDrops(t *testing.T) {
	var h attachHub
	h.publish(api.StepEvent{Stream: api.StreamStdout, Data: []byte("nobody")})
	r := &attachReader{outTask: -1, errTask: 0, ch: make(chan api.StepEvent, 2), over: make(chan struct{})}
	if !h.add(r) {
		t.Fatal("add")
	}
	for i := range 5 {
		h.publish(api.StepEvent{Task: i % 2, Stream: api.StreamStdout, Data: []byte("x")})
	}
	h.publish(api.StepEvent{Task: 1, Stream: api.StreamStderr, Data: []byte("filtered")})
	if len(r.ch) != 2 || r.dropped.Load() != 3 {
		t.Errorf("queued %d dropped %d, want 2 and 3", len(r.ch), r.dropped.Load())
	}
	h.close(&api.StepDone{})
	select {
	case <-r.over:
	default:
		t.Error("reader not told the step is over")
	}
	if h.add(&attachReader{over: make(chan struct{})}) {
		t.Error("attached after the end")
	}
}

// srun --exclusive: steps of a job take CPUs no other exclusive step
// holds; one that finds none free waits ("step creation temporarily
// disabled"), and starts once a step ends. A request the job could never
// hold is refused at once.
func TestExclusiveSteps(t *testing.T) {
	_, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := holder(ctx, t, cl, 2) // both CPUs of node1
	gate := filepath.Join(t.TempDir(), "gate")
	step := func() api.StepRequest {
		return api.StepRequest{JobID: id, NTasks: 1, Exclusive: true, Env: []string{"PATH=/usr/bin:/bin"},
			Argv: []string{"sh", "-c", "while [ ! -e " + gate + " ]; do sleep 0.05; done"}}
	}
	first := runStepAsync(ctx, t, cl, step())
	second := runStepAsync(ctx, t, cl, step())
	for _, evs := range []<-chan api.StepEvent{first, second} {
		if ev := <-evs; ev.Step == nil || !ev.Step.Exclusive {
			t.Fatalf("first event %+v, want the step", ev)
		}
	}
	third := runStepAsync(ctx, t, cl, step())
	if ev := <-third; ev.Step != nil || ev.Warning != fmt.Sprintf("Job %d step creation temporarily disabled, retrying (Requested nodes are busy)", id) {
		t.Fatalf("third step, both CPUs held: %+v", ev)
	}
	select {
	case ev := <-third:
		t.Fatalf("the third step went on while both CPUs were held: %+v", ev)
	case <-time.After(1500 * time.Millisecond):
	}
	if jobs, err := cl.Jobs(ctx); err != nil || len(jobs) != 1 || len(jobs[0].Steps) != 2 {
		t.Fatalf("steps while the third waits: %+v %v", jobs, err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	started := false
	for ev := range third {
		started = started || ev.Step != nil
	}
	for range first {
	}
	for range second {
	}
	if !started {
		t.Error("the third step never started")
	}
	// Three CPUs for one task: more than the job has, refused at once.
	err := cl.RunStep(ctx, api.StepRequest{JobID: id, NTasks: 1, CPUsPerTask: 3, Exclusive: true, Argv: []string{"true"}}, func(*api.StepEvent) error { return nil }, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Message == api.ErrNodesBusy {
		t.Errorf("an impossible exclusive step: %v", err)
	}
}
