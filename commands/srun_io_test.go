package commands

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"hpc/cluster/api"
)

// ioFake is a stepFake whose step's three tasks (0-1 on node1, 2 on
// node2) each write "out<task>" and "err<task>" lines, and which keeps
// the input srun sends.
type ioFake struct {
	*stepFake
	mu    sync.Mutex
	input []byte
	eof   bool
	// perTask is the input each task got on its own (--input=in_%t).
	perTask map[int]string
}

func (f *ioFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	enc := json.NewEncoder(w)
	switch r.URL.Path {
	case "/api/step/input":
		var in api.StepInput
		json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		f.input = append(f.input, in.Data...)
		f.eof = f.eof || in.EOF
		f.mu.Unlock()
		enc.Encode(struct{}{})
	case "/api/step/sattach/input":
		var in api.AttachInput
		json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		if f.perTask == nil {
			f.perTask = map[int]string{}
		}
		f.perTask[in.Task] += string(in.Data)
		if in.EOF {
			f.perTask[in.Task] += "<EOF>"
			f.eof = f.eof || in.Task == 2
		}
		f.mu.Unlock()
		enc.Encode(struct{}{})
	case "/api/step/run":
		var req api.StepRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.stepFake.mu.Lock()
		f.steps = append(f.steps, req)
		f.stepFake.mu.Unlock()
		enc.Encode(api.StepEvent{Step: &api.Step{ID: 2, Name: "t", Nodes: []string{"node1", "node2"}, Tasks: []int{2, 1}}})
		w.(http.Flusher).Flush()
		// The tasks read their input to its end before they end.
		for deadline := time.Now().Add(5 * time.Second); req.Input != "" && time.Now().Before(deadline); {
			f.mu.Lock()
			eof := f.eof
			f.mu.Unlock()
			if eof {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		for task := range 3 {
			enc.Encode(api.StepEvent{Task: task, Stream: api.StreamStdout, Data: fmt.Appendf(nil, "out%d\n", task)})
			enc.Encode(api.StepEvent{Task: task, Stream: api.StreamStderr, Data: fmt.Appendf(nil, "err%d\n", task)})
		}
		for task := range 3 {
			enc.Encode(api.StepEvent{Exit: &api.TaskExit{Task: task, Node: "node1"}})
		}
		enc.Encode(api.StepEvent{Done: &api.StepDone{State: api.StateCompleted}})
	default:
		f.stepFake.ServeHTTP(w, r)
	}
}

// newIOFake is newStepFake's Env talking to an ioFake, in a directory of
// its own, and a function running a command line there.
func newIOFake(t *testing.T) (*ioFake, *Env, func(args ...string) (string, string, int)) {
	t.Helper()
	_, e, out, errb := newStepFake(t)
	f := &ioFake{stepFake: &stepFake{}}
	serveSteps(t, e, f)
	e.Cwd = t.TempDir()
	e.Environ = append(e.Environ, "USER=ann")
	return f, e, func(args ...string) (string, string, int) {
		return run(e, out, errb, args...)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
	}
	return string(b)
}

// -o and -e name a file per task with %t, one for all without; -e is -o
// unless given; none and a task number choose what srun prints.
func TestSrunOutputFiles(t *testing.T) {
	_, e, cmd := newIOFake(t)
	srun := func(args ...string) (string, string, int) { return cmd(append([]string{"srun"}, args...)...) }
	dir := e.Cwd
	stdout, stderr, code := srun("-n3", "-o", "out_%t.txt", "-e", "err_%2t.%J.txt", "hostname")
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("code %d stdout %q stderr %q", code, stdout, stderr)
	}
	for task := range 3 {
		if got := readFile(t, filepath.Join(dir, fmt.Sprintf("out_%d.txt", task))); got != fmt.Sprintf("out%d\n", task) {
			t.Errorf("out_%d.txt: %q", task, got)
		}
		if got := readFile(t, filepath.Join(dir, fmt.Sprintf("err_%02d.40.2.txt", task))); got != fmt.Sprintf("err%d\n", task) {
			t.Errorf("err_%02d: %q", task, got)
		}
	}

	// One file for the step, both streams (-e is -o), labelled with -l;
	// per node with %N.
	_, _, code = srun("-l", "-o", "all.%j.%s.%u", "hostname")
	got := readFile(t, filepath.Join(dir, "all.40.2.ann"))
	if code != 0 || strings.Count(got, "\n") != 6 || !strings.Contains(got, "2: err2\n") || !strings.Contains(got, "0: out0\n") {
		t.Errorf("code %d all.40.2.ann: %q", code, got)
	}
	srun("-o", "/dev/null", "-e", "node.%N.%n", "hostname")
	if a, b := readFile(t, filepath.Join(dir, "node.node1.0")), readFile(t, filepath.Join(dir, "node.node2.1")); a != "err0\nerr1\n" || b != "err2\n" {
		t.Errorf("per node: %q %q", a, b)
	}

	// --open-mode: truncate by default, or append.
	srun("-o", "out_%t.txt", "hostname")
	srun("--open-mode=append", "-o", "out_%t.txt", "hostname")
	if got := readFile(t, filepath.Join(dir, "out_1.txt")); got != "out1\nerr1\nout1\nerr1\n" {
		t.Errorf("appended: %q", got)
	}

	// none, and one task.
	if stdout, stderr, _ := srun("-o", "none", "hostname"); stdout != "" || stderr != "" {
		t.Errorf("-o none: %q %q", stdout, stderr)
	}
	if stdout, stderr, _ := srun("-e", "none", "hostname"); stdout != "out0\nout1\nout2\n" || stderr != "" {
		t.Errorf("-e none: %q %q", stdout, stderr)
	}
	if stdout, stderr, _ := srun("--output=1", "hostname"); stdout != "out1\n" || stderr != "err1\n" {
		t.Errorf("--output=1: %q %q", stdout, stderr)
	}
	if stdout, stderr, _ := srun("--output=1", "--error=all", "hostname"); stdout != "out1\n" || stderr != "err0\nerr1\nerr2\n" {
		t.Errorf("--output=1 --error=all: %q %q", stdout, stderr)
	}

	// A file that cannot be made is said.
	if _, stderr, _ := srun("-o", "/nonexistent/dir/o", "hostname"); !strings.Contains(stderr, "srun: error: Could not open stdout file: ") {
		t.Errorf("unwritable: %q", stderr)
	}
}

// --input=FILE sends the file to the tasks, whatever srun's stdin.
func TestSrunInputFile(t *testing.T) {
	f, e, cmd := newIOFake(t)
	srun := func(args ...string) (string, string, int) { return cmd(append([]string{"srun"}, args...)...) }
	if err := os.WriteFile(filepath.Join(e.Cwd, "in.40"), []byte("sleep aaa\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := srun("--input=in.%j", "bash")
	f.mu.Lock()
	input, eof := string(f.input), f.eof
	f.mu.Unlock()
	if code != 0 || input != "sleep aaa\nexit 0\n" || !eof || f.steps[0].Input != "all" {
		t.Errorf("code %d stderr %q input %q eof %v step input %q", code, stderr, input, eof, f.steps[0].Input)
	}
	// A missing file is said before the step starts.
	f.steps = nil
	if _, stderr, code := srun("--input=missing", "bash"); code != 1 || len(f.steps) != 0 || !strings.Contains(stderr, "srun: error: Could not open stdin file: ") {
		t.Errorf("missing: %d %q", code, stderr)
	}
	// An input file per task (%t): each task gets its own, then its end;
	// a task whose file is missing gets its end alone, and it is said.
	for _, task := range []string{"0", "1"} {
		os.WriteFile(filepath.Join(e.Cwd, "in_"+task), []byte("for "+task+"\n"), 0o644)
	}
	f.eof = false
	_, stderr, code = srun("--input=in_%t", "cat")
	f.mu.Lock()
	per := f.perTask
	f.mu.Unlock()
	if want := map[int]string{0: "for 0\n<EOF>", 1: "for 1\n<EOF>", 2: "<EOF>"}; code != 0 || !reflect.DeepEqual(per, want) ||
		!strings.Contains(stderr, "srun: error: Could not open stdin file: ") {
		t.Errorf("--input=in_%%t: code %d stderr %q per task %v", code, stderr, per)
	}
	// Refused: salloc's I/O.
	for _, c := range [][]string{{"salloc", "-o", "x", "true"}, {"srun", "--open-mode=x", "true"}} {
		if _, stderr, code := cmd(c...); code == 0 || stderr == "" {
			t.Errorf("%q: code %d", c, code)
		}
	}
}
