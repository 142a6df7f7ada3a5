package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/exec"
)

// A node's daemon can be stopped and started again while its jobs run, as
// slurmd can: Stop leaves the steps running (their supervisors need nothing
// from the daemon), and the next daemon on the node re-attaches to them
// (exec.Executor.Reattached) and reports their ends as if it had started
// them. What it needs to report a batch step's end, the job as launched, is
// kept while the job runs in <Dir>/running/<job id>.json (root's only), and
// the end itself, once the step has ended, in the outbox until the leader
// has committed it (outbox.go): a new daemon resends those first.
//
// srun's steps survive too: a new daemon re-attaches to their shares on
// this node, whose output waited in their supervisors, and waits for their
// launchers to attach to them again (steprelay.go).

// runningPath is where the job whose batch step runs here is recorded.
func (ag *Agent) runningPath(id uint64) string {
	return filepath.Join(ag.dir, "running", strconv.FormatUint(id, 10)+".json")
}

// recordRunning keeps the job whose batch step has started on this node.
func (ag *Agent) recordRunning(j *api.Job) {
	b, err := json.Marshal(j)
	if err == nil {
		p := ag.runningPath(j.ID)
		if err = os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
			err = os.WriteFile(p, b, 0o600)
		}
	}
	if err != nil {
		ag.log.Warn("cannot record a running job; it will not survive a restart of this daemon", "job", j.ID, "err", err)
	}
}

func (ag *Agent) forgetRunning(id uint64) { os.Remove(ag.runningPath(id)) }

// Reattach takes over the steps a previous daemon on this node left
// running: batch steps are watched as if launched here; the rest are
// killed. Once the leader answers, steps of jobs it no longer runs here
// are killed too.
func (ag *Agent) Reattach() {
	started := time.Now()
	steps := ag.exec.Reattached()
	// Records of jobs whose steps are gone.
	ents, _ := os.ReadDir(filepath.Join(ag.dir, "running"))
	have := map[string]bool{}
	for _, s := range steps {
		have[s.ID()] = true
	}
	for _, ent := range ents {
		id := strings.TrimSuffix(ent.Name(), ".json")
		if !have[id+".batch"] {
			os.Remove(filepath.Join(ag.dir, "running", ent.Name()))
		}
	}
	adopted := map[uint64]*api.Job{}
	var shares []*taskStep
	for _, s := range steps {
		if ts := ag.adoptTasks(s); ts != nil {
			ag.log.Info("re-attached to a running step", "step", s.ID())
			shares = append(shares, ts)
			continue
		}
		j := ag.adopt(s)
		if j == nil {
			ag.log.Warn("killing a step left by the previous daemon", "step", s.ID())
			s.Kill(0)
			continue
		}
		adopted[j.ID] = j
		ag.log.Info("re-attached to a running job", "job", j.ID)
	}
	ag.wg.Add(1)
	go func() {
		defer ag.wg.Done()
		// Ends the previous daemon kept first: a job it saw end is not
		// missing (outbox.go).
		ag.resendEnds(time.Now().Add(3 * time.Minute))
		ag.reconcileJobs(adopted, shares, started)
	}()
}

// adopt makes a re-attached batch step this daemon's, or returns nil.
func (ag *Agent) adopt(s *exec.Step) *api.Job {
	idText, ok := strings.CutSuffix(s.ID(), ".batch")
	if !ok {
		return nil
	}
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return nil
	}
	b, err := os.ReadFile(ag.runningPath(id))
	if err != nil {
		return nil
	}
	var j api.Job
	if json.Unmarshal(b, &j) != nil || j.ID != id {
		return nil
	}
	ag.steps.mu.Lock()
	ag.steps.steps[id] = s
	ag.steps.jobs[id] = &j
	ag.steps.mu.Unlock()
	ag.keepRunStorage(id, j.StartTime) // the job's next srun steps share its $TMPDIR
	go ag.watch(&j, s, filepath.Join(ag.dir, "jobs", idText))
	return &j
}

