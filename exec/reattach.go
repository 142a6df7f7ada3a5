//go:build linux

package exec

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	labelIO     = "hpc.io"     // where the supervisor holds each task's output (ioLabel)
	labelTag    = "hpc.tag"    // StepSpec.Tag
)

// ioLabel says which of the supervisor's descriptors are each task's
// output read ends and input writing end: "7:8:9,10:11:0" (task 0 reads
// stdout from 7, stderr from 8, and its stdin is written to 9; 0 for
// none), a task on a terminal "t12:0:0" (its master).
func ioLabel(ends [][3]int, tasks []TaskSpec) string {
	parts := make([]string, len(ends))
	for i, e := range ends {
		if tasks[i].TTY {
			parts[i] = "t"
		}
		parts[i] += strconv.Itoa(e[0]) + ":" + strconv.Itoa(e[1]) + ":" + strconv.Itoa(e[2])
	}
	return labelIO + "=" + strings.Join(parts, ",")
}

// parseIOLabel reads ioLabel back; nil if it is not one.
func parseIOLabel(v string, ntasks int) (ends [][3]int, tty []bool) {
	parts := strings.Split(v, ",")
	if v == "" || len(parts) != ntasks {
		return nil, nil
	}
	ends, tty = make([][3]int, ntasks), make([]bool, ntasks)
	for i, p := range parts {
		p, tty[i] = strings.CutPrefix(p, "t")
		f := strings.Split(p, ":")
		if len(f) != 3 {
			return nil, nil
		}
		for k := range f {
			n, err := strconv.Atoi(f[k])
			if err != nil || n < 0 {
				return nil, nil
			}
			ends[i][k] = n
		}
	}
	return ends, tty
}

// reattachedIO is the output of a re-attached step's tasks, taken back
// from its supervisor, until a new owner attaches to it (AttachTasks).
type reattachedIO struct {
	outR, errR []*os.File // nil where a task has no such stream
	inW        []*os.File // the tasks' stdin, nil where none
	attached   chan struct{}
	dropped    chan struct{}
	once, drop sync.Once
	tio        *taskIO
	onEnd      func(int, TaskResult)
}

// takeIO takes a re-attached task step's output read ends from its
// supervisor. Those it cannot have (a supervisor that has ended) are nil:
// that output is lost, the ends are not.
func takeIO(pidfd int, lab map[string]string, ntasks int) *reattachedIO {
	rio := &reattachedIO{outR: make([]*os.File, ntasks), errR: make([]*os.File, ntasks), inW: make([]*os.File, ntasks),
		attached: make(chan struct{}), dropped: make(chan struct{})}
	ends, _ := parseIOLabel(lab[labelIO], ntasks)
	if ends == nil || pidfd < 0 {
		return rio
	}
	get := func(fd int) *os.File {
		if fd == 0 {
			return nil
		}
		n, err := unix.PidfdGetfd(pidfd, fd, 0)
		if err != nil {
			return nil
		}
		return os.NewFile(uintptr(n), "task-output")
	}
	for i, e := range ends {
		rio.outR[i], rio.errR[i], rio.inW[i] = get(e[0]), get(e[1]), get(e[2])
	}
	return rio
}

// AttachTasks hands a step this executor re-attached (Reattached) with
// Tasks to a new owner: from now on the tasks' stdout and stderr are
// copied into the writers (what they wrote meanwhile waited for it), a
// task on a terminal gets input through Stdin again, and onEnd, if set,
// gets each task's end, as TaskSpec's writers and StepSpec.OnTaskEnd
// would have. Until then the tasks block once their pipes are full. A
// task that reads input (TaskSpec.Stdin) gets it through Stdin again. A
// step whose output could not be taken back (its supervisor had ended)
// gives only its ends.
func (s *Step) AttachTasks(stdout, stderr []io.Writer, onEnd func(int, TaskResult)) error {
	rio := s.reio
	if rio == nil {
		return errors.New("not a re-attached step with tasks")
	}
	err := errors.New("the step's tasks are attached already")
	rio.once.Do(func() {
		err = nil
		n := len(rio.outR)
		t := &taskIO{copied: make([]sync.WaitGroup, n)}
		for i := range n {
			for k, r := range []*os.File{rio.outR[i], rio.errR[i]} {
				ws := stdout
				if k == 1 {
					ws = stderr
				}
				var w io.Writer = io.Discard
				if i < len(ws) && ws[i] != nil {
					w = ws[i]
				}
				if r != nil {
					t.copy(i, r, w)
				}
			}
		}
		rio.tio, rio.onEnd = t, onEnd
		close(rio.attached)
	})
	return err
}

