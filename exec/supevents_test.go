//go:build linux

package exec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The supervisor's start report is checked against the plan: a report
// that the image's own code could send ({"started":true} with no pids, a
// pid 0, too few or too many pids, garbage, an endless line) is an error,
// never a panic, and the supervisor's own failure report keeps its reason.
func TestSupStartReport(t *testing.T) {
	for _, c := range []struct {
		name, in string
		ntasks   int
		want     string // "" for no error; else a part of the error
		bad      bool   // a malformed report (errMalformedReport)
	}{
		{"good", `{"started":true,"pids":[7]}` + "\n", 1, "", false},
		{"good three", `{"started":true,"pids":[7,8,9]}` + "\n", 3, "", false},
		{"no pids", `{"started":true}` + "\n", 1, "a start report of 0 pids for 1 tasks", true},
		{"empty pids", `{"started":true,"pids":[]}` + "\n", 2, "a start report of 0 pids for 2 tasks", true},
		{"too many pids", `{"started":true,"pids":[7,8]}` + "\n", 1, "a start report of 2 pids for 1 tasks", true},
		{"pid zero", `{"started":true,"pids":[0]}` + "\n", 1, "pids [0]", true},
		{"negative pid", `{"started":true,"pids":[-1,5]}` + "\n", 2, "pids [-1 5]", true},
		{"repeated pid", `{"started":true,"pids":[5,5]}` + "\n", 2, "pids [5 5]", true},
		{"no tasks", `{"started":true,"pids":[]}` + "\n", 0, "0 pids for 0 tasks", true},
		{"started with an error", `{"started":true,"pids":[3],"err":"x"}` + "\n", 1, "expected the start report", true},
		{"an end first", `{"end":true,"task":0}` + "\n", 1, "expected the start report", true},
		{"done first", `{"done":true}` + "\n", 1, "expected the start report", true},
		{"not json", "hello\n", 1, "invalid character", true},
		{"wrong types", `{"started":"yes","pids":"1"}` + "\n", 1, "cannot unmarshal", true},
		{"pids of floats", `{"started":true,"pids":[1.5]}` + "\n", 1, "cannot unmarshal", true},
		{"endless line", `{"started":true,"err":"` + strings.Repeat("x", maxSupLine+10), 1, "a line longer than", true},
		{"supervisor's failure", `{"err":"execve(): /bin/nope: No such file or directory","task":0}` + "\n", 1, "execve(): /bin/nope: No such file or directory", false},
		{"nothing", "", 1, "the step's supervisor ended before its tasks started (EOF)", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, err := newSupReader(strings.NewReader(c.in)).started(c.ntasks)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.want == "":
				if len(ev.Pids) != c.ntasks {
					t.Errorf("pids %v", ev.Pids)
				}
			case err == nil || !strings.Contains(err.Error(), c.want):
				t.Errorf("error %v, want one with %q", err, c.want)
			case errors.Is(err, errMalformedReport) != c.bad:
				t.Errorf("error %v: malformed %v, want %v", err, !c.bad, c.bad)
			}
			if err != nil && len(err.Error()) > 2*maxQuoted {
				t.Errorf("an error of %d bytes", len(err.Error()))
			}
		})
	}
}

// The tasks' ends: each task once, in range, with an exit status or a
// signal a process can have; then Done (or the pipe's end). Anything else
// is malformed.
func TestSupTaskEnds(t *testing.T) {
	ends := func(ntasks int, in string) ([]TaskResult, error) {
		r := newSupReader(strings.NewReader(in))
		got := make([]bool, ntasks)
		out := make([]TaskResult, ntasks)
		for {
			ev, done, err := r.taskEnd(got)
			if err != nil || done {
				return out, err
			}
			out[ev.Task] = TaskResult{ExitCode: ev.Exit, Signal: ev.Signal}
		}
	}
	res, err := ends(3, `{"task":2,"end":true,"exit":3}`+"\n"+`{"task":0,"end":true,"signal":9}`+"\n"+`{"task":1,"end":true}`+"\n"+`{"task":0,"done":true}`+"\n"+`garbage after done`)
	if err != nil || res[0].Signal != 9 || res[2].ExitCode != 3 || res[1] != (TaskResult{}) {
		t.Errorf("good ends: %+v, %v", res, err)
	}
	if res, err := ends(2, `{"task":1,"end":true,"exit":1}`+"\n"); err != nil || res[1].ExitCode != 1 {
		t.Errorf("ends cut short by the supervisor's end: %+v, %v", res, err)
	}
	for _, c := range []struct{ name, in, want string }{
		{"task out of range", `{"task":2,"end":true}`, "the end of task 2 of 2"},
		{"negative task", `{"task":-1,"end":true}`, "the end of task -1 of 2"},
		{"huge task", `{"task":9223372036854775807,"end":true}`, "the end of task 9223372036854775807 of 2"},
		{"twice", `{"task":0,"end":true}` + "\n" + `{"task":0,"end":true}`, "task 0 ended twice"},
		{"a second start", `{"started":true,"pids":[1]}`, "expected a task's end"},
		{"an error", `{"err":"boom","task":0}`, "expected a task's end"},
		{"neither end nor done", `{"task":0}`, "expected a task's end"},
		{"exit out of range", `{"task":0,"end":true,"exit":256}`, "exit status 256"},
		{"negative exit", `{"task":0,"end":true,"exit":-3}`, "exit status -3"},
		{"signal out of range", `{"task":0,"end":true,"signal":65}`, "signal 65"},
		{"exit and signal", `{"task":0,"end":true,"exit":1,"signal":9}`, "exit status 1 and signal 9"},
		{"not json", `{"task":0,`, "unexpected end of JSON input"},
		{"endless line", strings.Repeat(" ", maxSupLine+1), "a line longer than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ends(2, c.in+"\n")
			if err == nil || !errors.Is(err, errMalformedReport) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want a malformed report with %q", err, c.want)
			}
		})
	}
}

// The results file carries each ended task's memory high-water mark; the
// largest is the step's MaxRSS where the cgroup keeps none (cgroup v2
// before Linux 5.19 has no memory.peak).
func TestReadResultsPeak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results")
	lines := `{"task":0,"end":true,"exit":3,"maxrss_kb":2048}
{"task":1,"end":true,"signal":9,"maxrss_kb":40960}
{"done":true,"task":0}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	tasks, _, peak := readResults(path, 3)
	if peak != 40960 {
		t.Errorf("peak %d KB, want 40960", peak)
	}
	want := []TaskResult{{ExitCode: 3}, {Signal: 9}, {Signal: 9}} // task 2 never ended: SIGKILL
	if !reflect.DeepEqual(tasks, want) {
		t.Errorf("tasks %+v, want %+v", tasks, want)
	}
}
