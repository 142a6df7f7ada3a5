package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"hpc/cluster/api"
)

// mgrFake answers /api/acctmgr from memory and records the changes asked
// for. (The controller's side is tested in cluster/, and the two together
// against Slurm's own output in cluster's TestSacctmgrLikeSlurm.)
type mgrFake struct {
	mu     sync.Mutex
	state  api.AcctmgrState
	reqs   []api.AcctmgrRequest
	result api.AcctmgrResult
	err    *api.Error
	status int
}

func (f *mgrFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path != "/api/acctmgr" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPost {
		var req api.AcctmgrRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.reqs = append(f.reqs, req)
		if f.err != nil {
			w.WriteHeader(f.status)
			json.NewEncoder(w).Encode(f.err)
			return
		}
		json.NewEncoder(w).Encode(f.result)
		return
	}
	json.NewEncoder(w).Encode(f.state)
}

func newMgrFake(t *testing.T) (*mgrFake, *Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	one := 1
	f := &mgrFake{state: api.AcctmgrState{
		Cluster: api.AcctCluster{Name: "lab", ControlHost: "127.0.0.1", ControlPort: 6817, RPC: 9728},
		QOS:     []api.QOS{{ID: 1, Name: "normal", Description: "Normal QOS default"}},
		Accounts: []api.Account{
			{Name: "root", Description: "default root account", Organization: "root"},
		},
		Users: []api.AcctUser{{Name: "root", DefaultAccount: "root", AdminLevel: api.AdminAdministrator}},
		Assocs: []api.Assoc{
			{Account: "root", Shares: 1, QOS: []string{"normal"}},
			{Account: "root", User: "root", Shares: 1, QOS: []string{"normal"}, MaxJobs: &one, Depth: 1},
		},
	}, result: api.AcctmgrResult{Cluster: "lab"}}
	sock := filepath.Join(t.TempDir(), "hpc.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	var stdout, stderr bytes.Buffer
	e := &Env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Now:    func() time.Time { return time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC) },
		Client: func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil },
		Cwd:    t.TempDir(),
	}
	return f, e, &stdout, &stderr
}

func runMgr(e *Env, args string) int {
	return sacctmgrMain(e, "sacctmgr", strings.Fields(args))
}

// The one sacctmgr capture of the reference: show cluster.
func TestSacctmgrShowClusterLikeReference(t *testing.T) {
	_, e, out, errb := newMgrFake(t)
	if code := runMgr(e, "show cluster"); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	want := "   Cluster     ControlHost  ControlPort   RPC     Share GrpJobs       GrpTRES GrpSubmit MaxJobs       MaxTRES MaxSubmit     MaxWall                  QOS   Def QOS \n" +
		"---------- --------------- ------------ ----- --------- ------- ------------- --------- ------- ------------- --------- ----------- -------------------- --------- \n" +
		"       lab       127.0.0.1         6817  9728         1                                                                                           normal           \n"
	if out.String() != want {
		t.Errorf("show cluster:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	if code := runMgr(e, "-P -n list clusters format=cluster,controlport,qos"); code != 0 || out.String() != "lab|6817|normal\n" {
		t.Errorf("-P -n: %d %q", code, out.String())
	}
	out.Reset()
	if code := runMgr(e, "show cluster other"); code != 0 || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("another cluster's name: %d %q", code, out.String())
	}
}

func TestSacctmgrRequests(t *testing.T) {
	hundred, sixty, two, minus := 100, int64(60), 2, int64(-1)
	requeue, empty, chem, op := "requeue", "", "chem", "operator"
	tests := []struct {
		args string
		want api.AcctmgrRequest
	}{
		{`-i add qos High Priority=100 MaxWall=1:00:00 MaxTRESPerUser=cpu=4,mem=8G Preempt=normal PreemptMode=requeue Description=High_Prio`,
			api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}, Set: api.AcctmgrSet{
				Priority: &hundred, MaxWallMin: &sixty, MaxTRESPerUser: api.TRES{"cpu": 4, "mem": 8192},
				Preempt: &api.ListEdit{Op: "=", Names: []string{"normal"}}, PreemptMode: &requeue, Description: str2("high_prio")}}},
		{`-i modify user where name=bob account=chem set maxjobs=2 GrpTRES=cpu=4`,
			api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"bob"}, Accounts: []string{"chem"},
				Set: api.AcctmgrSet{MaxJobs: &two, GrpTRES: api.TRES{"cpu": 4}}}},
		{`-i update acc chem set qos+=high,low defaultqos=-1 maxwall=unlimited`,
			api.AcctmgrRequest{Action: "modify", Entity: "account", Names: []string{"chem"},
				Set: api.AcctmgrSet{QOS: &api.ListEdit{Op: "+=", Names: []string{"high", "low"}}, DefaultQOS: &empty, MaxWallMin: &minus}}},
		{`-i remove user carol account=chem`,
			api.AcctmgrRequest{Action: "delete", Entity: "user", Names: []string{"carol"}, Accounts: []string{"chem"}}},
		{`-i create user bob,Carol accounts=physics,chem defaultaccount=Chem adminlevel=operator`,
			api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"bob", "carol"}, Accounts: []string{"physics", "chem"},
				Set: api.AcctmgrSet{DefaultAccount: &chem, AdminLevel: &op}}},
		{`-i delete qos where name=a,b`,
			api.AcctmgrRequest{Action: "delete", Entity: "qos", Names: []string{"a", "b"}}},
		{`-i modify qos set preempt-=low`,
			api.AcctmgrRequest{Action: "modify", Entity: "qos", Set: api.AcctmgrSet{Preempt: &api.ListEdit{Op: "-=", Names: []string{"low"}}}}},
		{`-i add account x parent=Chem fairshare=10 maxtres=node=2 grpsubmit=4`,
			api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"x"}, Set: api.AcctmgrSet{
				Parent: &chem, Fairshare: int2(10), MaxTRESPerJob: api.TRES{"node": 2}, GrpSubmitJobs: int2(4)}}},
	}
	for _, tc := range tests {
		f, e, _, errb := newMgrFake(t)
		f.result = api.AcctmgrResult{Cluster: "lab", QOS: []string{"x"}, Accounts: []string{"x"}, Users: []string{"x"}}
		if code := runMgr(e, tc.args); code != 0 {
			t.Errorf("%s: exit %d: %s", tc.args, code, errb)
			continue
		}
		if len(f.reqs) != 1 || !reflect.DeepEqual(f.reqs[0], tc.want) {
			t.Errorf("%s: sent\n%+v\nwant\n%+v", tc.args, f.reqs, tc.want)
		}
	}
}