// adoptTasks makes a re-attached srun step's share on this node this
// daemon's, waiting for its launcher. It returns nil for other steps.
func (ag *Agent) adoptTasks(s *exec.Step) *taskStep {
	jobText, stepText, ok := strings.Cut(s.ID(), ".")
	job, err1 := strconv.ParseUint(jobText, 10, 64)
	step, err2 := strconv.ParseUint(stepText, 10, 32)
	var tag stepTag
	if !ok || err1 != nil || err2 != nil || s.Tasks() == 0 || json.Unmarshal([]byte(s.Tag()), &tag) != nil {
		return nil
	}
	ready := make(chan struct{})
	close(ready)
	ts := &taskStep{ready: ready, step: s, start: tag.Start, first: tag.First}
	ts.relay = newStepRelay(ag.conf().StepAttachWait(), ts.abandon)
	n := s.Tasks()
	outs, errs := make([]io.Writer, n), make([]io.Writer, n)
	for i := range n {
		outs[i] = relayWriter{ts.relay, tag.First + i, api.StreamStdout}
		errs[i] = relayWriter{ts.relay, tag.First + i, api.StreamStderr}
	}
	if err := s.AttachTasks(outs, errs, func(i int, r exec.TaskResult) {
		ts.relay.exit(api.TaskExit{Task: tag.First + i, Node: ag.name, ExitCode: r.ExitCode, Signal: r.Signal})
	}); err != nil {
		return nil
	}
	ag.listTaskStep(job, uint32(step), ts)
	ag.keepRunStorage(job, tag.Start)
	ts.relay.expect()
	go ag.awaitTaskStep(job, uint32(step), ts, tag.First, n)
	return ts
}

// reconcileJobs compares, once the leader answers (it retries for a few
// minutes), the jobs this node runs with those the controller thinks it
// runs, as slurmd's registration does. An adopted job the controller ended
// while this daemon was away (NODE_FAIL after the node was marked DOWN, a
// cancel that could not reach the node) is killed. A job the controller
// still runs here, started before this daemon, whose batch step is gone (the
// daemon was stopped with its jobs, or the machine rebooted) ends FAILED,
// with the reason Slurm gives a batch job missing from its node.
func (ag *Agent) reconcileJobs(adopted map[uint64]*api.Job, shares []*taskStep, started time.Time) {
	var jobs api.JobsResponse
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(ag.ctx, 15*time.Second)
		err := ag.peers.Get(ctx, ag.addr(ag.conf().APIPort), "/api/jobs", &jobs)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			ag.log.Warn("the controller did not answer; re-attached jobs run on", "err", err)
			return
		}
		select {
		case <-ag.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	now := map[uint64]api.Job{}
	for _, j := range jobs.Jobs {
		now[j.ID] = j
		if j.BatchHost != ag.name || j.State != api.StateRunning || adopted[j.ID] != nil || !j.StartTime.Before(started) {
			continue
		}
		ag.steps.mu.Lock()
		_, here := ag.steps.steps[j.ID]
		ag.steps.mu.Unlock()
		if here || ag.outbox().has(j.ID) {
			continue // running, or its end is being reported
		}
		ag.log.Warn("a running job's batch step is missing from this node", "job", j.ID)
		t := time.Now()
		go ag.jobEnded(&j, api.JobEnd{JobID: j.ID, Node: ag.name, ExitCode: 1, Error: reasonBatchMissing, Start: j.StartTime, End: t})
	}
	// Re-attached srun steps of job runs the controller has ended.
	for _, ts := range shares {
		id, _, _ := strings.Cut(ts.step.ID(), ".")
		n, _ := strconv.ParseUint(id, 10, 64)
		j, ok := now[n]
		if !ok || (j.State != api.StateRunning && j.State != api.StateCompleting) || !j.StartTime.Equal(ts.start) {
			ag.log.Warn("killing a re-attached step of a job that ended", "step", ts.step.ID())
			ts.relay.giveUp()
		}
	}
	for id, mine := range adopted {
		j, ok := now[id]
		why := ""
		switch {
		case !ok:
			why = "unknown to the controller"
		case j.State != api.StateRunning && j.State != api.StateCompleting:
			why = fmt.Sprintf("it is %s", j.State)
		case j.BatchHost != ag.name || j.Restarts != mine.Restarts:
			why = "it runs elsewhere now"
		}
		ag.steps.mu.Lock()
		s := ag.steps.steps[id]
		ag.steps.mu.Unlock()
		if why == "" || s == nil || stepEnded(s) {
			continue
		}
		ag.log.Warn("killing a re-attached job", "job", id, "why", why)
		s.Kill(0)
	}
}

// reasonBatchMissing is the Reason of a running job whose batch step a
// node's new daemon does not find (slurmctld logs "Batch JobId=N missing
// from batch node").
const reasonBatchMissing = "batch job missing from its node"

func stepEnded(s *exec.Step) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}
