package commands

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// srun's standard I/O, as Slurm's srun routes it (-i/-o/-e: all, none, a
// task number, or a file name pattern, jobspec.ExpandStepPath).
//
// Input goes to every task by default, to one with --input=N, to none with
// --input=none (and when srun's own stdin is /dev/null, as in a batch
// script, there is nothing to send and the tasks get /dev/null); with
// --input=FILE the file's content is sent instead of srun's stdin. --pty
// runs task 0 on a pseudo-terminal: srun's terminal goes raw, so that keys
// (Ctrl-C, Ctrl-D, arrows) reach the task's terminal as typed, and its
// size follows srun's.
//
// Output comes to srun's stdout and stderr by default; --output=none drops
// it, --output=N keeps task N's only, and --output=PATTERN writes each
// task's to the file its pattern names for it (one file for all the tasks
// when the pattern has no %t, %n or %N), created by srun, as the user
// running it, truncated unless --open-mode=append. --error is --output
// unless given. -l labels lines in files too, as Slurm's does.

// ioFile reports whether an -i/-o/-e value names a file, rather than all
// ("all" or "-"), none, or a task.
func ioFile(v string) bool {
	if _, ok := ioTask(v); ok {
		return false
	}
	return v != "" && v != "-" && !strings.EqualFold(v, "all") && !strings.EqualFold(v, "none")
}

// ioTask is the task an -i/-o/-e value names.
func ioTask(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 0 && v[0] != '+'
}

