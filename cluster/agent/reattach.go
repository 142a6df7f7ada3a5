package agent

import (
	"encoding/json"
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
// killed. Then the node registers with the leader, which has what it no
// longer runs here killed.
func (ag *Agent) Reattach() {

	steps := ag.exec.Reattached()
	// Records of jobs whose steps are gone.
	ents, _ := os.ReadDir(filepath.Join(ag.dir, "running"))
	have := map[string]bool{}
	for _, s := range steps {
		have[s.ID()] = true
	}
	for _, ent := range ents {
		id := strings.TrimSuffix(ent.Name(), ".json")
		if !have[id+".batch"] && !ag.holdAgain(id) {
			os.Remove(filepath.Join(ag.dir, "running", ent.Name()))
		}
	}
	for _, s := range steps {
		if ts := ag.adoptTasks(s); ts != nil {
			ag.log.Info("re-attached to a running step", "step", s.ID())
			continue
		}
		j := ag.adopt(s)
		if j == nil {
			ag.log.Warn("killing a step left by the previous daemon", "step", s.ID())
			s.Kill(0)
			continue
		}
		ag.log.Info("re-attached to a running job", "job", j.ID)
	}
	ag.wg.Add(1)
	go func() {
		defer ag.wg.Done()
		// The ends the previous daemon kept (outbox.go); until they are
		// committed, registrations name them, so the leader never takes
		// a job that ended here for one the node lost.
		ag.resendEnds(time.Now().Add(3 * time.Minute))
	}()
	// What runs here now is the node's first registration: the leader
	// has killed what it no longer runs here (the previous daemon's jobs
	// it ended meanwhile) and requeues what the node lost (register.go).
	ag.StartRegistering()
}

// holdAgain holds again, from the run's start, the allocation of salloc
// or srun a previous daemon held here (it runs nothing:
// exec.Executor.Hold), unless its end is already in the outbox; it
// reports whether it did.
func (ag *Agent) holdAgain(idText string) bool {
	j := ag.recorded(idText)
	if j == nil || j.Spec.Script != api.HolderScript || ag.outbox().hasRun(j.ID, j.StartTime) {
		return false
	}
	s, err := ag.exec.Hold(idText+".batch", j.StartTime)
	if err != nil {
		return false
	}
	ag.adoptAs(j, s, idText)
	ag.log.Info("holding an allocation again", "job", j.ID)
	return true
}

// recorded is the job a previous daemon recorded as running here, or nil.
func (ag *Agent) recorded(idText string) *api.Job {
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
	return &j
}

// adoptAs makes a batch step, re-attached or held again, the job's on
// this daemon and watches it.
func (ag *Agent) adoptAs(j *api.Job, s *exec.Step, idText string) {
	ag.steps.mu.Lock()
	ag.steps.steps[j.ID] = s
	ag.steps.jobs[j.ID] = j
	ag.steps.mu.Unlock()
	ag.keepRunStorage(j.ID, j.StartTime) // the job's next srun steps share its $TMPDIR
	go ag.watch(j, s, filepath.Join(ag.dir, "jobs", idText))
}

// adopt makes a re-attached batch step this daemon's, or returns nil.
func (ag *Agent) adopt(s *exec.Step) *api.Job {
	idText, ok := strings.CutSuffix(s.ID(), ".batch")
	if !ok {
		return nil
	}
	j := ag.recorded(idText)
	if j != nil {
		ag.adoptAs(j, s, idText)
	}
	return j
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

func stepEnded(s *exec.Step) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}
