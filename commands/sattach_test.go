package commands

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"hpc/cluster/api"
)

// attachFake answers sattach: step 40.1 runs three tasks on node1 and
// node2; attached, it gets two lines of output and the step's end.
type attachFake struct {
	mu     sync.Mutex
	reqs   []api.AttachRequest
	inputs []api.AttachInput
}

func (f *attachFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	enc := json.NewEncoder(w)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/step/sattach":
		var req api.AttachRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.reqs = append(f.reqs, req)
		if req.StepID != 1 {
			w.WriteHeader(http.StatusBadRequest)
			enc.Encode(api.Error{Message: api.ErrAlreadyDone})
			return
		}
		enc.Encode(api.AttachEvent{StepEvent: api.StepEvent{Step: &api.Step{ID: 1, Nodes: []string{"node1", "node2"}, Tasks: []int{2, 1}}}})
		if req.Layout {
			return
		}
		enc.Encode(api.AttachEvent{StepEvent: api.StepEvent{Task: 2, Stream: api.StreamStdout, Data: []byte("two\n")}})
		enc.Encode(api.AttachEvent{StepEvent: api.StepEvent{Task: 0, Stream: api.StreamStderr, Data: []byte("zero\n")}})
		enc.Encode(api.AttachEvent{Dropped: 3})
		enc.Encode(api.AttachEvent{StepEvent: api.StepEvent{Done: &api.StepDone{State: api.StateCompleted}}})
	case "/api/step/sattach/input":
		var in api.AttachInput
		json.NewDecoder(r.Body).Decode(&in)
		f.inputs = append(f.inputs, in)
		enc.Encode(struct{}{})
	default:
		w.WriteHeader(http.StatusNotFound)
		enc.Encode(api.Error{Message: "no such endpoint " + r.URL.Path})
	}
}

func TestSattach(t *testing.T) {
	_, e, out, errb := newFake(t)
	f := &attachFake{}
	serveSteps(t, e, f)
	e.Stdin = stringsReader("to task 2\n")

	// Slurm's suite: tests/commands/sattach/test_--usage.py.
	stdout, _, code := run(e, out, errb, "sattach", "--usage")
	if code != 0 || !regexp.MustCompile(`Usage: sattach \[.*\] <jobid\.stepid>\n?$`).MatchString(stdout) {
		t.Errorf("--usage: %d %q", code, stdout)
	}
	if stdout, _, _ := run(e, out, errb, "sattach", "-h"); !strings.Contains(stdout, "--input-filter") || !strings.Contains(stdout, "Help options:") {
		t.Errorf("--help: %q", stdout)
	}
	for _, bad := range [][]string{{}, {"40"}, {"40.1", "40.2"}, {"--pty", "--output-filter=1", "40.1"}, {"-v", "-Q", "40.1"}} {
		if _, stderr, code := run(e, out, errb, append([]string{"sattach"}, bad...)...); code != 1 || !strings.HasPrefix(stderr, "sattach: error: ") {
			t.Errorf("sattach %q: %d %q", bad, code, stderr)
		}
	}

	stdout, _, code = run(e, out, errb, "sattach", "--layout", "40.1")
	want := "Job step layout:\n\t3 tasks, 2 nodes (node[1-2])\n\n\tNode 0 (node1), 2 task(s): 0 1 \n\tNode 1 (node2), 1 task(s): 2 \n"
	if code != 0 || stdout != want {
		t.Errorf("--layout: %d %q, want %q", code, stdout, want)
	}

	stdout, stderr, code := run(e, out, errb, "sattach", "-l", "-v", "--output-filter=2", "--input-filter=2", "40.1")
	if code != 0 || stdout != "2: two\n" || !strings.Contains(stderr, "0: zero\n") || !strings.Contains(stderr, "3 pieces of output dropped") {
		t.Errorf("attached: %d %q %q", code, stdout, stderr)
	}
	f.mu.Lock()
	last := f.reqs[len(f.reqs)-1]
	inputs := f.inputs
	f.mu.Unlock()
	if last.OutTask != 2 || last.ErrTask != -1 || last.JobID != 40 || last.StepID != 1 {
		t.Errorf("request %+v", last)
	}
	if len(inputs) > 0 && (inputs[0].Task != 2 || string(inputs[0].Data) != "to task 2\n") {
		t.Errorf("input %+v", inputs)
	}

	if _, stderr, code := run(e, out, errb, "sattach", "40.7"); code != 1 || !strings.Contains(stderr, "sattach: error: ") {
		t.Errorf("a step that is gone: %d %q", code, stderr)
	}
}
