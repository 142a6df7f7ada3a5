package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// sstat: the leader picks the running steps asked for and asks the agents
// of their nodes for their live usage (agent/stepstat.go), which it
// answers task by task; the command sums them up.
//
// Who may: the job's owner, root and operators (slurmd's check on
// REQUEST_JOB_STEP_STAT); anyone else gets each step with Slurm's
// "Invalid user id". A job the caller may not see at all (PrivateData=jobs)
// or that does not exist is an invalid job id; an ended job has no
// running steps.

// handleStat answers POST /api/stat.
func (d *Daemon) handleStat(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.StatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	j, _ := d.fsm.Job(req.JobID)
	v := d.viewer(id)
	if j == nil || !v.listed(j) {
		peer.WriteErr(w, http.StatusNotFound, &api.Error{Message: api.ErrInvalidJobID})
		return
	}
	var out api.StatResponse
	if j.State != api.StateRunning {
		peer.WriteJSON(w, out)
		return
	}
	names, nodes := statSteps(j, req)
	if len(names) == 0 {
		peer.WriteJSON(w, out)
		return
	}
	if !v.mayActOn(j) {
		for _, n := range names {
			out.Steps = append(out.Steps, api.StepStat{JobID: j.ID, Step: n, Error: api.ErrUserIDMissing})
		}
		peer.WriteJSON(w, out)
		return
	}
	got := d.gatherStats(r.Context(), j.ID, nodes)
	for _, n := range names {
		if s, ok := got[n]; ok {
			sort.Strings(s.Nodes)
			sort.SliceStable(s.Tasks, func(a, b int) bool { return s.Tasks[a].Task < s.Tasks[b].Task })
			out.Steps = append(out.Steps, *s)
		}
	}
	peer.WriteJSON(w, out)
}

// statSteps are the running steps of j a request names, in order, and
// which of them each node runs.
func statSteps(j *api.Job, req api.StatRequest) ([]string, map[string][]string) {
	var names []string
	nodes := map[string][]string{}
	add := func(name string, on []string) {
		names = append(names, name)
		for _, n := range on {
			nodes[n] = append(nodes[n], name)
		}
	}
	batch := j.BatchHost != "" && j.Spec.Script != "" && j.Spec.Script != api.HolderScript
	if batch && (req.Step == "batch" || (req.Step == "" && req.All)) {
		add("batch", []string{j.BatchHost})
	}
	for _, s := range j.Steps {
		if s.State != api.StateRunning {
			continue
		}
		id := strconv.FormatUint(uint64(s.ID), 10)
		switch {
		case req.Step == id:
		case req.Step == "" && req.All:
		case req.Step == "" && len(names) == 0:
		default:
			continue
		}
		add(id, s.Nodes)
	}
	return names, nodes
}

// gatherStats asks each node for its share of the steps it runs, in
// parallel; a node that does not answer is left out.
func (d *Daemon) gatherStats(ctx context.Context, job uint64, nodes map[string][]string) map[string]*api.StepStat {
	var mu sync.Mutex
	got := map[string]*api.StepStat{}
	var wg sync.WaitGroup
	for node, names := range nodes {
		wg.Go(func() {
			addr, err := d.peers.API(node)
			if err != nil {
				return
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var rep agent.StatReply
			if err := d.peers.CallNode(cctx, addr, "/internal/step/stat", agent.StatRequest{JobID: job, Steps: names}, &rep); err != nil {
				d.log.Warn("sstat: node did not answer", "job", job, "node", node, "err", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range rep.Steps {
				m := got[s.Step]
				if m == nil {
					m = &api.StepStat{JobID: job, Step: s.Step}
					got[s.Step] = m
				}
				m.Nodes = append(m.Nodes, s.Nodes...)
				m.Tasks = append(m.Tasks, s.Tasks...)
				if m.Error == "" {
					m.Error = s.Error
				}
			}
		})
	}
	wg.Wait()
	return got
}
