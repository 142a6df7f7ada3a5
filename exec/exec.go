//go:build linux

package exec

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options configures an Executor.
type Options struct {
	// StateDir holds the executor's private state: the prepared root file
	// system and libcontainer's per-container state. Required in container
	// mode; created if missing.
	StateDir string
	// NodeName is the step's hostname and names the node's cgroup parent
	// (/hpc/<NodeName>). Empty means the host name.
	NodeName string
	// ForcePlain runs steps as plain processes even when containers would work.
	ForcePlain bool
	// Logger receives the executor's own messages; nil discards them.
	Logger *slog.Logger
}

// StepSpec describes one step to run.
type StepSpec struct {
	// ID is unique per node, e.g. "12.batch". It names the container and the
	// step's cgroup (characters other than letters, digits, "_+-." become "_").
	ID string
	// Argv is the command; Argv[0] must be an absolute path.
	Argv []string
	// Env is the complete environment of the step.
	Env []string
	// UID, GID and Groups are the user the step runs as. Nil Groups means the
	// user's groups from the system's group database (see UserGroups).
	UID, GID uint32
	Groups   []uint32
	// WorkDir is where the step starts. If the user cannot enter it, the step
	// starts in /tmp and its stderr says so, as slurmstepd does. Empty: "/".
	WorkDir string
	// Stdout and Stderr are absolute file paths, opened with the user's
	// permissions and owned by the user. Equal paths share one open file; an
	// empty path means /dev/null.
	Stdout, Stderr string
	// Truncate empties existing output files; otherwise output is appended.
	Truncate bool
	// CPUs limits CPU time to CPUs full CPUs (a CFS quota); 0 means no limit.
	CPUs int
	// CPUIDs are the node's CPUs the step may run on (its cpuset), as the
	// controller numbers them (0 to the node's CPUs-1). They are mapped
	// onto the CPUs this process may use, in order and wrapping around, so
	// a lab node that claims more CPUs than its host has still gets a valid
	// set. Empty: every CPU. Container mode only.
	CPUIDs []int
	// Devices are device files the step may open besides the standard
	// ones (/dev/null, /dev/zero, ...): its allocated GRES (GPUs). In
	// container mode the devices cgroup denies every other device, so a job
	// can open only the GPUs it was given; plain mode cannot enforce it.
	Devices []string
	// MemMB limits memory (and memory plus swap, so no swap) in MiB; 0 means
	// no limit.
	MemMB int64
	// Job, when set, names the job the step belongs to: the job's steps on
	// this node share a job cgroup whose memory limit is JobMemMB (0: none),
	// so that together they stay within it (container mode).
	Job      string
	JobMemMB int64
	// Tasks, when set, are the step's processes (srun's tasks) instead of
	// Argv, Env, Stdout and Stderr: each task is a process of its own in the
	// step's container (or process group), all started before Launch
	// returns, and the step ends when every task has ended.
	Tasks []TaskSpec
	// OnTaskEnd, when set, is called once per task (from a goroutine of the
	// executor) when the task's process has ended and its output has been
	// delivered, before the step as a whole ends.
	OnTaskEnd func(task int, r TaskResult)
	// Image, when set, runs the step in that root file system instead of
	// the host's (srun and sbatch --container-image; see image.go). Only
	// container mode can: Launch fails in plain mode.
	Image *Image
	// Tag is the caller's, kept with the step: a step a new executor
	// re-attaches gives it back (Step.Tag).
	Tag string
	// Umask, when set, is the umask the step's processes start with (the
	// submitter's); nil: the executor's own.
	Umask *uint32
	// Rlimits are soft limits the step's processes start with (the
	// submitter's), each lowered to the hard limit it would have had:
	// hard limits are never changed.
	Rlimits []Rlimit
	// PidEnv, when set, names a variable each process of the step finds
	// set to its own pid (Slurm's SLURM_TASK_PID).
	PidEnv string
}

// Rlimit is a soft resource limit: setrlimit(2)'s resource and value.
type Rlimit struct {
	Resource int    `json:"resource"`
	Soft     uint64 `json:"soft"`
}

