package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/acct"
	"hpc/cluster/api"
	"hpc/sched"
)

func ip(n int) *int        { return &n }
func i64(n int64) *int64   { return &n }
func str(s string) *string { return &s }
func list(op string, names ...string) *api.ListEdit {
	return &api.ListEdit{Op: op, Names: names}
}

// acctDo does what the leader's handler does: plan the op on a copy of the
// records, then commit it through Apply. It returns the planned result
// and the error of either step.
func acctDo(t *testing.T, f *FSM, index *uint64, uid uint32, user string, req api.AcctmgrRequest) (api.AcctmgrResult, error) {
	t.Helper()
	var plan acct.State
	f.View(func(st *State) { plan = st.Acct.Clone() })
	op := acct.Op{Req: req, UID: uid, User: user, Version: plan.Version}
	res, err := plan.Apply(&op, f.cfg.ClusterName)
	if err != nil {
		return res, err
	}
	if len(res.QOS)+len(res.Accounts)+len(res.Users)+len(res.Assocs)+len(res.UsersNoAssoc) == 0 {
		return res, nil
	}
	*index++
	data, err := Encode(&Acctmgr{Time: time.Unix(1_800_000_000, 0).UTC(), Op: op})
	if err != nil {
		t.Fatal(err)
	}
	r := f.Apply(&raft.Log{Index: *index, Data: data}).(Result)
	return res, r.Err
}

// acctRoot runs a request as root and fails the test on error.
func acctRoot(t *testing.T, f *FSM, index *uint64, req api.AcctmgrRequest) api.AcctmgrResult {
	t.Helper()
	res, err := acctDo(t, f, index, 0, "root", req)
	if err != nil {
		t.Fatalf("%s %s %v: %v", req.Action, req.Entity, req.Names, err)
	}
	return res
}

func acctView(f *FSM) api.AcctmgrState {
	var v api.AcctmgrState
	f.View(func(st *State) { v = st.Acct.View(api.AcctCluster{Name: "lab"}) })
	return v
}

func findAssoc(t *testing.T, v api.AcctmgrState, account, user string) api.Assoc {
	t.Helper()
	for _, a := range v.Assocs {
		if a.Account == account && a.User == user {
			return a
		}
	}
	t.Fatalf("no association %s/%s", account, user)
	return api.Assoc{}
}

// errText is the message of an *api.Error, failing when err is another kind.
func errText(t *testing.T, err error) string {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *api.Error", err, err)
	}
	return ae.Message
}

func TestAcctFreshCluster(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	v := acctView(f)
	if len(v.QOS) != 1 || v.QOS[0].Name != "normal" || v.QOS[0].Priority != 0 || v.QOS[0].Description != "Normal QOS default" {
		t.Errorf("QoS of a new cluster: %+v", v.QOS)
	}
	if len(v.Accounts) != 1 || v.Accounts[0] != (api.Account{Name: "root", Description: "default root account", Organization: "root"}) {
		t.Errorf("accounts: %+v", v.Accounts)
	}
	if len(v.Users) != 1 || v.Users[0] != (api.AcctUser{Name: "root", DefaultAccount: "root", AdminLevel: api.AdminAdministrator}) {
		t.Errorf("users: %+v", v.Users)
	}
	if len(v.Assocs) != 2 || v.Assocs[0].User != "" || v.Assocs[1].User != "root" ||
		!reflect.DeepEqual(v.Assocs[1].QOS, []string{"normal"}) || v.Assocs[1].Shares != 1 || v.Assocs[1].Depth != 1 {
		t.Errorf("associations: %+v", v.Assocs)
	}
	// Jobs of root get the root account and the normal QoS.
	f.View(func(st *State) {
		a, q, err := st.Acct.JobAssoc("root", "", "")
		if a != "root" || q != "normal" || err != nil {
			t.Errorf("root's job defaults: %q %q %v", a, q, err)
		}
		if _, _, err := st.Acct.JobAssoc("ann", "", ""); err == nil || err.Error() != api.ErrInvalidAccount {
			t.Errorf("a user without an association: %v", err)
		}
	})
}

