package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
	"hpc/exec"
)

// The agents' side of steps: a node's share of a step (its tasks, their
// output and input, signals, re-attaching after a restart) and the end of
// a job on every node of its allocation.

// handleStepLaunch starts a step's tasks on this node and answers with a
// stream of frames: their output, each task's end, and last this node's
// end. If the launcher goes away, the tasks are killed.
func (ag *Agent) handleStepLaunch(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	var req StepLaunchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	j, s := &req.Job, &req.Step
	if req.Node < 0 || req.Node >= len(s.Nodes) || s.Nodes[req.Node] != ag.name || len(s.Tasks) != len(s.Nodes) || len(req.Argv) == 0 {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	ag.steps.mu.Lock()
	start, ended := ag.steps.ended[j.ID]
	ag.steps.mu.Unlock()
	if ended && start.Equal(j.StartTime) {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	out := peer.NewNDJSON(w)
	first := 0
	for _, n := range s.Tasks[:req.Node] {
		first += n
	}
	n := s.Tasks[req.Node]
	end := func(e NodeEnd) { _ = out.Send(TaskFrame{End: &e}) }
	tmp, scratch, err := ag.jobRunStorage(j) // jobstorage.go
	if err != nil {
		end(NodeEnd{Error: fmt.Sprintf("%s: %v", ag.name, err)})
		return
	}
	inh, env := ag.inherited(req.Env) // stepenv.go
	base := exportEnv(req.Export, env)
	// Every task fails the same way when the command cannot be run, as
	// slurmstepd's tasks do: the reason on stderr, errno as exit code.
	execFailed := func(msg string) {
		code := 1
		switch {
		case strings.HasSuffix(msg, "No such file or directory"):
			code = 2
		case strings.HasSuffix(msg, "Permission denied"):
			code = 13
		}
		for i := range n {
			_ = out.Send(TaskFrame{Task: first + i, Stream: api.StreamStderr, Data: []byte("slurmstepd: error: " + msg + "\n")})
			_ = out.Send(TaskFrame{Exit: &api.TaskExit{Task: first + i, Node: ag.name, ExitCode: code}})
		}
		end(NodeEnd{})
	}
	path, _ := lookupVar(base, "PATH")
	prog, err := lookPath(req.Argv[0], path, req.WorkDir)
	if err != nil {
		execFailed(fmt.Sprintf("execve(): %s: %s", req.Argv[0], err))
		return
	}
	argv := append([]string{prog}, req.Argv[1:]...)
	ts := &taskStep{ready: make(chan struct{}), start: j.StartTime, first: first}
	ts.relay = newStepRelay(ag.conf().StepAttachWait(), ts.abandon)
	gtids := make([]int, n)
	for i := range gtids {
		gtids[i] = first + i
	}
	tasks := make([]exec.TaskSpec, n)
	for i := range tasks {
		tasks[i] = exec.TaskSpec{
			Argv: argv,
			Env: ag.stepEnv(j, base, envSlot{
				step: s, nodeIndex: req.Node, procID: first + i, localID: i, gtids: gtids,
				masterAddr: ag.nodeAddr(s.Nodes[0]), masterPort: req.MasterPort, launcher: s.Launcher,
				tmpDir: tmp, scratch: scratch,
			}),
			Stdout: relayWriter{ts.relay, first + i, api.StreamStdout},
			Stderr: relayWriter{ts.relay, first + i, api.StreamStderr},
		}
		taskInput(&tasks[i], &req, first+i) // stepinput.go
	}
	mine := allocOn(j, ag.name)
	cpus := n * max(s.CPUsPerTask, 1)
	if mine.CPUs > 0 {
		cpus = min(cpus, mine.CPUs)
	}
	workDir := req.WorkDir
	if workDir == "" {
		workDir = j.Spec.WorkDir
	}
	img, err := stepImage(j, req.Env, tmp, scratch) // container.go
	if err != nil {
		end(NodeEnd{Error: fmt.Sprintf("%s: %v", ag.name, err)})
		return
	}
	tag, _ := json.Marshal(stepTag{Start: j.StartTime, First: first})
	spec := exec.StepSpec{
		ID: fmt.Sprintf("%d.%d", j.ID, s.ID), UID: j.UID, GID: j.GID, WorkDir: workDir,
		CPUs: cpus, CPUIDs: mine.CPUIDs, MemMB: mine.MemMB, Tasks: tasks, Devices: ag.gresDevices(mine),
		Job: strconv.FormatUint(j.ID, 10), JobMemMB: mine.MemMB,
		Image: img, Tag: string(tag),
		OnTaskEnd: func(i int, r exec.TaskResult) {
			ts.relay.exit(api.TaskExit{Task: first + i, Node: ag.name, ExitCode: r.ExitCode, Signal: r.Signal})
		},
	}
	inh.apply(&spec)
	ag.listTaskStep(j.ID, s.ID, ts)
	st, err := ag.exec.Launch(spec)
	ts.step = st
	close(ts.ready)
	if err != nil {
		ts.relay.stop()
		ag.forgetTaskStep(j.ID, s.ID, ts)
		if msg := err.Error(); strings.HasPrefix(msg, "execve(): ") {
			execFailed(msg)
		} else {
			end(NodeEnd{Error: fmt.Sprintf("%s: %v", ag.name, err)})
		}
		return
	}
	ag.launched("srun", arrived)
	ag.steps.mu.Lock()
	start, ended = ag.steps.ended[j.ID]
	ag.steps.mu.Unlock()
	if ended && start.Equal(j.StartTime) { // the job ended while this launched
		ts.cancelled.Store(true)
		st.Kill(0)
	}
	go func() {
		// The node's log for srun (--slurmd-debug) goes before its end.
		if lv := stepdLevel(req.Env); lv >= logVerbose {
			ts.relay.send(TaskFrame{Task: first, Stream: api.StreamStderr, Data: stepdLog(lv, j.ID, s.ID, ag.name, n)})
		}
		ag.awaitTaskStep(j.ID, s.ID, ts, first, n)
	}()
	ts.relay.serve(out, r.Context().Done())
}

// Slurm's log levels, as srun --slurmd-debug raises the nodes' level
// above error for a step (srun sends the increment as SLURMD_DEBUG).
const (
	logError   = 2
	logVerbose = 4
	logDebug   = 5
	logDebug2  = 6
)

var logLevelNames = []string{"quiet", "fatal", "error", "info", "verbose", "debug", "debug2"}

// stepdLevel is the level of a step's node log sent to srun: error, raised
// by srun's SLURMD_DEBUG (0 to 4).
func stepdLevel(env []string) int {
	v, ok := lookupVar(env, "SLURMD_DEBUG")
	if !ok {
		return logError
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return logError
	}
	return min(logError+n, logDebug2)
}

// stepdLog is what this node says on srun's stderr of a step it starts,
// at the level srun asked for, as slurmstepd's log does: its levels,
// then (debug) the step's start here and (debug2) its layout.
func stepdLog(level int, job uint64, step uint32, node string, ntasks int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "slurmstepd: debug levels are stderr='%s', logfile='info', syslog='quiet'\n", logLevelNames[level])
	if level >= logDebug {
		fmt.Fprintf(&b, "slurmstepd: debug:  StepId=%d.%d: %d tasks started on %s\n", job, step, ntasks, node)
	}
	if level >= logDebug2 {
		fmt.Fprintf(&b, "slurmstepd: debug2: StepId=%d.%d: output of the tasks relayed to the launcher\n", job, step)
	}
	return []byte(b.String())
}

// stepTag is what a task step's container keeps of its place (exec's
// StepSpec.Tag), for a new daemon re-attaching to it: the job run it
// belongs to, and the global rank of its first task here.
type stepTag struct {
	Start time.Time `json:"start"`
	First int       `json:"first"`
}

// abandon kills a step whose launcher did not come back.
func (ts *taskStep) abandon() {
	ts.cancelled.Store(true)
	<-ts.ready
	if ts.step != nil {
		ts.step.Kill(0)
	}
}

// listTaskStep lists a step's share on this node, before it starts: a
// signal for it is never lost.
func (ag *Agent) listTaskStep(job uint64, step uint32, ts *taskStep) {
	ag.steps.mu.Lock()
	defer ag.steps.mu.Unlock()
	m := ag.steps.tasks[job]
	if m == nil {
		m = map[uint32]*taskStep{}
		ag.steps.tasks[job] = m
	}
	m[step] = ts
}

func (ag *Agent) forgetTaskStep(job uint64, step uint32, ts *taskStep) {
	ag.steps.mu.Lock()
	defer ag.steps.mu.Unlock()
	if m := ag.steps.tasks[job]; m != nil && m[step] == ts {
		delete(m, step)
		if len(m) == 0 {
			delete(ag.steps.tasks, job)
		}
	}
}

// awaitTaskStep passes a step's end on this node to its launcher once its
// n tasks (the first of global rank first) have ended; the step is
// forgotten once a launcher has it.
func (ag *Agent) awaitTaskStep(job uint64, step uint32, ts *taskStep, first, n int) {
	res := ts.step.Wait()
	if res.OOM && n > 0 {
		ts.relay.send(TaskFrame{Task: first, Stream: api.StreamStderr, Data: []byte(exec.OOMNotice(ts.step.ID(), res.OOMKills))})
	}
	e := NodeEnd{OOM: res.OOM, Cancelled: ts.cancelled.Load(), Usage: stepUsage(res.Usage, ag.name)}
	if res.Err != nil {
		e.Error = fmt.Sprintf("%s: %v", ag.name, res.Err)
	}
	ts.relay.finish(e)
	<-ts.relay.delivered
	ag.forgetTaskStep(job, step, ts)
}

// handleStepAttach attaches a launcher to a step's share on this node that
// lost its launcher's stream (steprelay.go): it is answered as the step's
// launch was, from where the share is.
func (ag *Agent) handleStepAttach(w http.ResponseWriter, r *http.Request) {
	var req StepLaunchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	ag.steps.mu.Lock()
	ts := ag.steps.tasks[req.Job.ID][req.Step.ID]
	ag.steps.mu.Unlock()
	if ts == nil || ts.relay == nil || !ts.start.Equal(req.Job.StartTime) {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrAlreadyDone})
		return
	}
	ts.relay.serve(peer.NewNDJSON(w), r.Context().Done())
}

