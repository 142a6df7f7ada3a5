package agent

import (
	"encoding/json"
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

	"golang.org/x/sys/unix"
)

// stepTable is this node's agent state: the batch steps it runs and the
// srun steps' tasks it runs.
type stepTable struct {
	mu    sync.Mutex
	steps map[uint64]*exec.Step // batch steps, by job id
	// cancelled remembers kills that arrived before the step was started.
	cancelled map[uint64]earlyKill
	// jobs are the jobs whose batch step runs here (to reach the other
	// nodes of their allocation when they end).
	jobs map[uint64]*api.Job
	// released holds the exit status salloc or srun gave a holder job.
	released map[uint64]api.ReleaseRequest
	// tasks are the srun steps running here, by job and step.
	tasks map[uint64]map[uint32]*taskStep
	// ended remembers the runs of jobs that ended here (job id and start
	// time), so that a step launch arriving late starts nothing.
	ended map[uint64]time.Time
}

// earlyKill is a kill that came before its step: the run it is for (its
// start time), and when it came (a job cancelled before its launch never
// comes, so old ones are dropped).
type earlyKill struct{ start, at time.Time }

// earlyKillAge is how long an early kill waits for its step.
const earlyKillAge = 10 * time.Minute

func newStepTable() *stepTable {
	return &stepTable{
		steps: map[uint64]*exec.Step{}, cancelled: map[uint64]earlyKill{},
		jobs: map[uint64]*api.Job{}, released: map[uint64]api.ReleaseRequest{},
		tasks: map[uint64]map[uint32]*taskStep{}, ended: map[uint64]time.Time{},
	}
}

func (t *stepTable) killAll(grace time.Duration) {
	t.mu.Lock()
	var all []*exec.Step
	for _, s := range t.steps {
		if s != nil { // nil: being launched
			all = append(all, s)
		}
	}
	var starting []*taskStep
	for _, m := range t.tasks {
		for _, ts := range m {
			starting = append(starting, ts)
		}
	}
	t.mu.Unlock()
	for _, ts := range starting {
		<-ts.ready
		if ts.step != nil {
			all = append(all, ts.step)
		}
	}
	for _, s := range all {
		s.Kill(grace)
	}
	for _, s := range all {
		s.Wait()
	}
}

type SignalRequest struct {
	JobID    uint64        `json:"job_id"`
	Signal   int           `json:"signal"` // 0: cancel
	KillWait time.Duration `json:"kill_wait"`
	Scope    string        `json:"scope,omitempty"` // api.SignalSteps, SignalBatch or SignalFull
	// Start names the run of the job meant (its start time), so that a
	// late kill never reaches the job's next run (requeued, preempted).
	Start time.Time `json:"start,omitzero"`
}