func TestAcctQOSLifecycle(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	var idx uint64
	res := acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"High", "low"}, Set: api.AcctmgrSet{
		Priority: ip(100), MaxWallMin: i64(60), MaxJobsPerUser: ip(2), MaxSubmitJobsPerUser: ip(4),
		MaxTRESPerUser: api.TRES{"cpu": 4, "mem": 8192, "gres/gpu": 1}, MaxTRESPerJob: api.TRES{"node": 2},
		GrpTRES: api.TRES{"cpu": 16}, GrpJobs: ip(10), GrpSubmitJobs: ip(20),
		Preempt: list("=", "normal"), PreemptMode: str("requeue"),
	}})
	if !reflect.DeepEqual(res.QOS, []string{"high", "low"}) || res.Cluster != "lab" {
		t.Fatalf("add result: %+v", res)
	}
	v := acctView(f)
	if len(v.QOS) != 3 || v.QOS[1].Name != "high" || v.QOS[2].Name != "low" {
		t.Fatalf("QoS in creation order: %+v", v.QOS)
	}
	h := v.QOS[1]
	if h.Priority != 100 || *h.MaxWallMin != 60 || *h.MaxJobsPerUser != 2 || *h.MaxSubmitJobsPerUser != 4 ||
		h.MaxTRESPerUser.String() != "cpu=4,gres/gpu=1,mem=8G" || h.MaxTRESPerJob.String() != "node=2" ||
		h.GrpTRES.String() != "cpu=16" || *h.GrpJobs != 10 || *h.GrpSubmitJobs != 20 ||
		!reflect.DeepEqual(h.Preempt, []string{"normal"}) || h.PreemptMode != "REQUEUE" || h.Description != "high" {
		t.Errorf("high: %+v", h)
	}

	// Adding what exists adds nothing and commits nothing.
	before := f.st.Acct.Version
	if res := acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}}); len(res.QOS) != 0 {
		t.Errorf("re-adding high: %+v", res)
	}
	if f.st.Acct.Version != before {
		t.Error("an add of nothing new was committed")
	}

	// Modify merges TRES (-1 removes one), clears counts with -1.
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "qos", Names: []string{"high"}, Set: api.AcctmgrSet{
		Priority: ip(200), MaxWallMin: i64(-1), MaxTRESPerUser: api.TRES{"cpu": -1, "node": 3}, GrpJobs: ip(-1),
		Preempt: list("+=", "low"),
	}})
	if !reflect.DeepEqual(res.QOS, []string{"high"}) {
		t.Errorf("modify result: %+v", res)
	}
	h = acctView(f).QOS[1]
	if h.Priority != 200 || h.MaxWallMin != nil || h.GrpJobs != nil || h.MaxTRESPerUser.String() != "gres/gpu=1,mem=8G,node=3" ||
		!reflect.DeepEqual(h.Preempt, []string{"low", "normal"}) {
		t.Errorf("high after modify: %+v", h)
	}
	// Modify without names touches every QoS.
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "qos", Set: api.AcctmgrSet{Priority: ip(5)}})
	if !reflect.DeepEqual(res.QOS, []string{"normal", "high", "low"}) {
		t.Errorf("modify all: %+v", res)
	}
	if res := acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "qos", Names: []string{"nosuch"}, Set: api.AcctmgrSet{Priority: ip(1)}}); len(res.QOS) != 0 {
		t.Errorf("modify of an unknown QoS: %+v", res)
	}

	// Deleting a QoS takes it out of preempt lists.
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "delete", Entity: "qos", Names: []string{"low", "nosuch"}})
	if !reflect.DeepEqual(res.QOS, []string{"low"}) {
		t.Errorf("delete result: %+v", res)
	}
	v = acctView(f)
	if len(v.QOS) != 2 || !reflect.DeepEqual(v.QOS[1].Preempt, []string{"normal"}) {
		t.Errorf("after delete: %+v", v.QOS)
	}
	// IDs are not reused: a new QoS comes last.
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"low"}})
	if v := acctView(f); v.QOS[2].Name != "low" || v.QOS[2].ID != 4 {
		t.Errorf("re-added low: %+v", v.QOS)
	}
}