// lookPath finds the program of a task as execvp would with the task's
// PATH: a name with a slash is taken as it is (from the working directory
// when relative).
func lookPath(prog, path, dir string) (string, error) {
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		return prog, nil
	}
	if path == "" {
		path = defaultPath
	}
	for _, p := range filepath.SplitList(path) {
		if p == "" {
			p = "."
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		f := filepath.Join(p, prog)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", errors.New("No such file or directory")
}

// handleTaskSignal signals a step's tasks on this node; 9 kills them.
func (ag *Agent) handleTaskSignal(w http.ResponseWriter, r *http.Request) {
	var req api.StepSignalRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	ag.steps.mu.Lock()
	ts := ag.steps.tasks[req.JobID][req.StepID]
	ag.steps.mu.Unlock()
	if ts != nil {
		select {
		case <-ts.ready:
		case <-r.Context().Done():
			return
		}
	}
	if ts != nil && ts.step != nil {
		if req.Signal == int(syscall.SIGKILL) {
			ts.cancelled.Store(true)
			ts.step.KillNow()
		} else if err := ts.step.Signal(syscall.Signal(req.Signal)); err != nil && !errors.Is(err, exec.ErrStepEnded) {
			peer.WriteErr(w, http.StatusInternalServerError, err)
			return
		}
	}
	peer.WriteJSON(w, struct{}{})
}

// handleStepPort picks a step's MASTER_PORT on its first node.
func (ag *Agent) handleStepPort(w http.ResponseWriter, r *http.Request) {
	var req JobRef
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	peer.WriteJSON(w, PortReply{Port: ag.masterPort(req.JobID)})
}

// handleJobCleanup ends a job's steps on this node and removes its $TMPDIR.
func (ag *Agent) handleJobCleanup(w http.ResponseWriter, r *http.Request) {
	var req JobRef
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	go ag.cleanupLocal(req.JobID, req.Start)
	peer.WriteJSON(w, struct{}{})
}

// handleHolderRelease ends the holder batch step of an allocation that
// salloc or srun made; the job then ends with the status they gave.
func (ag *Agent) handleHolderRelease(w http.ResponseWriter, r *http.Request) {
	var req api.ReleaseRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	// The release may come before the launch (salloc true): the holder
	// then ends as soon as it starts.
	ag.steps.mu.Lock()
	step := ag.steps.steps[req.JobID]
	if len(ag.steps.released) >= maxEnded {
		for id := range ag.steps.released {
			if _, here := ag.steps.steps[id]; !here {
				delete(ag.steps.released, id)
			}
		}
	}
	ag.steps.released[req.JobID] = req
	ag.steps.mu.Unlock()
	if step != nil {
		step.Kill(0)
	}
	peer.WriteJSON(w, struct{}{})
}

// signalJobSteps sends a signal to every step of a job, on every node of
// its allocation.
func (ag *Agent) signalJobSteps(j *api.Job, sig int) {
	var wg sync.WaitGroup
	for _, a := range j.Alloc {
		wg.Go(func() {
			addr, err := ag.peers.API(a.Node)
			if err == nil {
				ctx, cancel := context.WithTimeout(ag.ctx, 10*time.Second)
				err = ag.peers.CallNode(ctx, addr, "/internal/job/signal", JobRef{JobID: j.ID, Start: j.StartTime, Signal: sig}, nil)
				cancel()
			}
			if err != nil {
				ag.log.Warn("signalling a job's steps failed", "job", j.ID, "node", a.Node, "err", err)
			}
		})
	}
	wg.Wait()
}

// handleJobStepsSignal signals this node's tasks of a job's steps.
func (ag *Agent) handleJobStepsSignal(w http.ResponseWriter, r *http.Request) {
	var req JobRef
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Signal <= 0 {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	ag.steps.mu.Lock()
	var steps []*taskStep
	for _, ts := range ag.steps.tasks[req.JobID] {
		if ts.start.Equal(req.Start) {
			steps = append(steps, ts)
		}
	}
	ag.steps.mu.Unlock()
	for _, ts := range steps {
		<-ts.ready
		if ts.step != nil {
			_ = ts.step.Signal(syscall.Signal(req.Signal))
		}
	}
	peer.WriteJSON(w, struct{}{})
}

// jobHere returns the job whose batch step runs on this node, or nil.
func (ag *Agent) jobHere(id uint64) *api.Job {
	ag.steps.mu.Lock()
	defer ag.steps.mu.Unlock()
	return ag.steps.jobs[id]
}

// cleanupJob ends a job's steps and removes its $TMPDIR on every node of
// its allocation (this one included). The batch host calls it when the
// batch step ends or the job is cancelled.
func (ag *Agent) cleanupJob(j *api.Job) {
	var wg sync.WaitGroup
	for _, a := range j.Alloc {
		if a.Node == ag.name {
			wg.Go(func() { ag.cleanupLocal(j.ID, j.StartTime) })
			continue
		}
		wg.Go(func() {
			for try := range 5 {
				addr, err := ag.peers.API(a.Node)
				if err == nil {
					ctx, cancel := context.WithTimeout(ag.ctx, 10*time.Second)
					err = ag.peers.CallNode(ctx, addr, "/internal/job/cleanup", JobRef{JobID: j.ID, Start: j.StartTime}, nil)
					cancel()
				}
				if err == nil || ag.ctx.Err() != nil {
					return
				}
				ag.log.Warn("job cleanup on a node failed", "job", j.ID, "node", a.Node, "err", err)
				time.Sleep(time.Duration(try+1) * 500 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// maxEnded bounds the memory of ended job runs.
const maxEnded = 4096

// endRun remembers that the run of job id that started at start ended
// here. Called with t.mu held.
func (t *stepTable) endRun(id uint64, start time.Time) {
	if len(t.ended) >= maxEnded {
		for old := range t.ended {
			delete(t.ended, old)
			if len(t.ended) < maxEnded/2 {
				break
			}
		}
	}
	t.ended[id] = start
}

// cleanupLocal ends this node's share of a job run: its steps are killed
// (SIGTERM, SIGKILL after KillWait), and once they are gone and the batch
// step too, the job's $TMPDIR here is removed.
func (ag *Agent) cleanupLocal(jobID uint64, start time.Time) {
	ag.steps.mu.Lock()
	ag.steps.endRun(jobID, start)
	var steps []*taskStep
	for _, ts := range ag.steps.tasks[jobID] {
		if ts.start.Equal(start) {
			ts.cancelled.Store(true)
			steps = append(steps, ts)
		}
	}
	ag.steps.mu.Unlock()
	for _, ts := range steps {
		<-ts.ready
		if ts.step != nil {
			ts.step.Kill(ag.conf().KillWaitTime())
		}
	}
	for _, ts := range steps {
		if ts.step != nil {
			ts.step.Wait()
		}
	}
	ag.steps.mu.Lock()
	_, batch := ag.steps.steps[jobID]
	ag.steps.mu.Unlock()
	if batch {
		return // a new run of the job (requeued) uses the directory now
	}
	os.RemoveAll(ag.jobTmp(jobID))
	ag.forgetRunStorage(jobID, start)
}

// jobTmp is a job's $TMPDIR on this node.
func (ag *Agent) jobTmp(jobID uint64) string {
	return filepath.Join(ag.dir, "tmp", "job"+strconv.FormatUint(jobID, 10))
}

// jobStorage makes a job's storage on this node and returns its $TMPDIR
// and $SCRATCH: a private directory for the job on this node (fresh: made
// anew, as the batch step starts), removed when the job ends, and the
// user's directory in the lab's scratch area (shared by the nodes), kept.
// Both are the user's, mode 0700. It also makes the group's directory in
// the project area ($PROJECT; see storageAreas).
func (ag *Agent) jobStorage(j *api.Job, fresh bool) (tmp, scratch string, err error) {
	tmp = ag.jobTmp(j.ID)
	if fresh {
		os.RemoveAll(tmp)
	}
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return "", "", fmt.Errorf("cannot make the job's TMPDIR: %w", err)
	}
	if err := mkdirOwned(tmp, j.UID, j.GID); err != nil {
		return "", "", fmt.Errorf("cannot make the job's TMPDIR: %w", err)
	}
	areas := ag.storage()
	if err := makeArea(areas.Scratch, os.ModeSticky|0o777); err != nil {
		return "", "", fmt.Errorf("cannot make SCRATCH: %w", err)
	}
	scratch = areas.scratchDir(j)
	if err := ag.makeOwnedDir(scratch, j.UID, j.GID, 0o700, true); err != nil {
		return "", "", fmt.Errorf("cannot make SCRATCH: %w", err)
	}
	if err := makeArea(areas.Project, 0o755); err != nil {
		return "", "", fmt.Errorf("cannot make PROJECT: %w", err)
	}
	// Only root makes directories in the project area: one that is there
	// may have been handed to someone (a PI) by an administrator.
	if err := ag.makeOwnedDir(areas.projectDir(j), 0, j.GID, os.ModeSetgid|0o770, false); err != nil {
		return "", "", fmt.Errorf("cannot make PROJECT: %w", err)
	}
	return tmp, scratch, nil
}

// mkdirOwned makes a directory of the user's, mode 0700, unless one is
// there already (a symbolic link is refused).
func mkdirOwned(dir string, uid, gid uint32) error {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, os.ErrExist) {
		fi, lerr := os.Lstat(dir)
		if lerr != nil {
			return lerr
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		return os.Lchown(dir, int(uid), int(gid))
	}
	return nil
}
