//go:build linux

package exec

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// Steps outlive their daemon, as Slurm's steps outlive slurmd: a container
// step's supervisor (stepd.go) does not need the process that started it,
// and its container's state (libcontainer's, under StateRoot) carries labels
// that say which step it is. A new executor on the same node re-attaches to
// the steps it finds there (New, Reattached): it watches each supervisor
// through a pidfd (it is not their parent any more, so it cannot wait for
// them) and reads how the tasks ended from the step's results file.

// Labels a step's container carries.
const (
	labelStep   = "hpc.step"   // the step's ID as given
	labelStart  = "hpc.start"  // start time, Unix nanoseconds
	labelTasks  = "hpc.tasks"  // number of tasks when launched with Tasks, else 0
	labelUser   = "hpc.user"   // uid:gid, for the OOM notice
	labelStderr = "hpc.stderr" // the step's stderr file, for the OOM notice
	labelJob    = "hpc.job"    // the job whose cgroup holds the step's (StepSpec.Job)
)

func stepLabels(spec *StepSpec, start time.Time) []string {
	return []string{
		labelStep + "=" + spec.ID,
		labelStart + "=" + strconv.FormatInt(start.UnixNano(), 10),
		labelTasks + "=" + strconv.Itoa(len(spec.Tasks)),
		labelUser + "=" + strconv.FormatUint(uint64(spec.UID), 10) + ":" + strconv.FormatUint(uint64(spec.GID), 10),
		labelStderr + "=" + spec.Stderr,
		labelJob + "=" + spec.Job,
	}
}

func labelMap(labels []string) map[string]string {
	m := map[string]string{}
	for _, l := range labels {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// resultsDir holds one results file per running container step.
func (r *containerRuntime) resultsDir() string { return filepath.Join(r.stateDir, "results") }

func (r *containerRuntime) resultPath(cid string) string {
	return filepath.Join(r.resultsDir(), cid)
}

// Reattached returns the steps a previous executor on this node left
// running (or that ended while no executor was there), each once: the
// caller owns them as if it had launched them. Steps nobody claims keep
// running; kill them with Kill.
func (e *Executor) Reattached() []*Step {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.reattached
	e.reattached = nil
	return out
}

// reattach makes a Step of a container step left by a previous executor.
func (e *Executor) reattach(c *libcontainer.Container) *Step {
	r := e.ctr
	cfg := c.Config()
	lab := labelMap(cfg.Labels)
	id := lab[labelStep]
	s := newStep(id)
	if ns, err := strconv.ParseInt(lab[labelStart], 10, 64); err == nil {
		s.start = time.Unix(0, ns)
	}
	ntasks, _ := strconv.Atoi(lab[labelTasks])
	st, err := c.State()
	pidfd := -1
	if err == nil {
		if status, _ := c.Status(); status == libcontainer.Running {
			if fd, err := unix.PidfdOpen(st.InitProcessPid, 0); err == nil {
				pidfd = fd
				// The pid was the supervisor's when the status was read;
				// make sure it still is now that it is pinned.
				if status, _ := c.Status(); status != libcontainer.Running {
					unix.Close(pidfd)
					pidfd = -1
				}
			}
		}
	}
	r.adoptJob(lab[labelJob])
	k := &ctrStep{c: c}
	if st != nil {
		k.initPid = st.InitProcessPid
	}
	s.sig = k
	key := c.ID()
	e.active[key] = s
	e.log.Info("re-attached to a step left by a previous executor", "step", id, "running", pidfd >= 0)
	go func() {
		if pidfd >= 0 {
			fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
			for {
				if _, err := unix.Poll(fds, -1); err != unix.EINTR {
					break
				}
			}
			unix.Close(pidfd)
		}
		k.end()
		n := max(ntasks, 1)
		tasks, end := readResults(r.resultPath(key), n)
		var notice *os.File
		var uid, gid uint32
		if u, g, ok := strings.Cut(lab[labelUser], ":"); ok {
			a, _ := strconv.ParseUint(u, 10, 32)
			b, _ := strconv.ParseUint(g, 10, 32)
			uid, gid = uint32(a), uint32(b)
		}
		if p := lab[labelStderr]; ntasks == 0 && p != "" {
			_ = asUser(uid, gid, []uint32{gid}, func() error {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, 0)
				notice = f
				return err
			})
		}
		var cgPaths map[string]string
		if st != nil {
			cgPaths = st.CgroupPaths
		}
		spec := StepSpec{ID: id, Job: lab[labelJob]}
		res := r.finishStep(c, &spec, cgPaths, tasks, notice, ntasks > 0)
		res.Start, res.End = s.start, end
		e.forget(key, s)
		s.finish(res)
	}()
	return s
}

// readResults reads a step's results file: n task ends (a task missing
// from it was killed with its supervisor: SIGKILL) and when the last was
// written (now, if never).
func readResults(path string, n int) ([]TaskResult, time.Time) {
	tasks := make([]TaskResult, n)
	got := make([]bool, n)
	end := time.Now()
	if f, err := os.Open(path); err == nil {
		if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
			end = fi.ModTime()
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var ev supEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil || !ev.End || ev.Task < 0 || ev.Task >= n {
				continue
			}
			tasks[ev.Task] = TaskResult{ExitCode: ev.Exit, Signal: ev.Signal}
			got[ev.Task] = true
		}
		f.Close()
	}
	for i := range tasks {
		if !got[i] {
			tasks[i] = TaskResult{Signal: int(unix.SIGKILL)}
		}
	}
	return tasks, end
}