func TestAcctErrors(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	var idx uint64
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"physics"}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"ann"}, Accounts: []string{"physics"}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "account", Names: []string{"physics"}, Set: api.AcctmgrSet{QOS: list("=", "normal", "high"), DefaultQOS: str("high")}})
	tests := []struct {
		name string
		req  api.AcctmgrRequest
		want string
	}{
		{"delete root account", api.AcctmgrRequest{Action: "delete", Entity: "account", Names: []string{"root"}},
			" You are not allowed to remove the root account.\n Use remove cluster instead."},
		{"delete account with users", api.AcctmgrRequest{Action: "delete", Entity: "account", Names: []string{"physics"}},
			" Associations listed below are under the accounts to remove.\n  C = lab        A = physics              U = ann      \n" +
				" Please remove them first (sacctmgr delete user ... account=...).\n Changes Discarded"},
		{"delete a default QoS", api.AcctmgrRequest{Action: "delete", Entity: "qos", Names: []string{"high"}},
			" Associations listed below have these as their Default QOS.\n  DefQOS = high       C = lab        A = physics             \n" +
				" Please either remove the qos' listed above from list and resubmit,\n or change the default qos to remove the qos.\n Changes Discarded"},
		{"delete normal while root's default", api.AcctmgrRequest{Action: "delete", Entity: "qos", Names: []string{"normal"}},
			" Associations listed below have these as their Default QOS.\n  DefQOS = normal     C = lab        A = root                \n" +
				" Please either remove the qos' listed above from list and resubmit,\n or change the default qos to remove the qos.\n Changes Discarded"},
		{"delete without names", api.AcctmgrRequest{Action: "delete", Entity: "qos"},
			" No conditions given to remove, not executing."},
		{"modify without set", api.AcctmgrRequest{Action: "modify", Entity: "qos", Names: []string{"high"}},
			" You didn't give me anything to set"},
		{"user without account", api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"bob"}},
			" Need name of account to add user to."},
		{"user of unknown account", api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"bob"}, Accounts: []string{"nosuch"}},
			" This account 'nosuch' doesn't exist.\n        Contact your admin to add this account.\n No associations or wckeys created."},
		{"unknown parent", api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"x"}, Set: api.AcctmgrSet{Parent: str("nosuch")}},
			" Parent account 'nosuch' doesn't exist on cluster lab\n        Contact your admin to add this account.\n No associations created."},
		{"unknown qos", api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"x"}, Set: api.AcctmgrSet{QOS: list("=", "nosuch")}},
			"sacctmgr: error: You gave a bad qos 'nosuch'. Valid QOS's are normal,high"},
		{"unknown preempt", api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"x"}, Set: api.AcctmgrSet{Preempt: list("=", "nosuch")}},
			"sacctmgr: error: You gave a bad qos 'nosuch'. Valid QOS's are normal,high"},
		{"bad preempt mode", api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"x"}, Set: api.AcctmgrSet{PreemptMode: str("bogus")}},
			" Bad Preempt Mode given: PreemptMode=bogus"},
		{"default QoS not allowed", api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"ann"}, Set: api.AcctmgrSet{QOS: list("=", "normal")}},
			"sacctmgr: error: Default QOS 'high' of user ann of account physics is not in its QOS list (normal)"},
		{"default account not associated", api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"ann"}, Set: api.AcctmgrSet{DefaultAccount: str("root")}},
			" Can't modify because these users aren't associated with new default account 'root'...\n  U = ann C = lab"},
		{"QoS setting on an account", api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"x"}, Set: api.AcctmgrSet{Priority: ip(3)}},
			" Unknown option: Priority\n Use keyword 'where' to modify condition"},
		{"account under itself", api.AcctmgrRequest{Action: "modify", Entity: "account", Names: []string{"physics"}, Set: api.AcctmgrSet{Parent: str("physics")}},
			"sacctmgr: error: Invalid parent account 'physics' for account physics"},
		{"bad admin level", api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"ann"}, Set: api.AcctmgrSet{AdminLevel: str("god")}},
			"sacctmgr: error: Invalid AdminLevel 'god' (None, Operator or Administrator)"},
		{"bad TRES", api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"x"}, Set: api.AcctmgrSet{GrpTRES: api.TRES{"energy": 1}}},
			"sacctmgr: error: slurmdb_format_tres_str: no TRES known by type energy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := f.st.Acct.Version
			_, err := acctDo(t, f, &idx, 0, "root", tc.req)
			if err == nil {
				t.Fatal("accepted")
			}
			if got := errText(t, err); got != tc.want {
				t.Errorf("error:\n%q\nwant\n%q", got, tc.want)
			}
			if f.st.Acct.Version != before {
				t.Error("a refused op was committed")
			}
		})
	}
	// A failed op leaves nothing half done.
	v := acctView(f)
	if len(v.QOS) != 2 || len(v.Accounts) != 2 {
		t.Errorf("state after refused ops: %+v %+v", v.QOS, v.Accounts)
	}
}

