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
	cmd := &osexec.Cmd{
		Path:        spec.Argv[0],
		Args:        spec.Argv,
		Env:         spec.Env,
		Dir:         io.cwd,
		Stdout:      io.stdout,
		Stderr:      io.stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if cmd.Env == nil {
		cmd.Env = []string{} // never the daemon's own environment
	}
	if e.switchUser {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: spec.UID, Gid: spec.GID, Groups: groups}
	}
	if err := cmd.Start(); err != nil {
		io.removeCreated(&spec, groups, e.switchUser)
		return fmt.Errorf("step %s: %w", spec.ID, err)
	}
	io.close()
	s.start = time.Now()
	s.pid = cmd.Process.Pid
	k := &plainStep{pgid: cmd.Process.Pid}
	s.sig = k
	key := sanitizeID(spec.ID)

	go func() {
		// Wait for the exit without reaping: while the leader is a zombie
		// its pid (the group's id) cannot be reused, so signalling the group
		// cannot hit anybody else.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		k.end()
		_ = unix.Kill(-k.pgid, unix.SIGKILL)
		werr := cmd.Wait()
		ps := cmd.ProcessState
		res := exitResult(ps)
		res.Start, res.End = s.start, time.Now()
		if ps == nil && werr != nil {
			res.Err = fmt.Errorf("wait for step %s: %w", spec.ID, werr)
		}
		if err := reapGroup(k.pgid); err != nil && res.Err == nil {
			res.Err = fmt.Errorf("clean up step %s: %w", spec.ID, err)
		}
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
