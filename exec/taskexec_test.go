//go:build linux

package exec

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTaskSetup: a step's processes start with the umask, the soft
// limits (never above the hard ones) and their own pid in PidEnv, tasks
// and a single process alike; a program that cannot be run still fails
// the launch.
func TestTaskSetup(t *testing.T) {
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		mask := uint32(0o027)
		setup := func(spec StepSpec) StepSpec {
			spec.UID, spec.GID, spec.WorkDir = nobody, nobody, dir
			spec.Umask, spec.PidEnv = &mask, "TASK_PID"
			spec.Rlimits = []Rlimit{
				{Resource: syscall.RLIMIT_CORE, Soft: 4096},
				{Resource: syscall.RLIMIT_NOFILE, Soft: nofile.Max + 1000}, // lowered to the hard limit
				{Resource: syscall.RLIMIT_STACK, Soft: 5 << 20},
			}
			return spec
		}
		script := `echo "$(umask) $(ulimit -Sc) $(ulimit -Sn) $(ulimit -Hn) $(ulimit -Ss)"; [ "$TASK_PID" = $$ ] && echo "pid ok"`
		want := fmt.Sprintf("0027 8 %d %d 5120\npid ok\n", nofile.Max, nofile.Max)
		var out [2]syncBuf
		tasks := []TaskSpec{
			{Argv: []string{"/bin/sh", "-c", script}, Env: env, Stdout: &out[0], Stderr: &out[0]},
			{Argv: []string{"/bin/sh", "-c", script}, Env: env, Stdout: &out[1], Stderr: &out[1]},
		}
		if r := launch(t, e, setup(StepSpec{ID: "70.0", Tasks: tasks})).Wait(); r.ExitCode != 0 || r.Err != nil {
			t.Errorf("tasks: %+v", r)
		}
		for i := range out {
			if got := out[i].String(); got != want {
				t.Errorf("task %d: %q, want %q", i, got, want)
			}
		}
		file := filepath.Join(dir, "out")
		if r := launch(t, e, setup(StepSpec{ID: "70.batch", Argv: []string{"/bin/sh", "-c", script}, Stdout: file, Stderr: file})).Wait(); r.ExitCode != 0 || r.Err != nil {
			t.Errorf("batch: %+v", r)
		}
		if got := readFile(t, file); got != want {
			t.Errorf("batch: %q, want %q", got, want)
		}
		_, err := e.Launch(setup(StepSpec{ID: "71.0", Env: env, Tasks: []TaskSpec{
			{Argv: []string{"/bin/true"}, Env: env}, {Argv: []string{"/no/such/program"}, Env: env},
		}}))
		if err == nil || !strings.Contains(err.Error(), "execve(): /no/such/program: No such file or directory") {
			t.Errorf("missing program: %v", err)
		}
		checkNoLeftovers(t, e)
	})
}

// TestTaskWrapper runs the wrapper as a starter does, with its report
// pipe on fd 3: the setup applied and the program exec'd in the same
// process (its pid in the variable), a bad setup and a missing program
// reported. It passes only where the wrapper is the C constructor
// (taskexec_cgo.go); the Go program would refuse every one.
func TestTaskWrapper(t *testing.T) {
	mask := uint32(0o022)
	s := taskSetup{Umask: &mask, Rlimits: []Rlimit{{Resource: syscall.RLIMIT_CORE, Soft: 4096}}, PidEnv: "TASK_PID"}
	if got, want := s.encode(), "u18,r4:4096,pTASK_PID"; got != want {
		t.Fatalf("encode: %q, want %q", got, want)
	}
	run := func(setup string, argv ...string) (out, report string, err error) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := osexec.Command("/proc/self/exe", append([]string{"init", taskExecArg, setup}, argv...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "TASK_PID=stale"}
		cmd.ExtraFiles = []*os.File{w}
		var b strings.Builder
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		rep := awaitExec(r)
		err = cmd.Wait()
		if rep != nil {
			report = rep.Error()
		}
		return b.String(), report, err
	}
	out, report, err := run(s.encode(), "/bin/sh", "-c", `echo "$(umask) $(ulimit -Sc) $TASK_PID $$"; env | grep -c ^TASK_PID=`)
	if f := strings.Fields(out); err != nil || report != "" || len(f) != 5 || f[0] != "0022" || f[1] != "8" || f[2] != f[3] || f[4] != "1" {
		t.Errorf("setup: %q, report %q, %v", out, report, err)
	}
	if _, report, err = run("u18,x1", "/bin/true"); err == nil || report != "bad task setup: x1" {
		t.Errorf("bad setup: report %q, %v", report, err)
	}
	if _, report, err = run("", "/no/such/program"); err == nil || report != "execve(): /no/such/program: No such file or directory" {
		t.Errorf("missing program: report %q, %v", report, err)
	}
}
