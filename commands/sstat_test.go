package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hpc/cluster/api"
)

var updateGolden = flag.Bool("update-sstat", false, "rewrite testdata/sstat's goldens")

// sstatGolden compares got with ../testdata/sstat/name (or rewrites it).
func sstatGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "sstat", name)
	if *updateGolden {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// statStep is a two-node step of two tasks, as the nodes answer it.
func statStep() api.StepStat {
	return api.StepStat{JobID: 12, Step: "0", Nodes: []string{"node2", "node1"}, Tasks: []api.TaskStat{
		{Node: "node1", Task: 0, Pids: []int{101, 102}, RSSKB: 1100, VMSizeKB: 217292, Pages: 3, CPU: 1500 * time.Millisecond, ReadBytes: 3000000, WriteBytes: 12},
		{Node: "node2", Task: 1, Pids: []int{201}, RSSKB: 2048, VMSizeKB: 217000, Pages: 0, CPU: 61 * time.Second, ReadBytes: 2012, WriteBytes: 0},
	}}
}

// statServer answers /api/stat, /api/file/... from canned answers on a
// unix socket, and points e at it.
type statServer struct {
	mu      sync.Mutex                  // the commands ask nodes side by side
	stat    map[string]api.StatResponse // by "job.step"
	statErr map[uint64]string
	fileJob func(id uint64) (*api.FileJob, string)
	puts    map[string]string // node -> what it got
	putErr  map[string]string // node -> error
	files   map[string]string // node -> file content for get
	removed []string
}

func (s *statServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(msg string) {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(api.Error{Message: msg})
	}
	q := r.URL.Query()
	switch r.URL.Path {
	case "/api/stat":
		var req api.StatRequest
		json.NewDecoder(r.Body).Decode(&req)
		if msg := s.statErr[req.JobID]; msg != "" {
			fail(msg)
			return
		}
		json.NewEncoder(w).Encode(s.stat[strings.TrimSuffix(itoa64(req.JobID)+"."+req.Step, ".")])
	case "/api/file/job":
		var req api.FileJobRequest
		json.NewDecoder(r.Body).Decode(&req)
		fj, msg := s.fileJob(req.JobID)
		if msg != "" {
			fail(msg)
			return
		}
		json.NewEncoder(w).Encode(fj)
	case "/api/file/put":
		b, _ := io.ReadAll(r.Body)
		if msg := s.putErr[q.Get("node")]; msg != "" {
			fail(msg)
			return
		}
		s.puts[q.Get("node")] = q.Get("path") + ":" + string(b)
		w.Write([]byte("{}"))
	case "/api/file/get":
		data, ok := s.files[q.Get("node")]
		if !ok {
			fail("No such file or directory")
			return
		}
		if q.Get("remove") == "true" {
			s.removed = append(s.removed, q.Get("node")+":"+q.Get("path"))
			w.Write([]byte("{}"))
			return
		}
		h, _ := json.Marshal(api.FileInfo{Size: int64(len(data)), Mode: 0o600})
		w.Header().Set(api.FileInfoHeader, string(h))
		w.Write([]byte(data))
	default:
		http.NotFound(w, r)
	}
}

func itoa64(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func newStatServer(t *testing.T) (*statServer, *Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	_, e, out, errb := newFake(t)
	s := &statServer{stat: map[string]api.StatResponse{}, statErr: map[uint64]string{},
		puts: map[string]string{}, putErr: map[string]string{}, files: map[string]string{},
		fileJob: func(uint64) (*api.FileJob, string) { return nil, api.ErrInvalidJobID }}
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	e.Client = func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil }
	return s, e, out, errb
}

// The shapes the Slurm suite's tests look for (tests/commands/sstat,
// sbcast, sgather): --help, --usage, -e.
func TestFileCommandsHelpShapes(t *testing.T) {
	_, e, out, errb := newFake(t)
	check := func(args []string, re string) {
		t.Helper()
		o, _, code := run(e, out, errb, args...)
		if code != 0 || !regexp.MustCompile(re).MatchString(o) {
			t.Errorf("%v: exit %d, %q does not match %s", args, code, o, re)
		}
	}
	check([]string{"sstat", "--help"}, `sstat \[<OPTION>\]`)
	check([]string{"sstat", "--help"}, `Valid <OPTION> values are:`)
	check([]string{"sstat", "-h"}, `-j, --jobs:`)
	check([]string{"sstat", "--usage"}, `Usage: sstat \[options\] -j <job.*step`)
	check([]string{"sstat", "--usage"}, `Use --help for help`)
	check([]string{"sstat", "-e"}, `^(?:\w+\s+){50,}$`)
	for _, f := range []string{"AveDiskRead", "MinCPU", "MaxVMSize", "TRESUsageInTot", "Nodelist"} {
		check([]string{"sstat", "--helpformat"}, f)
	}
	check([]string{"sbcast", "--usage"}, `^Usage: sbcast (?:\[-+[a-zA-Z-]+]\s)+SOURCE DEST\n$`)
	check([]string{"sbcast", "--help"}, `-f, --force`)
	check([]string{"sgather", "--usage"}, `^Usage: sgather \[-[A-Za-z]+\] SOURCE DEST\n$`)
	check([]string{"sgather", "--help"}, `-k, --keep`)
	o, _, _ := run(e, out, errb, "sstat", "-e")
	if !strings.HasPrefix(o, "AveCPU              AveCPUFreq          AveDiskRead         AveDiskWrite       \nAvePages ") {
		t.Errorf("sstat -e layout:\n%s", o)
	}
}

// sstat's lines: the default format, chosen fields, -p/-P, --noconvert,
// -n, -i (a line per node).
func TestSstatOutput(t *testing.T) {
	s, e, out, errb := newStatServer(t)
	s.stat["12"] = api.StatResponse{Steps: []api.StepStat{statStep()}}
	s.stat["12.0"] = s.stat["12"]
	var all strings.Builder
	for _, args := range [][]string{
		{"-j", "12"},
		{"-j", "12.0", "-o", "JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,AveCPU,MinCPU,MinCPUNode,MinCPUTask,NTasks,Nodelist"},
		{"-p", "-j", "12", "-o", "jobid,avediskread,avediskwrite,maxdiskread,maxdiskwrite,maxvmsize,aveP,maxp,consumedenergy"},
		{"-P", "--noconvert", "-j", "12", "-o", "JobID,MaxRSS,TRESUsageInTot,TRESUsageInMax,TRESUsageInMaxNode"},
		{"-n", "-P", "-j", "12", "-o", "JobID%30,TRESUsageOutTot,ReqCPUFreqMin,AveCPUFreq"},
		{"-i", "-j", "12"},
		{"12", "-o", "jobid%5,nodelist%5"},
	} {
		o, eo, code := run(e, out, errb, append([]string{"sstat"}, args...)...)
		if code != 0 || eo != "" {
			t.Errorf("sstat %v: exit %d stderr %q", args, code, eo)
		}
		all.WriteString("$ sstat " + strings.Join(args, " ") + "\n" + o)
	}
	sstatGolden(t, "output.txt", all.String())
}

// sstat's errors are Slurm's, and it still exits 0 after them, as
// Slurm's does; only a missing job list or a bad field fails it.
func TestSstatErrors(t *testing.T) {
	s, e, out, errb := newStatServer(t)
	s.statErr[99] = api.ErrInvalidJobID
	s.stat["13"] = api.StatResponse{Steps: []api.StepStat{{JobID: 13, Step: "0", Error: api.ErrUserIDMissing}}}
	for _, c := range []struct {
		args   []string
		stderr string
		code   int
	}{
		{nil, "sstat: error: You didn't give me any jobs to stat.\n", 1},
		{[]string{"-j", "12", "-o", "MaxRSS,Bogus"}, "sstat: error: Invalid field requested: \"Bogus\"\n", 1},
		{[]string{"-j", "x"}, "sstat: error: Invalid job id: x\n", 1},
		{[]string{"-n", "-j", "99"}, "sstat: error: couldn't get steps for job 99\n", 0},
		{[]string{"-n", "-j", "12"}, "sstat: error: No steps running for job 12\n", 0},
		{[]string{"-n", "-j", "12.3"}, "sstat: error: StepId=12.3 not found running.\n", 0},
		{[]string{"-n", "-j", "13"}, "sstat: error: problem getting step_layout for StepId=13.0: Invalid user id\n", 0},
		{[]string{"--bogus"}, "sstat: unrecognized option '--bogus'\nTry \"sstat --help\" for more information\n", 1},
	} {
		o, eo, code := run(e, out, errb, append([]string{"sstat"}, c.args...)...)
		if o != "" || eo != c.stderr || code != c.code {
			t.Errorf("sstat %v: exit %d stdout %q stderr %q; want %d %q", c.args, code, o, eo, c.code, c.stderr)
		}
	}
}

// sbcast sends the file to every node of the job and names each node
// that failed; its argument errors are Slurm's.
func TestSbcastCommand(t *testing.T) {
	s, e, out, errb := newStatServer(t)
	e.Cwd = t.TempDir()
	os.WriteFile(filepath.Join(e.Cwd, "src"), []byte("payload"), 0o644)
	s.fileJob = func(id uint64) (*api.FileJob, string) {
		if id != 7 {
			return nil, api.ErrAccessDenied
		}
		return &api.FileJob{JobID: 7, Nodes: []string{"node1", "node2"}}, ""
	}
	e.Environ = append(e.Environ, "SLURM_JOB_ID=7")
	if _, eo, code := run(e, out, errb, "sbcast", "src", "dst"); code != 0 || eo != "" {
		t.Fatalf("sbcast: %d %q", code, eo)
	}
	want := filepath.Join(e.Cwd, "dst") + ":payload"
	if s.puts["node1"] != want || s.puts["node2"] != want {
		t.Errorf("puts %q", s.puts)
	}
	s.putErr["node2"] = "File exists"
	if _, eo, code := run(e, out, errb, "sbcast", "src", "/abs/dst"); code != 1 || eo != "sbcast: error: REQUEST_FILE_BCAST(node2): File exists\n" {
		t.Errorf("one node failing: %d %q", code, eo)
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"src"}, "Need two file names, have 1 names\nTry \"sbcast --help\" for more information\n"},
		{[]string{"-j", "8", "src", "dst"}, "sbcast: error: Slurm job 8 lookup error: Access/permission denied\n"},
		{[]string{"none", "dst"}, "sbcast: error: Can't open `none`: No such file or directory\n"},
		{[]string{"src", "dir/"}, "sbcast: error: Target filename cannot be a directory.\n"},
	} {
		if _, eo, code := run(e, out, errb, append([]string{"sbcast"}, c.args...)...); code != 1 || eo != c.stderr {
			t.Errorf("sbcast %v: %d %q; want %q", c.args, code, eo, c.stderr)
		}
	}
	e.Environ = e.Environ[:len(e.Environ)-1]
	if _, eo, code := run(e, out, errb, "sbcast", "src", "dst"); code != 1 || !strings.Contains(eo, "Need a job id to run this command.") {
		t.Errorf("no job: %d %q", code, eo)
	}
}

