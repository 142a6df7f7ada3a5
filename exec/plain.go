//go:build linux

package exec

import (
	"fmt"
	"os"
	osexec "os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Plain mode: the step is a process group. Signals go to the group; when the
// step's process ends, whatever is left of the group is killed. Processes
// that leave the group (setsid) escape: without cgroups nothing can follow
// them. Memory and CPU limits are not applied.

// orphanWait bounds how long Wait waits for a step's leftover processes to
// die after SIGKILL (processes in uninterruptible sleep can take a while).
const orphanWait = time.Minute

// outputGrace bounds how long a step's end waits for its tasks' output once
// its process group is gone (a process that left the group may hold a pipe).
const outputGrace = 2 * time.Second

type plainStep struct {
	mu    sync.Mutex
	ended bool
	pgid  int
}

func (k *plainStep) signal(sig syscall.Signal) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended {
		return ErrStepEnded
	}
	if err := unix.Kill(-k.pgid, sig); err != nil && err != unix.ESRCH {
		return fmt.Errorf("kill process group %d: %w", k.pgid, err)
	}
	return nil
}

func (k *plainStep) kill() error {
	err := k.signal(unix.SIGKILL)
	if err == ErrStepEnded {
		return nil
	}
	return err
}

func (k *plainStep) end() {
	k.mu.Lock()
	k.ended = true
	k.mu.Unlock()
}

func (e *Executor) launchPlain(s *Step, spec StepSpec) error {
	if !e.switchUser && spec.UID != uint32(os.Getuid()) {
		return fmt.Errorf("cannot run jobs as uid %d: the node daemon is not root", spec.UID)
	}
	var groups []uint32
	if e.switchUser {
		groups = groupsFor(&spec)
	}
	io, err := prepareIO(&spec, groups, e.switchUser)
	if err != nil {
		return err
	}
	if len(spec.Tasks) > 1 {
		for _, t := range spec.Tasks {
			if t.TTY {
				// Its own session would take it out of the step's
				// process group, by which plain mode signals the tasks.
				io.removeCreated(&spec, groups, e.switchUser)
				return fmt.Errorf("step %s: a terminal (srun --pty) for one of several tasks needs containers; %s", spec.ID, e.mode)
			}
		}
	}
	l := &plainLaunch{e: e, spec: &spec, groups: groups, io: io}
	if l.tio, err = startTaskIO(&spec); err != nil {
		io.removeCreated(&spec, groups, e.switchUser)
		return err
	}
	if err := l.startProcesses(); err != nil {
		return err
	}
	closeHandedIO(io, l.tio)
	s.start = time.Now()
	s.pid = l.pgid
	if l.tio != nil {
		s.inputs, s.ttys = l.tio.inputs, l.tio.ttys
	}
	k := &plainStep{pgid: l.pgid}
	s.sig = k
	go l.watch(s, k, sanitizeID(spec.ID))
	return nil
}

// plainLaunch is a plain step on its way up and running: what
// launchPlain's steps hand on to each other, and to its watcher.
type plainLaunch struct {
	e      *Executor
	spec   *StepSpec
	groups []uint32
	io     *stepIO
	tio    *taskIO // nil without Tasks
	cmds   []*osexec.Cmd
	pgid   int // the step's process group: its first process's pid
}

// startProcesses starts the step's command, or its tasks. Every process
// of the step is in the first one's process group. On error nothing of
// the step is left.
func (l *plainLaunch) startProcesses() error {
	spec, io, tio := l.spec, l.io, l.tio
	setup := setupOf(spec) // taskexec.go
	var reports []*os.File
	failed := func(err error) error {
		for _, r := range reports {
			r.Close()
		}
		l.abandon()
		return fmt.Errorf("step %s: %w", spec.ID, err)
	}
	n := max(len(spec.Tasks), 1)
	for i := range n {
		var cmd *osexec.Cmd
		if tio == nil {
			cmd = l.command(spec.Argv, spec.Env, nil, io.stdout, io.stderr, false)
		} else {
			cmd = l.command(spec.Tasks[i].Argv, spec.Tasks[i].Env, tio.stdin[i], tio.stdout[i], tio.stderr[i], spec.Tasks[i].TTY)
		}
		var repW *os.File
		if setup != nil {
			cmd.Args = setup.wrap(cmd.Args)
			cmd.Path = cmd.Args[0]
			r, w, err := os.Pipe()
			if err != nil {
				return failed(err)
			}
			reports, repW = append(reports, r), w
			cmd.ExtraFiles = []*os.File{w}
		}
		err := cmd.Start()
		if repW != nil {
			repW.Close()
		}
		if err != nil {
			return failed(err)
		}
		if i == 0 {
			l.pgid = cmd.Process.Pid
		}
		l.cmds = append(l.cmds, cmd)
	}
	for i, r := range reports {
		if err := awaitExec(r); err != nil {
			reports = reports[i+1:]
			return failed(err)
		}
	}
	return nil
}