// closeInputs closes this process's ends of the tasks' input once the
// step has ended.
func (rio *reattachedIO) closeInputs() {
	for _, w := range rio.inW {
		if w != nil {
			w.Close()
		}
	}
}

// dropIO gives up waiting for an owner of a re-attached step's output.
func (rio *reattachedIO) dropIO() {
	rio.drop.Do(func() { close(rio.dropped) })
}

// deliver, once the step has ended, passes its tasks' output and ends to
// their owner, waiting for one to attach until the step is killed.
func (rio *reattachedIO) deliver(tasks []TaskResult) {
	select {
	case <-rio.attached:
	case <-rio.dropped:
		rio.once.Do(func() {}) // too late to attach
		for _, r := range append(append([]*os.File(nil), rio.outR...), rio.errR...) {
			if r != nil {
				r.Close()
			}
		}
		rio.closeInputs()
		return
	}
	defer rio.closeInputs()
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() {
			rio.tio.wait(i)
			if rio.onEnd != nil {
				rio.onEnd(i, tasks[i])
			}
		})
	}
	rio.tio.drain(outputGrace)
	wg.Wait()
}

func stepLabels(spec *StepSpec, start time.Time) []string {
	return []string{
		labelStep + "=" + spec.ID,
		labelStart + "=" + strconv.FormatInt(start.UnixNano(), 10),
		labelTasks + "=" + strconv.Itoa(len(spec.Tasks)),
		labelUser + "=" + strconv.FormatUint(uint64(spec.UID), 10) + ":" + strconv.FormatUint(uint64(spec.GID), 10),
		labelStderr + "=" + spec.Stderr,
		labelJob + "=" + spec.Job,
		labelTag + "=" + spec.Tag,
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
	s.tag = lab[labelTag]
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
	if ntasks > 0 {
		s.reio = takeIO(pidfd, lab, ntasks)
		s.inputs = make([]io.WriteCloser, ntasks)
		s.ttys = make([]*os.File, ntasks)
		if _, tty := parseIOLabel(lab[labelIO], ntasks); tty != nil {
			for i, m := range s.reio.outR {
				switch {
				case tty[i] && m != nil:
					s.ttys[i], s.inputs[i] = m, ttyInput{m}
				case s.reio.inW[i] != nil:
					s.inputs[i] = socketInput{s.reio.inW[i]}
				}
			}
		}
	}
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
		tasks, end, peakKB := readResults(r.resultPath(key), n)
		if s.reio != nil {
			s.reio.deliver(tasks)
		}
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
		res := r.finishStep(c, &spec, cgPaths, tasks, peakKB, notice, ntasks > 0)
		res.Start, res.End = s.start, end
		e.forget(key, s)
		s.finish(res)
	}()
	return s
}

// readResults reads a step's results file: n task ends (a task missing
// from it was killed with its supervisor: SIGKILL), when the last was
// written (now, if never), and the largest task's memory high-water mark.
func readResults(path string, n int) ([]TaskResult, time.Time, int64) {
	var peakKB int64
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
			peakKB = max(peakKB, ev.MaxRSSKB)
			got[ev.Task] = true
		}
		f.Close()
	}
	for i := range tasks {
		if !got[i] {
			tasks[i] = TaskResult{Signal: int(unix.SIGKILL)}
		}
	}
	return tasks, end, peakKB
}
