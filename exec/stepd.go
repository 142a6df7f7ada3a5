//go:build linux

package exec

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A container step's init is its supervisor, as slurmstepd is a step's
// under Slurm: pid 1 of the step's pid namespace, running as the step's
// user, it starts the step's processes as its own children, reaps them (and
// every orphan of the namespace), and writes each task's end to two places:
// a pipe the executor reads while it runs, and a file in the executor's
// state directory. The file is what lets a new executor, after the daemon
// that started a step went away, learn how a step it re-attached ended.
// When every task has ended the supervisor exits, and the kernel kills what
// is left in the namespace.
//
// The executor hands it, besides stdin, stdout and stderr (/dev/null):
//
//	fd 3: the plan (JSON, supPlan), read to its end
//	fd 4: the results file (JSON lines, supEvent), append only
//	fd 5: the events pipe (the same lines, plus the start report)
//	fd 6: the go-ahead pipe: after the start report the supervisor reaps
//	      nothing until the executor closes it (or goes away), so that the
//	      executor can find the tasks' host pids even of a task that ended
//	      at once (a zombie is still its child)
//	fd 7 and up: the tasks' files (output, input, terminals), as the plan
//	      numbers them
const (
	supPlanFD   = 3
	supResultFD = 4
	supEventFD  = 5
	supGoFD     = 6
	supFirstFD  = 7
)

// supPlan is what the supervisor starts.
type supPlan struct {
	Tasks []supTask `json:"tasks"`
	// Keep are the executor's ends of the tasks' output (pipes' read
	// ends, terminals' masters), which the supervisor holds without
	// reading: if the executor goes away, the tasks' output waits in them
	// (and the tasks block once they are full) instead of breaking, and a
	// new executor takes them back with pidfd_getfd(2). Before it exits
	// the supervisor lets whoever reads them drain them (keepWait).
	Keep []int `json:"keep,omitempty"`
}

// keepWait bounds how long a supervisor whose tasks have ended waits for
// their output to be read: long enough for a node's daemon to be started
// again.
const keepWait = 2 * time.Minute

// supTask is one process of a step.
type supTask struct {
	Argv   []string `json:"argv"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir"`
	Stdin  int      `json:"stdin,omitempty"` // 0: /dev/null
	Stdout int      `json:"stdout"`          // a file descriptor of the supervisor
	Stderr int      `json:"stderr"`
	TTY    bool     `json:"tty,omitempty"` // Stdin is a terminal: make it the task's controlling one
	// Report: Argv starts the task through the wrapper (taskexec.go),
	// which gets a report pipe as its fd 3.
	Report bool `json:"report,omitempty"`
}

// supEvent is one line of the supervisor's reports: the start report
// (Started with the tasks' pids in the step's namespace, or Err for the
// task that could not be started), then one line per task end, then Done.
type supEvent struct {
	Started bool   `json:"started,omitempty"`
	Pids    []int  `json:"pids,omitempty"`
	Err     string `json:"err,omitempty"`
	Task    int    `json:"task"`
	End     bool   `json:"end,omitempty"`
	Exit    int    `json:"exit,omitempty"`
	Signal  int    `json:"signal,omitempty"`
	// MaxRSSKB is the ended task's memory high-water mark (its rusage):
	// what MaxRSS falls back on where a cgroup v2 kernel has no
	// memory.peak (before Linux 5.19).
	MaxRSSKB int64 `json:"maxrss_kb,omitempty"`
	Done     bool  `json:"done,omitempty"`
}