// command is one process of the step, in its process group (l.pgid; 0
// for the first, which makes it).
func (l *plainLaunch) command(argv, env []string, stdin, stdout, stderr *os.File, tty bool) *osexec.Cmd {
	cmd := &osexec.Cmd{
		Path:        argv[0],
		Args:        argv,
		Env:         env,
		Dir:         l.io.cwd,
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pgid: l.pgid},
	}
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if tty {
		// A session of its own (so its group is its pid, the step's
		// pgid), with the terminal as its controlling one.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	if cmd.Env == nil {
		cmd.Env = []string{} // never the daemon's own environment
	}
	if l.e.switchUser {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: l.spec.UID, Gid: l.spec.GID, Groups: l.groups}
	}
	return cmd
}

// abandon undoes a launch that could not start all of the step's
// processes: those started are killed and reaped, the tasks' pipes closed
// and the files the step created removed.
func (l *plainLaunch) abandon() {
	if l.pgid != 0 {
		_ = unix.Kill(-l.pgid, unix.SIGKILL)
		for _, c := range l.cmds {
			_ = c.Wait()
		}
		_ = reapGroup(l.pgid)
	}
	if l.tio != nil {
		l.tio.closeWriters()
		for k := range l.cmds {
			l.tio.wait(k)
		}
		l.tio.closeInputs()
	}
	l.io.removeCreated(l.spec, l.groups, l.e.switchUser)
}

// watch waits for the step's processes to end, then kills what is left of
// its group and finishes the step (key: its place in the active table).
func (l *plainLaunch) watch(s *Step, k *plainStep, key string) {
	spec, tio := l.spec, l.tio
	results := make([]TaskResult, len(l.cmds))
	var exited, ended sync.WaitGroup
	for i, cmd := range l.cmds {
		exited.Add(1)
		ended.Add(1)
		go func() {
			defer ended.Done()
			results[i] = waitExited(cmd.Process.Pid)
			exited.Done()
			if tio != nil {
				tio.reportEnd(spec, i, results[i])
			}
		}()
	}
	exited.Wait()
	end := time.Now()
	k.end()
	_ = unix.Kill(-k.pgid, unix.SIGKILL)
	res := l.reap(results)
	settleTasks(tio, &ended)
	sumTasks(&res, results, tio != nil)
	res.Start, res.End = s.start, end
	l.e.forget(key, s)
	s.finish(res)
}

// waitExited waits for the exit of process pid without reaping it: while
// a process is a zombie its pid cannot be reused, so the group's id (the
// first process's pid) stays the step's and signalling the group cannot
// hit anybody else.
func waitExited(pid int) TaskResult {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	return siginfoExit(&info)
}

// reap reaps the step's processes, and then what is left of its group:
// their resource usage and the errors of doing so. A step without Tasks
// takes its exit from its process's wait status (results[0]).
func (l *plainLaunch) reap(results []TaskResult) Result {
	var res Result
	for i, cmd := range l.cmds {
		werr := cmd.Wait()
		res.Usage.add(rusageOf(cmd.ProcessState))
		if i == 0 && l.tio == nil {
			r := exitResult(cmd.ProcessState)
			results[0] = TaskResult{ExitCode: r.ExitCode, Signal: r.Signal}
		}
		if cmd.ProcessState == nil && werr != nil && res.Err == nil {
			res.Err = fmt.Errorf("wait for step %s: %w", l.spec.ID, werr)
		}
	}
	if err := reapGroup(l.pgid); err != nil && res.Err == nil {
		res.Err = fmt.Errorf("clean up step %s: %w", l.spec.ID, err)
	}
	return res
}

// reapGroup kills what is left of a process group and waits until it is
// gone, reaping the members that were re-parented to this process (when it
// is a child subreaper).
func reapGroup(pgid int) error {
	deadline := time.Now().Add(orphanWait)
	delay := time.Millisecond
	for {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-pgid, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if pid <= 0 || err != nil {
				break
			}
		}
		if err := unix.Kill(-pgid, 0); err == unix.ESRCH {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of group %d did not exit after SIGKILL", pgid)
		}
		_ = unix.Kill(-pgid, unix.SIGKILL)
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}
