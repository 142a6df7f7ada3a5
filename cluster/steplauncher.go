package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// The launcher: the node srun talks to. It creates the step through the
// leader, starts its tasks on every node of it, merges their output into
// its answer to srun and commits the step's end.

// handleStepRun runs a step for srun: creates it through the leader,
// launches its tasks on every node of it, streams their output back as
// StepEvents and commits its end.
func (d *Daemon) handleStepRun(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.StepRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Argv) == 0 {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	path := "/api/step/create"
	if req.Attach {
		path = "/api/step/find" // srun's step, whose launcher was restarted
	}
	created, out, ok := d.createStep(w, r, id, path, req)
	if !ok {
		return
	}
	j, s := &created.Job, created.Step
	key := stepKey{j.ID, s.ID}
	l := &launch{uid: j.UID, nodes: s.Nodes, tasks: s.Tasks, input: req.Input, pty: req.Pty, step: s}
	d.launchMu.Lock()
	d.launches[key] = l
	d.launchMu.Unlock()
	unlist := func() {
		d.launchMu.Lock()
		if d.launches[key] == l {
			delete(d.launches, key)
		}
		d.launchMu.Unlock()
	}
	defer unlist()

	port := 10000 + int(j.ID%50000)
	if addr, err := d.peers.API(s.Nodes[0]); err == nil && !req.Attach {
		var pr agent.PortReply
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		if d.peers.Call(ctx, peer.Identity{Node: true}, addr, "/internal/step/port", agent.JobRef{JobID: j.ID}, &pr) == nil && pr.Port > 0 {
			port = pr.Port
		}
		cancel()
	}

	_ = out.Send(api.StepEvent{Step: &s, Warning: created.Warning})
	ends := make([]agent.NodeEnd, len(s.Nodes))
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
	// srun -K: the first task that fails has the step killed on every
	// node, as Slurm's srun does on the first abnormal exit.
	var onExit func(api.TaskExit)
	if req.KillOnBadExit {
		var once sync.Once
		onExit = func(x api.TaskExit) {
			if x.ExitCode == 0 && x.Signal == 0 {
				return
			}
			once.Do(func() {
				go func() {
					kctx, kcancel := context.WithTimeout(nctx, 10*time.Second)
					defer kcancel()
					d.signalStep(kctx, s.Nodes, api.StepSignalRequest{JobID: j.ID, StepID: s.ID, Signal: int(syscall.SIGKILL)})
				}()
			})
		}
	}
	var wg sync.WaitGroup
	for i, node := range s.Nodes {
		wg.Go(func() {
			lr := agent.StepLaunchRequest{Job: *j, Step: s, Node: i, Argv: req.Argv, Env: req.Env,
				Export: req.Export, WorkDir: req.WorkDir, MasterPort: port,
				Input: req.Input, Pty: req.Pty, Rows: req.Rows, Cols: req.Cols}
			exits[i], ends[i] = d.runOnNode(nctx, node, lr, out, l, req.Attach, onExit)
		})
	}
	wg.Wait()
	close(all)
	if d.keepSteps.Load() {
		// The daemon stops and leaves its steps running: srun attaches
		// to the next one (api.StepRequest.Attach), which takes over.
		l.hub.close(nil)
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
	// Kept on disk and reported until committed (agent/outbox.go).
	if final, err := d.agent.ReportStepEnd(api.StepEndReport{JobID: j.ID, Step: report}); err == nil {
		done.State = final.State
	} else {
		d.log.Warn("step end not committed", "job", j.ID, "step", s.ID, "err", err)
	}
	if done.State == "" {
		done.State = j.StepEndState(report)
	}
	unlist() // the step is over before srun hears so
	l.hub.close(done)
	_ = out.Send(api.StepEvent{Done: done})
}

// runOnNode launches a step's tasks on one node (or, with attach, takes
// over a launch another daemon made) and forwards their output and ends to
// out until the node reports its end. If the node's stream breaks (its
// daemon was restarted), it attaches to the step again, as long as the
// node keeps the step waiting for it (stepAttachWait).
func (d *Daemon) runOnNode(ctx context.Context, node string, lr agent.StepLaunchRequest, out *peer.NDJSON, l *launch, attach bool, onExit func(api.TaskExit)) ([]api.TaskExit, agent.NodeEnd) {
	failed := func(err error) agent.NodeEnd {
		return agent.NodeEnd{Error: fmt.Sprintf("Task launch for StepId=%d.%d failed on node %s: %v", lr.Job.ID, lr.Step.ID, node, err)}
	}
	exits := map[int]api.TaskExit{}
	sent := map[int]api.TaskExit{} // the ends srun has had
	sorted := func() []api.TaskExit {
		xs := make([]api.TaskExit, 0, len(exits))
		for _, x := range exits {
			xs = append(xs, x)
		}
		sort.Slice(xs, func(a, b int) bool { return xs[a].Task < xs[b].Task })
		return xs
	}
	lost := func(err error) ([]api.TaskExit, agent.NodeEnd) {
		xs := sorted()
		for k := range xs {
			if d.keepSteps.Load() {
				break // srun gets them from the daemon it attaches to next
			}
			if _, ok := sent[xs[k].Task]; !ok {
				_ = out.Send(api.StepEvent{Exit: &xs[k]})
			}
		}
		if ctx.Err() != nil {
			return xs, agent.NodeEnd{Cancelled: true}
		}
		return xs, agent.NodeEnd{Error: fmt.Sprintf("%s: the node lost StepId=%d.%d: %v", node, lr.Job.ID, lr.Step.ID, err)}
	}
	var deadline time.Time // while attaching again
	if attach {
		deadline = time.Now().Add(d.cfg.StepAttachWait())
	}
	for {
		path := "/internal/step/launch"
		if attach {
			path = "/internal/step/attach"
		}
		addr, err := d.peers.API(node)
		var resp *http.Response
		if err == nil {
			// No overall timeout: the answer lasts as long as the tasks run.
			resp, err = d.peers.Post(ctx, peer.Identity{Node: true}, addr, path, lr, d.peers.Stream)
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
		end, err := d.relayStream(resp, exits, sent, out, &l.hub, onExit)
		if end != nil {
			// Task ends srun has not had go with the node's end: on a
			// node where the OOM killer struck, a task that failed
			// reports SigOOM, as slurmstepd's do (its shell may have seen
			// its child killed and exited 137); srun takes the later word.
			xs := sorted()
			for k := range xs {
				if end.OOM && (xs[k].Signal != 0 || xs[k].ExitCode != 0) {
					xs[k].ExitCode, xs[k].Signal = 0, api.SigOOM
				}
				if had, ok := sent[xs[k].Task]; !ok || had != xs[k] {
					_ = out.Send(api.StepEvent{Exit: &xs[k]})
				}
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
		deadline = time.Now().Add(d.cfg.StepAttachWait() + 10*time.Second)
	}
}

// relayStream relays a node's answer (relayNode), then closes it. The
// stream ends right after the node's end: it is then read to its close,
// so that its connection goes back to the pool. Closed unread, the next
// step on the node (its port question first) paid a new TLS handshake,
// 2-7 ms of every srun here. That read is out of the step's way: the
// launch's context, cancelled once the launcher is done with the step,
// stops it on a node slow to close the stream.
func (d *Daemon) relayStream(resp *http.Response, exits, sent map[int]api.TaskExit, out *peer.NDJSON, hub *attachHub, onExit func(api.TaskExit)) (*agent.NodeEnd, error) {
	end, err := d.relayNode(resp.Body, exits, sent, out, hub, onExit)
	if end == nil {
		resp.Body.Close()
	} else {
		go peer.DrainClose(resp.Body)
	}
	return end, err
}

// relayNode reads a node's stream of a step: output goes on to out, task
// ends into exits and, the first time, on to out (sent records them),
// until the node's end (returned) or the stream's. Output also goes to
// the step's sattach readers (hub).
func (d *Daemon) relayNode(body io.Reader, exits, sent map[int]api.TaskExit, out *peer.NDJSON, hub *attachHub, onExit func(api.TaskExit)) (*agent.NodeEnd, error) {
	dec := json.NewDecoder(body)
	for {
		var f agent.TaskFrame
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
			if _, ok := sent[f.Exit.Task]; !ok {
				// srun hears of each task's end as it comes (srun -W
				// counts from the first).
				sent[f.Exit.Task] = *f.Exit
				_ = out.Send(api.StepEvent{Exit: f.Exit})
			}
			if onExit != nil {
				onExit(*f.Exit)
			}
		case f.Stream != 0:
			ev := api.StepEvent{Task: f.Task, Stream: f.Stream, Data: f.Data}
			_ = out.Send(ev)
			hub.publish(ev) // to sattach readers, if any (sattach.go)
		}
	}
}

// handleStepSignal forwards srun's signal to the nodes of its step; 9
// kills the step at once (SIGKILL, no SIGTERM first: its tasks end
// Killed), which then ends CANCELLED.
func (d *Daemon) handleStepSignal(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.StepSignalRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
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
	peer.WriteJSON(w, struct{}{})
}

// ownLaunch returns the step this node runs for srun if the caller may act
// on it; otherwise it answers with the error and returns nil.
func (d *Daemon) ownLaunch(w http.ResponseWriter, id peer.Identity, job uint64, step uint32) *launch {
	d.launchMu.Lock()
	l := d.launches[stepKey{job, step}]
	d.launchMu.Unlock()
	switch {
	case l == nil:
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAlreadyDone})
		return nil
	case id.UID != 0 && id.UID != l.uid:
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAccessDenied})
		return nil
	}
	return l
}