func str2(s string) *string { return &s }
func int2(n int) *int       { return &n }

// Mistakes sacctmgr catches itself: nothing is sent.
func TestSacctmgrLocalErrors(t *testing.T) {
	tests := []struct {
		args           string
		stdout, stderr string
	}{
		{"-i add qos e MaxWall=bogus", "", " Bad MaxWall time format: MaxWall=bogus\n"},
		{"-i add qos g Bogus=1", " Unknown option: Bogus=1\n Use keyword 'where' to modify condition\n", ""},
		{"-i add qos f Priority=x", "", "sacctmgr: error: Invalid value for Priority (x)\n"},
		{"-i add qos h PreemptMode=bogus", "", " Bad Preempt Mode given: PreemptMode=bogus\n"},
		{"-i add qos j MaxTRESPerJob=foo=1", "", "sacctmgr: error: slurmdb_format_tres_str: no TRES known by type foo\n"},
		{"-i add qos k GrpTRES=cpu=abc", "", "sacctmgr: error: Invalid unit type 'a'. Possible options are 'KMGTP'\n"},
		{"-i add qos", "", " Need name of qos to add.\n"},
		{"-i add user bob", "", " Need name of account to add user to.\n"},
		{"-i modify qos high", "", " You didn't give me anything to set\n"},
		{"-i modify qos high set bogus", " Unknown option: bogus\n Use keyword 'where' to modify condition\n", ""},
		{"-i modify user bob set account=x", " Unknown option: account=x\n Use keyword 'where' to modify condition\n", ""},
		{"-i delete qos", "", " No conditions given to remove, not executing.\n"},
		{"-i delete account where colour=red", " Unknown condition: colour=red\n Use keyword 'set' to modify value\n", ""},
		{"-i add account x priority=3", " Unknown option: priority=3\n Use keyword 'where' to modify condition\n", ""},
		{"show qos format=bogus", "", "Unknown field 'bogus'\n"},
		{"foo", "", "invalid keyword: foo\n"},
		{"add assoc x", "", "No valid entity in add command\nInput line must include \"Account\", \"QOS\", or \"User\"\n"},
		{"", "", "sacctmgr: error: no command given: hpc's sacctmgr has no interactive mode (try --help)\n"},
		{"--bogus show qos", "", "sacctmgr: unrecognized option '--bogus'\nTry \"sacctmgr --help\" for more information\n"},
	}
	for _, tc := range tests {
		f, e, out, errb := newMgrFake(t)
		if code := runMgr(e, tc.args); code != 1 {
			t.Errorf("%q: exit %d", tc.args, code)
		}
		if out.String() != tc.stdout || errb.String() != tc.stderr {
			t.Errorf("%q:\nstdout %q\nstderr %q\nwant %q %q", tc.args, out, errb, tc.stdout, tc.stderr)
		}
		if len(f.reqs) != 0 {
			t.Errorf("%q: sent %+v", tc.args, f.reqs)
		}
	}
}