// sgather writes each node's file as DEST.<node> and removes the
// sources unless -k; a node without it fails unless -f.
func TestSgatherCommand(t *testing.T) {
	s, e, out, errb := newStatServer(t)
	e.Cwd = t.TempDir()
	s.fileJob = func(uint64) (*api.FileJob, string) {
		return &api.FileJob{JobID: 7, Nodes: []string{"node1", "node2"}}, ""
	}
	s.files["node1"], s.files["node2"] = "one", "two"
	if _, eo, code := run(e, out, errb, "sgather", "-k", "-j", "7", "/w/out", "got"); code != 0 || eo != "" {
		t.Fatalf("sgather -k: %d %q", code, eo)
	}
	for n, want := range map[string]string{"node1": "one", "node2": "two"} {
		if b, _ := os.ReadFile(filepath.Join(e.Cwd, "got."+n)); string(b) != want {
			t.Errorf("got.%s: %q", n, b)
		}
	}
	if len(s.removed) != 0 {
		t.Errorf("-k removed %q", s.removed)
	}
	if _, eo, code := run(e, out, errb, "sgather", "-j", "7", "/w/out", "got"); code != 0 || eo != "" || len(s.removed) != 2 {
		t.Errorf("sgather: %d %q removed %q", code, eo, s.removed)
	}
	delete(s.files, "node2")
	if _, eo, code := run(e, out, errb, "sgather", "-j", "7", "/w/out", "again"); code != 1 || eo != "sgather(node2): error: Can't open /w/out: No such file or directory\n" {
		t.Errorf("a node without the file: %d %q", code, eo)
	}
	if _, eo, code := run(e, out, errb, "sgather", "-f", "-k", "-j", "7", "/w/out", "again"); code != 0 || eo != "" {
		t.Errorf("-f: %d %q", code, eo)
	}
	if _, eo, code := run(e, out, errb, "sgather", "a", "b"); code != 1 || eo != "sgather: error: Command only valid from within Slurm job\n" {
		t.Errorf("no job: %d %q", code, eo)
	}
}
