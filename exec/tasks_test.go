//go:build linux

package exec

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuf is a writer several goroutines may share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sortedLines returns the buffer's lines in order.
func sortedLines(s string) []string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(l)
	return l
}

func TestTasks(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		var out, errb syncBuf
		var mu sync.Mutex
		ended := map[int]TaskResult{}
		var tasks []TaskSpec
		for i := range 3 {
			tasks = append(tasks, TaskSpec{
				Argv:   []string{"/bin/sh", "-c", `echo "out $ID uid $(id -u)"; echo "err $ID" >&2; sleep 1000 & exit $CODE`},
				Env:    append([]string{fmt.Sprintf("ID=%d", i), fmt.Sprintf("CODE=%d", []int{0, 3, 1}[i])}, env...),
				Stdout: &out,
				Stderr: &errb,
			})
		}
		tasks[2].Stderr = nil // discarded
		r := launch(t, e, StepSpec{ID: "40.0", UID: nobody, GID: nobody, WorkDir: dir, Tasks: tasks,
			OnTaskEnd: func(i int, r TaskResult) {
				mu.Lock()
				defer mu.Unlock()
				if _, dup := ended[i]; dup {
					t.Errorf("task %d ended twice", i)
				}
				ended[i] = r
			}}).Wait()
		want := []TaskResult{{ExitCode: 0}, {ExitCode: 3}, {ExitCode: 1}}
		if r.ExitCode != 3 || r.Signal != 0 || r.Err != nil || !reflect.DeepEqual(r.Tasks, want) {
			t.Errorf("result %+v", r)
		}
		if !reflect.DeepEqual(ended, map[int]TaskResult{0: want[0], 1: want[1], 2: want[2]}) {
			t.Errorf("OnTaskEnd saw %v", ended)
		}
		wantOut := []string{"out 0 uid 65534", "out 1 uid 65534", "out 2 uid 65534"}
		if got := sortedLines(out.String()); !reflect.DeepEqual(got, wantOut) {
			t.Errorf("stdout %q", got)
		}
		if got := sortedLines(errb.String()); !reflect.DeepEqual(got, []string{"err 0", "err 1"}) {
			t.Errorf("stderr %q", got)
		}
		checkNoLeftovers(t, e)
	})
}

// Signals reach every task; a killed task reports its signal.
func TestTaskSignals(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		var out syncBuf
		var tasks []TaskSpec
		for i := range 2 {
			tasks = append(tasks, TaskSpec{
				Argv:   []string{"/bin/sh", "-c", `trap 'echo "INT $ID"; exit 7' INT; echo "ready $ID"; while :; do sleep 0.05; done`},
				Env:    append([]string{fmt.Sprintf("ID=%d", i)}, env...),
				Stdout: &out,
			})
		}
		tasks = append(tasks, TaskSpec{Argv: []string{"/bin/sh", "-c", `echo "ready 2"; exec sleep 1000`}, Env: env, Stdout: &out})
		s := launch(t, e, StepSpec{ID: "41.0", UID: nobody, GID: nobody, Tasks: tasks})
		deadline := time.Now().Add(time.Minute)
		for strings.Count(out.String(), "ready") < 3 {
			if time.Now().After(deadline) {
				t.Fatalf("tasks never got ready: %q", out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := s.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		r := s.Wait()
		want := []TaskResult{{ExitCode: 7}, {ExitCode: 7}, {Signal: int(syscall.SIGINT)}}
		if !reflect.DeepEqual(r.Tasks, want) || r.ExitCode != 7 || r.Signal != int(syscall.SIGINT) {
			t.Errorf("result %+v", r)
		}
		if got := out.String(); !strings.Contains(got, "INT 0") || !strings.Contains(got, "INT 1") {
			t.Errorf("output %q", got)
		}
		checkNoLeftovers(t, e)
	})
}

// A task whose command cannot start fails the launch and leaves nothing.
func TestTaskLaunchErrors(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		_, err := e.Launch(StepSpec{ID: "42.0", UID: nobody, GID: nobody, Tasks: []TaskSpec{
			{Argv: []string{"/bin/true"}, Env: env},
			{Argv: []string{"/no/such"}, Env: env},
		}})
		if err == nil || !strings.Contains(err.Error(), "execve(): /no/such: No such file or directory") {
			t.Errorf("missing program: %v", err)
		}
		_, err = e.Launch(StepSpec{ID: "42.1", Tasks: []TaskSpec{{Argv: []string{"true"}}}})
		if err == nil || !strings.Contains(err.Error(), "absolute path") {
			t.Errorf("relative program: %v", err)
		}
		_, err = e.Launch(StepSpec{ID: "42.2", Tasks: []TaskSpec{{Argv: []string{"/bin/true"}, Env: []string{"X"}}}})
		if err == nil || !strings.Contains(err.Error(), "invalid environment") {
			t.Errorf("bad environment: %v", err)
		}
		// Fails inside the container (a directory passes the access check).
		var out syncBuf
		s, err := e.Launch(StepSpec{ID: "42.3", UID: nobody, GID: nobody, Tasks: []TaskSpec{
			{Argv: []string{"/bin/true"}, Env: env},
			{Argv: []string{filepath.Join(dir)}, Env: env, Stderr: &out},
		}})
		if err == nil {
			r := s.Wait()
			if r.Tasks[1].ExitCode != 255 {
				t.Errorf("directory as a program: %+v %q", r, out.String())
			}
		}
		checkNoLeftovers(t, e)
	})
}

