package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/exec"
)

// Running steps: the launcher's side (the node srun talks to), the leader's
// side (creating and ending steps, allocations for salloc and srun) and the
// agents' side (tasks, their output, signals, the end of a job on every
// node of its allocation). See steps.go for the way a step travels.

// taskStep is a step's share running on this node. It is listed before
// its tasks start, so that a signal for it is never lost: step is set, or
// the launch failed, when ready is closed.
type taskStep struct {
	ready chan struct{}
	step  *exec.Step
	start time.Time // the start of the job run it belongs to
	// relay carries the step's output to its launcher (steprelay.go).
	relay *stepRelay
	// cancelled: killed on purpose (srun's second Ctrl-C, the job's end),
	// so the step ends CANCELLED.
	cancelled atomic.Bool
}

// launch is a step this node's daemon runs for its srun.
type launch struct {
	uid       uint32
	nodes     []string
	tasks     []int  // per node
	input     string // api.StepRequest.Input
	pty       bool
	cancelled atomic.Bool
}

// Wire types between nodes.
type (
	stepCreateRequest struct {
		api.StepRequest
		Launcher string `json:"launcher"`
	}
	stepCreated struct {
		Job     api.Job  `json:"job"`
		Step    api.Step `json:"step"`
		Warning string   `json:"warning,omitempty"`
	}
	stepLaunchRequest struct {
		Job        api.Job  `json:"job"`
		Step       api.Step `json:"step"`
		Node       int      `json:"node"` // the index of the receiving node in Step.Nodes
		Argv       []string `json:"argv"`
		Env        []string `json:"env,omitempty"`
		Export     string   `json:"export,omitempty"`
		WorkDir    string   `json:"work_dir,omitempty"`
		MasterPort int      `json:"master_port"`
		// srun's input and terminal (stepinput.go).
		Input string `json:"input,omitempty"`
		Pty   bool   `json:"pty,omitempty"`
		Rows  uint16 `json:"rows,omitempty"`
		Cols  uint16 `json:"cols,omitempty"`
	}
	// taskFrame is one line of an agent's answer to a step launch.
	taskFrame struct {
		Task   int           `json:"t,omitempty"`
		Stream int           `json:"s,omitempty"`
		Data   []byte        `json:"d,omitempty"`
		Exit   *api.TaskExit `json:"x,omitempty"`
		End    *nodeEnd      `json:"e,omitempty"`
	}
	nodeEnd struct {
		OOM       bool           `json:"oom,omitempty"`
		Cancelled bool           `json:"cancelled,omitempty"`
		Error     string         `json:"error,omitempty"`
		Usage     *api.StepUsage `json:"usage,omitempty"` // what the node's tasks used
	}
	jobRef struct {
		JobID  uint64    `json:"job_id"`
		Start  time.Time `json:"start"`
		Signal int       `json:"signal,omitempty"` // for /internal/job/signal
	}
	portReply struct {
		Port int `json:"port"`
	}
	stepEndReport struct {
		JobID uint64   `json:"job_id"`
		Step  api.Step `json:"step"`
	}
)

// ndjson writes a streamed answer, one JSON value a line, each flushed at
// once. Safe for concurrent use; after the first failed write it drops
// everything.
type ndjson struct {
	mu  sync.Mutex
	enc *json.Encoder
	fl  http.Flusher
	err error
}

func newNDJSON(w http.ResponseWriter) *ndjson {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	n := &ndjson{enc: json.NewEncoder(w), fl: fl}
	if fl != nil {
		fl.Flush()
	}
	return n
}

// close ends the stream for its writers: sends fail from now on (one in
// progress finishes first).
func (n *ndjson) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err == nil {
		n.err = errDetached
	}
}

func (n *ndjson) send(v any) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil {
		return n.err
	}
	if n.err = n.enc.Encode(v); n.err == nil && n.fl != nil {
		n.fl.Flush()
	}
	return n.err
}

// call sends a signed request to a node's API on behalf of id.
func (d *Daemon) call(ctx context.Context, id Identity, addr, path string, in, out any) error {
	resp, err := d.post(ctx, id, addr, path, in, d.http)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// post sends a signed POST and returns the answer if its status is 200.
func (d *Daemon) post(ctx context.Context, id Identity, addr, path string, in any, hc *http.Client) (*http.Response, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	sign(d.o.Key, req, id, body)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e api.Error
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Message != "" {
			return nil, &e
		}
		return nil, fmt.Errorf("%s: %s", path, resp.Status)
	}
	return resp, nil
}

// ---- the launcher: the node srun talks to ----