// What the controller answers, printed as sacctmgr prints it.
func TestSacctmgrAnswers(t *testing.T) {
	f, e, out, errb := newMgrFake(t)

	// No -i: committed at once, with a note.
	f.result = api.AcctmgrResult{Cluster: "lab", QOS: []string{"high"}}
	if code := runMgr(e, "modify qos high set priority=3"); code != 0 ||
		out.String() != " Modified qos...\n  high\n" || !strings.Contains(errb.String(), "commits changes at once") {
		t.Errorf("modify without -i: %d %q %q", code, out, errb)
	}
	out.Reset()
	errb.Reset()
	if code := runMgr(e, "-Q modify qos high set priority=3"); code != 0 || out.Len()+errb.Len() != 0 {
		t.Errorf("-Q: %d %q %q", code, out, errb)
	}

	// Nothing matched.
	f.result = api.AcctmgrResult{Cluster: "lab"}
	for args, want := range map[string]string{
		"-i delete qos nosuch":                " Nothing deleted\n",
		"-i modify user nosuch set maxjobs=1": " Nothing modified\n",
		"-i add qos normal":                   " Nothing new added.\n",
	} {
		out.Reset()
		if code := runMgr(e, args); code != 1 || out.String() != want {
			t.Errorf("%s: %d %q", args, code, out)
		}
	}

	// Refused: how each action reports it.
	f.err, f.status = &api.Error{Message: api.ErrAccessDenied, Detail: "Your user doesn't have privilege to perform this action"}, http.StatusForbidden
	out.Reset()
	errb.Reset()
	if code := runMgr(e, "-i delete qos low"); code != 1 || out.Len() != 0 ||
		errb.String() != "sacctmgr: error: Your user doesn't have privilege to perform this action\n Error with request: Access/permission denied\n" {
		t.Errorf("delete refused: %d %q %q", code, out, errb)
	}
	out.Reset()
	errb.Reset()
	if code := runMgr(e, "-i add user ann account=root"); code != 1 ||
		out.String() != " Adding User(s)\n  ann\n Associations =\n  U = ann       A = root       C = lab       \n Non Default Settings\n" ||
		errb.String() != " Problem adding users: Access/permission denied\n" {
		t.Errorf("add refused: %d %q %q", code, out, errb)
	}

	// Errors already in sacctmgr's words are printed as they come.
	f.err, f.status = &api.Error{Message: " You are not allowed to remove the root account.\n Use remove cluster instead."}, http.StatusBadRequest
	out.Reset()
	errb.Reset()
	if code := runMgr(e, "-i delete account root"); code != 1 || errb.String() != " You are not allowed to remove the root account.\n Use remove cluster instead.\n" {
		t.Errorf("root account: %d %q %q", code, out, errb)
	}
	// Others get sacctmgr's prefix.
	f.err = &api.Error{Message: api.ErrNoLeader, Detail: "no node answers"}
	errb.Reset()
	if code := runMgr(e, "-i delete qos x"); code != 1 ||
		errb.String() != "sacctmgr: error: no node answers\nsacctmgr: error: "+api.ErrNoLeader+"\n" {
		t.Errorf("no leader: %d %q", code, errb)
	}
}

func TestSacctmgrShowFormats(t *testing.T) {
	_, e, out, _ := newMgrFake(t)
	// Inherited values come from the controller; tree indents by depth;
	// widths from format=, '-' for left-aligned, '+' marks a cut value.
	if code := runMgr(e, "show assoc tree format=account,user%5,maxjobs,qos%-4"); code != 0 {
		t.Fatal(code)
	}
	want := "Account               User MaxJobs QOS  \n" +
		"-------------------- ----- ------- ---- \n" +
		"root                               nor+ \n" +
		" root                 root       1 nor+ \n"
	if out.String() != want {
		t.Errorf("tree:\n%s\nwant\n%s", out, want)
	}
	out.Reset()
	if code := runMgr(e, "-p show user root format=user,admin"); code != 0 || out.String() != "User|Admin|\nroot|Administrator|\n" {
		t.Errorf("-p: %q", out)
	}
	out.Reset()
	// Association fields of show user are empty without withassoc.
	if code := runMgr(e, "-n -P show user format=user,account"); code != 0 || out.String() != "root|\n" {
		t.Errorf("user without withassoc: %q", out)
	}
	out.Reset()
	if code := runMgr(e, "-n -P show user withassoc format=user,account,maxjobs"); code != 0 || out.String() != "root|root|1\n" {
		t.Errorf("user withassoc: %q", out)
	}
	out.Reset()
	if code := runMgr(e, "-n -P show assoc users=nosuch"); code != 0 || out.String() != "" {
		t.Errorf("no match: %q", out)
	}
	out.Reset()
	if code := runMgr(e, "-V"); code != 0 || !strings.Contains(out.String(), "22.05") {
		t.Errorf("-V: %q", out)
	}
}

// TestSacctmgrAssociationsOption: -s/--associations lists users and
// accounts with their associations, as withassoc does.
func TestSacctmgrAssociationsOption(t *testing.T) {
	_, e, out, _ := newMgrFake(t)
	for _, line := range []string{"-s -n -P show user format=user,account,maxjobs", "--associations -n -P list user format=user,account,maxjobs"} {
		out.Reset()
		if code := runMgr(e, line); code != 0 || out.String() != "root|root|1\n" {
			t.Errorf("%s: %d %q", line, code, out)
		}
	}
}
