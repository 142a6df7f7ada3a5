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
	var tio *taskIO
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
	if len(spec.Tasks) > 0 {
		if tio, err = newTaskIO(spec.Tasks, spec.UID); err != nil {
			io.removeCreated(&spec, groups, e.switchUser)
			return fmt.Errorf("step %s: %w", spec.ID, err)
		}
	}
	command := func(argv, env []string, stdin, stdout, stderr *os.File, tty bool, pgid int) *osexec.Cmd {
		cmd := &osexec.Cmd{
			Path:        argv[0],
			Args:        argv,
			Env:         env,
			Dir:         io.cwd,
			Stdout:      stdout,
			Stderr:      stderr,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pgid: pgid},
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
		if e.switchUser {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: spec.UID, Gid: spec.GID, Groups: groups}
		}
		return cmd
	}
	// Every process of the step is in the first one's process group.
	var cmds []*osexec.Cmd
	pgid := 0
	n := max(len(spec.Tasks), 1)
	for i := range n {
		var cmd *osexec.Cmd
		if tio == nil {
			cmd = command(spec.Argv, spec.Env, nil, io.stdout, io.stderr, false, pgid)
		} else {
			cmd = command(spec.Tasks[i].Argv, spec.Tasks[i].Env, tio.stdin[i], tio.stdout[i], tio.stderr[i], spec.Tasks[i].TTY, pgid)
		}
		if err := cmd.Start(); err != nil {
			if pgid != 0 {
				_ = unix.Kill(-pgid, unix.SIGKILL)
				for _, c := range cmds {
					_ = c.Wait()
				}
				_ = reapGroup(pgid)
			}
			if tio != nil {
				tio.closeWriters()
				for k := range cmds {
					tio.wait(k)
				}
				tio.closeInputs()
			}
			io.removeCreated(&spec, groups, e.switchUser)
			return fmt.Errorf("step %s: %w", spec.ID, err)
		}
		if i == 0 {
			pgid = cmd.Process.Pid
		}
		cmds = append(cmds, cmd)
	}
	io.close()
	if tio != nil {
		tio.closeWriters()
	}
	s.start = time.Now()
	s.pid = pgid
	if tio != nil {
		s.inputs, s.ttys = tio.inputs, tio.ttys
	}
	k := &plainStep{pgid: pgid}
	s.sig = k
	key := sanitizeID(spec.ID)

	go func() {
		results := make([]TaskResult, len(cmds))
		var exited, ended sync.WaitGroup
		for i, cmd := range cmds {
			exited.Add(1)
			ended.Add(1)
			go func() {
				defer ended.Done()
				// Wait for the exit without reaping: while a process is a
				// zombie its pid cannot be reused, so the group's id (the
				// first process's pid) stays the step's and signalling the
				// group cannot hit anybody else.
				var info unix.Siginfo
				for {
					err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
					if err != unix.EINTR {
						break
					}
				}
				results[i] = siginfoExit(&info)
				exited.Done()
				if tio != nil {
					tio.wait(i)
					if spec.OnTaskEnd != nil {
						spec.OnTaskEnd(i, results[i])
					}
				}
			}()
		}
		exited.Wait()
		end := time.Now()
		k.end()
		_ = unix.Kill(-k.pgid, unix.SIGKILL)
		var res Result
		for i, cmd := range cmds {
			werr := cmd.Wait()
			res.Usage.add(rusageOf(cmd.ProcessState))
			if i == 0 && tio == nil {
				r := exitResult(cmd.ProcessState)
				results[0] = TaskResult{ExitCode: r.ExitCode, Signal: r.Signal}
			}
			if cmd.ProcessState == nil && werr != nil && res.Err == nil {
				res.Err = fmt.Errorf("wait for step %s: %w", spec.ID, werr)
			}
		}
		if err := reapGroup(k.pgid); err != nil && res.Err == nil {
			res.Err = fmt.Errorf("clean up step %s: %w", spec.ID, err)
		}
		if tio != nil {
			tio.drain(outputGrace)
		}
		ended.Wait()
		if tio != nil {
			tio.closeInputs()
		}
		if tio == nil {
			res.ExitCode, res.Signal = results[0].ExitCode, results[0].Signal
		} else {
			taskResults(&res, results)
		}
		res.Start, res.End = s.start, end
		e.forget(key, s)
		s.finish(res)
	}()
	return nil
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
