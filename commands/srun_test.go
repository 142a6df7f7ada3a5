package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hpc/cluster/api"
)

// stepFake answers what srun and salloc ask: a submission, its allocation
// (running on node[1-2], 2 CPUs each, or pending for ever), a step of
// three tasks (two on node1, one on node2; task 2 exits 3) and the
// release.
type stepFake struct {
	mu       sync.Mutex
	pending  bool
	specs    []api.JobSpec
	steps    []api.StepRequest
	releases []api.ReleaseRequest
	tests    []api.JobSpec // --test-only's
}

func (f *stepFake) job() api.Job {
	j := api.Job{ID: 40, State: api.StateRunning, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 2}, {Node: "node2", CPUs: 2}}}
	if f.pending {
		j.State, j.Alloc = api.StatePending, nil
	}
	return j
}

func (f *stepFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	enc := json.NewEncoder(w)
	switch r.URL.Path {
	case "/api/submit":
		var req api.SubmitRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.specs = append(f.specs, req.Spec)
		enc.Encode(api.SubmitResponse{JobID: 40})
	case "/api/alloc/wait":
		if f.pending {
			f.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			f.mu.Lock()
		}
		enc.Encode(api.Allocation{Job: f.job(), Env: []string{"SLURM_JOB_ID=40", "SLURM_JOB_NODELIST=node[1-2]"}})
	case "/api/alloc/release":
		var req api.ReleaseRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.releases = append(f.releases, req)
		enc.Encode(struct{}{})
	case "/api/wait":
		// Running until released.
		j := f.job()
		if len(f.releases) == 0 {
			f.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			f.mu.Lock()
		}
		if len(f.releases) > 0 {
			j.State = api.StateCompleted
		}
		enc.Encode(j)
	case "/api/step/input":
		enc.Encode(struct{}{})
	case "/api/testonly":
		var req api.SubmitRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.tests = append(f.tests, req.Spec)
		enc.Encode(api.TestOnlyResponse{JobID: 41, Start: time.Date(2026, 11, 30, 5, 0, 0, 0, time.Local), CPUs: 2, Nodes: []string{"node1"}, Partition: "debug"})
	case "/api/step/run":
		var req api.StepRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.steps = append(f.steps, req)
		step := &api.Step{ID: 0, Name: "hostname", Nodes: []string{"node1", "node2"}, Tasks: []int{2, 1}}
		enc.Encode(api.StepEvent{Step: step})
		enc.Encode(api.StepEvent{Task: 0, Stream: api.StreamStdout, Data: []byte("node1\n")})
		enc.Encode(api.StepEvent{Exit: &api.TaskExit{Task: 0, Node: "node1"}})
		enc.Encode(api.StepEvent{Exit: &api.TaskExit{Task: 1, Node: "node1"}})
		enc.Encode(api.StepEvent{Exit: &api.TaskExit{Task: 2, Node: "node2", ExitCode: 3}})
		enc.Encode(api.StepEvent{Done: &api.StepDone{State: api.StateFailed, ExitCode: 3}})
	default:
		w.WriteHeader(http.StatusNotFound)
		enc.Encode(api.Error{Message: "no such endpoint " + r.URL.Path})
	}
}

// newStepFake is newFake's Env, talking to a stepFake instead.
func newStepFake(t *testing.T) (*stepFake, *Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	_, e, out, errb := newFake(t)
	f := &stepFake{}
	serveSteps(t, e, f)
	e.Stdin, e.Environ = nil, []string{"PATH=/usr/bin:/bin"}
	return f, e, out, errb
}

// serveSteps serves h on a socket of its own, e's cluster.
func serveSteps(t *testing.T, e *Env, h http.Handler) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	sock := filepath.Join(t.TempDir(), "step.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	e.Client = func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil }
}