// BenchmarkLaunchTasks: a step of four `true` tasks (srun -n4 on one
// node), container against plain processes.
func BenchmarkLaunchTasks(b *testing.B) {
	run := func(b *testing.B, e *Executor) {
		tasks := make([]TaskSpec, 4)
		for i := range tasks {
			tasks[i] = TaskSpec{Argv: []string{"/bin/true"}, Env: env, Stdout: io.Discard}
		}
		benchSteps(b, e, func(i int) StepSpec { return StepSpec{ID: fmt.Sprintf("%d.0", i), Tasks: tasks} },
			func(r Result) bool { return r.ExitCode == 0 && r.Err == nil && len(r.Tasks) == 4 })
	}
	b.Run("container", func(b *testing.B) { run(b, newContainerExecutor(b, "benchtasks")) })
	b.Run("plain", func(b *testing.B) { run(b, newPlainExecutor(b, "benchtasks")) })
}

// TestTaskInput: a task's stdin is a pipe the caller writes (srun's
// standard input), or a terminal of its own (srun --pty) that starts at
// the size given, can be resized, echoes what is typed and is the task's
// controlling terminal.
func TestTaskInput(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		var a, b syncBuf
		s := launch(t, e, StepSpec{ID: "44.0", UID: nobody, GID: nobody, WorkDir: dir, Tasks: []TaskSpec{
			{Argv: []string{"/bin/cat"}, Env: env, Stdout: &a, Stdin: true},
			{Argv: []string{"/usr/bin/wc", "-c"}, Env: env, Stdout: &b, Stdin: true},
		}})
		if _, err := io.WriteString(s.Stdin(0), "hello\n"); err != nil {
			t.Fatal(err)
		}
		io.WriteString(s.Stdin(1), "abc")
		s.Stdin(0).Close()
		s.Stdin(1).Close()
		if r := s.Wait(); r.ExitCode != 0 || a.String() != "hello\n" || strings.TrimSpace(b.String()) != "3" {
			t.Errorf("stdin: %+v, outputs %q %q", r, a.String(), b.String())
		}

		var tty syncBuf
		script := `test -t 0 && test -t 1 && echo isatty; stty size; read x; echo "got $x"; stty size; [ "$(cut -d' ' -f7 /proc/$$/stat)" != 0 ] && echo ctty`
		s = launch(t, e, StepSpec{ID: "45.0", UID: nobody, GID: nobody, WorkDir: dir, Tasks: []TaskSpec{
			{Argv: []string{"/bin/sh", "-c", script}, Env: env, Stdout: &tty, TTY: true, Rows: 30, Cols: 100},
		}})
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(tty.String(), "30 100"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("terminal: %q", tty.String())
			}
		}
		if err := s.Resize(0, 40, 120); err != nil {
			t.Fatal(err)
		}
		io.WriteString(s.Stdin(0), "hi\n")
		r := s.Wait()
		got := strings.ReplaceAll(tty.String(), "\r\n", "\n")
		if r.ExitCode != 0 || got != "isatty\n30 100\nhi\ngot hi\n40 120\nctty\n" {
			t.Errorf("terminal: %+v, output %q", r, got)
		}
		if s.Stdin(1) != nil || s.Resize(1, 1, 1) == nil {
			t.Error("a task that does not exist has input")
		}
	})
}
