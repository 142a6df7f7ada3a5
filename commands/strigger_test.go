package commands

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"hpc/cluster/api"
)

// triggerServer answers strigger's three routes from memory.
type triggerServer struct {
	mu      sync.Mutex
	sets    []api.Trigger
	clears  []api.TriggerClearRequest
	list    []api.Trigger
	failMsg string
}

func (s *triggerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failMsg != "" {
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(api.Error{Message: s.failMsg})
		return
	}
	switch r.URL.Path {
	case "/api/trigger/set":
		var t api.Trigger
		json.NewDecoder(r.Body).Decode(&t)
		s.sets = append(s.sets, t)
		w.Write([]byte("{}"))
	case "/api/trigger/clear":
		var c api.TriggerClearRequest
		json.NewDecoder(r.Body).Decode(&c)
		s.clears = append(s.clears, c)
		w.Write([]byte("{}"))
	case "/api/triggers":
		json.NewEncoder(w).Encode(api.TriggerList{Triggers: s.list})
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func newTriggerEnv(t *testing.T) (*triggerServer, *Env, func(args ...string) (string, string, int)) {
	t.Helper()
	_, e, out, errb := newFake(t)
	s := &triggerServer{}
	sock := filepath.Join(t.TempDir(), "trig.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	e.Client = func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil }
	return s, e, func(args ...string) (string, string, int) {
		return run(e, out, errb, append([]string{"strigger"}, args...)...)
	}
}

// The suite's test_--help.py, and --usage and -V.
func TestStriggerHelp(t *testing.T) {
	_, _, strig := newTriggerEnv(t)
	out, _, code := strig("--help")
	if code != 0 {
		t.Fatalf("--help: %d", code)
	}
	for _, re := range []string{`strigger \[--set \| --get \| --clear\] \[OPTIONS\]`, `--set +create a trigger`,
		`--get +get trigger information`, `--clear +delete a trigger`, `-j, --jobid=`, `-n, --node\[=host\]`,
		`-v, --verbose +print detailed`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("--help lacks %s:\n%s", re, out)
		}
	}
	if out, _, code := strig("--usage"); code != 0 || !strings.HasPrefix(out, "Usage: strigger [--set | --get | --clear | --version]") {
		t.Errorf("--usage: %d %q", code, out)
	}
	if out, _, code := strig("-V"); code != 0 || out != slurmVersion+"\n" {
		t.Errorf("-V: %d %q", code, out)
	}
}

// strigger's own checks, before it asks the controller anything.
func TestStriggerValidation(t *testing.T) {
	s, _, strig := newTriggerEnv(t)
	prog := filepath.Join(t.TempDir(), "prog")
	os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "strigger: error: You must use exactly one of the following options: --set, --get or --clear\n"},
		{[]string{"--set", "--get"}, "strigger: error: You must use exactly one of the following options: --set, --get or --clear\n"},
		{[]string{"--clear"}, "strigger: error: You must specify a --id, --jobid, or --user to clear\n"},
		{[]string{"--set", "-p", prog}, "strigger: error: You must specify a trigger (--down, --up, --reconfig"},
		{[]string{"--set", "-d"}, "strigger: error: You must specify a --program value\n"},
		{[]string{"--set", "-f", "-p", prog}, "strigger: error: You must specify a --jobid value\n"},
		{[]string{"--set", "-d", "-p", "prog"}, "strigger: error: The --program value must start with \"/\"\n"},
		{[]string{"--set", "-d", "-p", "/no/such/prog arg"}, "strigger: error: Invalid --program value, file not found\n"},
		{[]string{"--set", "-d", "-p", "/tmp"}, "strigger: error: Invalid --program value, not regular file\n"},
		{[]string{"--set", "-d", "-p", prog, "-o", "40000"}, "strigger: error: The --offset parameter must be between +/-32000\n"},
		{[]string{"--set", "-j", "0"}, "strigger: error: Invalid jobid 0\n"},
		{[]string{"--set", "--flags=always"}, "strigger: error: Invalid flags always\n"},
		{[]string{"--get", "--user=no_such_user_here"}, "strigger: error: Invalid user no_such_user_here\n"},
		{[]string{"--bogus"}, "strigger: unrecognized option '--bogus'\nTry \"strigger --help\" for more information\n"},
	} {
		_, errOut, code := strig(c.args...)
		if code != 1 || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("%v: %d %q, want %q", c.args, code, errOut, c.want)
		}
	}
	if len(s.sets)+len(s.clears) != 0 {
		t.Errorf("asked the controller: %+v %+v", s.sets, s.clears)
	}
}