// srun -v says where its allocation and its step's tasks are, and how
// each task ended, as Slurm's srun does at verbose level 1.
func TestSrunVerbose(t *testing.T) {
	f, e, out, errb := newStepFake(t)
	stdout, stderr, code := run(e, out, errb, "srun", "-v", "-O", "-n3", "hostname")
	if code != 3 || stdout != "node1\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, stdout, stderr)
	}
	for _, want := range []string{
		"srun: defined options\n",
		"srun: verbose             : 1\n",
		"srun: overcommit          : set\n",
		"srun: ntasks              : 3\n",
		"srun: end of defined options\n",
		"srun: jobid 40: nodes(2):`node[1-2]', cpu counts: 2(x2)\n",
		"srun: launching StepId=40.0 on host node1, 2 tasks: [0-1]\n",
		"srun: launching StepId=40.0 on host node2, 1 tasks: 2\n",
		"srun: launch/slurm: _task_start: Node node1, 2 tasks started\n",
		"srun: launch/slurm: _task_finish: Received task exit notification for 1 task of StepId=40.0 (status=0x0000).\n",
		"srun: launch/slurm: _task_finish: node1: task 1: Completed\n",
		"srun: launch/slurm: _task_finish: Received task exit notification for 1 task of StepId=40.0 (status=0x0300).\n",
		"srun: error: node2: task 2: Exited with exit code 3\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "node2: task 2: Completed") {
		t.Errorf("a failed task reported Completed:\n%s", stderr)
	}
	if len(f.specs) != 1 || !f.specs[0].Overcommit || f.specs[0].NTasks != 3 {
		t.Errorf("submitted %+v", f.specs)
	}
	if len(f.steps) != 1 || !f.steps[0].Overcommit {
		t.Errorf("step request %+v", f.steps)
	}

	// Without -v: none of it.
	_, stderr, _ = run(e, out, errb, "srun", "-n3", "hostname")
	if strings.Contains(stderr, "launching") || strings.Contains(stderr, "jobid") || strings.Contains(stderr, "defined options") {
		t.Errorf("quiet srun said:\n%s", stderr)
	}

	// Inside a job: the job's allocation, looked up.
	e.Environ = append(e.Environ, "SLURM_JOB_ID=40", "SLURM_OVERCOMMIT=1")
	f.specs, f.steps = nil, nil
	_, stderr, _ = run(e, out, errb, "srun", "-v", "hostname")
	if !strings.Contains(stderr, "srun: jobid 40: nodes(2):`node[1-2]', cpu counts: 2(x2)\n") || len(f.specs) != 0 {
		t.Errorf("in a job: %d submissions, stderr:\n%s", len(f.specs), stderr)
	}
	if len(f.steps) != 1 || !f.steps[0].Overcommit {
		t.Errorf("SLURM_OVERCOMMIT: step request %+v", f.steps)
	}
}

// The options Slurm's regression suite gives srun and salloc are accepted;
// those that shape the allocation reach it.
func TestSrunSallocOptions(t *testing.T) {
	f, e, out, errb := newStepFake(t)
	_, stderr, code := run(e, out, errb, "srun", "-v", "--immediate=5", "--mincpus=2", "--tmp=0", "-Z", "--slurmd-debug=3",
		"-T", "4", "--threads=2", "--task-prolog=/bin/true", "--task-epilog=/bin/true", "--dependency=afterok:12",
		"--begin=now+60", "--deadline=now+1hour", "--use-min-nodes", "hostname")
	if code != 3 {
		t.Fatalf("code %d stderr %q", code, stderr)
	}
	s := f.specs[0]
	if s.MinCPUs != 2 || s.Dependency != "afterok:12" || !s.Begin.Equal(at(5, 0, 33)) {
		t.Errorf("spec %+v", s)
	}
	for _, n := range []string{"--no-allocate", "--threads", "--deadline"} {
		if !strings.Contains(stderr, "srun: "+n+" is accepted and ignored: ") {
			t.Errorf("no notice for %s:\n%s", n, stderr)
		}
	}
	argv := f.steps[0].Argv
	if len(argv) < 7 || argv[0] != "/bin/sh" || argv[2] != taskWrapper || argv[4] != "/bin/true" || argv[6] != "hostname" || f.steps[0].Name != "hostname" {
		t.Errorf("task prolog/epilog argv %q name %q", argv, f.steps[0].Name)
	}

	f.mu.Lock()
	f.releases = nil // the job runs again
	f.mu.Unlock()
	_, stderr, code = run(e, out, errb, "salloc", "--bell", "--no-bell", "-I", "--begin=now", "--deadline=now+1hour",
		"--use-min-nodes", "--mincpus=1", "-d", "singleton", "-O", "true")
	if code != 0 || strings.Contains(stderr, "unrecognized") {
		t.Errorf("salloc: code %d stderr %q", code, stderr)
	}
	// One command's options are not the other's.
	for _, c := range [][]string{{"srun", "--bell", "true"}, {"salloc", "--task-prolog=/x", "true"}, {"salloc", "-Z", "true"}} {
		if _, stderr, code := run(e, out, errb, c...); code != 1 || !strings.Contains(stderr, "option") {
			t.Errorf("%q: code %d stderr %q", c, code, stderr)
		}
	}
}