func TestAcctAccountsUsersAndInheritance(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	var idx uint64
	res := acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"Physics"},
		Set: api.AcctmgrSet{Description: str("physics dept"), Organization: str("science")}})
	if !reflect.DeepEqual(res.Accounts, []string{"physics"}) || !reflect.DeepEqual(res.Assocs, []api.AssocRef{{Account: "physics", Parent: "root"}}) {
		t.Errorf("add account: %+v", res)
	}
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"chem", "bio"}, Set: api.AcctmgrSet{
		Parent: str("physics"), Fairshare: ip(10), GrpTRES: api.TRES{"cpu": 8}, MaxJobs: ip(5), GrpJobs: ip(20), MaxWallMin: i64(1440),
		MaxTRESPerJob: api.TRES{"cpu": 4},
	}})
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"bob", "carol"}, Accounts: []string{"physics", "chem"},
		Set: api.AcctmgrSet{DefaultAccount: str("chem"), AdminLevel: str("operator"), Fairshare: ip(3), MaxSubmitJobs: ip(7), MaxTRESPerJob: api.TRES{"node": 1}}})
	if !reflect.DeepEqual(res.Users, []string{"bob", "carol"}) || len(res.Assocs) != 4 {
		t.Errorf("add users: %+v", res)
	}
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"dave"}, Accounts: []string{"bio"}})

	v := acctView(f)
	var order []string
	for _, a := range v.Assocs {
		order = append(order, fmt.Sprintf("%d:%s/%s", a.Depth, a.Account, a.User))
	}
	want := []string{"0:root/", "1:root/root", "1:physics/", "2:physics/bob", "2:physics/carol",
		"2:bio/", "3:bio/dave", "2:chem/", "3:chem/bob", "3:chem/carol"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("tree order:\n%v\nwant\n%v", order, want)
	}
	if a := v.Accounts[0]; a.Name != "bio" || a.Description != "bio" || a.Organization != "physics" {
		t.Errorf("bio's defaults: %+v", a)
	}
	if a := v.Accounts[2]; a.Name != "physics" || a.Description != "physics dept" || a.Organization != "science" {
		t.Errorf("physics: %+v", a)
	}
	if u := v.Users[0]; u.Name != "bob" || u.DefaultAccount != "chem" || u.AdminLevel != api.AdminOperator {
		t.Errorf("bob: %+v", u)
	}
	if u := v.Users[2]; u.Name != "dave" || u.DefaultAccount != "bio" || u.AdminLevel != api.AdminNone {
		t.Errorf("dave: %+v", u)
	}
	// Max limits and QoS are inherited, Grp limits and shares are not.
	dave := findAssoc(t, v, "bio", "dave")
	if dave.MaxJobs == nil || *dave.MaxJobs != 5 || *dave.MaxWallMin != 1440 || dave.GrpJobs != nil || dave.GrpTRES != nil ||
		dave.Shares != 1 || !reflect.DeepEqual(dave.QOS, []string{"normal"}) || dave.MaxTRESPerJob.String() != "cpu=4" {
		t.Errorf("dave's inherited limits: %+v", dave)
	}
	bob := findAssoc(t, v, "chem", "bob")
	if bob.Shares != 3 || *bob.MaxSubmitJobs != 7 || *bob.MaxJobs != 5 || bob.MaxTRESPerJob.String() != "cpu=4,node=1" {
		t.Errorf("bob under chem: %+v", bob)
	}

	// Modify an account: its own association plus those that inherit.
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "account", Names: []string{"bio"}, Set: api.AcctmgrSet{MaxJobs: ip(-1), Fairshare: ip(20)}})
	if !reflect.DeepEqual(res.Assocs, []api.AssocRef{{Account: "bio", Parent: "physics"}, {Account: "bio", User: "dave"}}) {
		t.Errorf("modify account result: %+v", res)
	}
	if d := findAssoc(t, acctView(f), "bio", "dave"); d.MaxJobs != nil {
		t.Errorf("dave still inherits MaxJobs: %+v", d)
	}
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "account", Names: []string{"chem"}, Set: api.AcctmgrSet{Description: str("chemistry"), Parent: str("root")}})
	if !reflect.DeepEqual(res.Accounts, []string{"chem"}) || !reflect.DeepEqual(res.Assocs, []api.AssocRef{{Account: "chem", Parent: "physics"}}) {
		t.Errorf("move chem: %+v", res)
	}
	if c := findAssoc(t, acctView(f), "chem", ""); c.Parent != "root" || c.Depth != 1 {
		t.Errorf("chem after the move: %+v", c)
	}

	// Modify users: records, and associations under some accounts only.
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"bob"}, Accounts: []string{"chem"},
		Set: api.AcctmgrSet{MaxJobs: ip(2), GrpTRES: api.TRES{"cpu": 4}, DefaultAccount: str("physics")}})
	if !reflect.DeepEqual(res.Users, []string{"bob"}) || !reflect.DeepEqual(res.Assocs, []api.AssocRef{{Account: "chem", User: "bob"}}) {
		t.Errorf("modify bob: %+v", res)
	}
	v = acctView(f)
	if b := findAssoc(t, v, "physics", "bob"); b.MaxJobs != nil || b.GrpTRES != nil {
		t.Errorf("bob under physics changed: %+v", b)
	}
	if b := findAssoc(t, v, "chem", "bob"); *b.MaxJobs != 2 || b.GrpTRES.String() != "cpu=4" {
		t.Errorf("bob under chem: %+v", b)
	}
	// QoS lists: += starts from what is inherited.
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"carol"}, Accounts: []string{"chem"}, Set: api.AcctmgrSet{QOS: list("+=", "high"), DefaultQOS: str("high")}})
	f.View(func(st *State) {
		a, q, err := st.Acct.JobAssoc("carol", "", "")
		if a != "chem" || q != "high" || err != nil {
			t.Errorf("carol's job defaults: %q %q %v", a, q, err)
		}
		if _, _, err := st.Acct.JobAssoc("carol", "physics", "high"); err == nil || err.Error() != api.ErrInvalidQOS {
			t.Errorf("carol asking for high under physics: %v", err)
		}
		if a, q, err := st.Acct.JobAssoc("carol", "Physics", ""); a != "physics" || q != "normal" || err != nil {
			t.Errorf("carol under physics: %q %q %v", a, q, err)
		}
		if _, _, err := st.Acct.JobAssoc("carol", "bio", ""); err == nil || err.Error() != api.ErrInvalidAccount {
			t.Errorf("carol under bio: %v", err)
		}
	})
	if c := findAssoc(t, acctView(f), "chem", "carol"); !reflect.DeepEqual(c.QOS, []string{"high", "normal"}) {
		t.Errorf("carol's QoS: %+v", c.QOS)
	}

	// Delete: one association, then the last one takes the user along.
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "delete", Entity: "user", Names: []string{"bob"}, Accounts: []string{"physics"}})
	if !reflect.DeepEqual(res.Assocs, []api.AssocRef{{Account: "physics", User: "bob"}}) || res.UsersNoAssoc != nil {
		t.Errorf("delete bob's physics association: %+v", res)
	}
	if u := acctView(f).Users[0]; u.DefaultAccount != "" {
		t.Errorf("bob's default account after his physics association went: %+v", u)
	}
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "delete", Entity: "user", Names: []string{"bob"}, Accounts: []string{"chem"}})
	if !reflect.DeepEqual(res.UsersNoAssoc, []string{"bob"}) {
		t.Errorf("delete bob's last association: %+v", res)
	}
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "delete", Entity: "user", Names: []string{"dave", "nosuch"}})
	if !reflect.DeepEqual(res.Users, []string{"dave"}) {
		t.Errorf("delete dave: %+v", res)
	}
	res = acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "delete", Entity: "account", Names: []string{"bio"}})
	if !reflect.DeepEqual(res.Accounts, []string{"bio"}) {
		t.Errorf("delete bio: %+v", res)
	}
	if res := acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "delete", Entity: "account", Names: []string{"bio"}}); len(res.Accounts) != 0 {
		t.Errorf("delete bio twice: %+v", res)
	}
	for _, a := range acctView(f).Assocs {
		if a.Account == "bio" || a.User == "bob" || a.User == "dave" {
			t.Errorf("association left behind: %+v", a)
		}
	}
}

