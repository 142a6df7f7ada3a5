package agent

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"hpc/cluster/api"
	"hpc/cluster/peer"
	"hpc/exec"
)

// sstat on this node: the live usage of a job's steps running here, read
// from their processes and cgroups now (exec's Step.LiveUsage).

// StatRequest asks a node for its share of some running steps of a job
// (POST /internal/step/stat); Steps are "batch" or step numbers.
type StatRequest struct {
	JobID uint64   `json:"job_id"`
	Steps []string `json:"steps"`
}

// StatReply is a node's answer: the steps asked for that run here.
type StatReply struct {
	Steps []api.StepStat `json:"steps"`
}

// handleStepStat reads the live usage of the steps asked for that run on
// this node; a step that is not here (or has ended) is left out.
func (ag *Agent) handleStepStat(w http.ResponseWriter, r *http.Request) {
	var req StatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	var out StatReply
	for _, name := range req.Steps {
		st := ag.runningStep(req.JobID, name)
		if st == nil {
			continue
		}
		u, err := st.LiveUsage()
		if errors.Is(err, exec.ErrStepEnded) {
			continue
		}
		s := api.StepStat{JobID: req.JobID, Step: name, Nodes: []string{ag.name}}
		if err != nil {
			s.Error = err.Error()
		}
		for _, t := range u.Tasks {
			s.Tasks = append(s.Tasks, api.TaskStat{
				Node: ag.name, Task: t.Task, Pids: t.Pids, RSSKB: t.RSSKB, VMSizeKB: t.VMSizeKB,
				Pages: t.Pages, CPU: t.CPU, ReadBytes: t.ReadBytes, WriteBytes: t.WriteBytes,
			})
		}
		out.Steps = append(out.Steps, s)
	}
	peer.WriteJSON(w, out)
}

// runningStep is the step of a job that runs on this node by name
// ("batch" or its number), or nil.
func (ag *Agent) runningStep(job uint64, name string) *exec.Step {
	if name == "batch" {
		ag.steps.mu.Lock()
		defer ag.steps.mu.Unlock()
		return ag.steps.steps[job]
	}
	n, err := strconv.ParseUint(name, 10, 32)
	if err != nil {
		return nil
	}
	ag.steps.mu.Lock()
	ts := ag.steps.tasks[job][uint32(n)]
	ag.steps.mu.Unlock()
	if ts == nil {
		return nil
	}
	select {
	case <-ts.ready:
		return ts.step
	default:
		return nil // still starting
	}
}