// --immediate: an allocation that does not start at once is withdrawn,
// with Slurm's message.
func TestSrunImmediate(t *testing.T) {
	f, e, out, errb := newStepFake(t)
	f.pending = true
	start := time.Now()
	_, stderr, code := run(e, out, errb, "srun", "--immediate", "hostname")
	if code != 1 || stderr != "srun: error: Unable to allocate resources: Requested nodes are busy\n" {
		t.Errorf("code %d stderr %q", code, stderr)
	}
	if len(f.releases) != 1 || f.releases[0].JobID != 40 || len(f.steps) != 0 {
		t.Errorf("releases %+v steps %d", f.releases, len(f.steps))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	e.Environ = append(e.Environ, "SLURM_EXIT_IMMEDIATE=7")
	_, stderr, code = run(e, out, errb, "salloc", "-I", "true")
	if code != 7 || stderr != "salloc: error: Unable to allocate resources: Requested nodes are busy\n" {
		t.Errorf("salloc: code %d stderr %q", code, stderr)
	}
}

// The task prolog's export, unset and print lines reach the task; the
// epilog runs after it; the task's status stays its own.
func TestTaskWrapper(t *testing.T) {
	dir := t.TempDir()
	prolog := filepath.Join(dir, "prolog")
	epilog := filepath.Join(dir, "epilog")
	writeExec(t, prolog, "#!/bin/sh\necho 'export FOO=bar baz'\necho 'unset GONE'\necho 'print hello from prolog'\n")
	writeExec(t, epilog, "#!/bin/sh\necho \"epilog FOO=$FOO\"\n")
	cmd := exec.Command("/bin/sh", "-c", taskWrapper, "hpc-task", prolog, epilog, "sh", "-c", `echo "task FOO=$FOO GONE=${GONE-unset}"; exit 4`)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GONE=here"}
	got, err := cmd.Output()
	want := "hello from prolog\ntask FOO=bar baz GONE=unset\nepilog FOO=bar baz\n"
	if string(got) != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Errorf("exit %v, want 4", err)
	}
	// Killed by a signal: so is the wrapper.
	cmd = exec.Command("/bin/sh", "-c", taskWrapper, "hpc-task", "", epilog, "sh", "-c", `kill -TERM $$`)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	got, err = cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 || !strings.Contains(ee.String(), "terminated") || string(got) != "epilog FOO=\n" {
		t.Errorf("signalled task: %v %q", err, got)
	}
}

