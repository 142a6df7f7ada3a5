package agent

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
	"hpc/exec"
)

// A piece of srun's input reaches this node's tasks (stepinput.go in
// cluster passes it on from srun's node).

// taskInput sets up the input of a step's task whose global rank is g.
func taskInput(t *exec.TaskSpec, req *StepLaunchRequest, g int) {
	switch {
	case req.Pty && g == 0:
		t.TTY, t.Rows, t.Cols = true, req.Rows, req.Cols
		t.Stderr = nil // one terminal: its output is all stdout
	case req.Pty:
	case req.Input == "all" || (req.Input != "" && req.Input == strconv.Itoa(g)):
		t.Stdin = true
	}
}

// handleTaskInput writes a piece of srun's input to this node's tasks of
// the step (or resizes task 0's terminal). A piece may arrive before the
// step has started here: it waits for it a little.
func (ag *Agent) handleTaskInput(w http.ResponseWriter, r *http.Request) {
	// Task, from sattach --input-filter, picks one task (-1 or absent:
	// every task here that reads input).
	var in struct {
		api.StepInput
		Task *int `json:"task"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	var ts *taskStep
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ag.steps.mu.Lock()
		ts = ag.steps.tasks[in.JobID][in.StepID]
		ag.steps.mu.Unlock()
		if ts != nil || time.Now().After(deadline) {
			break
		}
	}
	if ts == nil {
		peer.WriteErr(w, http.StatusNotFound, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	<-ts.ready
	st := ts.step
	if st == nil {
		peer.WriteErr(w, http.StatusNotFound, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	if in.Resize {
		_ = st.Resize(0, in.Rows, in.Cols)
		peer.WriteJSON(w, struct{}{})
		return
	}
	for i := 0; ; i++ {
		in2 := st.Stdin(i)
		if in.Task != nil && *in.Task >= 0 && i != *in.Task-ts.first {
			in2 = nil
		}
		if in2 == nil {
			if i >= st.Tasks() {
				break
			}
			continue
		}
		if len(in.Data) > 0 {
			if _, err := in2.Write(in.Data); err != nil && !errors.Is(err, io.ErrClosedPipe) {
				ag.log.Debug("task input", "job", in.JobID, "step", in.StepID, "task", i, "err", err)
			}
		}
		if in.EOF {
			in2.Close()
		}
	}
	peer.WriteJSON(w, struct{}{})
}
