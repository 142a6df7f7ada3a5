package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
	"hpc/exec"
)

// srun's standard input reaches its tasks as Slurm's does: by default
// every task gets it (--input=all), or one task (--input=N), or none; with
// --pty task 0 runs on a pseudo-terminal and gets it alone. srun sends it
// in pieces (api.StepInput) to the node it talks to, which passes each
// piece on to the nodes of the tasks that read it, each writing it to
// their tasks' stdin: one request at a time, so a task that does not read
// holds srun back rather than filling memory. The pieces are signed
// requests like every node-to-node call; a resize goes to task 0's node.

// taskInput sets up the input of a step's task whose global rank is g.
func taskInput(t *exec.TaskSpec, req *stepLaunchRequest, g int) {
	switch {
	case req.Pty && g == 0:
		t.TTY, t.Rows, t.Cols = true, req.Rows, req.Cols
		t.Stderr = nil // one terminal: its output is all stdout
	case req.Pty:
	case req.Input == "all" || (req.Input != "" && req.Input == strconv.Itoa(g)):
		t.Stdin = true
	}
}

// inputNodes are the nodes of a step whose tasks read srun's input.
func (l *launch) inputNodes(resize bool) []string {
	if l.pty || resize {
		return l.nodes[:1] // task 0 runs on the step's first node
	}
	if l.input == "all" {
		return l.nodes
	}
	n, err := strconv.Atoi(l.input)
	if err != nil {
		return nil
	}
	for i, c := range l.tasks {
		if n < c {
			return l.nodes[i : i+1]
		}
		n -= c
	}
	return nil
}

// handleStepInput passes a piece of srun's input on to its step's nodes.
func (d *Daemon) handleStepInput(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var in api.StepInput
	if err := json.Unmarshal(body, &in); err != nil {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	l := d.ownLaunch(w, id, in.JobID, in.StepID)
	if l == nil {
		return
	}
	var wg sync.WaitGroup
	errs := make([]error, len(l.nodes))
	for i, n := range l.inputNodes(in.Resize) {
		wg.Go(func() {
			addr, err := d.peers.API(n)
			if err == nil {
				ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
				err = d.peers.CallNode(ctx, addr, "/internal/step/input", in, nil)
				cancel()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		writeErr(w, http.StatusBadGateway, err)
		return
	}
	writeJSON(w, struct{}{})
}

// handleTaskInput writes a piece of srun's input to this node's tasks of
// the step (or resizes task 0's terminal). A piece may arrive before the
// step has started here: it waits for it a little.
func (d *Daemon) handleTaskInput(w http.ResponseWriter, r *http.Request) {
	var in api.StepInput
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	var ts *taskStep
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d.steps.mu.Lock()
		ts = d.steps.tasks[in.JobID][in.StepID]
		d.steps.mu.Unlock()
		if ts != nil || time.Now().After(deadline) {
			break
		}
	}
	if ts == nil {
		writeErr(w, http.StatusNotFound, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	<-ts.ready
	st := ts.step
	if st == nil {
		writeErr(w, http.StatusNotFound, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	if in.Resize {
		_ = st.Resize(0, in.Rows, in.Cols)
		writeJSON(w, struct{}{})
		return
	}
	for i := 0; ; i++ {
		in2 := st.Stdin(i)
		if in2 == nil {
			if i >= st.Tasks() {
				break
			}
			continue
		}
		if len(in.Data) > 0 {
			if _, err := in2.Write(in.Data); err != nil && !errors.Is(err, io.ErrClosedPipe) {
				d.log.Debug("task input", "job", in.JobID, "step", in.StepID, "task", i, "err", err)
			}
		}
		if in.EOF {
			in2.Close()
		}
	}
	writeJSON(w, struct{}{})
}
