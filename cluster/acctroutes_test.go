package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"hpc/cluster/acct"
	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// EnforcePartLimits at submit: ALL refuses a job that exceeds any
// partition it names, ANY one that fits none, NO nothing (the job pends).
// The lab config: debug = node[1-3], gpu = node[2-3].
func TestEnforcePartLimits(t *testing.T) {
	cfg := testConfig(t)
	threeNodes := func(parts string) *api.JobSpec {
		return &api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Partition: parts, Nodes: 3}
	}
	overTime := &api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", TimeLimitMin: 2 * 24 * 60}
	cases := []struct {
		enforce string
		spec    *api.JobSpec
		want    string // error message, "" for accepted
	}{
		{"ALL", threeNodes("debug"), ""},
		{"ALL", threeNodes("debug,gpu"), api.ErrNodeCountInvalid},
		{"ALL", threeNodes("gpu,debug"), api.ErrNodeCountInvalid},
		{"ANY", threeNodes("gpu,debug"), ""},
		{"ANY", threeNodes("gpu"), api.ErrNodeCountInvalid},
		{"NO", threeNodes("gpu"), ""},
		{"ALL", overTime, api.ErrInvalidTimeLimit},
		{"NO", overTime, ""},
	}
	for _, c := range cases {
		cfg.EnforcePartLimits = c.enforce
		spec := *c.spec
		err := validateSpec(cfg, &spec)
		var ae *api.Error
		if (c.want == "") != (err == nil) || (err != nil && (!errors.As(err, &ae) || ae.Message != c.want)) {
			t.Errorf("EnforcePartLimits=%s -p %s: %v, want %q", c.enforce, c.spec.Partition, err, c.want)
		}
	}
}

// ---- through a real daemon ----

// startAcctNode starts a one-node cluster (on a random loopback address of
// its own, as startOne does).
func startAcctNode(t *testing.T) (*Daemon, *api.Client) {
	t.Helper()
	return startOne(t)
}

