package commands

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"hpc/cluster/api"
)

// partFake answers the partition, reconfigure, write config and pidinfo
// routes, and passes the rest to the fake cluster.
type partFake struct {
	f        *fakeCluster
	mu       sync.Mutex
	reqs     []api.PartitionRequest
	reconfig int
	fail     string // answer partition and reconfigure requests with this error
}

func (p *partFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	reply := func(v any) { json.NewEncoder(w).Encode(v) }
	failed := func() bool {
		if p.fail != "" {
			w.WriteHeader(http.StatusBadRequest)
			reply(api.Error{Message: p.fail})
		}
		return p.fail != ""
	}
	switch r.URL.Path {
	case "/api/partition":
		var req api.PartitionRequest
		json.NewDecoder(r.Body).Decode(&req)
		p.reqs = append(p.reqs, req)
		if !failed() {
			reply(struct{}{})
		}
	case "/api/reconfigure":
		p.reconfig++
		if !failed() {
			reply(struct{}{})
		}
	case "/api/config/file":
		reply(api.ConfigFile{Text: "ClusterName=lab\nPartitionName=debug Nodes=node[1-4] State=UP\n", LastUpdate: at(4, 59, 30)})
	case "/api/pidinfo":
		if r.URL.Query().Get("pid") != "4242" {
			w.WriteHeader(http.StatusNotFound)
			reply(api.Error{Message: "Failed to locate job for requested pid"})
			return
		}
		reply(api.PidInfo{JobID: 15})
	default:
		p.f.ServeHTTP(w, r)
	}
}

func newPartFake(t *testing.T) (*partFake, *Env, *bytesPair) {
	f, e, out, errb := newFake(t)
	p := &partFake{f: f}
	sock := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	e.Client = func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil }
	return p, e, &bytesPair{e: e, out: out, errb: errb}
}

type bytesPair struct {
	e         *Env
	out, errb interface {
		Reset()
		String() string
	}
}

func (b *bytesPair) run(args ...string) (string, string, int) {
	b.out.Reset()
	b.errb.Reset()
	code := RunEnv(b.e, args)
	return b.out.String(), b.errb.String(), code
}

// scontrol create/update/delete partition: scontrol's keywords and value
// checks, the request the controller gets, and Slurm's error texts.
func TestScontrolPartitionCommands(t *testing.T) {
	p, _, b := newPartFake(t)
	stdout, stderr, code := b.run("scontrol", "create", "PartitionName=short", "Nodes=node[1-2]", "MaxT=30", "Default=yes", "Pri=5", "State=d")
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("create: %d %q %q", code, stdout, stderr)
	}
	want := api.PartitionRequest{Action: "create", Name: "short", Set: [][2]string{{"Nodes", "node[1-2]"}, {"MaxTime", "30"},
		{"Default", "YES"}, {"PriorityTier", "5"}, {"PriorityJobFactor", "5"}, {"State", "DOWN"}}}
	if len(p.reqs) != 1 || !reflect.DeepEqual(p.reqs[0], want) {
		t.Errorf("create request %+v", p.reqs)
	}
	if _, _, code = b.run("scontrol", "update", "PartitionName=debug", "MaxTime=UNLIMITED"); code != 0 ||
		!reflect.DeepEqual(p.reqs[1], api.PartitionRequest{Action: "update", Name: "debug", Set: [][2]string{{"MaxTime", "UNLIMITED"}}}) {
		t.Errorf("update: %d %+v", code, p.reqs[1])
	}
	if _, _, code = b.run("scontrol", "delete", "PartitionName", "short"); code != 0 ||
		!reflect.DeepEqual(p.reqs[2], api.PartitionRequest{Action: "delete", Name: "short"}) {
		t.Errorf("delete: %d %+v", code, p.reqs[2])
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "PartitionName=x", "MaxTime=soon"}, "scontrol: error: Invalid input MaxTime=soon\n"},
		{[]string{"create", "PartitionName=x", "Nodes"}, "scontrol: error: Invalid input: Nodes  Request aborted\n"},
		{[]string{"create", "PartitionName=default"}, "scontrol: error: PartitionName cannot be \"DEFAULT\".\n"},
		{[]string{"create", "Foo=bar"}, "scontrol: error: Invalid creation entity: Foo=bar\n"},
		{[]string{"create", "PartitionName=x", "Bogus=1"}, "scontrol: error: Update of this parameter is not supported: Bogus=1\n\nscontrol: error: Request aborted\n"},
		{[]string{"update", "PartitionName=debug"}, "scontrol: error: No changes specified\n"},
		{[]string{"update", "PartitionName=debug", "State=HALF"}, "scontrol: error: Invalid input: State=HALF\nscontrol: error: Acceptable State values are UP, DOWN, DRAIN and INACTIVE\n"},
		{[]string{"delete", "PartitionName"}, "scontrol: error: Proper format is 'delete <ENTITY>=<ID>' or 'delete <ENTITY> <ID>'\n"},
		{[]string{"delete", "Thing=x"}, "Invalid deletion entity: Thing=x\n"},
	} {
		n := len(p.reqs)
		stdout, stderr, code := b.run(append([]string{"scontrol"}, c.args...)...)
		if code != 1 || stdout != "" || stderr != c.want || len(p.reqs) != n {
			t.Errorf("scontrol %v: %d %q %q, want %q", c.args, code, stdout, stderr, c.want)
		}
	}
	// The controller's refusals, as scontrol prints each.
	p.fail = api.ErrUserIDMissing
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "PartitionName=x", "Nodes=node1"}, "Error creating the partition: Invalid user id\n"},
		{[]string{"update", "PartitionName=debug", "State=UP"}, "slurm_update error: Invalid user id\n"},
		{[]string{"delete", "PartitionName=debug"}, "delete_partition PartitionName=debug: Invalid user id\n"},
		{[]string{"reconfigure"}, "slurm_reconfigure error: Invalid user id\n"},
	} {
		_, stderr, code := b.run(append([]string{"scontrol"}, c.args...)...)
		if code != 1 || stderr != c.want {
			t.Errorf("scontrol %v: %d %q, want %q", c.args, code, stderr, c.want)
		}
	}
	p.fail = ""
	if _, stderr, code := b.run("scontrol", "reconfig"); code != 0 || stderr != "" || p.reconfig != 2 {
		t.Errorf("reconfigure: %d %q %d", code, stderr, p.reconfig)
	}
}