// handleLaunch starts a job's batch script on this node. Once it has
// answered, the job's end is reported through watch, a failure to start
// included (an output file the user cannot write fails the job with
// slurmstepd's reason).
func (ag *Agent) handleLaunch(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	if phase := r.URL.Query().Get("phase"); phase != "" {
		ag.handleNodeScript(w, r, phase) // prolog.go
		return
	}
	var j api.Job
	if err := json.NewDecoder(r.Body).Decode(&j); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	// A launch is sent again until acknowledged (by a new leader too):
	// a run that runs, is being started, or has ended here starts once.
	reported := ag.outbox().hasRun(j.ID, j.StartTime)
	ag.steps.mu.Lock()
	_, running := ag.steps.steps[j.ID]
	prev := ag.steps.jobs[j.ID]
	endedRun, ended := ag.steps.ended[j.ID]
	again := running || reported || (ended && endedRun.Equal(j.StartTime))
	if !again {
		ag.steps.steps[j.ID] = nil // reserved while launching
	}
	ag.steps.mu.Unlock()
	if running && prev != nil && !prev.StartTime.Equal(j.StartTime) {
		// An earlier run is still being killed here: not the node's
		// answer to this run, so the leader tries again, then requeues.
		http.Error(w, "an earlier run of the job is still ending here", http.StatusServiceUnavailable)
		return
	}
	if again {
		peer.WriteJSON(w, struct{}{})
		return
	}
	script := filepath.Join(ag.dir, "jobs", strconv.FormatUint(j.ID, 10), "script")
	if err := writeScript(script, j.Spec.Script, j.UID, j.GID); err != nil {
		ag.steps.mu.Lock()
		delete(ag.steps.steps, j.ID)
		ag.steps.mu.Unlock()
		peer.WriteErr(w, http.StatusInternalServerError, fmt.Errorf("write batch script: %w", err))
		return
	}
	mine := allocOn(&j, ag.name)
	tmp, scratch, serr := ag.jobRunStorage(&j)                                    // jobstorage.go
	img, ierr := batchImage(&j, filepath.Dir(filepath.Dir(script)), tmp, scratch) // container.go
	if serr == nil {
		serr = ierr
	}
	spec := exec.StepSpec{
		ID:       fmt.Sprintf("%d.batch", j.ID),
		Argv:     []string{"/bin/sh", script},
		UID:      j.UID,
		GID:      j.GID,
		WorkDir:  j.Spec.WorkDir,
		Stdout:   j.StdOut,
		Stderr:   j.StdErr,
		Truncate: j.Spec.OpenMode != "append" && j.Restarts == 0,
		CPUs:     mine.CPUs,
		CPUIDs:   mine.CPUIDs,
		MemMB:    mine.MemMB,
		Job:      strconv.FormatUint(j.ID, 10),
		JobMemMB: mine.MemMB,
		Devices:  ag.gresDevices(mine),
		Image:    img,
	}
	inh, _ := ag.inherited(j.Spec.Env) // stepenv.go; the batch step drops SLURM_* variables anyway
	inh.apply(&spec)
	spec.Env = ag.stepEnv(&j, j.Spec.Env, envSlot{
		masterAddr: ag.nodeAddr(j.BatchHost), masterPort: ag.masterPort(j.ID),
		tmpDir: tmp, scratch: scratch,
	})
	if interp := interpreter(j.Spec.Script); interp != nil {
		spec.Argv = append(interp, script)
	}
	if j.Spec.Script == api.HolderScript {
		// salloc's and srun's allocations print nothing.
		spec.Stdout, spec.Stderr = "", ""
	}
	jc := j
	ag.steps.mu.Lock()
	ag.steps.jobs[j.ID] = &jc
	delete(ag.steps.ended, j.ID)
	ag.steps.mu.Unlock()
	var step *exec.Step
	err := serr
	switch {
	case err != nil:
	case j.Spec.Script == api.HolderScript:
		step, err = ag.exec.Hold(spec.ID, time.Now()) // an allocation runs nothing here
	default:
		step, err = ag.exec.Launch(spec)
	}
	if err != nil {
		os.RemoveAll(filepath.Dir(script))
		now := time.Now()
		go ag.jobEnded(&jc, api.JobEnd{JobID: j.ID, Node: ag.name, ExitCode: 1, Error: err.Error(), Start: now, End: now})
		peer.WriteJSON(w, struct{}{})
		return
	}
	ag.launched("batch", arrived)
	ag.recordRunning(&jc) // reattach.go
	ag.steps.mu.Lock()
	ag.steps.steps[j.ID] = step
	kill, cancelled := ag.steps.cancelled[j.ID]
	cancelled = cancelled && (kill.start.IsZero() || kill.start.Equal(j.StartTime))
	delete(ag.steps.cancelled, j.ID)
	_, released := ag.steps.released[j.ID]
	ag.steps.mu.Unlock()
	switch {
	case cancelled:
		step.Kill(ag.conf().KillWaitTime())
	case released:
		step.Kill(0)
	}
	go ag.watch(&jc, step, filepath.Dir(script))
	peer.WriteJSON(w, struct{}{})
}

// watch waits for a batch step to end and reports the job's end.
func (ag *Agent) watch(j *api.Job, step *exec.Step, dir string) {
	res := step.Wait()
	os.RemoveAll(dir)
	e := api.JobEnd{JobID: j.ID, Node: ag.name, ExitCode: res.ExitCode, Signal: res.Signal, OOM: res.OOM, Start: res.Start, End: res.End,
		Usage: stepUsage(res.Usage, ag.name)}
	if res.Err != nil {
		e.Error = res.Err.Error()
	}
	if res.OOM {
		e.ExitCode, e.Signal = 0, api.SigOOM&0x7f // OUT_OF_MEMORY 0:125, as Slurm shows it
	}
	ag.jobEnded(j, e)
}