func writeExec(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// sbatch -v lists the options given; -O reaches the job.
func TestSbatchVerbose(t *testing.T) {
	f, e, out, errb := newFake(t)
	stdout, stderr, code := run(e, out, errb, "sbatch", "-vv", "-O", "-n8", "--wrap", "true")
	want := "sbatch: defined options\n" +
		"sbatch: -------------------- --------------------\n" +
		"sbatch: verbose             : 2\n" +
		"sbatch: overcommit          : set\n" +
		"sbatch: ntasks              : 8\n" +
		"sbatch: wrap                : true\n" +
		"sbatch: -------------------- --------------------\n" +
		"sbatch: end of defined options\n"
	if code != 0 || stdout != "Submitted batch job 31\n" || stderr != want {
		t.Errorf("code %d stdout %q stderr %q", code, stdout, stderr)
	}
	if s := f.submits[len(f.submits)-1]; !s.Overcommit || s.NTasks != 8 {
		t.Errorf("submitted %+v", s)
	}
}

// -K/--kill-on-bad-exit, or SLURM_KILL_BAD_EXIT=1, asks the launcher to
// end the step when a task fails.
func TestKillOnBadExitRequest(t *testing.T) {
	e := &Env{}
	if killOnBadExit(e, &runOpts{}) || !killOnBadExit(e, &runOpts{killBadExit: true}) {
		t.Error("-K not in the request")
	}
	e.Environ = []string{"SLURM_KILL_BAD_EXIT=1"}
	if !killOnBadExit(e, &runOpts{}) {
		t.Error("SLURM_KILL_BAD_EXIT=1 ignored")
	}
	if req := newStepRequest(e, &runOpts{set: map[string]bool{}}, 7); !req.KillOnBadExit {
		t.Error("the step request does not carry it")
	}
}

// waitFake runs a step of three tasks on node1 inside job 40: task 1 ends
// at once, the others run until the step is signalled 9, and die of it.
type waitFake struct {
	mu      sync.Mutex
	signals []int
	killed  chan struct{}
}

func (f *waitFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	enc := json.NewEncoder(w)
	switch r.URL.Path {
	case "/api/step/signal":
		var req api.StepSignalRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.signals = append(f.signals, req.Signal)
		if req.Signal == 9 && f.killed != nil {
			close(f.killed)
			f.killed = nil
		}
		f.mu.Unlock()
		enc.Encode(struct{}{})
	case "/api/step/run":
		f.mu.Lock()
		killed := f.killed
		f.mu.Unlock()
		enc.Encode(api.StepEvent{Step: &api.Step{ID: 0, Nodes: []string{"node1"}, Tasks: []int{3}}})
		enc.Encode(api.StepEvent{Exit: &api.TaskExit{Task: 1, Node: "node1"}})
		w.(http.Flusher).Flush()
		select {
		case <-killed:
		case <-time.After(20 * time.Second):
		}
		enc.Encode(api.StepEvent{Exit: &api.TaskExit{Task: 0, Node: "node1", Signal: 9}})
		enc.Encode(api.StepEvent{Exit: &api.TaskExit{Task: 2, Node: "node1", Signal: 9}})
		enc.Encode(api.StepEvent{Done: &api.StepDone{State: api.StateCancelled, Signal: 9}})
	default:
		w.WriteHeader(http.StatusNotFound)
		enc.Encode(api.Error{Message: "no such endpoint " + r.URL.Path})
	}
}

func (f *waitFake) sent() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.signals...)
}

// srun -W: once the first task has ended, the others have that many
// seconds; then srun says which were still running and kills the step.
func TestSrunWait(t *testing.T) {
	_, e, out, errb := newFake(t)
	f := &waitFake{killed: make(chan struct{})}
	serveSteps(t, e, f)
	e.Stdin, e.Environ = nil, []string{"PATH=/usr/bin:/bin", "SLURM_JOB_ID=40"}
	start := time.Now()
	_, stderr, code := run(e, out, errb, "srun", "-v", "-W1", "sleep", "20")
	if code != 137 || time.Since(start) > 10*time.Second {
		t.Errorf("code %d after %v, want 137 within seconds", code, time.Since(start))
	}
	for _, want := range []string{
		"srun: First task exited. Terminating job in 1s\n",
		"srun: First task exited 1s ago\n",
		"srun: StepId=40.0 tasks 0,2: running\n",
		"srun: StepId=40.0 task 1: exited\n",
		"srun: Terminating StepId=40.0\n",
		"srun: error: node1: tasks 0,2: Killed\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "Job step aborted") {
		t.Errorf("srun's own kill said as an abort from outside:\n%s", stderr)
	}
	if got := f.sent(); len(got) != 1 || got[0] != 9 {
		t.Errorf("signals %v, want one 9", got)
	}
}