func TestAcctPermissions(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	var idx uint64
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"physics"}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"olga"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{AdminLevel: str("Operator")}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"ada"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{AdminLevel: str("admin")}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"nobody"}, Accounts: []string{"physics"}})

	addQOS := api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}}
	addUser := api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"pat"}, Accounts: []string{"physics"}}
	promote := api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"pat"}, Set: api.AcctmgrSet{AdminLevel: str("Administrator")}}
	tests := []struct {
		uid  uint32
		user string
		req  api.AcctmgrRequest
		why  string // "" = allowed
	}{
		{65534, "nobody", addQOS, acct.WhyNoPrivilege},
		{65534, "nobody", addUser, acct.WhyNoPrivilege},
		{1234, "stranger", api.AcctmgrRequest{Action: "delete", Entity: "account", Names: []string{"physics"}}, acct.WhyNoPrivilege},
		{1001, "olga", addQOS, acct.WhyNoPrivilege}, // QoS need an Administrator
		{1001, "olga", addUser, ""},
		{1001, "olga", promote, "You must be a super user to modify a users admin level"},
		{1002, "ada", promote, ""},
		{1002, "ada", addQOS, ""},
		{0, "whoever", api.AcctmgrRequest{Action: "delete", Entity: "qos", Names: []string{"high"}}, ""},
	}
	for i, tc := range tests {
		before := f.st.Acct.Version
		_, err := acctDo(t, f, &idx, tc.uid, tc.user, tc.req)
		if tc.why == "" {
			if err != nil {
				t.Errorf("%d: %s %s as %s: %v", i, tc.req.Action, tc.req.Entity, tc.user, err)
			}
			continue
		}
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Message != api.ErrAccessDenied || ae.Detail != tc.why {
			t.Errorf("%d: %s %s as %s: %v, want access denied (%s)", i, tc.req.Action, tc.req.Entity, tc.user, err, tc.why)
		}
		if f.st.Acct.Version != before {
			t.Errorf("%d: a denied op was committed", i)
		}
	}
	// Apply itself checks who asks: an entry planned by root but carrying
	// an unprivileged identity is refused on every controller.
	var plan acct.State
	f.View(func(st *State) { plan = st.Acct.Clone() })
	data, _ := Encode(&Acctmgr{Op: acct.Op{Req: addQOS, UID: 65534, User: "nobody", Version: plan.Version}})
	idx++
	if r := f.Apply(&raft.Log{Index: idx, Data: data}).(Result); r.Err == nil || r.Err.Error() != api.ErrAccessDenied {
		t.Errorf("forged entry: %v", r.Err)
	}
}

func TestAcctStaleVersionRefused(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	var idx uint64
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"a"}})
	data, _ := Encode(&Acctmgr{Op: acct.Op{Req: api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"b"}}, Version: 0}})
	r := f.Apply(&raft.Log{Index: 10, Data: data}).(Result)
	if !errors.Is(r.Err, acct.ErrChanged) {
		t.Errorf("stale entry: %v", r.Err)
	}
	if len(acctView(f).QOS) != 2 {
		t.Error("a stale entry changed the records")
	}
	r = f.Apply(&raft.Log{Index: 11, Data: []byte(`{"op":"acctmgr"}`)}).(Result)
	if r.Err == nil {
		t.Error("an entry without payload was accepted")
	}
}

// acctLog builds a representative history on f and returns the entries.
func acctHistory(t *testing.T, f *FSM) {
	t.Helper()
	var idx uint64
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high", "low"}, Set: api.AcctmgrSet{Priority: ip(10), GrpTRES: api.TRES{"mem": 1536}}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"physics", "chem"}, Set: api.AcctmgrSet{Fairshare: ip(4), QOS: list("=", "normal", "high")}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"ann", "bob"}, Accounts: []string{"chem", "physics"}, Set: api.AcctmgrSet{MaxJobs: ip(3)}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"ann"}, Set: api.AcctmgrSet{AdminLevel: str("operator")}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "delete", Entity: "qos", Names: []string{"low"}})
}