// jobEnded finishes a job on its batch host: an allocation that salloc or
// srun released ends with the status they gave; the end goes to the outbox
// (outbox.go) before the job is forgotten; the job's steps on every node
// of the allocation are killed and its $TMPDIRs removed; the end is
// reported to the leader until the leader has committed it (by the next
// daemon, from the outbox, should this one go away first).
func (ag *Agent) jobEnded(j *api.Job, e api.JobEnd) {
	ag.steps.mu.Lock()
	delete(ag.steps.steps, j.ID)
	delete(ag.steps.jobs, j.ID)
	ag.steps.endRun(j.ID, j.StartTime) // a launch sent again starts nothing
	if rel, ok := ag.steps.released[j.ID]; ok {
		delete(ag.steps.released, j.ID)
		e.ExitCode, e.Signal = rel.ExitCode, rel.Signal
		e.OOM = e.OOM || rel.OOM
	}
	ag.steps.mu.Unlock()
	if e.Run.IsZero() {
		e.Run = j.StartTime
	}
	ob := ag.outbox()
	var path string
	if ag.ctx.Err() == nil {
		// (A daemon that stops with its jobs kills them after its
		// context ended: the next daemon finds them missing.)
		var err error
		if path, err = ob.put(e); err != nil {
			ag.log.Warn("cannot keep a job's end on disk; it will not survive a restart of this daemon", "job", j.ID, "err", err)
		}
	}
	ag.forgetRunning(j.ID)
	ag.endOnNodes(j) // steps killed, then the epilogs (prolog.go)
	ob.deliver(ag.ctx, path, e, ag.sendEnd)
}

// localAPI is this node's own TCP API, which forwards to the leader.
func (ag *Agent) localAPI() (string, error) { return ag.addr(ag.conf().APIPort), nil }

func (ag *Agent) handleSignal(w http.ResponseWriter, r *http.Request) {
	var req SignalRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	ag.steps.mu.Lock()
	step := ag.steps.steps[req.JobID]
	if j := ag.steps.jobs[req.JobID]; step != nil && j != nil && !req.Start.IsZero() && !j.StartTime.Equal(req.Start) {
		step = nil // meant for another run of the job: not this one
	}
	if step == nil && req.Signal == 0 {
		// Not started yet (or being started): it is killed as it starts.
		now := time.Now()
		for id, k := range ag.steps.cancelled {
			if now.Sub(k.at) > earlyKillAge {
				delete(ag.steps.cancelled, id)
			}
		}
		ag.steps.cancelled[req.JobID] = earlyKill{start: req.Start, at: now}
	}
	ag.steps.mu.Unlock()
	switch {
	case step == nil:
	case req.Signal == 0:
		step.Kill(req.KillWait)
		// The job's steps end with it, on every node.
		if j := ag.jobHere(req.JobID); j != nil {
			go ag.cleanupJob(j)
		}
	default:
		// scancel --signal: the job's steps, its batch shell (and the
		// processes it started), or both, as scancel's -b and -f say;
		// SIGKILL reaches everything.
		kill := req.Signal == int(syscall.SIGKILL)
		steps := kill || req.Scope == api.SignalSteps || req.Scope == api.SignalFull
		batch := kill || req.Scope != api.SignalSteps
		if j := ag.jobHere(req.JobID); j != nil && steps {
			go ag.signalJobSteps(j, req.Signal)
		}
		var err error
		switch {
		case batch && req.Scope == api.SignalShell && !kill:
			err = step.SignalMain(syscall.Signal(req.Signal))
		case batch:
			err = step.Signal(syscall.Signal(req.Signal))
		}
		if err != nil {
			peer.WriteErr(w, http.StatusInternalServerError, err)
			return
		}
	}
	peer.WriteJSON(w, struct{}{})
}

// writeScript stores the batch script where the job's user can read it:
// a directory of the job's own (made anew: one an earlier run left was
// its user's, and nothing is ever written into it) holding the script,
// both the user's. The file is made with O_EXCL|O_NOFOLLOW and given to
// the user through its descriptor, so root never writes or chowns
// through a link someone put there.
func writeScript(path, script string, uid, gid uint32) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	dfd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, filepath.Base(path), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o500)
	if err != nil {
		return &os.PathError{Op: "create", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if _, err := f.WriteString(script); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	if err := f.Chown(int(uid), int(gid)); err != nil {
		return err
	}
	return unix.Fchown(dfd, int(uid), int(gid))
}

// interpreter returns the #! line's command, or nil.
func interpreter(script string) []string {
	line, _, _ := strings.Cut(script, "\n")
	if !strings.HasPrefix(line, "#!") {
		return nil
	}
	f := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(f) == 0 || !filepath.IsAbs(f[0]) {
		return nil
	}
	return f
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// repeatCounts writes counts as Slurm does: "2(x2),1".
func repeatCounts(v []int) string {
	var parts []string
	for i := 0; i < len(v); {
		k := i
		for k < len(v) && v[k] == v[i] {
			k++
		}
		if k-i > 1 {
			parts = append(parts, fmt.Sprintf("%d(x%d)", v[i], k-i))
		} else {
			parts = append(parts, strconv.Itoa(v[i]))
		}
		i = k
	}
	return strings.Join(parts, ",")
}
