//go:build linux

package exec

import (
	"sync"
	"syscall"
	"time"
)

// Hold starts a step that runs nothing and ends only when signalled: the
// batch step of an allocation that salloc or srun (outside a job) made,
// which holds the allocation on its batch host until the client releases
// it. Slurm runs nothing there either; a process in a container would
// cost a launch and a teardown on every srun. It ends as the `sleep
// infinity` it stands for would: on a signal whose default action ends
// a process (SIGTERM, SIGKILL, SIGINT, SIGUSR1, ...), with that signal;
// SIGCONT, SIGSTOP and the signals a process ignores by default do
// nothing. start is when it began: now, or when a previous daemon on
// this node started it (the agent records the job as running as for any
// batch step, so a new daemon holds it again).
func (e *Executor) Hold(id string, start time.Time) (*Step, error) {
	key, s, err := e.reserve(id)
	if err != nil {
		return nil, err
	}
	s.start = start
	s.sig = &heldStep{s: s, end: func() { e.forget(key, s) }}
	return s, nil
}

// heldStep is the signaller of a step started by Hold.
type heldStep struct {
	s    *Step
	end  func()
	once sync.Once
}

func (h *heldStep) signal(sig syscall.Signal) error {
	if endsByDefault(sig) {
		h.finish(sig)
	}
	return nil
}

func (h *heldStep) kill() error {
	h.finish(syscall.SIGKILL)
	return nil
}

func (h *heldStep) finish(sig syscall.Signal) {
	h.once.Do(func() {
		h.end()
		h.s.finish(Result{Signal: int(sig), Start: h.s.start, End: time.Now()})
	})
}

// endsByDefault reports whether a signal's default action ends a process
// (signal(7): Term and Core).
func endsByDefault(sig syscall.Signal) bool {
	switch sig {
	case 0, syscall.SIGCHLD, syscall.SIGCONT, syscall.SIGURG, syscall.SIGWINCH,
		syscall.SIGSTOP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
		return false
	}
	return sig > 0 && sig < 65
}
