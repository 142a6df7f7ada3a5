package commands

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// srun's standard input goes to its tasks as Slurm's srun sends it: to
// every task by default, to one with --input=N, to none with --input=none
// (and when srun's own stdin is /dev/null, as in a batch script, there is
// nothing to send and the tasks get /dev/null). --pty runs task 0 on a
// pseudo-terminal: srun's terminal goes raw, so that keys (Ctrl-C, Ctrl-D,
// arrows) reach the task's terminal as typed, and its size follows srun's.

// checkInput accepts the --input modes hpc honours.
func checkInput(v string) error {
	if v == "all" || v == "none" {
		return nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return nil
	}
	return &jobspec.UsageError{Msg: "--input=" + v + ": hpc's srun takes all, none or a task number", Code: 1}
}

// stepInput decides what of srun's input the step's tasks get and, for
// --pty, makes srun's terminal raw; the returned function restores it.
func stepInput(e *Env, prog string, o *runOpts, req *api.StepRequest) (restore func()) {
	restore = func() {}
	if o.input == "none" || e.Stdin == nil || isDevNull(e.Stdin) {
		if o.pty {
			e.errorf(prog, "--pty: the standard input is not a terminal; running without one")
		}
		return restore
	}
	req.Input = "all"
	if o.input != "" {
		req.Input = o.input
	}
	if !o.pty {
		return restore
	}
	f, ok := e.Stdin.(*os.File)
	var saved *unix.Termios
	if ok {
		saved, _ = unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	}
	if saved == nil {
		e.errorf(prog, "--pty: the standard input is not a terminal; running without one")
		return restore
	}
	req.Pty = true
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
		req.Rows, req.Cols = ws.Row, ws.Col
	}
	raw := *saved
	// cfmakeraw: no line editing, echo or signals here; the task's
	// terminal does all that.
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, &raw); err != nil {
		req.Pty = false
		return restore
	}
	return func() { _ = unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, saved) }
}

// forwardInput sends srun's input to the step, piece by piece, then its
// end; with --pty it also passes on srun's terminal size as it changes. A
// piece that cannot be delivered (the node's daemon is being restarted) is
// sent again until srun has attached to the step again (api.StepAttachWait
// at most); the input stops when the step is over (ctx).
func forwardInput(ctx context.Context, e *Env, cl *api.Client, req *api.StepRequest, step uint32) {
	if req.Input == "" {
		return
	}
	send := func(in api.StepInput) error {
		deadline := time.Now().Add(api.StepAttachWait)
		for {
			err := cl.StepInput(ctx, in)
			if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
				return err
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	if f, ok := e.Stdin.(*os.File); ok && req.Pty {
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		go func() {
			defer signal.Stop(winch)
			for {
				select {
				case <-ctx.Done():
					return
				case <-winch:
				}
				if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
					_ = cl.StepInput(ctx, api.StepInput{JobID: req.JobID, StepID: step, Resize: true, Rows: ws.Row, Cols: ws.Col})
				}
			}
		}()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := e.Stdin.Read(buf)
		if n > 0 {
			if send(api.StepInput{JobID: req.JobID, StepID: step, Data: append([]byte(nil), buf[:n]...)}) != nil {
				return // the step is over
			}
		}
		if err != nil {
			if err == io.EOF {
				_ = send(api.StepInput{JobID: req.JobID, StepID: step, EOF: true})
			}
			return
		}
	}
}

// isDevNull reports whether r is /dev/null.
func isDevNull(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 3
}

// taskWrap runs --task-prolog before each task and --task-epilog after it,
// in the task's environment, as slurmstepd does: the prolog's output
// lines "export NAME=value" and "unset NAME" change the task's
// environment, "print text" writes text to the task's output; the task's
// exit status (or signal) stays its own.
func taskWrap(o *runOpts, req *api.StepRequest) {
	if o.taskProlog == "" && o.taskEpilog == "" {
		return
	}
	req.Argv = append([]string{"/bin/sh", "-c", taskWrapper, "hpc-task", o.taskProlog, o.taskEpilog}, req.Argv...)
	if req.Name == "" {
		req.Name = filepath.Base(o.argv[0])
	}
}

// taskWrapper is the shell that runs a task between its prolog and epilog.
// A task a signal killed is killed by it again once the epilog has run.
const taskWrapper = `p=$1 e=$2; shift 2
if [ -n "$p" ]; then
  out=$("$p")
  while IFS= read -r line; do
    case $line in
      "export "*) export "${line#export }" ;;
      "unset "*) unset "${line#unset }" ;;
      "print "*) printf '%s\n' "${line#print }" ;;
    esac
  done <<HPC_TASK_PROLOG
$out
HPC_TASK_PROLOG
fi
"$@"; rc=$?
if [ -n "$e" ]; then "$e"; fi
if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then trap - $((rc - 128)); kill -$((rc - 128)) $$; fi
exit $rc`