func TestAcctDeterministicSnapshotRestore(t *testing.T) {
	cfg := testConfig(t)
	a, _ := testFSM(t, cfg)
	b, _ := testFSM(t, cfg)
	acctHistory(t, a)
	acctHistory(t, b)
	ja, _ := json.Marshal(&a.st.Acct)
	jb, _ := json.Marshal(&b.st.Acct)
	if string(ja) != string(jb) {
		t.Fatalf("same ops, different records:\n%s\n%s", ja, jb)
	}

	data := persisted(t, a)
	c, _ := testFSM(t, cfg)
	if err := c.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if va, vc := acctView(a), acctView(c); !reflect.DeepEqual(va, vc) {
		t.Errorf("restored records differ:\n%+v\n%+v", va, vc)
	}
	if c.st.Acct.Version != a.st.Acct.Version || c.st.Acct.NextQOSID != a.st.Acct.NextQOSID {
		t.Errorf("restored version %d/%d, next QoS id %d/%d", c.st.Acct.Version, a.st.Acct.Version, c.st.Acct.NextQOSID, a.st.Acct.NextQOSID)
	}
	// Ops go on from the restored state.
	var idx uint64 = 100
	acctRoot(t, c, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"later"}})
	if v := acctView(c); v.QOS[len(v.QOS)-1].Name != "later" || v.QOS[len(v.QOS)-1].ID != 4 {
		t.Errorf("QoS added after restore: %+v", v.QOS)
	}

	// A snapshot from before sacctmgr existed gets the fresh records.
	old := `{"next_job_id":1,"jobs":{},"nodes":{}}`
	d, _ := testFSM(t, cfg)
	if err := d.Restore(io.NopCloser(strings.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	fresh, _ := testFSM(t, cfg)
	if !reflect.DeepEqual(acctView(d), acctView(fresh)) {
		t.Errorf("old snapshot: %+v", acctView(d))
	}
}

func TestTRESParseAndPrint(t *testing.T) {
	tests := []struct{ in, out string }{
		{"cpu=4,mem=8G,node=2,gres/gpu=1", "cpu=4,gres/gpu=1,mem=8G,node=2"},
		{"mem=500M", "mem=500M"},
		{"mem=1536M", "mem=1.50G"},
		{"mem=1025M", "mem=1025M"},
		{"mem=1048576", "mem=1T"},
		{"mem=2048K,cpu=2k", "cpu=2048,mem=2G"},
		{"mem=5000k,node=1K,gres/gpu=3m", "gres/gpu=3145728,mem=5000M,node=1024"},
		{"mem=1P,cpu=1G", "cpu=1073741824,mem=1P"},
		{"mem=0,GRES/GPU=0", "gres/gpu=0,mem=0"},
		{"mem=2t", "mem=2T"},
		{"mem=3072", "mem=3G"},
	}
	for _, tc := range tests {
		tr, err := api.ParseTRES(tc.in)
		if err != nil || tr.String() != tc.out {
			t.Errorf("%s: %q %v, want %q", tc.in, tr.String(), err, tc.out)
		}
	}
	for in, want := range map[string]string{
		"foo=1":                     "slurmdb_format_tres_str: no TRES known by type foo",
		"gpu=1":                     "slurmdb_format_tres_str: no TRES known by type gpu",
		"cpu=abc":                   "Invalid unit type 'a'. Possible options are 'KMGTP'",
		"mem=1.5G":                  "Invalid unit type '.'. Possible options are 'KMGTP'",
		"mem=2X":                    "Invalid unit type 'X'. Possible options are 'KMGTP'",
		"cpu":                       "slurmdb_format_tres_str: no TRES known by type cpu",
		"mem=1GB":                   "Invalid unit type 'G'. Possible options are 'KMGTP'",
		"node=99999999999999999999": "Invalid value for TRES node (99999999999999999999)",
		"cpu=999999999P":            "Invalid value for TRES cpu (999999999P)",
	} {
		if _, err := api.ParseTRES(in); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if tr, err := api.ParseTRES("cpu=-1,mem=4G"); err != nil || tr["cpu"] != -1 || tr["mem"] != 4096 {
		t.Errorf("-1 in a change: %v %v", tr, err)
	}
}

func TestAcctSchedInputs(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	var idx uint64
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}, Set: api.AcctmgrSet{
		Priority: ip(100), MaxWallMin: i64(90), MaxJobsPerUser: ip(2), MaxSubmitJobsPerUser: ip(4),
		MaxTRESPerUser: api.TRES{"cpu": 4, "mem": 8192, "gres/gpu": 1, "node": 2}, MaxTRESPerJob: api.TRES{"node": 1},
		GrpTRES: api.TRES{"cpu": 16}, GrpJobs: ip(10), GrpSubmitJobs: ip(20), Preempt: list("=", "normal"), PreemptMode: str("cancel"),
	}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"physics"}, Set: api.AcctmgrSet{
		Fairshare: ip(40), MaxJobs: ip(3), GrpTRES: api.TRES{"cpu": 8}, GrpJobs: ip(6), GrpSubmitJobs: ip(9), MaxWallMin: i64(60)}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"ann"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{Fairshare: ip(2), MaxSubmitJobs: ip(5)}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"bob"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{Fairshare: ip(0)}})
	var qos []sched.QOS
	var assocs []sched.Assoc
	f.View(func(st *State) { qos, assocs = st.Acct.SchedInputs() })
	wantQOS := []sched.QOS{
		{Name: "normal"},
		{Name: "high", Priority: 100, Preempt: []string{"normal"}, PreemptMode: sched.PreemptCancel, Limits: sched.Limits{
			MaxWall: 90 * time.Minute, MaxJobsPerUser: 2, MaxSubmitJobsPerUser: 4,
			MaxTRESPerUser: sched.TRES{CPU: 4, MemMB: 8192, GPU: 1, Node: 2}, MaxTRESPerJob: sched.TRES{Node: 1},
			GrpTRES: sched.TRES{CPU: 16}, GrpJobs: 10, GrpSubmitJobs: 20,
		}},
	}
	if !reflect.DeepEqual(qos, wantQOS) {
		t.Errorf("QoS:\n%+v\nwant\n%+v", qos, wantQOS)
	}
	wantAssocs := []sched.Assoc{
		{Account: "root", Shares: 1},
		{Account: "root", User: "root", Shares: 1},
		{Account: "physics", Parent: "root", Shares: 40, Limits: sched.Limits{MaxWall: time.Hour, MaxJobsPerUser: 3, GrpTRES: sched.TRES{CPU: 8}, GrpJobs: 6, GrpSubmitJobs: 9}},
		{Account: "physics", User: "ann", Shares: 2, Limits: sched.Limits{MaxWall: time.Hour, MaxJobsPerUser: 3, MaxSubmitJobsPerUser: 5}},
		{Account: "physics", User: "bob", Shares: -1, Limits: sched.Limits{MaxWall: time.Hour, MaxJobsPerUser: 3}},
	}
	if !reflect.DeepEqual(assocs, wantAssocs) {
		t.Errorf("associations:\n%+v\nwant\n%+v", assocs, wantAssocs)
	}
}

