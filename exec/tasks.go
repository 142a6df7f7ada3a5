//go:build linux

package exec

import (
	"fmt"
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
	stdin          []*os.File       // read ends handed to the processes (nil: /dev/null)
	inputs         []io.WriteCloser // this process's ends of the tasks' stdin (nil: none)
	ttys           []*os.File       // pseudo-terminal masters (nil: none)
	readers        []*os.File       // read ends
	copied         []sync.WaitGroup // per task: both streams copied to EOF
	// outR and errR are each task's read ends (a terminal's master for
	// both streams of a task on one; nil for /dev/null), and inW the
	// writing ends of their stdin (nil: none), which a step's supervisor
	// holds too: a new executor takes them back from it.
	outR, errR, inW []*os.File
}

// newTaskIO makes the pipes (and pseudo-terminals) and starts copying. On
// error nothing is left open.
func newTaskIO(tasks []TaskSpec, uid uint32) (*taskIO, error) {
	n := len(tasks)
	t := &taskIO{copied: make([]sync.WaitGroup, n), stdin: make([]*os.File, n),
		inputs: make([]io.WriteCloser, n), ttys: make([]*os.File, n),
		outR: make([]*os.File, n), errR: make([]*os.File, n), inW: make([]*os.File, n)}
	fail := func(err error) (*taskIO, error) {
		t.closeWriters()
		t.closeInputs()
		return nil, err
	}
	for i, ts := range tasks {
		if ts.TTY {
			master, slave, err := openPTY(uid)
			if err != nil {
				return fail(err)
			}
			if ts.Rows > 0 && ts.Cols > 0 {
				_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: ts.Rows, Col: ts.Cols})
			}
			t.ttys[i], t.inputs[i] = master, ttyInput{master}
			t.stdout, t.stderr, t.stdin[i] = append(t.stdout, slave), append(t.stderr, slave), slave
			t.readers = append(t.readers, master)
			t.outR[i] = master
			t.copied[i].Add(1)
			w := ts.Stdout
			if w == nil {
				w = io.Discard
			}
			go func() {
				defer t.copied[i].Done()
				// EIO once every process has closed the terminal: its end.
				_, _ = io.Copy(w, master)
			}()
			continue
		}
		o, or, err := t.stream(i, ts.Stdout)
		if err != nil {
			return fail(err)
		}
		e, er, err := t.stream(i, ts.Stderr)
		if err != nil {
			o.Close()
			return fail(err)
		}
		t.outR[i], t.errR[i] = or, er
		t.stdout = append(t.stdout, o)
		t.stderr = append(t.stderr, e)
		if ts.Stdin {
			r, w, err := inputPair()
			if err != nil {
				return fail(err)
			}
			t.stdin[i], t.inputs[i], t.inW[i] = r, socketInput{w}, w
		}
	}
	return t, nil
}

// inputPair makes a task's stdin: a connected pair of stream sockets, the
// task reading from one, this process writing to the other. Unlike a
// pipe's, its end of input does not wait for every copy of the writing end
// to close (shutdown(2) ends it): the step's supervisor holds a copy of the
// writing end, so that the task's input survives the daemon that writes it
// and a new daemon can take it back (see supPlan.Keep).
func inputPair() (task, writer *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	_ = unix.Shutdown(fds[0], unix.SHUT_WR) // the task only reads
	_ = unix.Shutdown(fds[1], unix.SHUT_RD)
	return os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "stdin-writer"), nil
}

// socketInput writes to a task's stdin; closing it ends the task's input,
// whoever else holds the socket.
type socketInput struct{ f *os.File }

func (s socketInput) Write(p []byte) (int, error) { return s.f.Write(p) }
func (s socketInput) Close() error {
	if c, err := s.f.SyscallConn(); err == nil {
		_ = c.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_WR) })
	}
	return s.f.Close()
}

// ttyInput writes to a task's terminal; closing it ends the task's input
// as a user at the keyboard would (^D), leaving the terminal open.
type ttyInput struct{ master *os.File }

func (t ttyInput) Write(p []byte) (int, error) { return t.master.Write(p) }
func (t ttyInput) Close() error                { _, err := t.master.Write([]byte{4}); return err }

// openPTY opens a pseudo-terminal pair whose terminal end belongs to uid.
func openPTY(owner uint32) (master, slave *os.File, err error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(m), "ptmx")
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock the terminal: %w", err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		master.Close()
		return nil, nil, fmt.Errorf("open the terminal: %w", errno)
	}
	slave = os.NewFile(sfd, "pts")
	if err := unix.Fchown(int(sfd), int(owner), -1); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, fmt.Errorf("give the terminal to uid %d: %w", owner, err)
	}
	_ = unix.Fchmod(int(sfd), 0o620)
	return master, slave, nil
}

// stream returns the file a task writes one stream to and its read end:
// a pipe copied into w, or /dev/null (and no read end) when w is nil.
func (t *taskIO) stream(task int, w io.Writer) (wf, r *os.File, err error) {
	if w == nil {
		wf, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		return wf, nil, err
	}
	r, wf, err = os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	t.copy(task, r, w)
	return wf, r, nil
}

// copy copies a read end into w until EOF, then closes it.
func (t *taskIO) copy(task int, r *os.File, w io.Writer) {
	t.readers = append(t.readers, r)
	t.copied[task].Add(1)
	go func() {
		defer t.copied[task].Done()
		_, _ = io.Copy(w, r)
		r.Close()
	}()
}

// closeWriters closes this process's copies of the ends the tasks get
// (once the tasks have theirs, or when the launch failed).
func (t *taskIO) closeWriters() {
	closed := map[*os.File]bool{}
	for _, f := range append(append(t.stdout, t.stderr...), t.stdin...) {
		if f != nil && !closed[f] {
			closed[f] = true
			f.Close()
		}
	}
	t.stdout, t.stderr = nil, nil
	for i := range t.stdin {
		t.stdin[i] = nil
	}
}

// closeInputs closes this process's ends of the tasks' input: pipes and
// terminals (once the step has ended, or when the launch failed).
func (t *taskIO) closeInputs() {
	for i, in := range t.inputs {
		if _, tty := in.(ttyInput); !tty && in != nil {
			in.Close()
		}
		t.inputs[i] = nil
	}
	for i, m := range t.ttys {
		if m != nil {
			m.Close()
		}
		t.ttys[i] = nil
	}
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