// serveAs sends a request to the daemon's API as the given identity, as
// the unix socket would after reading peer credentials.
func serveAs(d *Daemon, id peer.Identity, method, path string, body any) (int, []byte) {
	mux := http.NewServeMux()
	d.registerAcctRoutes(mux)
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req := httptest.NewRequest(method, path, rd)
	req = req.WithContext(peer.WithIdentity(req.Context(), id))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

func TestAcctmgrAPI(t *testing.T) {
	d, cl := startAcctNode(t)
	ctx := context.Background()
	st, err := cl.Acctmgr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Cluster != (api.AcctCluster{Name: "lab", ControlHost: d.self.Addr, ControlPort: 26817, RPC: 9728}) || len(st.QOS) != 1 || len(st.Assocs) != 2 {
		t.Fatalf("show: %+v", st)
	}
	// The test runs as root: peer credentials make it an administrator.
	res, err := cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}, Set: api.AcctmgrSet{Priority: new(10)}})
	if err != nil || !reflect.DeepEqual(res.QOS, []string{"high"}) || res.Cluster != "lab" {
		t.Fatalf("add qos: %+v %v", res, err)
	}
	res, err = cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "delete", Entity: "qos", Names: []string{"nosuch"}})
	if err != nil || len(res.QOS) != 0 {
		t.Errorf("delete nothing: %+v %v", res, err)
	}
	_, err = cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "delete", Entity: "account", Names: []string{"root"}})
	var ae *api.Error
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Message, " You are not allowed to remove the root account.") {
		t.Errorf("delete root: %v", err)
	}
	if st, _ := cl.Acctmgr(ctx); len(st.QOS) != 2 || st.QOS[1].Priority != 10 {
		t.Errorf("after add: %+v", st.QOS)
	}

	// An unprivileged identity may show but not change.
	nobody := peer.Identity{UID: 65534, GID: 65534, User: "nobody", Group: "nogroup"}
	code, body := serveAs(d, nobody, http.MethodGet, "/api/acctmgr", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"high"`) {
		t.Errorf("show as nobody: %d %s", code, body)
	}
	code, body = serveAs(d, nobody, http.MethodPost, "/api/acctmgr", api.AcctmgrRequest{Action: "modify", Entity: "qos", Names: []string{"high"}, Set: api.AcctmgrSet{Priority: new(99)}})
	if code != http.StatusForbidden || !strings.Contains(string(body), api.ErrAccessDenied) || !strings.Contains(string(body), acct.WhyNoPrivilege) {
		t.Errorf("modify as nobody: %d %s", code, body)
	}
	// Made an operator, nobody may add users but still not QoS.
	if _, err := cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"nobody"}, Accounts: []string{"root"}, Set: api.AcctmgrSet{AdminLevel: new("Operator")}}); err != nil {
		t.Fatal(err)
	}
	code, body = serveAs(d, nobody, http.MethodPost, "/api/acctmgr", api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"pat"}, Accounts: []string{"root"}})
	if code != http.StatusOK || !strings.Contains(string(body), `"pat"`) {
		t.Errorf("add user as operator: %d %s", code, body)
	}
	code, _ = serveAs(d, nobody, http.MethodPost, "/api/acctmgr", api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"x"}})
	if code != http.StatusForbidden {
		t.Errorf("add qos as operator: %d", code)
	}
	code, body = serveAs(d, nobody, http.MethodPost, "/api/acctmgr", "not a request")
	if code != http.StatusBadRequest || !strings.Contains(string(body), api.ErrUnexpectedMessage) {
		t.Errorf("garbage: %d %s", code, body)
	}
	if st, _ := cl.Acctmgr(ctx); st.QOS[1].Priority != 10 || len(st.QOS) != 2 || len(st.Users) != 3 {
		t.Errorf("records after the refused requests: %+v %+v", st.QOS, st.Users)
	}
}

// TestAcctmgrUnprivilegedSocket talks to the node as uid 65534 over its
// unix socket from a child process, so the identity comes from real peer
// credentials.
func TestAcctmgrUnprivilegedSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another uid")
	}
	_, cl := startAcctNode(t)
	// The child (this test binary) and the socket must be reachable by
	// uid 65534.
	dir, err := os.MkdirTemp("", "hpc-acct-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "cluster.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	openPath(t, filepath.Dir(cl.Socket))
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(action string) string {
		cmd := exec.Command(bin, "-test.run=^TestAcctmgrChildProcess$")
		cmd.Env = append(os.Environ(), "HPC_ACCT_CHILD_SOCKET="+cl.Socket, "HPC_ACCT_CHILD_ACTION="+action)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if s, ok := strings.CutPrefix(line, "RESULT: "); ok {
				return s
			}
		}
		t.Fatalf("child said nothing:\n%s", out)
		return ""
	}
	if got := run("show"); got != "normal" {
		t.Errorf("show as uid 65534: %s", got)
	}
	if got := run("add"); got != "error: Access/permission denied (Your user doesn't have privilege to perform this action)" {
		t.Errorf("add as uid 65534: %s", got)
	}
	if st, _ := cl.Acctmgr(context.Background()); len(st.QOS) != 1 {
		t.Errorf("QoS after the child: %+v", st.QOS)
	}
}

// TestAcctmgrChildProcess is the child of TestAcctmgrUnprivilegedSocket.
func TestAcctmgrChildProcess(t *testing.T) {
	sock := os.Getenv("HPC_ACCT_CHILD_SOCKET")
	if sock == "" {
		t.Skip("runs as a child of TestAcctmgrUnprivilegedSocket")
	}
	cl := api.NewClient(sock)
	ctx := context.Background()
	switch os.Getenv("HPC_ACCT_CHILD_ACTION") {
	case "show":
		st, err := cl.Acctmgr(ctx)
		if err != nil {
			fmt.Printf("RESULT: error: %v\n", err)
			return
		}
		var names []string
		for _, q := range st.QOS {
			names = append(names, q.Name)
		}
		fmt.Printf("RESULT: %s\n", strings.Join(names, ","))
	case "add":
		_, err := cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"mine"}})
		var ae *api.Error
		if errors.As(err, &ae) {
			fmt.Printf("RESULT: error: %s (%s)\n", ae.Message, ae.Detail)
			return
		}
		fmt.Printf("RESULT: %v\n", err)
	}
}

// TestSacctmgrLikeSlurm runs the commands of testdata/sacctmgr-22.05.txt
// through hpc's sacctmgr (the built binary, as root and as uid 65534)
// against a new one-node cluster and compares what it prints with what
// Slurm 22.05 printed for the same commands.
func TestSacctmgrLikeSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hpc binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run commands as uid 65534")
	}
	steps := readSacctmgrSteps(t, "testdata/sacctmgr-22.05.txt")
	dir, err := os.MkdirTemp("", "hpc-sacctmgr-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hpc")
	if out, err := exec.Command("go", "build", "-o", bin, "hpc").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	_, cl := startAcctNode(t)
	openPath(t, filepath.Dir(cl.Socket))
	for i, s := range steps {
		words := splitWords(s.args)
		cmd := exec.Command(bin, words...)
		cmd.Args[0] = "sacctmgr"
		cmd.Env = append(os.Environ(), "HPC_SOCKET="+cl.Socket)
		cmd.Dir = dir
		if s.uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: s.uid, Gid: s.uid}}
		}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		rc := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			rc = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("step %d (%s): %v", i, s.args, err)
		}
		got := [3]string{stdout.String(), stderr.String(), fmt.Sprint(rc)}
		want := [3]string{s.stdout, s.stderr, fmt.Sprint(s.rc)}
		if s.sorted {
			for k := range 2 {
				got[k], want[k] = sortLines(got[k]), sortLines(want[k])
			}
		}
		for k, what := range []string{"stdout", "stderr", "exit status"} {
			if got[k] != want[k] {
				t.Errorf("step %d: sacctmgr %s (uid %d): %s\n--- hpc:\n%s--- Slurm:\n%s", i, s.args, s.uid, what, got[k], want[k])
			}
		}
	}
}

type sacctmgrStep struct {
	uid            uint32
	sorted         bool
	args           string
	stdout, stderr string
	rc             int
}

func readSacctmgrSteps(t *testing.T, path string) []sacctmgrStep {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var steps []sacctmgrStep
	var cur *string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "@@@@ "):
			head, args, _ := strings.Cut(strings.TrimSpace(line[5:]), " | ")
			f := strings.Fields(head)
			uid, _ := strconv.ParseUint(f[0], 10, 32)
			steps = append(steps, sacctmgrStep{uid: uint32(uid), sorted: slices.Contains(f, "sorted"), args: args})
			cur = nil
		case line == "@@@ stdout\n":
			cur = &steps[len(steps)-1].stdout
		case line == "@@@ stderr\n":
			cur = &steps[len(steps)-1].stderr
		case strings.HasPrefix(line, "@@@ rc "):
			steps[len(steps)-1].rc, _ = strconv.Atoi(strings.TrimSpace(line[7:]))
			cur = nil
		case cur != nil:
			*cur += line
		}
	}
	if len(steps) < 50 {
		t.Fatalf("%s: only %d steps", path, len(steps))
	}
	return steps
}

// splitWords splits a command line as the shell would (quotes only).
func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

func sortLines(s string) string {
	lines := strings.Split(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// openPath lets every user traverse the directories down to dir.
func openPath(t *testing.T, dir string) {
	t.Helper()
	for p := dir; p != "/" && p != "."; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
}