// scontrol write config: the running configuration into FILE.<time>
// (by default next to $SLURM_CONF), and Slurm's line saying where.
func TestScontrolWriteConfig(t *testing.T) {
	_, e, b := newPartFake(t)
	dir := t.TempDir()
	e.Environ = append(e.Environ, "SLURM_CONF="+filepath.Join(dir, "slurm.conf"))
	stdout, stderr, code := b.run("scontrol", "write", "config")
	path := filepath.Join(dir, "slurm.conf.2026-11-30T04:59:30")
	if code != 0 || stderr != "" || stdout != "Slurm config saved to "+path+"\n" {
		t.Fatalf("write config: %d %q %q", code, stdout, stderr)
	}
	if got, err := os.ReadFile(path); err != nil || !strings.HasSuffix(string(got), "ClusterName=lab\nPartitionName=debug Nodes=node[1-4] State=UP\n") {
		t.Errorf("%s: %q %v", path, got, err)
	}
	stdout, _, code = b.run("scontrol", "write", "config", "mine")
	if code != 0 || stdout != "Slurm config saved to mine.2026-11-30T04:59:30\n" {
		t.Errorf("named: %d %q", code, stdout)
	}
	if _, err := os.Stat(filepath.Join(e.Cwd, "mine.2026-11-30T04:59:30")); err != nil {
		t.Error(err)
	}
	_, stderr, code = b.run("scontrol", "write", "config", "/no/such/dir/x")
	if code != 1 || stderr != "Could not create file /no/such/dir/x.2026-11-30T04:59:30: No such file or directory\n" {
		t.Errorf("unwritable: %d %q", code, stderr)
	}
}

// scontrol pidinfo PID: the job and its end, or Slurm's text for a pid
// in no job.
func TestScontrolPidinfo(t *testing.T) {
	_, _, b := newPartFake(t)
	stdout, stderr, code := b.run("scontrol", "pidinfo", "4242")
	want := "Slurm JobId=15 ends at Mon Nov 30 05:09:29 2026\nJob remaining time is 596 seconds\n"
	if code != 0 || stderr != "" || stdout != want {
		t.Errorf("pidinfo: %d %q %q", code, stdout, stderr)
	}
	_, stderr, code = b.run("scontrol", "pidinfo", "1")
	if code != 1 || stderr != "Failed to locate job for requested pid\n" {
		t.Errorf("no job: %d %q", code, stderr)
	}
	_, stderr, code = b.run("scontrol", "pidinfo")
	if code != 1 || stderr != "missing argument for keyword:pidinfo\n" {
		t.Errorf("no pid: %d %q", code, stderr)
	}
}