// supervise is the supervisor's main; it never returns.
func supervise() {
	runtime.GOMAXPROCS(1)
	// Every signal gets a handler, so that none ends the supervisor (pid 1
	// gets only the signals it handles from inside its namespace, and the
	// executor sends it nothing but SIGKILL) and the tasks start with every
	// signal at its default action (handled signals are reset in a child;
	// ignored ones would stay ignored).
	signal.Notify(make(chan os.Signal, 1))
	// No task may inherit the supervisor's own files (a task could write
	// lines into the results file), nor another task's output.
	for _, fd := range []int{supPlanFD, supResultFD, supEventFD, supGoFD} {
		syscall.CloseOnExec(fd)
	}
	events := os.NewFile(supEventFD, "events")
	results := os.NewFile(supResultFD, "results")
	report := func(ev supEvent) {
		b, _ := json.Marshal(ev)
		b = append(b, '\n')
		if ev.End || ev.Done {
			_, _ = results.Write(b)
		}
		_, _ = events.Write(b) // fails harmlessly once the executor is gone
	}
	fail := func(msg string) {
		report(supEvent{Err: msg})
		os.Exit(1)
	}
	raw, err := io.ReadAll(os.NewFile(supPlanFD, "plan"))
	if err != nil {
		fail(fmt.Sprintf("read the step's plan: %v", err))
	}
	var plan supPlan
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan.Tasks) == 0 {
		fail(fmt.Sprintf("bad step plan: %v", err))
	}
	for _, fd := range plan.Keep {
		syscall.CloseOnExec(fd)
	}
	for _, t := range plan.Tasks {
		syscall.CloseOnExec(t.Stdout) // ForkExec dups them into place
		syscall.CloseOnExec(t.Stderr)
		if t.Stdin > 0 {
			syscall.CloseOnExec(t.Stdin)
		}
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		fail(err.Error())
	}
	pids := make([]int, len(plan.Tasks))
	task := map[int]int{}                        // pid -> task
	reports := make([]*os.File, len(plan.Tasks)) // see supTask.Report
	// The tasks start with a raised OOM score, the supervisor keeps the
	// default (see TaskOOMScoreAdj).
	setOOMScoreAdj(TaskOOMScoreAdj)
	for i, t := range plan.Tasks {
		stdin := devnull.Fd()
		if t.Stdin > 0 {
			stdin = uintptr(t.Stdin)
		}
		// Each task leads its own process group, as slurmstepd's do; a
		// task on a terminal leads its own session, with the terminal as
		// its controlling one.
		sys := &syscall.SysProcAttr{Setpgid: true}
		if t.TTY {
			sys = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		}
		files := []uintptr{stdin, uintptr(t.Stdout), uintptr(t.Stderr)}
		var repW *os.File
		if t.Report {
			if reports[i], repW, err = os.Pipe(); err != nil {
				fail(err.Error())
			}
			files = append(files, repW.Fd())
		}
		pid, err := syscall.ForkExec(t.Argv[0], t.Argv, &syscall.ProcAttr{
			Dir:   t.Dir,
			Env:   t.Env,
			Files: files,
			Sys:   sys,
		})
		if repW != nil {
			repW.Close()
		}
		if err != nil {
			// The tasks started so far die with this namespace.
			r := supEvent{Err: fmt.Sprintf("execve(): %s: %s", t.Argv[0], errnoText(err)), Task: i}
			report(r)
			os.Exit(1)
		}
		pids[i] = pid
		task[pid] = i
	}
	for i, r := range reports {
		if r == nil {
			continue
		}
		if err := awaitExec(r); err != nil {
			report(supEvent{Err: err.Error(), Task: i})
			os.Exit(1)
		}
	}
	devnull.Close()
	setOOMScoreAdj(0)
	for _, t := range plan.Tasks {
		// The tasks have their copies; closing ours lets pipes reach EOF.
		unix.Close(t.Stdout)
		unix.Close(t.Stderr)
		if t.Stdin > 0 {
			unix.Close(t.Stdin)
		}
	}
	report(supEvent{Started: true, Pids: pids})
	goAhead := os.NewFile(supGoFD, "go")
	_, _ = goAhead.Read(make([]byte, 1)) // EOF: go ahead
	goAhead.Close()
	for left := len(pids); left > 0; {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			break // ECHILD: nothing left to wait for
		}
		i, ok := task[pid]
		if !ok {
			continue // an orphan of the namespace
		}
		delete(task, pid)
		left--
		ev := supEvent{Task: i, End: true, MaxRSSKB: ru.Maxrss}
		if ws.Signaled() {
			ev.Signal = int(ws.Signal())
		} else {
			ev.Exit = ws.ExitStatus()
		}
		report(ev)
	}
	report(supEvent{Done: true})
	awaitDrained(plan.Keep, keepWait)
	os.Exit(0)
}

// TaskOOMScoreAdj is the OOM killer's adjustment of a container step's
// tasks (oom_score_adj). The kernel picks the process to kill in a job's
// memory cgroup by size, a process's mapped program text included; the
// step's supervisor and srun, both this program, map a good 20 MiB of it,
// and in a small limit they would be killed in place of the task that
// overran it. slurmstepd exempts itself (-1000) as root; here the
// supervisor runs as the user, who may raise a score but not lower it
// below 0: so the tasks start raised, the supervisor keeps 0, and srun
// (started by a task) lowers its own back to 0 (ResetOOMScoreAdj).
const TaskOOMScoreAdj = 500

// setOOMScoreAdj sets this process's OOM score adjustment; it cannot fail
// the step.
func setOOMScoreAdj(v int) {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(v)), 0)
}

// ResetOOMScoreAdj lowers this process's OOM score adjustment back to the
// default if a step raised it (srun in a batch script: a helper of the
// job, not its work).
func ResetOOMScoreAdj() {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if v, _ := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 && v <= TaskOOMScoreAdj {
		setOOMScoreAdj(0)
	}
}

// awaitDrained waits, at most max, until none of fds has bytes left to
// read: the tasks' last output has reached whoever reads it.
func awaitDrained(fds []int, max time.Duration) {
	deadline := time.Now().Add(max)
	pause := time.Millisecond
	for time.Now().Before(deadline) {
		left := false
		for _, fd := range fds {
			if n, err := unix.IoctlGetInt(fd, unix.TIOCINQ); err == nil && n > 0 {
				left = true
				break
			}
		}
		if !left {
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}