// Ctrl-C as Slurm's srun takes it: the first prints the tasks' states and
// a second within a second ends the step; --quit-on-interrupt ends it at
// the first; -X passes the first on.
func TestSrunInterrupt(t *testing.T) {
	_, e, _, _ := newFake(t)
	f := &waitFake{}
	serveSteps(t, e, f)
	cl, _ := e.Client(context.Background())
	step := &api.Step{ID: 2, Nodes: []string{"node1"}, Tasks: []int{2}}
	watch := func(o *runOpts) (*stepWatch, *bytes.Buffer) {
		var b bytes.Buffer
		w := &stepWatch{con: &console{out: &b, err: &b}, prog: "srun", cl: cl, jobID: 40, o: o, cancel: func() {}, exited: map[int]api.TaskExit{}}
		w.setStep(step)
		w.taskExit(api.TaskExit{Task: 1, ExitCode: 2})
		return w, &b
	}
	w, b := watch(&runOpts{})
	w.interrupt()
	if want := "srun: interrupt (one more within 1 sec to abort)\nsrun: StepId=40.2 task 0: running\nsrun: StepId=40.2 task 1: exited abnormally\n"; b.String() != want || len(f.sent()) != 0 {
		t.Errorf("first Ctrl-C: %q, signals %v", b.String(), f.sent())
	}
	b.Reset()
	w.interrupt()
	if want := "srun: sending Ctrl-C to StepId=40.2\nsrun: forcing job termination\n"; b.String() != want || !reflect.DeepEqual(f.sent(), []int{2, 9}) || !w.killedByUs() {
		t.Errorf("second Ctrl-C: %q, signals %v", b.String(), f.sent())
	}

	f.signals = nil
	w, b = watch(&runOpts{quitOnIntr: true})
	w.interrupt()
	if !strings.Contains(b.String(), "forcing job termination") || !reflect.DeepEqual(f.sent(), []int{2, 9}) {
		t.Errorf("--quit-on-interrupt: %q, signals %v", b.String(), f.sent())
	}

	f.signals = nil
	w, b = watch(&runOpts{noStatus: true})
	w.interrupt()
	if b.String() != "srun: sending Ctrl-C to StepId=40.2\n" || !reflect.DeepEqual(f.sent(), []int{2}) {
		t.Errorf("-X: %q, signals %v", b.String(), f.sent())
	}
}

// srun reads its input variables as options (the command line wins);
// those that shape an allocation only where it makes its own.
func TestSrunEnvArgs(t *testing.T) {
	e := &Env{Environ: []string{"SLURM_NPROCS=5", "SLURM_NTASKS=", "SLURM_STDOUTMODE=/tmp/out", "SLURM_DEBUG=2",
		"SLURM_OVERCOMMIT=1", "SLURM_LABELIO=0", "SLURMD_DEBUG=info"}}
	got := srunEnvArgs(e)
	want := []string{"--ntasks=5", "--overcommit", "--output=/tmp/out", "--slurmd-debug=info", "--verbose", "--verbose"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("outside a job: %q, want %q", got, want)
	}
	e.Environ = append(e.Environ, "SLURM_JOB_ID=7")
	if got := srunEnvArgs(e); slices.Contains(got, "--ntasks=5") {
		t.Errorf("in a job: %q", got)
	}
	if n, ok := slurmdDebugLevel("verbose"); !ok || n != 4 {
		t.Errorf("--slurmd-debug=verbose: %d %v", n, ok)
	}
	if _, ok := slurmdDebugLevel("loud"); ok {
		t.Error("--slurmd-debug=loud accepted")
	}
}

// --task-epilog has 5 seconds, as slurmstepd gives it; then it is killed
// with what it started, and the task's status stays its own.
func TestTaskEpilogTimeLimit(t *testing.T) {
	dir := t.TempDir()
	epilog := filepath.Join(dir, "epilog")
	os.WriteFile(epilog, []byte("#!/bin/sh\necho epilog ran > "+filepath.Join(dir, "ran")+"\nsleep 200\n"), 0o755)
	start := time.Now()
	cmd := exec.Command("/bin/sh", "-c", taskWrapper, "hpc-task", "", epilog, "sh", "-c", "exit 3")
	out, err := cmd.CombinedOutput()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 3 {
		t.Errorf("task status %v %q, want 3", err, out)
	}
	if d := time.Since(start); d < 4*time.Second || d > 9*time.Second {
		t.Errorf("the epilog ran %v, want about 5s", d)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Error("the epilog did not run")
	}
}

