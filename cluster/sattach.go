package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// sattach: extra readers of a running step's I/O. The step's launcher
// (steplauncher.go) merges its nodes' output for srun; it also hands
// each piece to the step's attachHub, which fans it out to the sattach
// readers attached at the time. With nobody attached that costs one
// atomic load per piece. Each reader has a bounded queue
// (attachQueue pieces): a reader that does not keep up loses output
// (it is told how much) and never holds back the step or srun. A
// sattach on any node reaches the launcher through its own daemon
// (/api/step/sattach: the leader says which node launched the step, and
// the request goes there with the caller's identity, signed), and its
// input goes to the step's tasks as srun's does (stepinput.go), to one
// task with --input-filter.

// attachQueue bounds what an attached reader may lag behind, in pieces
// of output.
const attachQueue = 1024

// attachHub is a step's set of attached readers.
type attachHub struct {
	n       atomic.Int32 // len(readers): the fast path when nobody is attached
	mu      sync.Mutex
	readers map[*attachReader]struct{}
	done    *api.StepDone // once the step is over
	over    bool
}

// attachReader is one attached sattach.
type attachReader struct {
	outTask, errTask int // -1: every task's
	ch               chan api.StepEvent
	dropped          atomic.Int64
	over             chan struct{} // closed when the step is over
}

// publish hands a piece of the step's output to the attached readers; a
// reader whose queue is full loses it.
func (h *attachHub) publish(ev api.StepEvent) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for r := range h.readers {
		if (ev.Stream == api.StreamStdout && r.outTask >= 0 && ev.Task != r.outTask) ||
			(ev.Stream == api.StreamStderr && r.errTask >= 0 && ev.Task != r.errTask) {
			continue
		}
		select {
		case r.ch <- ev:
		default:
			r.dropped.Add(1)
		}
	}
}

// add attaches a reader; false once the step is over.
func (h *attachHub) add(r *attachReader) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over {
		return false
	}
	if h.readers == nil {
		h.readers = map[*attachReader]struct{}{}
	}
	h.readers[r] = struct{}{}
	h.n.Store(int32(len(h.readers)))
	return true
}

func (h *attachHub) remove(r *attachReader) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.readers, r)
	h.n.Store(int32(len(h.readers)))
}

// close ends every reader's stream: the step is over (done nil: its
// launcher is leaving it to the next one).
func (h *attachHub) close(done *api.StepDone) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over {
		return
	}
	h.over, h.done = true, done
	for r := range h.readers {
		close(r.over)
	}
}

// handleSattach attaches the caller to a step's I/O: here if this node
// launched it, else through the step's launcher.
func (d *Daemon) handleSattach(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.AttachRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	if l := d.launchOf(req.JobID, req.StepID); l != nil {
		if l = d.ownLaunch(w, id, req.JobID, req.StepID); l != nil {
			d.serveAttach(w, r, l, req)
		}
		return
	}
	addr, err := d.stepLauncher(r.Context(), id, req.JobID, req.StepID)
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	resp, err := d.peers.Post(r.Context(), id, addr, "/api/step/sattach", req, d.peers.Stream)
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	defer resp.Body.Close()
	out := peer.NewNDJSON(w)
	dec := json.NewDecoder(resp.Body)
	for {
		var ev api.AttachEvent
		if dec.Decode(&ev) != nil || out.Send(ev) != nil {
			return
		}
	}
}

// launchOf is the step this node launched, or nil.
func (d *Daemon) launchOf(job uint64, step uint32) *launch {
	d.launchMu.Lock()
	defer d.launchMu.Unlock()
	return d.launches[stepKey{job, step}]
}

// stepLauncher is the API address of the node that launched a running
// step the caller may see; an error if this node is that node (the step
// is over here) or the step does not run.
func (d *Daemon) stepLauncher(ctx context.Context, id peer.Identity, job uint64, step uint32) (string, error) {
	var found stepCreated
	req := stepCreateRequest{StepRequest: api.StepRequest{JobID: job, StepID: step, Attach: true}}
	if err := d.peers.Call(ctx, id, d.addr(d.cfg.APIPort), "/api/step/find", req, &found); err != nil {
		return "", err
	}
	if found.Step.Launcher == "" || found.Step.Launcher == d.o.Name {
		return "", &api.Error{Message: api.ErrAlreadyDone}
	}
	return d.peers.API(found.Step.Launcher)
}

// serveAttach streams a step's output to an attached reader: the step
// first, then what its tasks write, then its end.
func (d *Daemon) serveAttach(w http.ResponseWriter, r *http.Request, l *launch, req api.AttachRequest) {
	out := peer.NewNDJSON(w)
	s := l.step
	if req.Layout {
		_ = out.Send(api.AttachEvent{StepEvent: api.StepEvent{Step: &s}})
		return
	}
	// Attached before the step is said: what its tasks write once the
	// reader knows it is attached (its input's answers) reaches it.
	rd := &attachReader{outTask: req.OutTask, errTask: req.ErrTask, ch: make(chan api.StepEvent, attachQueue), over: make(chan struct{})}
	if !l.hub.add(rd) {
		_ = out.Send(api.AttachEvent{StepEvent: api.StepEvent{Done: l.hub.done}})
		return
	}
	defer l.hub.remove(rd)
	if out.Send(api.AttachEvent{StepEvent: api.StepEvent{Step: &s}}) != nil {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	send := func(ev api.StepEvent) bool { return out.Send(api.AttachEvent{StepEvent: ev}) == nil }
	for {
		select {
		case ev := <-rd.ch:
			if !send(ev) {
				return
			}
		case <-tick.C:
			if n := rd.dropped.Swap(0); n > 0 && out.Send(api.AttachEvent{Dropped: n}) != nil {
				return
			}
		case <-rd.over:
			for {
				select {
				case ev := <-rd.ch:
					if !send(ev) {
						return
					}
					continue
				default:
				}
				break
			}
			done := l.hub.done
			if done == nil {
				done = &api.StepDone{Error: "the step's launcher went away"}
			}
			_ = out.Send(api.AttachEvent{StepEvent: api.StepEvent{Done: done}})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// handleSattachInput passes a piece of sattach's input on to the step's
// tasks (all that read input, or one), through its launcher.
func (d *Daemon) handleSattachInput(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var in api.AttachInput
	if err := json.Unmarshal(body, &in); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	if d.launchOf(in.JobID, in.StepID) == nil {
		addr, err := d.stepLauncher(r.Context(), id, in.JobID, in.StepID)
		if err == nil {
			err = d.peers.Call(r.Context(), id, addr, "/api/step/sattach/input", in, nil)
		}
		if err != nil {
			peer.UserErr(w, err)
			return
		}
		peer.WriteJSON(w, struct{}{})
		return
	}
	l := d.ownLaunch(w, id, in.JobID, in.StepID)
	if l == nil {
		return
	}
	nodes := l.inputNodes(false)
	if in.Task >= 0 {
		nodes = l.taskNode(in.Task)
	}
	d.sendInput(w, r.Context(), nodes, in)
}

// taskNode is the node of a step's task, as a list of one (none if the
// step has no such task).
func (l *launch) taskNode(task int) []string {
	for i, c := range l.tasks {
		if task < c {
			return l.nodes[i : i+1]
		}
		task -= c
	}
	return nil
}