// handleStepRun runs a step for srun: creates it through the leader,
// launches its tasks on every node of it, streams their output back as
// StepEvents and commits its end.
func (d *Daemon) handleStepRun(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	var req api.StepRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Argv) == 0 {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	path := "/api/step/create"
	if req.Attach {
		path = "/api/step/find" // srun's step, whose launcher was restarted
	}
	var created stepCreated
	if err := d.call(r.Context(), id, d.addr(d.cfg.APIPort), path, stepCreateRequest{StepRequest: req, Launcher: d.o.Name}, &created); err != nil {
		userErr(w, err)
		return
	}
	j, s := &created.Job, created.Step
	key := stepKey{j.ID, s.ID}
	l := &launch{uid: j.UID, nodes: s.Nodes, tasks: s.Tasks, input: req.Input, pty: req.Pty}
	d.steps.mu.Lock()
	d.steps.launches[key] = l
	d.steps.mu.Unlock()
	unlist := func() {
		d.steps.mu.Lock()
		if d.steps.launches[key] == l {
			delete(d.steps.launches, key)
		}
		d.steps.mu.Unlock()
	}
	defer unlist()

	port := 10000 + int(j.ID%50000)
	if addr, err := d.nodeAPI(s.Nodes[0]); err == nil && !req.Attach {
		var pr portReply
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		if d.call(ctx, Identity{Node: true}, addr, "/internal/step/port", jobRef{JobID: j.ID}, &pr) == nil && pr.Port > 0 {
			port = pr.Port
		}
		cancel()
	}

	out := newNDJSON(w)
	_ = out.send(api.StepEvent{Step: &s, Warning: created.Warning})
	ends := make([]nodeEnd, len(s.Nodes))
	exits := make([][]api.TaskExit, len(s.Nodes))
	// The tasks outlive srun's request by the little it takes to kill
	// them: if srun goes away its step is killed, and its end (how each
	// task died) is still collected and recorded.
	nctx, ncancel := context.WithCancel(d.ctx)
	defer ncancel()
	all := make(chan struct{})
	go func() {
		select {
		case <-r.Context().Done():
		case <-d.ctx.Done():
		case <-all:
			return
		}
		if d.keepSteps.Load() {
			return // the daemon stops, leaving the step to its next one
		}
		l.cancelled.Store(true)
		kctx, kcancel := context.WithTimeout(context.Background(), 10*time.Second)
		d.signalStep(kctx, s.Nodes, api.StepSignalRequest{JobID: j.ID, StepID: s.ID, Signal: int(syscall.SIGKILL)})
		kcancel()
	}()
	var wg sync.WaitGroup
	for i, node := range s.Nodes {
		wg.Go(func() {
			lr := stepLaunchRequest{Job: *j, Step: s, Node: i, Argv: req.Argv, Env: req.Env,
				Export: req.Export, WorkDir: req.WorkDir, MasterPort: port,
				Input: req.Input, Pty: req.Pty, Rows: req.Rows, Cols: req.Cols}
			exits[i], ends[i] = d.runOnNode(nctx, node, lr, out, req.Attach)
		})
	}
	wg.Wait()
	close(all)
	if d.keepSteps.Load() {
		// The daemon stops and leaves its steps running: srun attaches
		// to the next one (api.StepRequest.Attach), which takes over.
		return
	}

	// The step's end: the highest exit code, the first signal.
	report := api.Step{ID: s.ID}
	var errs []string
	oom, cancelled := false, l.cancelled.Load()
	for i, e := range ends {
		for _, x := range exits[i] {
			report.ExitCode = max(report.ExitCode, x.ExitCode)
			if report.Signal == 0 {
				report.Signal = x.Signal
			}
		}
		oom = oom || e.OOM
		cancelled = cancelled || e.Cancelled
		report.Usage = addUsage(report.Usage, e.Usage)
		if e.Error != "" {
			errs = append(errs, e.Error)
			report.ExitCode = max(report.ExitCode, 1)
		}
	}
	switch {
	case oom:
		report.State = api.StateOutOfMemory
		report.ExitCode, report.Signal = 0, api.SigOOM&0x7f
	case cancelled:
		report.State = api.StateCancelled
	}
	done := &api.StepDone{ExitCode: report.ExitCode, Signal: report.Signal, State: report.State, Error: strings.Join(errs, "; ")}
	if final, err := d.commitStepEnd(j.ID, report); err == nil {
		done.State = final.State
	} else {
		d.log.Warn("step end not committed", "job", j.ID, "step", s.ID, "err", err)
	}
	if done.State == "" {
		done.State = j.StepEndState(report)
	}
	unlist() // the step is over before srun hears so
	_ = out.send(api.StepEvent{Done: done})
}

