//go:build linux

package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// A step whose processes start with something of their submitter's (a
// umask, soft limits) or with their own pid in a variable, as
// slurmstepd's tasks do, starts each of them through this program:
// "<exe> init hpc-task-exec <setup> argv..." sets them up in the process
// that becomes the task, after the fork and before the exec (only there
// is the pid known), then execs the task's program, which keeps that pid.
// The starter (the step's supervisor in container mode, the node's daemon
// in plain mode) runs it as /proc/self/exe, its own program, so no path
// to it needs to be reachable from the step; it costs a few milliseconds
// per task (the Go runtime's start).
//
// fd 3 is the report pipe: a failed exec writes slurmstepd's message
// ("execve(): prog: No such file or directory") to it, a successful one
// closes it (close-on-exec); the starter reads it to its end, so a launch
// fails as it would without the wrapper (awaitExec).
const (
	taskExecArg  = "hpc-task-exec"
	taskReportFD = 3
)

// taskSetup is what the wrapper sets up before the exec.
type taskSetup struct {
	Umask   *uint32  `json:"umask,omitempty"`
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	PidEnv  string   `json:"pid_env,omitempty"`
}

// setupOf is what a step's processes start with, or nil when they need
// no wrapper.
func setupOf(spec *StepSpec) *taskSetup {
	if spec.Umask == nil && len(spec.Rlimits) == 0 && spec.PidEnv == "" {
		return nil
	}
	return &taskSetup{Umask: spec.Umask, Rlimits: spec.Rlimits, PidEnv: spec.PidEnv}
}

// wrap is the command that starts argv through the wrapper.
func (s *taskSetup) wrap(argv []string) []string {
	b, _ := json.Marshal(s)
	return append([]string{"/proc/self/exe", "init", taskExecArg, string(b)}, argv...)
}

// taskExec is the wrapper's main; it never returns.
func taskExec(setup string, argv []string) {
	syscall.CloseOnExec(taskReportFD)
	report := os.NewFile(taskReportFD, "report")
	var s taskSetup
	if err := json.Unmarshal([]byte(setup), &s); err != nil {
		fmt.Fprintf(report, "bad task setup: %v", err)
		os.Exit(1)
	}
	env := os.Environ()
	if s.PidEnv != "" {
		env = withVar(env, s.PidEnv, strconv.Itoa(os.Getpid()))
	}
	if s.Umask != nil {
		syscall.Umask(int(*s.Umask))
	}
	// The limits last, so that this program runs under the node's. A soft
	// limit goes no higher than the hard one, which stays (slurmstepd
	// does the same; only root could raise it); one that cannot be set is
	// left as it is. syscall.Setrlimit, always called, also keeps the Go
	// runtime from putting back the soft RLIMIT_NOFILE it raised at start.
	for _, l := range s.Rlimits {
		var r syscall.Rlimit
		if syscall.Getrlimit(l.Resource, &r) != nil {
			continue
		}
		r.Cur = min(l.Soft, r.Max)
		_ = syscall.Setrlimit(l.Resource, &r)
	}
	err := syscall.Exec(argv[0], argv, env)
	fmt.Fprintf(report, "execve(): %s: %s", argv[0], errnoText(err))
	os.Exit(1)
}

// withVar sets a variable of an environment.
func withVar(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// awaitExec reads a wrapper's report pipe to its end (the wrapper has
// exec'd the task's program, or failed) and returns the failure it
// reports; it closes r.
func awaitExec(r *os.File) error {
	defer r.Close()
	msg, _ := io.ReadAll(r)
	if len(msg) > 0 {
		return errors.New(string(msg))
	}
	return nil
}
