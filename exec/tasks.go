//go:build linux

package exec

import (
	"io"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Tasks of a step (srun): each task's stdout and stderr are pipes whose
// read ends this process copies into the task's writers. A pipe reaches
// EOF when every process holding its write end has exited, so a task's
// output is complete once the step's processes are gone.

// taskIO holds the pipes of a step's tasks.
type taskIO struct {
	stdout, stderr []*os.File       // write ends, handed to the processes
	readers        []*os.File       // read ends
	copied         []sync.WaitGroup // per task: both streams copied to EOF
}

// newTaskIO makes the pipes and starts copying. On error nothing is left
// open.
func newTaskIO(tasks []TaskSpec) (*taskIO, error) {
	t := &taskIO{copied: make([]sync.WaitGroup, len(tasks))}
	for i, ts := range tasks {
		o, err := t.stream(i, ts.Stdout)
		if err != nil {
			t.closeWriters()
			return nil, err
		}
		e, err := t.stream(i, ts.Stderr)
		if err != nil {
			o.Close()
			t.closeWriters()
			return nil, err
		}
		t.stdout = append(t.stdout, o)
		t.stderr = append(t.stderr, e)
	}
	return t, nil
}

// stream returns the file a task writes one stream to: a pipe copied into
// w, or /dev/null when w is nil.
func (t *taskIO) stream(task int, w io.Writer) (*os.File, error) {
	if w == nil {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	r, wf, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t.readers = append(t.readers, r)
	t.copied[task].Add(1)
	go func() {
		defer t.copied[task].Done()
		_, _ = io.Copy(w, r)
		r.Close()
	}()
	return wf, nil
}

// closeWriters closes this process's copies of the write ends (once the
// tasks have theirs, or when the launch failed).
func (t *taskIO) closeWriters() {
	for _, f := range append(t.stdout, t.stderr...) {
		f.Close()
	}
	t.stdout, t.stderr = nil, nil
}

// wait blocks until task i's output has been copied to its end.
func (t *taskIO) wait(i int) { t.copied[i].Wait() }

// drain waits for every task's output to reach its end, and after grace
// stops reading: a process that left the step (possible in plain mode)
// may hold a pipe open for ever.
func (t *taskIO) drain(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		for i := range t.copied {
			t.copied[i].Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		for _, r := range t.readers {
			r.Close() // unblocks the copy (pipes are non-blocking files)
		}
		<-done
	}
}

// taskResults sums a step's task ends up: the highest exit code and the
// first signal.
func taskResults(r *Result, tasks []TaskResult) {
	r.Tasks = tasks
	for _, t := range tasks {
		r.ExitCode = max(r.ExitCode, t.ExitCode)
		if r.Signal == 0 {
			r.Signal = t.Signal
		}
	}
}

// siginfoExit decodes the exit of a child from a waitid(2) siginfo, whose
// union x/sys/unix leaves opaque: si_signo, si_errno and si_code, then the
// union (aligned to a pointer) starting with si_pid, si_uid and si_status.
func siginfoExit(info *unix.Siginfo) TaskResult {
	ptr := unsafe.Sizeof(uintptr(0))
	union := (12 + ptr - 1) / ptr * ptr
	status := *(*int32)(unsafe.Add(unsafe.Pointer(info), union+8))
	switch info.Code {
	case 2, 3: // CLD_KILLED, CLD_DUMPED
		return TaskResult{Signal: int(status)}
	}
	return TaskResult{ExitCode: int(status)}
}
