package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/hostlist"
	"hpc/cluster/peer"
)

// Prolog and Epilog (slurm.conf): each node of a job's allocation runs the
// Prolog as root before the job starts there and the Epilog as root after
// it ended there, with Slurm's environment, bounded by
// PrologEpilogTimeout. The leader asks every allocated node to run the
// prolog before it launches the batch step; a node whose prolog fails
// (non-zero exit or timeout) is drained with the reason "Prolog error" and
// the job goes back to the queue (same id, Restarts+1), as slurmctld does.
// The batch host runs the epilogs of all nodes once the batch step ended,
// before it reports the end; a failed epilog drains its node with "Epilog
// error" and the job keeps its state.
//
// The node call is /internal/launch?phase=prolog|epilog (the job as body),
// answered with a scriptResult once the script ended.

const (
	phaseProlog = "prolog"
	phaseEpilog = "epilog"

	reasonPrologError = "Prolog error"
	reasonEpilogError = "Epilog error"
)

// scriptResult is a node's answer to a prolog or epilog call.
type scriptResult struct {
	Ran   bool   `json:"ran"`             // a script is configured and ran
	Error string `json:"error,omitempty"` // why it failed; "" when it succeeded
}

// handleNodeScript runs this node's prolog or epilog for the job in the
// request and answers once it ended.
func (d *Daemon) handleNodeScript(w http.ResponseWriter, r *http.Request, phase string) {
	var j api.Job
	if err := json.NewDecoder(r.Body).Decode(&j); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	var res scriptResult
	switch phase {
	case phaseProlog:
		res = d.runNodeScript(phaseProlog, d.cfg.Prolog, &j)
	case phaseEpilog:
		res = d.runEpilogHere(&j)
	default:
		writeErr(w, http.StatusBadRequest, fmt.Errorf("unknown phase %q", phase))
		return
	}
	writeJSON(w, res)
}

// scriptTimeout is PrologEpilogTimeout.
func (d *Daemon) scriptTimeout() time.Duration {
	if d.cfg.PrologEpilogTimeout > 0 {
		return time.Duration(d.cfg.PrologEpilogTimeout) * time.Second
	}
	return 65534 * time.Second
}

// runNodeScript runs a prolog or epilog script for j on this node as the
// daemon's user (root), its output going to the node's log.
func (d *Daemon) runNodeScript(phase, path string, j *api.Job) scriptResult {
	if path == "" {
		return scriptResult{}
	}
	ctx, cancel := context.WithTimeout(d.ctx, d.scriptTimeout())
	defer cancel()
	cmd := osexec.CommandContext(ctx, path)
	cmd.Dir = "/"
	cmd.Env = d.scriptEnv(phase, j)
	// Its own process group, so that a timeout kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		d.log.Info(phase+" output", "job", j.ID, "script", path, "output", strings.TrimRight(string(out), "\n"))
	}
	if err == nil {
		return scriptResult{Ran: true}
	}
	msg := fmt.Sprintf("%s failed: %v", phase, err)
	if ctx.Err() == context.DeadlineExceeded {
		msg = fmt.Sprintf("%s timed out after %s", phase, d.scriptTimeout())
	}
	d.log.Error(msg, "job", j.ID, "script", path)
	return scriptResult{Ran: true, Error: msg}
}

// scriptEnv is the environment slurmd gives prolog and epilog scripts.
func (d *Daemon) scriptEnv(phase string, j *api.Job) []string {
	var nodes []string
	for _, a := range j.Alloc {
		nodes = append(nodes, a.Node)
	}
	id := strconv.FormatUint(j.ID, 10)
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"SLURM_SCRIPT_CONTEXT=" + phase + "_slurmd",
		"SLURM_JOB_ID=" + id,
		"SLURM_JOBID=" + id,
		"SLURM_JOB_USER=" + j.User,
		"SLURM_JOB_UID=" + strconv.FormatUint(uint64(j.UID), 10),
		"SLURM_JOB_GID=" + strconv.FormatUint(uint64(j.GID), 10),
		"SLURM_JOB_PARTITION=" + j.Spec.Partition,
		"SLURM_JOB_NODELIST=" + hostlist.Compress(nodes),
		"SLURM_CLUSTER_NAME=" + d.cfg.ClusterName,
		"SLURMD_NODENAME=" + d.o.Name,
	}
}