// runOnNode launches a step's tasks on one node (or, with attach, takes
// over a launch another daemon made) and forwards their output and ends to
// out until the node reports its end. If the node's stream breaks (its
// daemon was restarted), it attaches to the step again, as long as the
// node keeps the step waiting for it (stepAttachWait).
func (d *Daemon) runOnNode(ctx context.Context, node string, lr stepLaunchRequest, out *ndjson, attach bool) ([]api.TaskExit, nodeEnd) {
	failed := func(err error) nodeEnd {
		return nodeEnd{Error: fmt.Sprintf("Task launch for StepId=%d.%d failed on node %s: %v", lr.Job.ID, lr.Step.ID, node, err)}
	}
	exits := map[int]api.TaskExit{}
	sorted := func() []api.TaskExit {
		xs := make([]api.TaskExit, 0, len(exits))
		for _, x := range exits {
			xs = append(xs, x)
		}
		sort.Slice(xs, func(a, b int) bool { return xs[a].Task < xs[b].Task })
		return xs
	}
	lost := func(err error) ([]api.TaskExit, nodeEnd) {
		xs := sorted()
		for k := range xs {
			if d.keepSteps.Load() {
				break // srun gets them from the daemon it attaches to next
			}
			_ = out.send(api.StepEvent{Exit: &xs[k]})
		}
		if ctx.Err() != nil {
			return xs, nodeEnd{Cancelled: true}
		}
		return xs, nodeEnd{Error: fmt.Sprintf("%s: the node lost StepId=%d.%d: %v", node, lr.Job.ID, lr.Step.ID, err)}
	}
	var deadline time.Time // while attaching again
	if attach {
		deadline = time.Now().Add(d.stepAttachWait())
	}
	for {
		path := "/internal/step/launch"
		if attach {
			path = "/internal/step/attach"
		}
		addr, err := d.nodeAPI(node)
		var resp *http.Response
		if err == nil {
			// No overall timeout: the answer lasts as long as the tasks run.
			resp, err = d.post(ctx, Identity{Node: true}, addr, path, lr, &http.Client{})
		}
		if err != nil {
			var ae *api.Error
			switch {
			case !attach:
				return nil, failed(err)
			case ctx.Err() != nil, time.Now().After(deadline), errors.As(err, &ae):
				return lost(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		deadline = time.Time{}
		end, err := d.relayNode(resp.Body, exits, out)
		resp.Body.Close()
		if end != nil {
			// Task ends go to srun with the node's end: on a node where
			// the OOM killer struck, a task that failed reports SigOOM,
			// as slurmstepd's do (its shell may have seen its child
			// killed and exited 137).
			xs := sorted()
			for k := range xs {
				if end.OOM && (xs[k].Signal != 0 || xs[k].ExitCode != 0) {
					xs[k].ExitCode, xs[k].Signal = 0, api.SigOOM
				}
				_ = out.send(api.StepEvent{Exit: &xs[k]})
			}
			return xs, *end
		}
		if ctx.Err() != nil {
			return lost(err)
		}
		// The node's daemon went away under the step: its next one
		// re-attaches to it, and this launcher to that daemon.
		d.log.Warn("a step's stream from a node broke; attaching again", "job", lr.Job.ID, "step", lr.Step.ID, "node", node, "err", err)
		attach = true
		deadline = time.Now().Add(d.stepAttachWait() + 10*time.Second)
	}
}

// relayNode reads a node's stream of a step: output goes on to out, task
// ends into exits, until the node's end (returned) or the stream's.
func (d *Daemon) relayNode(body io.Reader, exits map[int]api.TaskExit, out *ndjson) (*nodeEnd, error) {
	dec := json.NewDecoder(body)
	for {
		var f taskFrame
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the node ended the stream early")
			}
			return nil, err
		}
		switch {
		case f.End != nil:
			return f.End, nil
		case f.Exit != nil:
			exits[f.Exit.Task] = *f.Exit
		case f.Stream != 0:
			_ = out.send(api.StepEvent{Task: f.Task, Stream: f.Stream, Data: f.Data})
		}
	}
}

// commitStepEnd reports a step's end to the leader until it is committed,
// for a minute at most, and returns the step as recorded.
func (d *Daemon) commitStepEnd(jobID uint64, s api.Step) (api.Step, error) {
	deadline := time.Now().Add(time.Minute)
	delay := 100 * time.Millisecond
	for {
		var got api.Step
		ctx, cancel := context.WithTimeout(d.ctx, 15*time.Second)
		err := d.callNode(ctx, d.addr(d.cfg.APIPort), "/internal/step/end", stepEndReport{JobID: jobID, Step: s}, &got)
		cancel()
		if err == nil {
			return got, nil
		}
		var ae *api.Error
		if (errors.As(err, &ae) && ae.Message != api.ErrNoLeader) || time.Now().After(deadline) || d.ctx.Err() != nil {
			return api.Step{}, err
		}
		time.Sleep(delay)
		delay = min(2*delay, 2*time.Second)
	}
}

// handleStepSignal forwards srun's signal to the nodes of its step; 9
// kills the step (SIGTERM and SIGKILL at once), which then ends CANCELLED.
func (d *Daemon) handleStepSignal(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	var req api.StepSignalRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	l := d.ownLaunch(w, id, req.JobID, req.StepID)
	if l == nil {
		return
	}
	if req.Signal == int(syscall.SIGKILL) {
		l.cancelled.Store(true)
	}
	d.signalStep(r.Context(), l.nodes, req)
	writeJSON(w, struct{}{})
}

// ownLaunch returns the step this node runs for srun if the caller may act
// on it; otherwise it answers with the error and returns nil.
func (d *Daemon) ownLaunch(w http.ResponseWriter, id Identity, job uint64, step uint32) *launch {
	d.steps.mu.Lock()
	l := d.steps.launches[stepKey{job, step}]
	d.steps.mu.Unlock()
	switch {
	case l == nil:
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAlreadyDone})
		return nil
	case id.UID != 0 && id.UID != l.uid:
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAccessDenied})
		return nil
	}
	return l
}

