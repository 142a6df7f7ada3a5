package agent

import (
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// A step's share on a node outlives the connection that carries it to its
// launcher, as Slurm's steps outlive slurmd: its output, task ends and end
// go through a stepRelay, which waits while no launcher is attached. The
// launcher attaches again (/internal/step/attach) when its stream broke:
// this node's daemon was restarted (the new one re-attached to the step,
// reattach.go), or the launcher's was (srun attaches to the new one). While
// nobody is attached the tasks block once their pipes are full; if nobody
// comes back within stepAttachWait the step is killed and what is left of
// it dropped.

type stepRelay struct {
	mu   sync.Mutex
	cond *sync.Cond
	out  *peer.NDJSON // the attached launcher's stream; nil while none
	// replaying is the stream attach is sending the task ends so far
	// on: while it is out, output and the end wait, so that a launcher
	// that comes back gets the ends before anything newer (its end last).
	replaying *peer.NDJSON
	gone      bool // nobody came back: everything is dropped
	exits     map[int]api.TaskExit
	end       *NodeEnd
	// delivered is closed once the end has reached a launcher (or been
	// dropped): the share is over.
	delivered chan struct{}
	timer     *time.Timer
	wait      time.Duration
	abandon   func() // kills the step when nobody comes back
}

// newStepRelay makes a relay without a stream: attach gives it one. Its
// wait for one starts with expect, or when a stream it had goes away.
func newStepRelay(wait time.Duration, abandon func()) *stepRelay {
	r := &stepRelay{exits: map[int]api.TaskExit{}, delivered: make(chan struct{}), wait: wait, abandon: abandon}
	r.cond = sync.NewCond(&r.mu)
	r.timer = time.AfterFunc(wait, r.giveUp)
	r.timer.Stop()
	return r
}

// expect starts the wait for a launcher to attach.
func (r *stepRelay) expect() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == nil && !r.gone {
		r.timer.Reset(r.wait)
	}
}

// stop ends a relay that will carry nothing (its step never started).
func (r *stepRelay) stop() { r.timer.Stop() }

// giveUp drops the share: nobody attached in time.
func (r *stepRelay) giveUp() {
	r.mu.Lock()
	if r.out != nil || r.gone || r.isOver() {
		r.mu.Unlock()
		return
	}
	r.gone = true
	if r.end != nil {
		r.over()
	}
	r.cond.Broadcast()
	r.mu.Unlock()
	r.abandon()
}

// attach makes out the relay's stream: the task ends so far and the end,
// if the share has ended, are sent on it again. It returns false if the
// relay gave up.
func (r *stepRelay) attach(out *peer.NDJSON) bool {
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		return false
	}
	if r.out != nil {
		r.out.Close() // a stream the launcher left for this one
	}
	r.out, r.replaying = out, out
	r.timer.Stop()
	exits := make([]api.TaskExit, 0, len(r.exits))
	for _, x := range r.exits {
		exits = append(exits, x)
	}
	r.mu.Unlock()
	sent := true
	for i := range exits {
		if out.Send(TaskFrame{Exit: &exits[i]}) != nil {
			sent = false // detached again: the next launcher gets them
			break
		}
	}
	// The end is read only now: a finish during the replay left it to us.
	r.mu.Lock()
	if r.replaying == out {
		r.replaying = nil
	}
	end := r.end
	r.cond.Broadcast()
	r.mu.Unlock()
	if sent && end != nil {
		r.sendEnd(out, end)
	}
	return true
}

// detach forgets out, a stream whose launcher went away, and starts
// waiting for the next.
func (r *stepRelay) detach(out *peer.NDJSON) {
	out.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == out {
		r.out = nil
		if !r.isOver() {
			r.timer.Reset(r.wait)
		}
	}
}

// over marks the share over: its end has reached a launcher, or nobody is
// to have it. Called with r.mu held; once is enough.
func (r *stepRelay) over() {
	if !r.isOver() {
		close(r.delivered)
		r.timer.Stop()
		r.cond.Broadcast()
	}
}

// isOver reports whether the share is over. Called with r.mu held.
func (r *stepRelay) isOver() bool {
	select {
	case <-r.delivered:
		return true
	default:
		return false
	}
}

// send passes a frame on, waiting for a launcher while none is attached.
func (r *stepRelay) send(f TaskFrame) {
	for {
		r.mu.Lock()
		for (r.out == nil || r.replaying == r.out) && !r.gone && !r.isOver() {
			r.cond.Wait()
		}
		out, gone := r.out, r.gone
		r.mu.Unlock()
		if gone || out == nil || out.Send(f) == nil {
			return // nobody is to have it
		}
		r.detach(out)
	}
}

// exit records a task's end and passes it on.
func (r *stepRelay) exit(x api.TaskExit) {
	r.mu.Lock()
	r.exits[x.Task] = x
	r.mu.Unlock()
	r.send(TaskFrame{Exit: &x})
}

// finish records the share's end and passes it on: the share is over once
// a launcher has it.
func (r *stepRelay) finish(e NodeEnd) {
	r.mu.Lock()
	r.end = &e
	out, gone := r.out, r.gone
	if out != nil && r.replaying == out {
		out = nil // attach sends the end after the task ends it replays
	}
	if gone {
		r.over()
	}
	r.mu.Unlock()
	if out != nil {
		r.sendEnd(out, &e)
	}
}

// sendEnd sends the end on out; once it is through, the share is over.
func (r *stepRelay) sendEnd(out *peer.NDJSON, e *NodeEnd) {
	if out.Send(TaskFrame{End: e}) != nil {
		r.detach(out)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.over()
}

// serve attaches a launcher's request to the relay and answers it until
// the share is over or the launcher goes away.
func (r *stepRelay) serve(out *peer.NDJSON, done <-chan struct{}) {
	if !r.attach(out) {
		_ = out.Send(TaskFrame{End: &NodeEnd{Error: "the step was ended: its launcher did not come back in time"}})
		return
	}
	select {
	case <-r.delivered:
		out.Close()
	case <-done:
		r.detach(out)
	}
}

// relayWriter is a task's output stream through a relay.
type relayWriter struct {
	r            *stepRelay
	task, stream int
}

func (w relayWriter) Write(p []byte) (int, error) {
	// The frame's data outlives this call (it waits for a launcher).
	w.r.send(TaskFrame{Task: w.task, Stream: w.stream, Data: append([]byte(nil), p...)})
	return len(p), nil
}