// TaskSpec is one task of a step that runs several.
type TaskSpec struct {
	// Argv is the task's command; Argv[0] must be an absolute path.
	Argv []string
	// Env is the task's complete environment.
	Env []string
	// Stdout and Stderr receive the task's output as it is written (from
	// one goroutine per stream); nil discards it.
	Stdout, Stderr io.Writer
	// Stdin gives the task a pipe as its standard input, written through
	// Step.Stdin; otherwise its stdin is /dev/null.
	Stdin bool
	// TTY runs the task on a pseudo-terminal of its own (srun --pty): its
	// stdin, stdout and stderr and its controlling terminal, in a session
	// of its own. Its output (both streams) goes to Stdout; Step.Stdin
	// types into it and Step.Resize sets its size, Rows x Cols to start.
	TTY        bool
	Rows, Cols uint16
}

// TaskResult is how one task of a step ended.
type TaskResult struct {
	// ExitCode is the task's exit status; 0 when a signal killed it.
	ExitCode int
	// Signal is the signal that killed the task, or 0.
	Signal int
}

// OutputError is returned by Launch when an output file of the step cannot
// be opened; it reads as slurmstepd's message ("Could not open stdout file
// /x/out: Permission denied").
type OutputError struct {
	Stream string // "stdout" or "stderr"
	Path   string
	Err    error
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("Could not open %s file %s: %s", e.Stream, e.Path, errnoText(e.Err))
}

func (e *OutputError) Unwrap() error { return e.Err }

// Result is how a step ended.
type Result struct {
	// ExitCode is the exit status of the step's process; 0 when it was
	// killed by a signal.
	ExitCode int
	// Signal is the signal that killed the step's process, or 0.
	Signal int
	// OOM reports that the kernel's OOM killer killed a process of the step
	// (the cgroup's oom_kill counter rose while it ran).
	OOM bool
	// OOMKills counts the processes the OOM killer killed (container mode).
	OOMKills int
	// Err is set when the step could not be run or cleaned up properly;
	// failures before the step started are returned by Launch instead.
	Err error
	// Start and End bracket the step's process.
	Start, End time.Time
	// Tasks holds each task's end, for a step launched with Tasks (and then
	// ExitCode is the highest task exit code, Signal the first signal that
	// killed a task).
	Tasks []TaskResult
	// Usage is what the step used (zero where it could not be measured).
	Usage Usage
}

// Usage is what a step's processes used, as sacct reports it.
type Usage struct {
	// MaxRSSKB is the step's peak memory in KiB: its memory cgroup's
	// high-water mark (page cache included) in container mode, the largest
	// task's peak resident set in plain mode.
	MaxRSSKB int64
	// UserCPU and SystemCPU are the CPU time its processes spent.
	UserCPU, SystemCPU time.Duration
}

// OOMNotice is the line slurmstepd adds to a step's stderr when the OOM
// killer struck in it; container steps with output files get it from the
// executor.
func OOMNotice(stepID string, kills int) string {
	return fmt.Sprintf("slurmstepd: error: Detected %d oom-kill event(s) in StepId=%s. Some of your processes may have been killed by the cgroup out-of-memory handler.\n", kills, stepID)
}

// ErrStepEnded is returned by Step.Signal once the step's process has ended.
var ErrStepEnded = errors.New("step has ended")

// Executor runs steps on this node. Its methods are safe for concurrent use.
type Executor struct {
	log  *slog.Logger
	node string
	mode string

	ctr *containerRuntime // nil in plain mode
	// switchUser: plain mode as root, so steps run as their users.
	switchUser bool

	mu         sync.Mutex
	active     map[string]*Step // running steps by sanitised ID
	reattached []*Step          // steps a previous executor left, until Reattached
	closed     bool
}