// signalStep sends a step signal to its nodes.
func (d *Daemon) signalStep(ctx context.Context, nodes []string, req api.StepSignalRequest) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			addr, err := d.nodeAPI(n)
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err = d.callNode(cctx, addr, "/internal/step/signal", req, nil)
				cancel()
			}
			if err != nil {
				d.log.Warn("step signal failed", "job", req.JobID, "step", req.StepID, "node", n, "err", err)
			}
		})
	}
	wg.Wait()
}

// ---- the leader ----

// handleStepCreate checks a step request against its job, places its tasks
// and commits the step.
func (d *Daemon) handleStepCreate(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	var req stepCreateRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Argv) == 0 {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	j := d.callersJob(w, id, req.JobID)
	switch {
	case j == nil:
		return
	case j.State == api.StatePending:
		userErr(w, &api.Error{Message: "Job is pending execution"})
		return
	case j.State != api.StateRunning || j.CancelRequested:
		userErr(w, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	plan, err := planStep(j, &req.StepRequest)
	if err != nil {
		userErr(w, err)
		return
	}
	name := req.Name
	if name == "" {
		name = filepath.Base(req.Argv[0])
	}
	s := api.Step{Name: name, Nodes: plan.Nodes, Tasks: plan.Tasks, CPUsPerTask: plan.CPUsPerTask, Launcher: req.Launcher}
	res, err := d.propose(&fsm.StepStart{Time: d.now(), JobID: j.ID, Step: s})
	if err != nil {
		userErr(w, err)
		return
	}
	j, _ = d.fsm.Job(req.JobID)
	if j == nil || j.StepIndex(uint32(res.JobID)) < 0 {
		userErr(w, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	writeJSON(w, stepCreated{Job: *j, Step: j.Steps[j.StepIndex(uint32(res.JobID))], Warning: plan.Warning})
}

// callersJob returns a job the caller may act on (root, or its owner); if
// there is none, it answers with the error and returns nil.
func (d *Daemon) callersJob(w http.ResponseWriter, id Identity, jobID uint64) *api.Job {
	j, _ := d.fsm.Job(jobID)
	switch {
	case j == nil:
		userErr(w, &api.Error{Message: api.ErrInvalidJobID})
		return nil
	case id.UID != 0 && id.UID != j.UID:
		userErr(w, &api.Error{Message: api.ErrAccessDenied})
		return nil
	}
	return j
}

// handleStepFind answers a launcher that attaches to a running step of
// its srun (api.StepRequest.Attach) with the step and its job.
func (d *Daemon) handleStepFind(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	var req stepCreateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	j := d.callersJob(w, id, req.JobID)
	if j == nil {
		return
	}
	i := j.StepIndex(req.StepID)
	if (j.State != api.StateRunning && j.State != api.StateCompleting) || i < 0 || j.Steps[i].State != api.StateRunning {
		userErr(w, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	writeJSON(w, stepCreated{Job: *j, Step: j.Steps[i]})
}

// handleStepEnd commits a step's end and answers with the step as recorded.
func (d *Daemon) handleStepEnd(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	var rep stepEndReport
	if err := json.Unmarshal(body, &rep); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	if _, err := d.propose(&fsm.StepEnd{Time: d.now(), JobID: rep.JobID, Step: rep.Step}); err != nil {
		writeErr(w, http.StatusServiceUnavailable, err)
		return
	}
	j, _ := d.fsm.Job(rep.JobID)
	if j == nil || j.StepIndex(rep.Step.ID) < 0 {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidJobID})
		return
	}
	writeJSON(w, j.Steps[j.StepIndex(rep.Step.ID)])
}

// handleAllocWait answers once the job has left PENDING, or after the
// timeout (a long poll), with its allocation's environment when it runs.
func (d *Daemon) handleAllocWait(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	mine := func(j *api.Job) bool { return id.UID == 0 || id.UID == j.UID }
	j := d.pollJob(w, r, func(j *api.Job) bool { return j.State != api.StatePending || !mine(j) }) // server.go
	switch {
	case j == nil:
	case !mine(j):
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAccessDenied})
	case j.State == api.StateRunning:
		writeJSON(w, api.Allocation{Job: *j, Env: d.allocEnv(j)})
	default:
		writeJSON(w, api.Allocation{Job: *j})
	}
}

// handleRelease ends an allocation salloc or srun made: a pending one is
// cancelled; a running one's holder ends, and the job with the status the
// client gave.
func (d *Daemon) handleRelease(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	var req api.ReleaseRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	j := d.callersJob(w, id, req.JobID)
	switch {
	case j == nil:
		return
	case j.State.Final():
		writeJSON(w, struct{}{})
		return
	case j.Spec.Script != api.HolderScript:
		userErr(w, &api.Error{Message: fmt.Sprintf("job %d is not an allocation of salloc or srun", j.ID)})
		return
	case j.State == api.StatePending:
		if _, err := d.propose(&fsm.Cancel{Time: d.now(), JobID: j.ID, UID: id.UID}); err != nil {
			userErr(w, err)
			return
		}
		writeJSON(w, struct{}{})
		return
	}
	addr, err := d.nodeAPI(j.BatchHost)
	if err == nil {
		err = d.callNode(r.Context(), addr, "/internal/job/release", req, nil)
	}
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, struct{}{})
}

// ---- the agents ----

// handleStepLaunch starts a step's tasks on this node and answers with a
// stream of frames: their output, each task's end, and last this node's
// end. If the launcher goes away, the tasks are killed.
func (d *Daemon) handleStepLaunch(w http.ResponseWriter, r *http.Request) {
	var req stepLaunchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	j, s := &req.Job, &req.Step
	if req.Node < 0 || req.Node >= len(s.Nodes) || s.Nodes[req.Node] != d.o.Name || len(s.Tasks) != len(s.Nodes) || len(req.Argv) == 0 {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	d.steps.mu.Lock()
	start, ended := d.steps.ended[j.ID]
	d.steps.mu.Unlock()
	if ended && start.Equal(j.StartTime) {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	out := newNDJSON(w)
	first := 0
	for _, n := range s.Tasks[:req.Node] {
		first += n
	}
	n := s.Tasks[req.Node]
	end := func(e nodeEnd) { _ = out.send(taskFrame{End: &e}) }
	tmp, scratch, err := d.jobRunStorage(j) // jobstorage.go
	if err != nil {
		end(nodeEnd{Error: fmt.Sprintf("%s: %v", d.o.Name, err)})
		return
	}
	base := exportEnv(req.Export, req.Env)
	// Every task fails the same way when the command cannot be run, as
	// slurmstepd's tasks do: the reason on stderr, errno as exit code.
	execFailed := func(msg string) {
		code := 1
		switch {
		case strings.HasSuffix(msg, "No such file or directory"):
			code = 2
		case strings.HasSuffix(msg, "Permission denied"):
			code = 13
		}
		for i := range n {
			_ = out.send(taskFrame{Task: first + i, Stream: api.StreamStderr, Data: []byte("slurmstepd: error: " + msg + "\n")})
			_ = out.send(taskFrame{Exit: &api.TaskExit{Task: first + i, Node: d.o.Name, ExitCode: code}})
		}
		end(nodeEnd{})
	}
	path, _ := lookupVar(base, "PATH")
	prog, err := lookPath(req.Argv[0], path, req.WorkDir)
	if err != nil {
		execFailed(fmt.Sprintf("execve(): %s: %s", req.Argv[0], err))
		return
	}
	argv := append([]string{prog}, req.Argv[1:]...)
	ts := &taskStep{ready: make(chan struct{}), start: j.StartTime}
	ts.relay = newStepRelay(d.stepAttachWait(), ts.abandon)
	gtids := make([]int, n)
	for i := range gtids {
		gtids[i] = first + i
	}
	tasks := make([]exec.TaskSpec, n)
	for i := range tasks {
		tasks[i] = exec.TaskSpec{
			Argv: argv,
			Env: d.stepEnv(j, base, envSlot{
				step: s, nodeIndex: req.Node, procID: first + i, localID: i, gtids: gtids,
				masterAddr: d.nodeAddr(s.Nodes[0]), masterPort: req.MasterPort, launcher: s.Launcher,
				tmpDir: tmp, scratch: scratch,
			}),
			Stdout: relayWriter{ts.relay, first + i, api.StreamStdout},
			Stderr: relayWriter{ts.relay, first + i, api.StreamStderr},
		}
		taskInput(&tasks[i], &req, first+i) // stepinput.go
	}
	mine := allocOn(j, d.o.Name)
	cpus := n * max(s.CPUsPerTask, 1)
	if mine.CPUs > 0 {
		cpus = min(cpus, mine.CPUs)
	}
	workDir := req.WorkDir
	if workDir == "" {
		workDir = j.Spec.WorkDir
	}
	img, err := stepImage(j, req.Env, tmp, scratch) // container.go
	if err != nil {
		end(nodeEnd{Error: fmt.Sprintf("%s: %v", d.o.Name, err)})
		return
	}
	tag, _ := json.Marshal(stepTag{Start: j.StartTime, First: first})
	spec := exec.StepSpec{
		ID: fmt.Sprintf("%d.%d", j.ID, s.ID), UID: j.UID, GID: j.GID, WorkDir: workDir,
		CPUs: cpus, CPUIDs: mine.CPUIDs, MemMB: mine.MemMB, Tasks: tasks, Devices: d.gresDevices(mine),
		Job: strconv.FormatUint(j.ID, 10), JobMemMB: mine.MemMB,
		Image: img, Tag: string(tag),
		OnTaskEnd: func(i int, r exec.TaskResult) {
			ts.relay.exit(api.TaskExit{Task: first + i, Node: d.o.Name, ExitCode: r.ExitCode, Signal: r.Signal})
		},
	}
	d.listTaskStep(j.ID, s.ID, ts)
	st, err := d.exec.Launch(spec)
	ts.step = st
	close(ts.ready)
	if err != nil {
		ts.relay.stop()
		d.forgetTaskStep(j.ID, s.ID, ts)
		if msg := err.Error(); strings.HasPrefix(msg, "execve(): ") {
			execFailed(msg)
		} else {
			end(nodeEnd{Error: fmt.Sprintf("%s: %v", d.o.Name, err)})
		}
		return
	}
	d.steps.mu.Lock()
	start, ended = d.steps.ended[j.ID]
	d.steps.mu.Unlock()
	if ended && start.Equal(j.StartTime) { // the job ended while this launched
		ts.cancelled.Store(true)
		st.Kill(0)
	}
	go d.awaitTaskStep(j.ID, s.ID, ts, first, n)
	ts.relay.serve(out, r.Context().Done())
}

// stepTag is what a task step's container keeps of its place (exec's
// StepSpec.Tag), for a new daemon re-attaching to it: the job run it
// belongs to, and the global rank of its first task here.
type stepTag struct {
	Start time.Time `json:"start"`
	First int       `json:"first"`
}

// abandon kills a step whose launcher did not come back.
func (ts *taskStep) abandon() {
	ts.cancelled.Store(true)
	<-ts.ready
	if ts.step != nil {
		ts.step.Kill(0)
	}
}

// listTaskStep lists a step's share on this node, before it starts: a
// signal for it is never lost.
func (d *Daemon) listTaskStep(job uint64, step uint32, ts *taskStep) {
	d.steps.mu.Lock()
	defer d.steps.mu.Unlock()
	m := d.steps.tasks[job]
	if m == nil {
		m = map[uint32]*taskStep{}
		d.steps.tasks[job] = m
	}
	m[step] = ts
}

func (d *Daemon) forgetTaskStep(job uint64, step uint32, ts *taskStep) {
	d.steps.mu.Lock()
	defer d.steps.mu.Unlock()
	if m := d.steps.tasks[job]; m != nil && m[step] == ts {
		delete(m, step)
		if len(m) == 0 {
			delete(d.steps.tasks, job)
		}
	}
}

// awaitTaskStep passes a step's end on this node to its launcher once its
// n tasks (the first of global rank first) have ended; the step is
// forgotten once a launcher has it.
func (d *Daemon) awaitTaskStep(job uint64, step uint32, ts *taskStep, first, n int) {
	res := ts.step.Wait()
	if res.OOM && n > 0 {
		ts.relay.send(taskFrame{Task: first, Stream: api.StreamStderr, Data: []byte(exec.OOMNotice(ts.step.ID(), res.OOMKills))})
	}
	e := nodeEnd{OOM: res.OOM, Cancelled: ts.cancelled.Load(), Usage: stepUsage(res.Usage, d.o.Name)}
	if res.Err != nil {
		e.Error = fmt.Sprintf("%s: %v", d.o.Name, res.Err)
	}
	ts.relay.finish(e)
	<-ts.relay.delivered
	d.forgetTaskStep(job, step, ts)
}

// handleStepAttach attaches a launcher to a step's share on this node that
// lost its launcher's stream (steprelay.go): it is answered as the step's
// launch was, from where the share is.
func (d *Daemon) handleStepAttach(w http.ResponseWriter, r *http.Request) {
	var req stepLaunchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	d.steps.mu.Lock()
	ts := d.steps.tasks[req.Job.ID][req.Step.ID]
	d.steps.mu.Unlock()
	if ts == nil || ts.relay == nil || !ts.start.Equal(req.Job.StartTime) {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	ts.relay.serve(newNDJSON(w), r.Context().Done())
}

// lookPath finds the program of a task as execvp would with the task's
// PATH: a name with a slash is taken as it is (from the working directory
// when relative).
func lookPath(prog, path, dir string) (string, error) {
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		return prog, nil
	}
	if path == "" {
		path = defaultPath
	}
	for _, p := range filepath.SplitList(path) {
		if p == "" {
			p = "."
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		f := filepath.Join(p, prog)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", errors.New("No such file or directory")
}

// handleTaskSignal signals a step's tasks on this node; 9 kills them.
func (d *Daemon) handleTaskSignal(w http.ResponseWriter, r *http.Request) {
	var req api.StepSignalRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	d.steps.mu.Lock()
	ts := d.steps.tasks[req.JobID][req.StepID]
	d.steps.mu.Unlock()
	if ts != nil {
		select {
		case <-ts.ready:
		case <-r.Context().Done():
			return
		}
	}
	if ts != nil && ts.step != nil {
		if req.Signal == int(syscall.SIGKILL) {
			ts.cancelled.Store(true)
			ts.step.Kill(0)
		} else if err := ts.step.Signal(syscall.Signal(req.Signal)); err != nil && !errors.Is(err, exec.ErrStepEnded) {
			writeErr(w, http.StatusInternalServerError, err)
			return
		}
	}
	writeJSON(w, struct{}{})
}

// handleStepPort picks a step's MASTER_PORT on its first node.
func (d *Daemon) handleStepPort(w http.ResponseWriter, r *http.Request) {
	var req jobRef
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	writeJSON(w, portReply{Port: d.masterPort(req.JobID)})
}

// handleJobCleanup ends a job's steps on this node and removes its $TMPDIR.
func (d *Daemon) handleJobCleanup(w http.ResponseWriter, r *http.Request) {
	var req jobRef
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	go d.cleanupLocal(req.JobID, req.Start)
	writeJSON(w, struct{}{})
}

// handleHolderRelease ends the holder batch step of an allocation that
// salloc or srun made; the job then ends with the status they gave.
func (d *Daemon) handleHolderRelease(w http.ResponseWriter, r *http.Request) {
	var req api.ReleaseRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	// The release may come before the launch (salloc true): the holder
	// then ends as soon as it starts.
	d.steps.mu.Lock()
	step := d.steps.steps[req.JobID]
	if len(d.steps.released) >= maxEnded {
		for id := range d.steps.released {
			if _, here := d.steps.steps[id]; !here {
				delete(d.steps.released, id)
			}
		}
	}
	d.steps.released[req.JobID] = req
	d.steps.mu.Unlock()
	if step != nil {
		step.Kill(0)
	}
	writeJSON(w, struct{}{})
}

// signalJobSteps sends a signal to every step of a job, on every node of
// its allocation.
func (d *Daemon) signalJobSteps(j *api.Job, sig int) {
	var wg sync.WaitGroup
	for _, a := range j.Alloc {
		wg.Go(func() {
			addr, err := d.nodeAPI(a.Node)
			if err == nil {
				ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
				err = d.callNode(ctx, addr, "/internal/job/signal", jobRef{JobID: j.ID, Start: j.StartTime, Signal: sig}, nil)
				cancel()
			}
			if err != nil {
				d.log.Warn("signalling a job's steps failed", "job", j.ID, "node", a.Node, "err", err)
			}
		})
	}
	wg.Wait()
}

// handleJobStepsSignal signals this node's tasks of a job's steps.
func (d *Daemon) handleJobStepsSignal(w http.ResponseWriter, r *http.Request) {
	var req jobRef
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Signal <= 0 {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	d.steps.mu.Lock()
	var steps []*taskStep
	for _, ts := range d.steps.tasks[req.JobID] {
		if ts.start.Equal(req.Start) {
			steps = append(steps, ts)
		}
	}
	d.steps.mu.Unlock()
	for _, ts := range steps {
		<-ts.ready
		if ts.step != nil {
			_ = ts.step.Signal(syscall.Signal(req.Signal))
		}
	}
	writeJSON(w, struct{}{})
}

// jobHere returns the job whose batch step runs on this node, or nil.
func (d *Daemon) jobHere(id uint64) *api.Job {
	d.steps.mu.Lock()
	defer d.steps.mu.Unlock()
	return d.steps.jobs[id]
}

// cleanupJob ends a job's steps and removes its $TMPDIR on every node of
// its allocation (this one included). The batch host calls it when the
// batch step ends or the job is cancelled.
func (d *Daemon) cleanupJob(j *api.Job) {
	var wg sync.WaitGroup
	for _, a := range j.Alloc {
		if a.Node == d.o.Name {
			wg.Go(func() { d.cleanupLocal(j.ID, j.StartTime) })
			continue
		}
		wg.Go(func() {
			for try := range 5 {
				addr, err := d.nodeAPI(a.Node)
				if err == nil {
					ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
					err = d.callNode(ctx, addr, "/internal/job/cleanup", jobRef{JobID: j.ID, Start: j.StartTime}, nil)
					cancel()
				}
				if err == nil || d.ctx.Err() != nil {
					return
				}
				d.log.Warn("job cleanup on a node failed", "job", j.ID, "node", a.Node, "err", err)
				time.Sleep(time.Duration(try+1) * 500 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// maxEnded bounds the memory of ended job runs.
const maxEnded = 4096

// cleanupLocal ends this node's share of a job run: its steps are killed
// (SIGTERM, SIGKILL after KillWait), and once they are gone and the batch
// step too, the job's $TMPDIR here is removed.
func (d *Daemon) cleanupLocal(jobID uint64, start time.Time) {
	d.steps.mu.Lock()
	if len(d.steps.ended) >= maxEnded {
		for id := range d.steps.ended {
			delete(d.steps.ended, id)
			if len(d.steps.ended) < maxEnded/2 {
				break
			}
		}
	}
	d.steps.ended[jobID] = start
	var steps []*taskStep
	for _, ts := range d.steps.tasks[jobID] {
		if ts.start.Equal(start) {
			ts.cancelled.Store(true)
			steps = append(steps, ts)
		}
	}
	d.steps.mu.Unlock()
	for _, ts := range steps {
		<-ts.ready
		if ts.step != nil {
			ts.step.Kill(d.killWait())
		}
	}
	for _, ts := range steps {
		if ts.step != nil {
			ts.step.Wait()
		}
	}
	d.steps.mu.Lock()
	_, batch := d.steps.steps[jobID]
	d.steps.mu.Unlock()
	if batch {
		return // a new run of the job (requeued) uses the directory now
	}
	os.RemoveAll(d.jobTmp(jobID))
	d.forgetRunStorage(jobID, start)
}

// jobTmp is a job's $TMPDIR on this node.
func (d *Daemon) jobTmp(jobID uint64) string {
	return filepath.Join(d.o.Dir, "tmp", "job"+strconv.FormatUint(jobID, 10))
}

// jobStorage makes a job's storage on this node and returns its $TMPDIR
// and $SCRATCH: a private directory for the job on this node (fresh: made
// anew, as the batch step starts), removed when the job ends, and the
// user's directory in the lab's scratch area (shared by the nodes), kept.
// Both are the user's, mode 0700. It also makes the group's directory in
// the project area ($PROJECT; see storageAreas).
func (d *Daemon) jobStorage(j *api.Job, fresh bool) (tmp, scratch string, err error) {
	tmp = d.jobTmp(j.ID)
	if fresh {
		os.RemoveAll(tmp)
	}
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return "", "", fmt.Errorf("cannot make the job's TMPDIR: %w", err)
	}
	if err := mkdirOwned(tmp, j.UID, j.GID); err != nil {
		return "", "", fmt.Errorf("cannot make the job's TMPDIR: %w", err)
	}
	areas := d.storage()
	if err := makeArea(areas.Scratch, os.ModeSticky|0o777); err != nil {
		return "", "", fmt.Errorf("cannot make SCRATCH: %w", err)
	}
	scratch = areas.scratchDir(j)
	if err := makeOwnedDir(scratch, j.UID, j.GID, 0o700, true); err != nil {
		return "", "", fmt.Errorf("cannot make SCRATCH: %w", err)
	}
	if err := makeArea(areas.Project, 0o755); err != nil {
		return "", "", fmt.Errorf("cannot make PROJECT: %w", err)
	}
	// Only root makes directories in the project area: one that is there
	// may have been handed to someone (a PI) by an administrator.
	if err := makeOwnedDir(areas.projectDir(j), 0, j.GID, os.ModeSetgid|0o770, false); err != nil {
		return "", "", fmt.Errorf("cannot make PROJECT: %w", err)
	}
	return tmp, scratch, nil
}

// mkdirOwned makes a directory of the user's, mode 0700, unless one is
// there already (a symbolic link is refused).
func mkdirOwned(dir string, uid, gid uint32) error {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, os.ErrExist) {
		fi, lerr := os.Lstat(dir)
		if lerr != nil {
			return lerr
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		return os.Lchown(dir, int(uid), int(gid))
	}
	return nil
}