// runEpilogHere runs this node's epilog for j; a failed epilog drains
// this node with "Epilog error".
func (d *Daemon) runEpilogHere(j *api.Job) scriptResult {
	res := d.runNodeScript(phaseEpilog, d.cfg.Epilog, j)
	if res.Error != "" {
		if err := d.drainSelf(reasonEpilogError); err != nil {
			d.log.Error("draining after a failed epilog failed", "job", j.ID, "err", err)
		}
	}
	return res
}

// drainSelf drains this node with the reason, as root, through the leader.
func (d *Daemon) drainSelf(reason string) error {
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	req := api.UpdateRequest{Nodes: []string{d.o.Name}, Set: map[string]string{"State": "DRAIN", "Reason": reason}}
	return d.peers.Call(ctx, peer.Identity{Node: true}, d.addr(d.cfg.APIPort), "/api/update", req, nil)
}

// onAllocNodes calls fn on each node of j's allocation at once and waits.
func onAllocNodes(j *api.Job, fn func(node string)) {
	var wg sync.WaitGroup
	for _, a := range j.Alloc {
		wg.Go(func() { fn(a.Node) })
	}
	wg.Wait()
}

// nodeScript has a node run its prolog or epilog for j: this node runs it
// itself, others are called.
func (d *Daemon) nodeScript(phase, node string, j *api.Job) (scriptResult, error) {
	if node == d.o.Name {
		if phase == phaseProlog {
			return d.runNodeScript(phaseProlog, d.cfg.Prolog, j), nil
		}
		return d.runEpilogHere(j), nil
	}
	addr, err := d.peers.API(node)
	if err != nil {
		return scriptResult{}, err
	}
	ctx, cancel := context.WithTimeout(d.ctx, d.scriptTimeout()+30*time.Second)
	defer cancel()
	var res scriptResult
	err = d.peers.CallNode(ctx, addr, "/internal/launch?phase="+phase, j, &res)
	return res, err
}

// runPrologs runs the prolog on every node of j's allocation; the leader
// calls it before it launches the batch step. It reports whether the job
// may start; when not, it has drained the nodes whose prolog failed and
// requeued the job.
func (d *Daemon) runPrologs(j *api.Job) bool {
	if d.cfg.Prolog == "" {
		return true
	}
	var mu sync.Mutex
	var failed []string
	var callErr error
	onAllocNodes(j, func(node string) {
		res, err := d.nodeScript(phaseProlog, node, j)
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
		if _, err := d.propose(&fsm.NodeStateChange{Time: now, Node: n, State: "DRAIN", Why: reasonPrologError}); err != nil {
			d.log.Warn("drain after a failed prolog failed", "node", n, "err", err)
		}
	}
	// RUNNING -> COMPLETING (requeue) -> PENDING once its end is committed;
	// a job cancelled meanwhile ends CANCELLED instead.
	hold := api.HoldRequeue
	if _, ok := d.cfg.SchedulerParameters["nohold_on_prolog_fail"]; ok {
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

// runEpilogs runs the epilog on every node of j's allocation; the batch
// host calls it after the batch step ended, before it reports the end.
func (d *Daemon) runEpilogs(j *api.Job) {
	if d.cfg.Epilog == "" {
		return
	}
	onAllocNodes(j, func(node string) {
		if _, err := d.nodeScript(phaseEpilog, node, j); err != nil {
			d.log.Warn("epilog call failed", "job", j.ID, "node", node, "err", err)
		}
	})
}

// endOnNodes ends j on every node of its allocation once its batch step
// ended: its steps are killed and, with an Epilog configured, the epilogs
// run after that, before the end is reported.
func (d *Daemon) endOnNodes(j *api.Job) {
	if d.cfg.Epilog == "" {
		go d.cleanupJob(j)
		return
	}
	d.cleanupJob(j)
	d.runEpilogs(j)
}