// --set sends the trigger strigger builds from its options.
func TestStriggerSet(t *testing.T) {
	s, _, strig := newTriggerEnv(t)
	prog := filepath.Join(t.TempDir(), "prog")
	os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755)
	for _, c := range []struct {
		args []string
		want api.Trigger
	}{
		{[]string{"--set", "--down", "-p", prog}, api.Trigger{ResType: "node", ResID: "*", Types: []string{"down"}, Program: prog}},
		{[]string{"--set", "-u", "-nnode[1-2]", "--program=" + prog + " a b", "--flags=PERM"},
			api.Trigger{ResType: "node", ResID: "node[1-2]", Types: []string{"up"}, Program: prog + " a b", Perm: true}},
		{[]string{"--set", "-n", "-D", "-p", prog}, api.Trigger{ResType: "node", ResID: "*", Types: []string{"drained"}, Program: prog}},
		{[]string{"--set", "-j", "12", "-t", "-o", "-300", "-p", prog}, api.Trigger{ResType: "job", ResID: "12", Types: []string{"time"}, Offset: -300, Program: prog}},
		{[]string{"--set", "--jobid=12", "--fini", "-p", prog}, api.Trigger{ResType: "job", ResID: "12", Types: []string{"fini"}, Program: prog}},
		{[]string{"--set", "--primary_slurmctld_failure", "-p", prog}, api.Trigger{ResType: "slurmctld", ResID: "*", Types: []string{"primary_slurmctld_failure"}, Program: prog}},
		{[]string{"--set", "-F", "-I", "-r", "-M", "lab", "-Q", "-v", "-p", prog}, api.Trigger{ResType: "node", ResID: "*", Types: []string{"fail", "idle", "reconfig"}, Program: prog}},
	} {
		s.sets = nil
		_, errOut, code := strig(c.args...)
		if code != 0 || len(s.sets) != 1 {
			t.Errorf("%v: %d %q %+v", c.args, code, errOut, s.sets)
			continue
		}
		got := s.sets[0]
		if got.ResType != c.want.ResType || got.ResID != c.want.ResID || strings.Join(got.Types, ",") != strings.Join(c.want.Types, ",") ||
			got.Offset != c.want.Offset || got.Program != c.want.Program || got.Perm != c.want.Perm {
			t.Errorf("%v: sent %+v, want %+v", c.args, got, c.want)
		}
	}
	s.failMsg = api.ErrAccessDenied
	if _, errOut, code := strig("--set", "-d", "-p", prog); code != 1 || errOut != "slurm_set_trigger: Access/permission denied\n" {
		t.Errorf("refused set: %d %q", code, errOut)
	}
	s.failMsg = api.ErrNoSuchProcess
	if _, errOut, code := strig("--clear", "--id=4"); code != 1 || errOut != "slurm_clear_trigger: No such process\n" {
		t.Errorf("refused clear: %d %q", code, errOut)
	}
	if _, errOut, code := strig("--clear", "--id=4", "-Q"); code != 0 || errOut != "" {
		t.Errorf("quiet clear: %d %q", code, errOut)
	}
	s.failMsg = ""
	if _, _, code := strig("--clear", "-j", "12", "--user=root"); code != 0 || len(s.clears) != 1 ||
		s.clears[0] != (api.TriggerClearRequest{JobID: 12, UserSet: true}) {
		t.Errorf("clear: %d %+v", code, s.clears)
	}
}

// --get prints Slurm's table, filtered by the options.
func TestStriggerGet(t *testing.T) {
	s, _, strig := newTriggerEnv(t)
	if out, _, code := strig("--get"); code != 0 || out != "" {
		t.Errorf("no triggers: %d %q", code, out)
	}
	s.list = []api.Trigger{
		{ID: 1, ResType: "node", ResID: "*", Types: []string{"down"}, Program: "/usr/sbin/notify", Perm: true},
		{ID: 2, ResType: "job", ResID: "12", Types: []string{"time"}, Offset: -300, UID: 4242424, Program: "/bin/x a"},
		{ID: 3, ResType: "slurmctld", Types: []string{"primary_slurmctld_failure"}, Program: "/bin/y"},
	}
	out, _, code := strig("--get")
	want := "TRIG_ID RES_TYPE   RES_ID TYPE                                OFFSET USER     FLAGS PROGRAM\n" +
		"      1 node            * down                                     0 root     PERM  /usr/sbin/notify\n" +
		"      2 job            12 time                                  -300 unknown        /bin/x a\n" +
		"      3 slurmctld  (null) primary_slurmctld_failure                0 root           /bin/y\n"
	if code != 0 || out != want {
		t.Errorf("--get: %d\n%s\nwant\n%s", code, out, want)
	}
	for _, c := range []struct {
		args []string
		ids  string
	}{
		{[]string{"-j", "12"}, "2"}, {[]string{"--id=3"}, "3"}, {[]string{"--user=root"}, "1,3"},
		{[]string{"-d"}, "1"}, {[]string{"-n"}, "1"}, {[]string{"-t", "-j12"}, "2"}, {[]string{"-a"}, "3"},
	} {
		out, _, _ := strig(append([]string{"--get", "-N"}, c.args...)...)
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				ids = append(ids, f[0])
			}
		}
		if strings.Join(ids, ",") != c.ids {
			t.Errorf("--get %v: %q", c.args, out)
		}
	}
}
