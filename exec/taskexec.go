//go:build linux

package exec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// A step whose processes start with something of their submitter's (a
// umask, soft limits) or with their own pid in a variable, as
// slurmstepd's tasks do, starts each of them through this program:
// "<exe> init hpc-task-exec <setup> argv..." sets them up in the process
// that becomes the task, after the fork and before the exec (only there
// is the pid known), then execs the task's program, which keeps that pid.
// The starter (the step's supervisor in container mode, the node's daemon
// in plain mode) runs it as /proc/self/exe, its own program, so no path
// to it needs to be reachable from the step. The wrapper is a C
// constructor (taskexec_cgo.go) that execs before the Go runtime starts:
// a task costs no second start of the runtime and its packages.
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
	Umask   *uint32
	Rlimits []Rlimit
	PidEnv  string
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
	return append([]string{"/proc/self/exe", "init", taskExecArg, s.encode()}, argv...)
}

// encode is the setup as the wrapper reads it: fields separated by commas,
// u<umask>, r<resource>:<soft limit>, p<variable>, numbers in decimal.
func (s *taskSetup) encode() string {
	var f []string
	if s.Umask != nil {
		f = append(f, "u"+strconv.FormatUint(uint64(*s.Umask), 10))
	}
	for _, l := range s.Rlimits {
		f = append(f, "r"+strconv.Itoa(l.Resource)+":"+strconv.FormatUint(l.Soft, 10))
	}
	if s.PidEnv != "" {
		f = append(f, "p"+s.PidEnv)
	}
	return strings.Join(f, ",")
}

// taskExec is reached only where the wrapper's C constructor is not part
// of the program (taskexec_cgo.go: built without cgo, or not against
// glibc); it fails the launch, saying so, and never returns.
func taskExec() {
	report := os.NewFile(taskReportFD, "report")
	fmt.Fprint(report, "hpc-task-exec: this build of hpc has no task wrapper (it needs cgo and glibc)")
	os.Exit(1)
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
