package cluster

import (
	"encoding/json"
	"net/http"
	"sync"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

// Every node registers with the leader every few seconds, as slurmd does
// with slurmctld (agent/register.go): the batch jobs and srun steps it
// runs, and the ends it holds not yet committed. The leader reconciles
// both ways:
//   - a run the node has that the state does not give it (ended, cancelled
//     while the node was away, another run, another node's) is killed: the
//     answer names it;
//   - a run the node has whose launch is not yet acknowledged is
//     acknowledged (Launched): the node has it;
//   - a run the state gives the node that the node has not got, in two
//     registrations in a row, with no end of it waiting on the node, is
//     lost: LaunchFailed{Lost} requeues it (or ends it NODE_FAIL), as
//     slurmctld does with a batch job missing from its node. Two in a row,
//     since a registration may have been made just before the launch it
//     misses arrived.

// lostAfter is how many registrations in a row must miss a run.
const lostAfter = 2

// registry is what the leader counts of the registrations.
type registry struct {
	mu   sync.Mutex
	miss map[uint64]missCount // job id -> registrations that missed it
}

type missCount struct {
	node  string
	run   api.JobRun
	count int
}

// missed counts this registration of node: missing are the runs it lacks;
// it returns those missed lostAfter times in a row.
func (g *registry) missed(node string, missing []api.JobRun) []api.JobRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.miss == nil {
		g.miss = map[uint64]missCount{}
	}
	now := map[uint64]bool{}
	var lost []api.JobRun
	for _, r := range missing {
		now[r.JobID] = true
		m := g.miss[r.JobID]
		if m.node != node || !m.run.Run.Equal(r.Run) {
			m = missCount{node: node, run: r}
		}
		m.count++
		g.miss[r.JobID] = m
		if m.count >= lostAfter {
			lost = append(lost, r)
			delete(g.miss, r.JobID)
		}
	}
	for id, m := range g.miss {
		if m.node == node && !now[id] {
			delete(g.miss, id) // seen again, or over
		}
	}
	return lost
}

func (d *Daemon) handleRegister(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var reg api.NodeRegistration
	if err := json.Unmarshal(body, &reg); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	if d.cfg.Node(reg.Node) == nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidNodeName})
		return
	}
	now := d.now()
	d.health.registered(reg.Node, now) // health.go
	resp, acks, missing := d.reconcileRegistration(&reg)
	if len(acks) > 0 {
		if _, err := d.propose(&fsm.Launched{Runs: acks}); err != nil {
			peer.WriteErr(w, http.StatusServiceUnavailable, err)
			return
		}
	}
	for _, run := range d.reg.missed(reg.Node, missing) {
		d.log.Warn("batch job missing from its node", "job", run.JobID, "node", reg.Node)
		op := &fsm.LaunchFailed{Time: now, Run: run, Node: reg.Node, Why: reasonBatchMissing, Lost: true}
		if _, err := d.propose(op); err != nil {
			peer.WriteErr(w, http.StatusServiceUnavailable, err)
			return
		}
	}
	for _, k := range resp.Kill {
		d.log.Warn("a node runs a job it should not; killing it", "job", k.JobID, "node", reg.Node)
	}
	peer.WriteJSON(w, resp)
}

// reasonBatchMissing is the Reason of a job whose batch step its node lost
// (slurmctld logs "Batch JobId=N missing from batch node").
const reasonBatchMissing = "batch job missing from its node"

// reconcileRegistration compares a registration with the state: what the
// node must kill, the runs it acknowledges, and the runs it misses.
func (d *Daemon) reconcileRegistration(reg *api.NodeRegistration) (resp api.RegistrationResponse, acks, missing []api.JobRun) {
	has := map[uint64]bool{}
	for _, e := range reg.Ending {
		has[e.JobID] = true
	}
	live := func(j *api.Job, run api.JobRun) bool {
		return j != nil && (j.State == api.StateRunning || j.State == api.StateCompleting) && j.StartTime.Equal(run.Run)
	}
	d.fsm.View(func(st *fsm.State) {
		for _, run := range reg.Jobs {
			has[run.JobID] = true
			j := st.Jobs[run.JobID]
			switch {
			case !live(j, run) || j.BatchHost != reg.Node:
				resp.Kill = append(resp.Kill, run)
			case !j.Launched:
				acks = append(acks, run)
			}
		}
		for _, s := range reg.Steps {
			if j := st.Jobs[s.JobID]; !live(j, api.JobRun{JobID: s.JobID, Run: s.Run}) || !j.AllocatedOn(reg.Node) {
				resp.KillSteps = append(resp.KillSteps, s)
			}
		}
		for j := range st.NotPending() {
			if j.BatchHost != reg.Node || has[j.ID] || (j.State != api.StateRunning && j.State != api.StateCompleting) {
				continue
			}
			// A run not yet acknowledged may still be on its way to the
			// node, unless it is being killed anyway.
			if j.Launched || j.State == api.StateCompleting {
				missing = append(missing, api.JobRun{JobID: j.ID, Run: j.StartTime})
			}
		}
	})
	return resp, acks, missing
}
