package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

// The leader's side of steps: creating and ending them, and the
// allocations srun and salloc make and release.

// handleStepCreate checks a step request against its job, places its tasks
// and commits the step.
func (d *Daemon) handleStepCreate(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req stepCreateRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Argv) == 0 {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	j := d.callersJob(w, id, req.JobID)
	switch {
	case j == nil:
		return
	case j.State == api.StatePending:
		peer.UserErr(w, &api.Error{Message: "Job is pending execution"})
		return
	case j.State != api.StateRunning || j.CancelRequested:
		peer.UserErr(w, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	plan, err := planStep(j, &req.StepRequest)
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	name := req.Name
	if name == "" {
		name = filepath.Base(req.Argv[0])
	}
	s := api.Step{Name: name, Nodes: plan.Nodes, Tasks: plan.Tasks, CPUsPerTask: plan.CPUsPerTask, Launcher: req.Launcher, Exclusive: req.Exclusive}
	res, err := d.propose(&fsm.StepStart{Time: d.now(), JobID: j.ID, Step: s})
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	j, _ = d.fsm.Job(req.JobID)
	if j == nil || j.StepIndex(uint32(res.JobID)) < 0 {
		peer.UserErr(w, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	peer.WriteJSON(w, stepCreated{Job: *j, Step: j.Steps[j.StepIndex(uint32(res.JobID))], Warning: plan.Warning})
}

// callersJob returns a job the caller may act on (root, or its owner); if
// there is none, it answers with the error and returns nil. Those callers
// see the job whole (privacy.go), so the step routes answer it as is.
func (d *Daemon) callersJob(w http.ResponseWriter, id peer.Identity, jobID uint64) *api.Job {
	j, _ := d.fsm.Job(jobID)
	switch {
	case j == nil:
		peer.UserErr(w, &api.Error{Message: api.ErrInvalidJobID})
		return nil
	case id.UID != 0 && id.UID != j.UID:
		peer.UserErr(w, &api.Error{Message: api.ErrAccessDenied})
		return nil
	}
	return j
}

// handleStepFind answers a launcher that attaches to a running step of
// its srun (api.StepRequest.Attach) with the step and its job.
func (d *Daemon) handleStepFind(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req stepCreateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	j := d.callersJob(w, id, req.JobID)
	if j == nil {
		return
	}
	i := j.StepIndex(req.StepID)
	if (j.State != api.StateRunning && j.State != api.StateCompleting) || i < 0 || j.Steps[i].State != api.StateRunning {
		peer.UserErr(w, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	peer.WriteJSON(w, stepCreated{Job: *j, Step: j.Steps[i]})
}

// handleStepEnd commits a step's end and answers with the step as recorded.
func (d *Daemon) handleStepEnd(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var rep api.StepEndReport
	if err := json.Unmarshal(body, &rep); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	if _, err := d.propose(&fsm.StepEnd{Time: d.now(), JobID: rep.JobID, Step: rep.Step}); err != nil {
		peer.WriteErr(w, http.StatusServiceUnavailable, err)
		return
	}
	j, _ := d.fsm.Job(rep.JobID)
	if j == nil || j.StepIndex(rep.Step.ID) < 0 {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidJobID})
		return
	}
	peer.WriteJSON(w, j.Steps[j.StepIndex(rep.Step.ID)])
}

// handleAllocWait answers once the job has left PENDING, or after the
// timeout (a long poll), with its allocation's environment when it runs:
// to its owner and root only (the job they see is whole, privacy.go).
func (d *Daemon) handleAllocWait(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	mine := func(j *api.Job) bool { return id.UID == 0 || id.UID == j.UID }
	j := d.pollJob(w, r, id, func(j *api.Job) bool { return j.State != api.StatePending || !mine(j) }) // server.go
	switch {
	case j == nil:
	case !mine(j):
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAccessDenied})
	case j.State == api.StateRunning:
		peer.WriteJSON(w, api.Allocation{Job: *j, Env: d.agent.AllocEnv(j)})
	default:
		peer.WriteJSON(w, api.Allocation{Job: *j})
	}
}

// handleRelease ends an allocation salloc or srun made: a pending one is
// cancelled; a running one's holder ends, and the job with the status the
// client gave.
func (d *Daemon) handleRelease(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.ReleaseRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	j := d.callersJob(w, id, req.JobID)
	switch {
	case j == nil:
		return
	case j.State.Final():
		peer.WriteJSON(w, struct{}{})
		return
	case j.Spec.Script != api.HolderScript:
		peer.UserErr(w, &api.Error{Message: fmt.Sprintf("job %d is not an allocation of salloc or srun", j.ID)})
		return
	case j.State == api.StatePending:
		if _, err := d.propose(&fsm.Cancel{Time: d.now(), JobID: j.ID, UID: id.UID}); err != nil {
			peer.UserErr(w, err)
			return
		}
		peer.WriteJSON(w, struct{}{})
		return
	}
	addr, err := d.peers.API(j.BatchHost)
	if err == nil {
		err = d.peers.CallNode(r.Context(), addr, "/internal/job/release", req, nil)
	}
	if err != nil {
		peer.WriteErr(w, http.StatusServiceUnavailable, err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}