// A limit of 0 is a real limit in Slurm (it allows nothing): it is kept in
// the records, reaches sched as sched.LimitZero, and -1 clears it.
func TestAcctZeroLimits(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	var idx uint64
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"nogpu"}, Set: api.AcctmgrSet{
		MaxJobsPerUser: ip(0), MaxSubmitJobsPerUser: ip(0), GrpJobs: ip(0), GrpSubmitJobs: ip(0), MaxWallMin: i64(0),
		GrpTRES: api.TRES{"gres/gpu": 0, "cpu": 4}, MaxTRESPerUser: api.TRES{"node": 0}, MaxTRESPerJob: api.TRES{"mem": 0},
	}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"physics"}, Set: api.AcctmgrSet{
		MaxJobs: ip(0), GrpTRES: api.TRES{"gres/gpu": 0}, MaxTRESPerJob: api.TRES{"cpu": 0}}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"ann"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{MaxSubmitJobs: ip(0)}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"bob"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{MaxJobs: ip(2)}})

	v := acctView(f)
	q := v.QOS[1]
	if q.MaxJobsPerUser == nil || *q.MaxJobsPerUser != 0 || q.GrpTRES.String() != "cpu=4,gres/gpu=0" {
		t.Fatalf("records lost a limit of 0: %+v", q)
	}
	var qos []sched.QOS
	var assocs []sched.Assoc
	f.View(func(st *State) { qos, assocs = st.Acct.SchedInputs() })
	const z = sched.LimitZero
	wantQOS := sched.Limits{
		MaxWall: sched.LimitZero, MaxJobsPerUser: z, MaxSubmitJobsPerUser: z, GrpJobs: z, GrpSubmitJobs: z,
		GrpTRES: sched.TRES{CPU: 4, GPU: z}, MaxTRESPerUser: sched.TRES{Node: z}, MaxTRESPerJob: sched.TRES{MemMB: z},
	}
	if !reflect.DeepEqual(qos[1].Limits, wantQOS) {
		t.Errorf("QoS limits:\n%+v\nwant\n%+v", qos[1].Limits, wantQOS)
	}
	wantAssocs := map[string]sched.Limits{
		"physics/":    {MaxJobsPerUser: z, GrpTRES: sched.TRES{GPU: z}, MaxTRESPerJob: sched.TRES{CPU: z}},
		"physics/ann": {MaxJobsPerUser: z, MaxSubmitJobsPerUser: z, MaxTRESPerJob: sched.TRES{CPU: z}}, // MaxJobs=0 inherited
		"physics/bob": {MaxJobsPerUser: 2, MaxTRESPerJob: sched.TRES{CPU: z}},                          // its own 2 wins
	}
	for _, a := range assocs {
		want, ok := wantAssocs[a.Account+"/"+a.User]
		if ok && !reflect.DeepEqual(a.Limits, want) {
			t.Errorf("%s/%s limits:\n%+v\nwant\n%+v", a.Account, a.User, a.Limits, want)
		}
	}

	// -1 clears a limit; a TRES key of -1 goes, the others stay.
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "qos", Names: []string{"nogpu"}, Set: api.AcctmgrSet{
		MaxJobsPerUser: ip(-1), MaxWallMin: i64(-1), GrpTRES: api.TRES{"gres/gpu": -1}}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "account", Names: []string{"physics"}, Set: api.AcctmgrSet{MaxJobs: ip(-1)}})
	f.View(func(st *State) { qos, assocs = st.Acct.SchedInputs() })
	l := qos[1].Limits
	if l.MaxJobsPerUser != 0 || l.MaxWall != 0 || l.GrpTRES != (sched.TRES{CPU: 4}) || l.GrpJobs != z {
		t.Errorf("after clearing: %+v", l)
	}
	for _, a := range assocs {
		if a.Account == "physics" && a.User != "bob" && a.Limits.MaxJobsPerUser != 0 {
			t.Errorf("%s/%s MaxJobs after clearing: %d", a.Account, a.User, a.Limits.MaxJobsPerUser)
		}
	}
}