// New creates the node's executor and decides, once, how it runs steps:
// in containers when the daemon is root and cgroups (v1 or v2) are usable,
// otherwise as plain processes (Mode says why).
//
// In container mode New prepares the root file system (a recursive bind of
// / under StateDir, undone by Close), makes the calling process a child
// subreaper (libcontainer's processes are its grandchildren), and
// re-attaches to the steps a previous executor on this node left (see
// Reattached); whatever else it left is removed.
func New(o Options) (*Executor, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	node := o.NodeName
	if node == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("exec: no node name given and the host name is unknown: %w", err)
		}
		node = h
	}
	e := &Executor{log: log, node: node, active: map[string]*Step{}}
	root := os.Geteuid() == 0
	switch {
	case o.ForcePlain:
		e.switchUser = root
		if root {
			e.mode = "plain processes (ForcePlain set: no cgroup limits)"
		} else {
			e.mode = "plain processes (ForcePlain set; not root: no cgroup limits or user switching)"
		}
	case !root:
		// Says whether a delegated user cgroup could hold the steps.
		e.mode = planCgroups("/", os.Geteuid(), "", nil, nil).Desc
	default:
		if o.StateDir == "" {
			return nil, errors.New("exec: Options.StateDir is required to run steps in containers")
		}
		plan := placeCgroups(node, o.StateDir, log)
		rt, err := newContainerRuntime(o.StateDir, node, plan.Parent, log)
		if err != nil {
			e.switchUser = true
			e.mode = fmt.Sprintf("plain processes (containers unavailable: %v; no cgroup limits)", err)
			log.Warn("running job steps as plain processes", "reason", err)
			break
		}
		e.ctr = rt
		e.mode = fmt.Sprintf("containers (libcontainer, %s)", plan.Desc)
		e.mu.Lock()
		for _, c := range rt.leftovers {
			e.reattached = append(e.reattached, e.reattach(c))
		}
		rt.leftovers = nil
		e.mu.Unlock()
	}
	log.Info("executor ready", "node", node, "mode", e.mode)
	return e, nil
}

// Mode describes how steps run and, in containers, where their cgroups
// are, e.g. "containers (libcontainer, cgroup v1, under /hpc in each
// hierarchy)", "containers (libcontainer, cgroup v2, delegated by systemd:
// transient scope hpc-node1-1a2b3c4d.scope (/sys/fs/cgroup/...))" or
// "plain processes (not root: no cgroup limits or user switching)".
func (e *Executor) Mode() string { return e.mode }

// Containers reports whether steps run in containers.
func (e *Executor) Containers() bool { return e.ctr != nil }

// Close frees the node-wide things the executor set up (the root file system
// bind, the node's cgroup parent). Steps still running keep running and must
// still be waited for; Launch fails after Close. Close is idempotent.
func (e *Executor) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	if e.ctr == nil {
		return nil
	}
	return e.ctr.close()
}

// Launch starts a step and returns once its process runs. An error means
// nothing of the step is left: no process, container, cgroup, or output file
// that Launch created. Errors users should see read like slurmstepd's
// ("open /x/out: permission denied", "execve(): /x: Permission denied").
// In container mode a command that passes those checks but still cannot be
// executed (not a valid program, say) makes the step end with exit code 255
// and the reason on its stderr; in plain mode Launch returns that error.
func (e *Executor) Launch(spec StepSpec) (*Step, error) {
	if err := checkSpec(&spec); err != nil {
		return nil, err
	}
	if err := e.prepareImage(&spec); err != nil { // image.go
		return nil, err
	}
	// Reserve the ID while launching.
	key, s, err := e.reserve(spec.ID)
	if err != nil {
		return nil, err
	}
	if e.ctr != nil {
		err = e.launchContainer(s, key, spec)
	} else {
		err = e.launchPlain(s, spec)
	}
	if err != nil {
		e.forget(key, s)
		return nil, err
	}
	return s, nil
}

// reserve makes a new step of that ID the active one, unless one is.
func (e *Executor) reserve(id string) (string, *Step, error) {
	if id == "" {
		return "", nil, errors.New("exec: step ID is empty")
	}
	key := sanitizeID(id)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return "", nil, errors.New("exec: executor is closed")
	case e.active[key] != nil:
		return "", nil, fmt.Errorf("step %s is already running on node %s", id, e.node)
	}
	s := newStep(id)
	e.active[key] = s
	return key, s, nil
}

