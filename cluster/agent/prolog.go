package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/cluster/api"
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
// answered with a ScriptResult once the script ended.

const (
	PhaseProlog = "prolog"
	PhaseEpilog = "epilog"

	ReasonPrologError = "Prolog error"
	ReasonEpilogError = "Epilog error"
)

// ScriptResult is a node's answer to a prolog or epilog call.
type ScriptResult struct {
	Ran   bool   `json:"ran"`             // a script is configured and ran
	Error string `json:"error,omitempty"` // why it failed; "" when it succeeded
}

// handleNodeScript runs this node's prolog or epilog for the job in the
// request and answers once it ended.
func (ag *Agent) handleNodeScript(w http.ResponseWriter, r *http.Request, phase string) {
	var j api.Job
	if err := json.NewDecoder(r.Body).Decode(&j); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	var res ScriptResult
	switch phase {
	case PhaseProlog:
		res = ag.runNodeScript(PhaseProlog, ag.conf().Prolog, &j)
	case PhaseEpilog:
		res = ag.runEpilogHere(&j)
	default:
		peer.WriteErr(w, http.StatusBadRequest, fmt.Errorf("unknown phase %q", phase))
		return
	}
	peer.WriteJSON(w, res)
}

// scriptTimeout is PrologEpilogTimeout.
func (ag *Agent) scriptTimeout() time.Duration {
	if ag.conf().PrologEpilogTimeout > 0 {
		return time.Duration(ag.conf().PrologEpilogTimeout) * time.Second
	}
	return 65534 * time.Second
}

// runNodeScript runs a prolog or epilog script for j on this node as the
// daemon's user (root), its output going to the node's log.
func (ag *Agent) runNodeScript(phase, path string, j *api.Job) ScriptResult {
	if path == "" {
		return ScriptResult{}
	}
	ctx, cancel := context.WithTimeout(ag.ctx, ag.scriptTimeout())
	defer cancel()
	cmd := osexec.CommandContext(ctx, path)
	cmd.Dir = "/"
	cmd.Env = ag.scriptEnv(phase, j)
	// Its own process group, so that a timeout kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		ag.log.Info(phase+" output", "job", j.ID, "script", path, "output", strings.TrimRight(string(out), "\n"))
	}
	if err == nil {
		return ScriptResult{Ran: true}
	}
	msg := fmt.Sprintf("%s failed: %v", phase, err)
	if ctx.Err() == context.DeadlineExceeded {
		msg = fmt.Sprintf("%s timed out after %s", phase, ag.scriptTimeout())
	}
	ag.log.Error(msg, "job", j.ID, "script", path)
	return ScriptResult{Ran: true, Error: msg}
}

// scriptEnv is the environment slurmd gives prolog and epilog scripts.
func (ag *Agent) scriptEnv(phase string, j *api.Job) []string {
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
		"SLURM_CLUSTER_NAME=" + ag.conf().ClusterName,
		"SLURMD_NODENAME=" + ag.name,
	}
}

// runEpilogHere runs this node's epilog for j; a failed epilog drains
// this node with "Epilog error".
func (ag *Agent) runEpilogHere(j *api.Job) ScriptResult {
	res := ag.runNodeScript(PhaseEpilog, ag.conf().Epilog, j)
	if res.Error != "" {
		if err := ag.drainSelf(ReasonEpilogError); err != nil {
			ag.log.Error("draining after a failed epilog failed", "job", j.ID, "err", err)
		}
	}
	return res
}

// drainSelf drains this node with the reason, as root, through the leader.
func (ag *Agent) drainSelf(reason string) error {
	ctx, cancel := context.WithTimeout(ag.ctx, 30*time.Second)
	defer cancel()
	req := api.UpdateRequest{Nodes: []string{ag.name}, Set: map[string]string{"State": "DRAIN", "Reason": reason}}
	return ag.peers.Call(ctx, peer.Identity{Node: true}, ag.addr(ag.conf().APIPort), "/api/update", req, nil)
}

// OnAllocNodes calls fn on each node of j's allocation at once and waits.
func OnAllocNodes(j *api.Job, fn func(node string)) {
	var wg sync.WaitGroup
	for _, a := range j.Alloc {
		wg.Go(func() { fn(a.Node) })
	}
	wg.Wait()
}

// NodeScript has a node run its prolog or epilog for j: this node runs it
// itself, others are called.
func (ag *Agent) NodeScript(phase, node string, j *api.Job) (ScriptResult, error) {
	if node == ag.name {
		if phase == PhaseProlog {
			return ag.runNodeScript(PhaseProlog, ag.conf().Prolog, j), nil
		}
		return ag.runEpilogHere(j), nil
	}
	addr, err := ag.peers.API(node)
	if err != nil {
		return ScriptResult{}, err
	}
	ctx, cancel := context.WithTimeout(ag.ctx, ag.scriptTimeout()+30*time.Second)
	defer cancel()
	var res ScriptResult
	err = ag.peers.CallNode(ctx, addr, "/internal/launch?phase="+phase, j, &res)
	return res, err
}

// runEpilogs runs the epilog on every node of j's allocation; the batch
// host calls it after the batch step ended, before it reports the end.
func (ag *Agent) runEpilogs(j *api.Job) {
	if ag.conf().Epilog == "" {
		return
	}
	OnAllocNodes(j, func(node string) {
		if _, err := ag.NodeScript(PhaseEpilog, node, j); err != nil {
			ag.log.Warn("epilog call failed", "job", j.ID, "node", node, "err", err)
		}
	})
}

// endOnNodes ends j on every node of its allocation once its batch step
// ended: its steps are killed and, with an Epilog configured, the epilogs
// run after that, before the end is reported.
func (ag *Agent) endOnNodes(j *api.Job) {
	if ag.conf().Epilog == "" {
		go ag.cleanupJob(j)
		return
	}
	ag.cleanupJob(j)
	ag.runEpilogs(j)
}