// Submit limits refuse a submission when it applies, with Slurm's reason
// first and its accounting-policy error: arrays count one job per task,
// jobs that ended free their place, and -1 lifts the limit.
func TestAcctSubmitLimits(t *testing.T) {
	f, _ := testFSM(t, testConfig(t))
	var idx uint64
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"short"}, Set: api.AcctmgrSet{MaxSubmitJobsPerUser: ip(2)}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"physics"}, Set: api.AcctmgrSet{QOS: list("=", "normal", "short")}})
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"ann", "bob"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{MaxSubmitJobs: ip(3)}})
	t0 := time.Unix(1_800_000_000, 0).UTC()
	submit := func(user, qos, array string) (uint64, error) {
		t.Helper()
		j := &api.Job{UID: 1000, User: user, Account: "physics",
			Spec: api.JobSpec{Name: "wrap", Partition: "debug", QOS: qos, Array: array, Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp"}}
		idx++
		data, _ := Encode(&Submit{Time: t0, Job: j})
		r := f.Apply(&raft.Log{Index: idx, Data: data}).(Result)
		return r.JobID, r.Err
	}
	refused := func(err error, reason string) {
		t.Helper()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Detail != reason || ae.Message != errAccountingPolicy {
			t.Fatalf("got %v (%+v), want %s", err, ae, reason)
		}
	}
	for range 2 {
		if _, err := submit("ann", "short", ""); err != nil {
			t.Fatal(err)
		}
	}
	_, err := submit("ann", "short", "")
	refused(err, sched.ReasonQOSMaxSubmitJobPerUserLimit)
	if _, err := submit("bob", "short", ""); err != nil {
		t.Fatalf("bob has his own count: %v", err)
	}
	// ann's third job in QoS normal reaches her association's MaxSubmitJobs=3.
	if _, err := submit("ann", "normal", ""); err != nil {
		t.Fatal(err)
	}
	_, err = submit("ann", "normal", "")
	refused(err, sched.ReasonAssocMaxSubmitJobLimit)
	// bob has 1 job: an array of 3 tasks would make 4.
	_, err = submit("bob", "normal", "0-2")
	refused(err, sched.ReasonAssocMaxSubmitJobLimit)
	if _, err := submit("bob", "normal", "0-1"); err != nil {
		t.Fatal(err)
	}
	// An ended job frees its place.
	idx++
	data, _ := Encode(&Cancel{Time: t0, JobID: 1, UID: 0})
	if r := f.Apply(&raft.Log{Index: idx, Data: data}).(Result); r.Err != nil {
		t.Fatal(r.Err)
	}
	if _, err := submit("ann", "short", ""); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
	acctRoot(t, f, &idx, api.AcctmgrRequest{Action: "modify", Entity: "user", Names: []string{"ann"}, Set: api.AcctmgrSet{MaxSubmitJobs: ip(-1)}})
	if _, err := submit("ann", "normal", ""); err != nil {
		t.Fatalf("after MaxSubmitJobs=-1: %v", err)
	}
}

// A cluster whose daemons run as a normal user (SlurmUser) starts with that
// user as an Administrator with an association under root, as root is:
// with AccountingStorageEnforce=associations, their jobs are accepted.
func TestSlurmUserSeeded(t *testing.T) {
	cfg := testConfig(t)
	cfg.SlurmUser = "ann"
	f, _ := testFSM(t, cfg)
	v := acctView(f)
	var found bool
	for _, u := range v.Users {
		if u.Name == "ann" && u.AdminLevel == api.AdminAdministrator && u.DefaultAccount == "root" {
			found = true
		}
	}
	if !found {
		t.Fatalf("users %+v", v.Users)
	}
	if a := findAssoc(t, v, "root", "ann"); a.Account != "root" {
		t.Errorf("association %+v", a)
	}
	f.View(func(st *State) {
		if acctName, qos, err := st.Acct.JobAssoc("ann", "", ""); err != nil || acctName != "root" || qos != "normal" {
			t.Errorf("ann's job: %q %q %v", acctName, qos, err)
		}
	})
	// Only a new cluster is seeded: a restored one keeps its records.
	cfg.SlurmUser = "bob"
	g, _ := testFSM(t, cfg)
	var idx uint64
	acctRoot(t, g, &idx, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"x"}})
	if err := g.Restore(io.NopCloser(bytes.NewReader(persisted(t, f)))); err != nil {
		t.Fatal(err)
	}
	for _, u := range acctView(g).Users {
		if u.Name == "bob" {
			t.Error("bob was added to a restored cluster")
		}
	}
}