// forget drops a step from the active table.
func (e *Executor) forget(key string, s *Step) {
	e.mu.Lock()
	if e.active[key] == s {
		delete(e.active, key)
	}
	e.mu.Unlock()
}

func checkSpec(spec *StepSpec) error {
	if spec.ID == "" {
		return errors.New("exec: step ID is empty")
	}
	if len(spec.Tasks) > 0 {
		// The tasks replace the step's own command, environment and
		// output files.
		spec.Argv, spec.Env, spec.Stdout, spec.Stderr = spec.Tasks[0].Argv, nil, "", ""
		for i, t := range spec.Tasks {
			if len(t.Argv) == 0 || !filepath.IsAbs(t.Argv[0]) {
				return fmt.Errorf("exec: step %s task %d: the command must start with an absolute path, got %q", spec.ID, i, t.Argv)
			}
			if err := checkEnv(spec.ID, t.Env); err != nil {
				return err
			}
		}
	}
	if len(spec.Argv) == 0 || !filepath.IsAbs(spec.Argv[0]) {
		return fmt.Errorf("exec: step %s: the command must start with an absolute path, got %q", spec.ID, spec.Argv)
	}
	for _, p := range []string{spec.Stdout, spec.Stderr} {
		if p != "" && !filepath.IsAbs(p) {
			return fmt.Errorf("exec: step %s: output path %q is not absolute", spec.ID, p)
		}
	}
	if spec.WorkDir != "" && !filepath.IsAbs(spec.WorkDir) {
		return fmt.Errorf("exec: step %s: working directory %q is not absolute", spec.ID, spec.WorkDir)
	}
	if err := checkEnv(spec.ID, spec.Env); err != nil {
		return err
	}
	if spec.CPUs < 0 || spec.MemMB < 0 {
		return fmt.Errorf("exec: step %s: negative limits (cpus %d, memory %d MB)", spec.ID, spec.CPUs, spec.MemMB)
	}
	return nil
}

func checkEnv(id string, env []string) error {
	for _, kv := range env {
		if i := strings.IndexByte(kv, '='); i <= 0 || strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("exec: step %s: invalid environment entry %q", id, kv)
		}
	}
	return nil
}

// sanitizeID makes a step ID usable as a container ID and a cgroup name.
func sanitizeID(id string) string {
	b := []byte(id)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '+', c == '-', c == '.':
		default:
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "." || s == ".." {
		s = "_" + s
	}
	return s
}

// UserGroups returns the groups of the user with this uid according to the
// system's user and group databases (its primary group included).
func UserGroups(uid uint32) ([]uint32, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of user %s: %w", u.Username, err)
	}
	out := make([]uint32, 0, len(ids))
	for _, s := range ids {
		g, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			continue
		}
		out = append(out, uint32(g))
	}
	return out, nil
}

// groupsFor returns spec.Groups, or the user's groups, or just the primary
// group when the user is unknown to the system.
func groupsFor(spec *StepSpec) []uint32 {
	if spec.Groups != nil {
		return spec.Groups
	}
	return GroupsOrPrimary(spec.UID, spec.GID)
}

// GroupsOrPrimary returns the user's groups (UserGroups), or gid alone
// when the user is unknown to the system.
func GroupsOrPrimary(uid, gid uint32) []uint32 {
	if g, err := UserGroups(uid); err == nil && len(g) > 0 {
		return g
	}
	return []uint32{gid}
}

// Step is a running (or ended) step.
type Step struct {
	id    string
	pid   int
	start time.Time
	sig   signaller

	done chan struct{}
	res  Result

	// inputs and ttys are the tasks' stdin and terminals (see TaskSpec).
	inputs []io.WriteCloser
	ttys   []*os.File
	// reio is a re-attached step's task output (AttachTasks).
	reio *reattachedIO
	tag  string
}

// Tag is StepSpec.Tag of a step this executor re-attached to ("" for
// others).
func (s *Step) Tag() string { return s.tag }