// signalStep sends a step signal to its nodes.
func (d *Daemon) signalStep(ctx context.Context, nodes []string, req api.StepSignalRequest) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			addr, err := d.peers.API(n)
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err = d.peers.CallNode(cctx, addr, "/internal/step/signal", req, nil)
				cancel()
			}
			if err != nil {
				d.log.Warn("step signal failed", "job", req.JobID, "step", req.StepID, "node", n, "err", err)
			}
		})
	}
	wg.Wait()
}

// createStep asks the leader for srun's step (or, path /api/step/find,
// the step it runs already). An exclusive step whose CPUs other steps
// hold waits for them, srun told so on the stream it then opens; ok is
// false when it has answered srun with the error.
func (d *Daemon) createStep(w http.ResponseWriter, r *http.Request, id peer.Identity, path string, req api.StepRequest) (created stepCreated, out *peer.NDJSON, ok bool) {
	for {
		err := d.peers.Call(r.Context(), id, d.addr(d.cfg.APIPort), path, stepCreateRequest{StepRequest: req, Launcher: d.o.Name}, &created)
		if err == nil {
			break
		}
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Message != api.ErrNodesBusy {
			if out != nil {
				_ = out.Send(api.StepEvent{Done: &api.StepDone{State: api.StateFailed, ExitCode: 1, Error: err.Error()}})
			} else {
				peer.UserErr(w, err)
			}
			return created, nil, false
		}
		// An exclusive step whose CPUs other steps hold waits for them,
		// as srun does ("step creation temporarily disabled").
		if out == nil {
			out = peer.NewNDJSON(w)
			_ = out.Send(api.StepEvent{Warning: fmt.Sprintf("Job %d step creation temporarily disabled, retrying (%s)", req.JobID, api.ErrNodesBusy)})
		}
		select {
		case <-r.Context().Done():
			return created, nil, false
		case <-time.After(time.Second):
		}
	}
	if out == nil {
		out = peer.NewNDJSON(w)
	}
	return created, out, true
}