// srun's --prolog and --epilog run on srun's host around the step, with
// the step's command line; a failing prolog aborts the step. --test-only
// asks when the job would start and runs nothing. The options srun shares
// with sbatch shape its allocation as they shape sbatch's.
func TestSrunPrologEpilogTestOnly(t *testing.T) {
	f, e, out, errb := newStepFake(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pro := script("pro", `echo "$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $*" >> `+log)
	epi := script("epi", `echo "$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $*" >> `+log)
	_, stderr, code := run(e, out, errb, "srun", "--prolog="+pro, "--epilog="+epi, "--nice=5", "-k", "hostname", "-f")
	if b, _ := os.ReadFile(log); code != 3 || string(b) != "prolog_srun 40 hostname -f\nepilog_srun 40 hostname -f\n" || len(f.steps) != 1 {
		t.Errorf("prolog/epilog: code %d, %d steps, log %q, stderr %q", code, len(f.steps), b, stderr)
	}
	f.steps = nil
	f.mu.Lock()
	f.releases = nil
	f.mu.Unlock()
	// --test-only: the controller's answer, nothing submitted or run.
	f.specs = nil
	_, stderr, code = run(e, out, errb, "srun", "--test-only", "-n2", "--hint=nomultithread", "hostname")
	if code != 0 || len(f.specs) != 0 || len(f.steps) != 0 || len(f.tests) != 1 || f.tests[0].NTasks != 2 ||
		stderr != "srun: Job 41 to start at 2026-11-30T05:00:00 using 2 processors on nodes node1 in partition debug\n" {
		t.Errorf("--test-only: code %d, %d submits, %d steps, %+v, stderr %q", code, len(f.specs), len(f.steps), f.tests, stderr)
	}
	bad := script("bad", "exit 4")
	_, stderr, code = run(e, out, errb, "srun", "--prolog="+bad, "--epilog="+bad, "hostname")
	if code != 1 || len(f.steps) != 0 || !strings.Contains(stderr, "srun: error: srun prolog failed rc = 4. Aborting step.\n") ||
		!strings.Contains(stderr, "srun: error: srun epilog failed status=4\n") {
		t.Errorf("failing prolog: code %d, %d steps, stderr %q", code, len(f.steps), stderr)
	}
}

// salloc --no-shell allocates and leaves the allocation; -K names the
// signal its command gets when the allocation ends under it.
func TestSallocNoShellKillCommand(t *testing.T) {
	f, e, out, errb := newStepFake(t)
	_, stderr, code := run(e, out, errb, "salloc", "--no-shell", "-N2")
	if code != 0 || len(f.specs) != 1 || len(f.releases) != 0 || !strings.Contains(stderr, "salloc: Granted job allocation 40\n") {
		t.Errorf("--no-shell: code %d, %d submits, %d releases, stderr %q", code, len(f.specs), len(f.releases), stderr)
	}
	for _, c := range []struct {
		arg  string
		code int
	}{{"-K", 0}, {"--kill-command=USR1", 0}, {"--kill-command=NOPE", 1}} {
		f.mu.Lock()
		f.releases = nil
		f.mu.Unlock()
		_, stderr, code := run(e, out, errb, "salloc", c.arg, "true")
		if code != c.code {
			t.Errorf("salloc %s true: %d %q", c.arg, code, stderr)
		}
	}
}

// What hpc takes without acting on it is said under -v, one line each.
func TestIgnoredOptionNotices(t *testing.T) {
	_, e, out, errb := newStepFake(t)
	_, stderr, _ := run(e, out, errb, "srun", "-v", "--cpu-freq=high", "--cpu-bind=cores", "hostname")
	for _, want := range []string{"srun: --cpu-freq is accepted and ignored: hpc does not act on it\n",
		"srun: --cpu-bind is accepted and ignored: a step's tasks share its CPUs (cpuset), unbound\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("srun -v lacks %q:\n%s", want, stderr)
		}
	}
	if _, stderr, _ := run(e, out, errb, "srun", "--cpu-freq=high", "hostname"); strings.Contains(stderr, "ignored") {
		t.Errorf("without -v: %q", stderr)
	}
	_, e2, out2, errb2 := newFake(t)
	_, stderr, code := run(e2, out2, errb2, "sbatch", "-v", "--acctg-freq=task=30", "--bb=x", "--wrap", "true")
	if code != 0 || !strings.Contains(stderr, "sbatch: --acctg-freq is accepted and ignored: hpc does not act on it\nsbatch: --bb is accepted and ignored: hpc does not act on it\n") {
		t.Errorf("sbatch -v: %d %q", code, stderr)
	}
}