// Tasks is the number of tasks the step was launched with (0: a step
// without Tasks).
func (s *Step) Tasks() int { return len(s.inputs) }

// Stdin is where task i's standard input comes from (TaskSpec.Stdin or
// TTY), or nil. Closing it ends the task's input (^D on a terminal).
func (s *Step) Stdin(i int) io.WriteCloser {
	if i < 0 || i >= len(s.inputs) {
		return nil
	}
	return s.inputs[i]
}

// Resize sets the size of task i's terminal (TaskSpec.TTY); the task gets
// SIGWINCH.
func (s *Step) Resize(i int, rows, cols uint16) error {
	if i < 0 || i >= len(s.ttys) || s.ttys[i] == nil {
		return errors.New("the task has no terminal")
	}
	return unix.IoctlSetWinsize(int(s.ttys[i].Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
}

// signaller delivers signals to the processes of a step.
type signaller interface {
	// signal sends sig to every process of the step.
	signal(sig syscall.Signal) error
	// kill ends every process of the step at once.
	kill() error
}

func newStep(id string) *Step { return &Step{id: id, done: make(chan struct{})} }

// Pid is the host pid of the step's process.
func (s *Step) Pid() int { return s.pid }

// ID is the step's ID as given in its StepSpec.
func (s *Step) ID() string { return s.id }

// Signal sends sig to every process of the step. After the step's process
// has ended it returns ErrStepEnded.
func (s *Step) Signal(sig syscall.Signal) error {
	select {
	case <-s.done:
		return ErrStepEnded
	default:
	}
	return s.sig.signal(sig)
}

// SignalMain sends sig to the step's own process only (the batch shell of a
// batch step, the first task of an srun step), not to what it started.
// Where that process is not known (a step re-attached after a restart),
// it signals every process of the step.
func (s *Step) SignalMain(sig syscall.Signal) error {
	select {
	case <-s.done:
		return ErrStepEnded
	default:
	}
	if s.pid <= 0 {
		return s.sig.signal(sig)
	}
	if err := syscall.Kill(s.pid, sig); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}

// Kill asks every process of the step to stop (SIGCONT and SIGTERM) and
// kills whatever is left after grace (Slurm's KillWait). It returns at once.
func (s *Step) Kill(grace time.Duration) { s.stop(true, grace) }

// KillNow kills every process of the step at once: SIGCONT, then SIGKILL,
// and no SIGTERM, as slurmstepd ends a step srun terminates (srun -W's
// time over, its second Ctrl-C, signal 9): a task ends Killed, never
// Terminated by a SIGTERM that reached it first. It returns at once.
func (s *Step) KillNow() { s.stop(false, 0) }

// stop is Kill (term: SIGTERM first, then SIGKILL after grace) and KillNow.
func (s *Step) stop(term bool, grace time.Duration) {
	if s.reio != nil {
		s.reio.dropIO() // nobody is to have its output if nobody has it yet
	}
	go func() {
		if s.Signal(syscall.SIGCONT) == ErrStepEnded {
			return
		}
		if term {
			_ = s.Signal(syscall.SIGTERM)
		}
		if grace > 0 {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
		select {
		case <-s.done:
		default:
			_ = s.sig.kill()
		}
	}()
}

// Wait blocks until the step has ended and everything of it is cleaned up.
// It may be called any number of times, from any goroutine.
func (s *Step) Wait() Result {
	<-s.done
	return s.res
}

// Done is closed when the step has ended and been cleaned up.
func (s *Step) Done() <-chan struct{} { return s.done }

// finish records the result and releases waiters.
func (s *Step) finish(r Result) {
	s.res = r
	close(s.done)
}

// exitResult turns a wait status into a Result.
func exitResult(ps *os.ProcessState) Result {
	var r Result
	if ps == nil {
		return r
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		r.ExitCode = ps.ExitCode()
		return r
	}
	if ws.Signaled() {
		r.Signal = int(ws.Signal())
	} else {
		r.ExitCode = ws.ExitStatus()
	}
	return r
}
