//go:build linux

package exec

import (
	"syscall"
	"testing"
	"time"
)

// A held allocation runs nothing and ends as `sleep infinity` would: not
// on SIGCONT, SIGSTOP, SIGWINCH or a liveness check (signal 0), but on
// the first signal whose default action ends a process, with that
// signal; Kill ends it at once with SIGTERM. Its ID is taken while it
// holds and free again after.
func TestHold(t *testing.T) {
	e := newPlainExecutor(t, "holdnode")
	start := time.Now().Add(-time.Minute)
	s, err := e.Hold("7.batch", start)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Hold("7.batch", time.Now()); err == nil {
		t.Fatal("a second hold with the same ID was accepted")
	}
	for _, sig := range []syscall.Signal{0, syscall.SIGCONT, syscall.SIGSTOP, syscall.SIGWINCH, syscall.SIGCHLD} {
		if err := s.Signal(sig); err != nil {
			t.Fatalf("signal %v: %v", sig, err)
		}
	}
	if err := s.SignalMain(syscall.SIGURG); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
		t.Fatalf("a hold ended on a signal that does not end sleep: %+v", s.Wait())
	case <-time.After(50 * time.Millisecond):
	}
	if err := s.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	r := s.Wait()
	if r.Signal != int(syscall.SIGUSR1) || r.ExitCode != 0 || !r.Start.Equal(start) || r.End.Before(start) {
		t.Fatalf("result %+v, want signal USR1 and the given start", r)
	}
	if err := s.Signal(syscall.SIGTERM); err != ErrStepEnded {
		t.Fatalf("signal after the end: %v", err)
	}
	// The ID is free again; Kill ends a hold with SIGTERM.
	s2, err := e.Hold("7.batch", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s2.Kill(time.Second)
	if r := s2.Wait(); r.Signal != int(syscall.SIGTERM) {
		t.Fatalf("killed hold: %+v", r)
	}
	if s2.Pid() != 0 || s2.Tasks() != 0 {
		t.Fatalf("a hold has pid %d and %d tasks", s2.Pid(), s2.Tasks())
	}
}
