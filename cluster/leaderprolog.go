package cluster

import (
	"errors"
	"fmt"
	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"sync"
)

// The leader's side of Prolog: every allocated node runs it (agent) before
// the batch step is launched.

// runPrologs runs the prolog on every node of j's allocation; the leader
// calls it before it launches the batch step. It reports whether the job
// may start; when not, it has drained the nodes whose prolog failed and
// requeued the job.
func (d *Daemon) runPrologs(j *api.Job) bool {
	if d.conf().Prolog == "" {
		return true
	}
	var mu sync.Mutex
	var failed []string
	var callErr error
	agent.OnAllocNodes(j, func(node string) {
		res, err := d.agent.NodeScript(agent.PhaseProlog, node, j)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			callErr = errors.Join(callErr, fmt.Errorf("%s: %w", node, err))
		case res.Error != "":
			failed = append(failed, node)
		}
	})
	if len(failed) == 0 && callErr == nil {
		return true
	}
	d.log.Warn("prolog failed; requeueing the job", "job", j.ID, "nodes", failed, "err", callErr)
	now := d.now()
	for _, n := range failed {
		if _, err := d.propose(&fsm.NodeStateChange{Time: now, Node: n, State: "DRAIN", Why: agent.ReasonPrologError}); err != nil {
			d.log.Warn("drain after a failed prolog failed", "node", n, "err", err)
		}
	}
	// RUNNING -> COMPLETING (requeue) -> PENDING once its end is committed;
	// a job cancelled meanwhile ends CANCELLED instead.
	hold := api.HoldRequeue
	if _, ok := d.conf().SchedulerParameters["nohold_on_prolog_fail"]; ok {
		hold = ""
	}
	if _, err := d.propose(&fsm.Requeue{JobIDs: []uint64{j.ID}, Hold: hold}); err != nil {
		d.log.Warn("requeue after a failed prolog failed", "job", j.ID, "err", err)
	}
	if _, err := d.propose(&fsm.End{Time: now, End: api.JobEnd{JobID: j.ID, Node: j.BatchHost, Start: now, End: now}}); err != nil {
		d.log.Warn("requeue after a failed prolog failed", "job", j.ID, "err", err)
	}
	return false
}