// stepInput decides what of srun's input the step's tasks get and, for
// --pty, makes srun's terminal raw; the returned function restores it.
func stepInput(e *Env, prog string, o *runOpts, req *api.StepRequest) (restore func()) {
	restore = func() {}
	if ioFile(o.input) {
		req.Input = "all" // the file's content, read once the step exists (inputFile)
		return restore
	}
	if strings.EqualFold(o.input, "none") || e.Stdin == nil || isDevNull(e.Stdin) {
		if o.pty {
			e.errorf(prog, "--pty: the standard input is not a terminal; running without one")
		}
		return restore
	}
	req.Input = "all"
	if _, ok := ioTask(o.input); ok {
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
func forwardInput(ctx context.Context, e *Env, cl *api.Client, req *api.StepRequest, step uint32, in io.Reader) {
	if req.Input == "" {
		return
	}
	if c, ok := in.(io.Closer); ok && in != e.Stdin {
		defer c.Close()
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
		n, err := in.Read(buf)
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

// stepFiles are the files of a step's I/O patterns (-i/-o/-e), expanded
// for each of its tasks once the step exists.
type stepFiles struct {
	job  *api.Job
	step *api.Step
	// cwd is where srun runs: a relative path without %t, %n or %N is
	// taken from there, one with them from the tasks' directory, as
	// Slurm's srun opens the first and its nodes the second.
	cwd, workDir string
}

// path is task's file for pattern (before the step exists, for a pattern
// that does not name it).
func (s *stepFiles) path(pattern string, task int) string {
	v := jobspec.StepPath{Step: -1, Task: task, Dir: s.cwd}
	if jobspec.Uses(pattern, "tnN") {
		v.Dir = s.workDir
	}
	if s.step != nil {
		v.Step = int(s.step.ID)
		first := 0
		for i, n := range s.step.Tasks {
			if task < first+n && i < len(s.step.Nodes) {
				v.NodeIndex, v.Node = i, s.step.Nodes[i]
				break
			}
			first += n
		}
	}
	return jobspec.ExpandStepPath(pattern, s.job, v)
}

// openInput opens the --input file, the same for every task, as srun's
// stdin: before the step (nil step), as Slurm's srun does, unless its name
// has the step's id. A pattern with %t, %n or %N names each task's own
// file (forwardTaskInputs).
func (s *stepFiles) openInput(con *console, prog string, o *runOpts, in *io.Reader) bool {
	if !ioFile(o.input) || perTaskInput(o) || (s.step == nil) == jobspec.Uses(o.input, "sJ") {
		return true
	}
	f, err := os.Open(s.path(o.input, 0))
	if err != nil {
		con.printf("%s: error: Could not open stdin file: %v\n", prog, err)
		*in = eofReader{}
		return false
	}
	*in = f
	return true
}

// stepJob is the job a step's I/O patterns name (%j, %x, %u, %A, %a),
// looked up only where one of -i/-o/-e is a file.
func stepJob(ctx context.Context, e *Env, cl *api.Client, o *runOpts, jobID uint64) *api.Job {
	j := &api.Job{ID: jobID, User: e.Getenv("USER"), Spec: api.JobSpec{Name: e.Getenv("SLURM_JOB_NAME")}}
	if !ioFile(o.input) && !ioFile(o.output) && !ioFile(o.errput) {
		return j
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if a, err := cl.WaitAllocation(lctx, jobID, nil); err == nil {
		if a.Job.User == "" {
			a.Job.User = j.User
		}
		return &a.Job
	}
	return j
}

// eofReader is an input at its end.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// taskOutput is where each task's output goes: a writer by task and
// stream, absent for srun's own stdout or stderr, io.Discard for none.
type taskOutput struct {
	to    map[[2]int]io.Writer
	files []*os.File
}

// openOutput routes the step's output as -o and -e say; a file that
// cannot be made is said, and its output dropped.
func openOutput(con *console, prog string, o *runOpts, s *stepFiles) *taskOutput {
	t := &taskOutput{to: map[[2]int]io.Writer{}}
	errput := o.errput
	if errput == "" {
		errput = o.output
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if o.spec.OpenMode == "append" {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	opened := map[string]io.Writer{}
	ntasks := s.step.NTasks()
	for _, r := range []struct {
		stream  int
		pattern string
		name    string
	}{{api.StreamStdout, o.output, "stdout"}, {api.StreamStderr, errput, "stderr"}} {
		id, one := ioTask(r.pattern)
		for task := 0; task < ntasks; task++ {
			k := [2]int{task, r.stream}
			switch {
			case strings.EqualFold(r.pattern, "none"), one && task != id:
				t.to[k] = io.Discard
			case ioFile(r.pattern):
				p := s.path(r.pattern, task)
				w, ok := opened[p]
				if !ok {
					f, err := os.OpenFile(p, flags, 0o644)
					if err != nil {
						con.printf("%s: error: Could not open %s file: %v\n", prog, r.name, err)
						w = io.Discard
					} else {
						w = f
						t.files = append(t.files, f)
					}
					opened[p] = w
				}
				t.to[k] = w
			}
		}
	}
	return t
}

// writer is where task's stream goes; nil: srun's own.
func (t *taskOutput) writer(task, stream int) io.Writer {
	if t == nil {
		return nil
	}
	return t.to[[2]int{task, stream}]
}

// close closes the output files.
func (t *taskOutput) close() {
	if t == nil {
		return
	}
	for _, f := range t.files {
		_ = f.Close()
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
// The epilog has 5 seconds, as slurmstepd gives srun's --task-epilog:
// then it is killed, with what it started (its own session, where setsid
// is there). A task a signal killed is killed by it again once the epilog
// has run.
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
if [ -n "$e" ]; then
  if command -v setsid >/dev/null 2>&1; then setsid "$e" & else "$e" & fi
  ep=$! i=0
  while kill -0 $ep 2>/dev/null; do
    if [ $i -ge 50 ]; then kill -9 -$ep 2>/dev/null || kill -9 $ep 2>/dev/null; break; fi
    sleep 0.1; i=$((i + 1))
  done
  wait $ep 2>/dev/null
fi
if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then trap - $((rc - 128)); kill -$((rc - 128)) $$; fi
exit $rc`

// perTaskInput reports whether --input names a file per task (%t, %n,
// %N in its pattern).
func perTaskInput(o *runOpts) bool {
	return ioFile(o.input) && jobspec.Uses(o.input, "tnN")
}

// forwardTaskInputs sends each task its own --input file (the pattern
// expanded for it, from the tasks' directory), then its end: as Slurm's
// nodes open a task's input file for it. A file that cannot be opened is
// said, and its task gets an empty input.
func forwardTaskInputs(ctx context.Context, con *console, prog string, cl *api.Client, files *stepFiles, o *runOpts, s *api.Step) {
	for task := range s.NTasks() {
		in := api.AttachInput{StepInput: api.StepInput{JobID: files.job.ID, StepID: s.ID}, Task: task}
		send := func(in api.AttachInput) bool {
			deadline := time.Now().Add(api.StepAttachWait)
			for {
				err := cl.AttachInput(ctx, in)
				if err == nil {
					return true
				}
				if ctx.Err() != nil || time.Now().After(deadline) {
					return false
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
		f, err := os.Open(files.path(o.input, task))
		if err != nil {
			con.printf("%s: error: Could not open stdin file: %v\n", prog, err)
		} else {
			buf := make([]byte, 32<<10)
			for {
				n, rerr := f.Read(buf)
				if n > 0 {
					in.Data = append([]byte(nil), buf[:n]...)
					if !send(in) {
						f.Close()
						return
					}
				}
				if rerr != nil {
					break
				}
			}
			f.Close()
		}
		in.Data, in.EOF = nil, true
		if !send(in) {
			return
		}
	}
}
