package cluster

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
	"hpc/cluster/peer"
)

// scontrol update: job settings (TimeLimit, Partition, NumNodes, JobName,
// StartTime)
// and node states (DRAIN, RESUME, DOWN with a Reason), committed through
// Raft like everything else.

func (d *Daemon) handleUpdate(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.UpdateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	var err error
	if len(req.Nodes) > 0 {
		err = d.updateNodes(id, req)
	} else {
		err = d.updateJob(id, req)
	}
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}

func (d *Daemon) updateJob(id peer.Identity, req api.UpdateRequest) error {
	j, _ := d.fsm.Job(req.JobID)
	if j == nil {
		return &api.Error{Message: api.ErrInvalidJobID}
	}
	v := d.viewer(id)
	if !v.mayActOn(j) {
		return &api.Error{Message: api.ErrAccessDenied}
	}
	privileged := v.operator
	var u fsm.JobUpdate
	spec := j.Spec
	for k, v := range req.Set {
		switch strings.ToLower(k) {
		case "timelimit":
			m, err := jobspec.ParseTime(v)
			if err != nil || m < -1 || m == 0 {
				return &api.Error{Message: api.ErrInvalidTimeLimit}
			}
			// Users may only shorten their jobs; root and operators may do
			// anything.
			if !privileged && (m == -1 || (j.Spec.TimeLimitMin > 0 && m > j.Spec.TimeLimitMin)) {
				return &api.Error{Message: api.ErrAccessDenied}
			}
			u.TimeLimitMin, spec.TimeLimitMin = m, m
		case "partition":
			if j.State != api.StatePending {
				return &api.Error{Message: api.ErrJobNotPendingOrRun}
			}
			u.Partition, spec.Partition = v, v
		case "numnodes":
			n, err := strconv.Atoi(strings.SplitN(v, "-", 2)[0])
			if err != nil || n < 1 {
				return &api.Error{Message: api.ErrNodeCountInvalid}
			}
			if j.State != api.StatePending {
				return &api.Error{Message: api.ErrJobNotPendingOrRun}
			}
			u.Nodes, spec.Nodes = n, n
		case "jobname", "name":
			u.Name, spec.Name = v, v
		case "starttime":
			if j.State != api.StatePending {
				return &api.Error{Message: api.ErrJobNotPendingOrRun}
			}
			at, err := jobspec.ParseBegin(v, d.now())
			if err != nil {
				return &api.Error{Message: "Invalid time specification", Detail: err.Error()}
			}
			u.Begin, spec.Begin = &at, at
		default:
			return &api.Error{Message: "Update of this parameter is not supported: " + k}
		}
	}
	if j.State == api.StatePending {
		if err := validateSpec(d.conf(), &spec); err != nil {
			return err
		}
		d.view.forget(j.ID)
	}
	_, err := d.propose(&fsm.UpdateJob{JobID: j.ID, Update: u})
	return err
}

// updateNodes is scontrol update NodeName=... State=DRAIN|RESUME|DOWN
// Reason=...: only root may change node states.
func (d *Daemon) updateNodes(id peer.Identity, req api.UpdateRequest) error {
	if id.UID != 0 {
		return &api.Error{Message: api.ErrAccessDenied}
	}
	var names []string
	for _, n := range req.Nodes {
		exp, err := hostlist.Expand(n)
		if err != nil {
			return &api.Error{Message: api.ErrInvalidNodeName, Detail: err.Error()}
		}
		names = append(names, exp...)
	}
	state, reason := "", ""
	for k, v := range req.Set {
		switch strings.ToLower(k) {
		case "state":
			state = strings.ToUpper(v)
		case "reason":
			reason = v
		default:
			return &api.Error{Message: "Update of this parameter is not supported: " + k}
		}
	}
	var target string
	switch state {
	case "DRAIN":
		target = "DRAIN"
	case "DOWN":
		target = "ADMIN_DOWN"
	case "RESUME", "IDLE":
		target = "UP"
	default:
		return &api.Error{Message: "Invalid node state specified"}
	}
	if (target == "DRAIN" || target == "ADMIN_DOWN") && reason == "" {
		return &api.Error{Message: "You must specify a reason when DOWNING or DRAINING a node. Request denied"}
	}
	for _, n := range names {
		if d.cfg.Node(n) == nil {
			return &api.Error{Message: api.ErrInvalidNodeName, Detail: "Invalid node name specified: " + n}
		}
	}
	for _, n := range names {
		if _, err := d.propose(&fsm.NodeStateChange{Time: d.now(), Node: n, State: target, Why: reason, UID: id.UID}); err != nil {
			return err
		}
	}
	return nil
}
