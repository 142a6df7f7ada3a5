package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// The callers of the privacy tests: ann owns the job, bob is another
// user, olga an operator (sacctmgr AdminLevel=Operator), and root.
var (
	rootID = peer.Identity{UID: 0, GID: 0, User: "root", Group: "root"}
	annID  = peer.Identity{UID: 60001, GID: 60001, User: "ann", Group: "ann"}
	bobID  = peer.Identity{UID: 60002, GID: 60002, User: "bob", Group: "bob"}
	olgaID = peer.Identity{UID: 60003, GID: 60003, User: "olga", Group: "olga"}
)

// askAs runs a route's handler for the caller id (on the leader, as the
// socket would after reading peer credentials) and decodes a 200 answer
// into out.
func askAs(t testing.TB, d *Daemon, id peer.Identity, h handler, method, path string, body, out any) (int, string) {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req := httptest.NewRequest(method, path, rd)
	req = req.WithContext(peer.WithIdentity(req.Context(), id))
	rec := httptest.NewRecorder()
	d.leaderRoute(h)(rec, req)
	if rec.Code == http.StatusOK && out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body.Bytes())
		}
	}
	return rec.Code, rec.Body.String()
}

// acctmgr makes a sacctmgr change as root.
func acctmgr(t testing.TB, d *Daemon, req api.AcctmgrRequest) {
	t.Helper()
	if code, body := serveAs(d, rootID, http.MethodPost, "/api/acctmgr", req); code != http.StatusOK {
		t.Fatalf("sacctmgr %+v: %d %s", req, code, body)
	}
}

// privacyUsers gives ann, bob and olga associations under the account
// physics; olga is an operator.
func privacyUsers(t *testing.T, d *Daemon) {
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"physics"}})
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"ann", "bob"}, Accounts: []string{"physics"}})
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"olga"}, Accounts: []string{"physics"},
		Set: api.AcctmgrSet{AdminLevel: new("Operator")}})
}

// submitAs submits a job as id; the error's message on refusal.
func submitAs(t *testing.T, d *Daemon, id peer.Identity, spec api.JobSpec) (uint64, string) {
	t.Helper()
	var out api.SubmitResponse
	code, body := askAs(t, d, id, d.handleSubmit, http.MethodPost, "/api/submit", api.SubmitRequest{Spec: spec}, &out)
	if code != http.StatusOK {
		var ae api.Error
		json.Unmarshal([]byte(body), &ae)
		return 0, ae.Message
	}
	return out.JobID, ""
}

// jobsAs is /api/jobs as id: the job of that id if listed.
func jobsAs(t *testing.T, d *Daemon, id peer.Identity, jid uint64) (api.Job, bool) {
	t.Helper()
	var out api.JobsResponse
	if code, body := askAs(t, d, id, d.handleJobs, http.MethodGet, "/api/jobs?whole=1", nil, &out); code != http.StatusOK {
		t.Fatalf("jobs as %s: %d %s", id.User, code, body)
	}
	for _, j := range out.Jobs {
		if j.ID == jid {
			return j, true
		}
	}
	return api.Job{}, false
}

const secretScript = "#!/bin/sh\necho $TOKEN\nsleep 300\n"

// whole reports whether j carries the secret script, environment and
// --export list; withheld whether all three were emptied (and said so).
func whole(j api.Job) bool {
	return j.Spec.Script == secretScript && slices.Contains(j.Spec.Env, "TOKEN=s3cret") && j.Spec.Export == "ALL,TOKEN=s3cret" && !j.Withheld
}

func withheld(j api.Job) bool {
	return j.Spec.Script == "" && j.Spec.Env == nil && j.Spec.Export == "" && j.Withheld && j.HasScript() && j.User == "ann"
}

// A job's batch script and environment (its tokens) go to its owner, root
// and operators only; everyone else sees the rest of the job, unless
// PrivateData=jobs hides it from them altogether: from squeue and scontrol
// (/api/jobs), sbatch --wait (/api/wait), sacct (/api/acct), sprio
// (/api/priority). scontrol write batch_script answers the others "Invalid
// user id" either way; PrivateData=usage narrows sshare to one's own rows.
func TestJobPrivacy(t *testing.T) {
	for _, private := range []bool{false, true} {
		t.Run(fmt.Sprintf("PrivateData=%v", private), func(t *testing.T) {
			extra := "PriorityType=priority/multifactor\nPriorityWeightAge=100\n"
			if private {
				extra += "PrivateData=jobs,usage\n"
			}
			d, cl := startOneConf(t, extra, func(*Options) {})
			privacyUsers(t, d)
			ctx := context.Background()
			dir := t.TempDir()
			// A job of root's fills the node, so ann's stays pending.
			block, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 300\n", WorkDir: dir, NTasks: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{block}}) })
			waitJob(t, cl, block, api.StateRunning)
			jid, msg := submitAs(t, d, annID, api.JobSpec{Script: secretScript, WorkDir: dir, Name: "secret",
				Env: []string{"PATH=/bin", "TOKEN=s3cret"}, Export: "ALL,TOKEN=s3cret"})
			if msg != "" {
				t.Fatalf("ann's submission: %s", msg)
			}
			t.Cleanup(func() { cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{jid}}) })

			// squeue, scontrol show job.
			for _, id := range []peer.Identity{annID, rootID, olgaID} {
				if j, ok := jobsAs(t, d, id, jid); !ok || !whole(j) {
					t.Errorf("/api/jobs as %s: listed %v, %+v", id.User, ok, j.Spec)
				}
			}
			j, ok := jobsAs(t, d, bobID, jid)
			switch {
			case private && ok:
				t.Errorf("/api/jobs as bob lists ann's job with PrivateData=jobs: %+v", j)
			case !private && (!ok || !withheld(j) || j.Spec.Name != "secret"):
				t.Errorf("/api/jobs as bob: listed %v, %+v (withheld %v)", ok, j.Spec, j.Withheld)
			}
			if _, ok := jobsAs(t, d, bobID, block); ok == private {
				t.Errorf("/api/jobs as bob: root's job listed %v", ok)
			}

			// sbatch --wait's long poll.
			wait := fmt.Sprintf("/api/wait?job=%d&timeout=10ms", jid)
			for _, id := range []peer.Identity{annID, rootID, olgaID} {
				var got api.Job
				if code, body := askAs(t, d, id, d.handleWait, http.MethodGet, wait, nil, &got); code != http.StatusOK || !whole(got) {
					t.Errorf("/api/wait as %s: %d %s", id.User, code, body)
				}
			}
			var got api.Job
			code, body := askAs(t, d, bobID, d.handleWait, http.MethodGet, wait, nil, &got)
			switch {
			case private && (code != http.StatusNotFound || !strings.Contains(body, api.ErrInvalidJobID)):
				t.Errorf("/api/wait as bob with PrivateData=jobs: %d %s", code, body)
			case !private && (code != http.StatusOK || !withheld(got)):
				t.Errorf("/api/wait as bob: %d %s", code, body)
			}

			// sacct -a (all=1), and sacct -j without -a.
			acctJobs := func(id peer.Identity, query string) []uint64 {
				var out api.AcctResponse
				if code, body := askAs(t, d, id, d.handleAcct, http.MethodGet, "/api/acct?"+query, nil, &out); code != http.StatusOK {
					t.Fatalf("/api/acct as %s: %d %s", id.User, code, body)
				}
				var ids []uint64
				for _, r := range out.Rows {
					if r.Step == "" {
						ids = append(ids, r.JobID)
					}
				}
				return ids
			}
			for _, id := range []peer.Identity{rootID, olgaID} {
				if ids := acctJobs(id, "all=1"); !slices.Contains(ids, jid) || !slices.Contains(ids, block) {
					t.Errorf("sacct -a as %s: %v", id.User, ids)
				}
			}
			if ids := acctJobs(annID, "all=1"); !slices.Contains(ids, jid) || slices.Contains(ids, block) == private {
				t.Errorf("sacct -a as ann: %v", ids)
			}
			if ids := acctJobs(bobID, "all=1"); slices.Contains(ids, jid) == private {
				t.Errorf("sacct -a as bob: %v", ids)
			}
			if ids := acctJobs(bobID, fmt.Sprintf("jobs=%d", jid)); len(ids) != 0 {
				t.Errorf("sacct -j %d as bob without -a: %v", jid, ids)
			}

			// sprio: ann's pending job, once the scheduler has ranked it.
			prio := func(id peer.Identity) []uint64 {
				var out api.PriorityResponse
				if code, body := askAs(t, d, id, d.handlePriority, http.MethodGet, "/api/priority", nil, &out); code != http.StatusOK {
					t.Fatalf("/api/priority as %s: %d %s", id.User, code, body)
				}
				var ids []uint64
				for _, r := range out.Rows {
					ids = append(ids, r.JobID)
				}
				return ids
			}
			deadline := time.Now().Add(20 * time.Second)
			for !slices.Contains(prio(rootID), jid) {
				if time.Now().After(deadline) {
					t.Fatalf("ann's job never ranked: %v", prio(rootID))
				}
				time.Sleep(50 * time.Millisecond)
			}
			for _, id := range []peer.Identity{annID, olgaID} {
				if !slices.Contains(prio(id), jid) {
					t.Errorf("sprio as %s lacks ann's job", id.User)
				}
			}
			if slices.Contains(prio(bobID), jid) == private {
				t.Errorf("sprio as bob: %v", prio(bobID))
			}

			// scontrol write batch_script.
			script := fmt.Sprintf("/api/jobscript?job=%d", jid)
			for _, id := range []peer.Identity{annID, rootID, olgaID} {
				var js api.JobScript
				if code, body := askAs(t, d, id, d.handleJobScript, http.MethodGet, script, nil, &js); code != http.StatusOK || js.Script != secretScript {
					t.Errorf("jobscript as %s: %d %s", id.User, code, body)
				}
			}
			if code, body := askAs(t, d, bobID, d.handleJobScript, http.MethodGet, script, nil, nil); code != http.StatusForbidden || !strings.Contains(body, api.ErrUserIDMissing) {
				t.Errorf("jobscript as bob: %d %s", code, body)
			}
			if code, body := askAs(t, d, annID, d.handleJobScript, http.MethodGet, "/api/jobscript?job=999", nil, nil); code != http.StatusNotFound || !strings.Contains(body, api.ErrInvalidJobID) {
				t.Errorf("jobscript of no job: %d %s", code, body)
			}

			// sshare: bob's own rows only with PrivateData=usage.
			var share api.ShareResponse
			askAs(t, d, bobID, d.handleShare, http.MethodGet, "/api/share", nil, &share)
			others := 0
			for _, r := range share.Rows {
				if r.User != "bob" {
					others++
				}
			}
			if (others == 0) != private || len(share.Rows) == others {
				t.Errorf("sshare as bob: %d rows, %d not bob's", len(share.Rows), others)
			}
		})
	}
}

// AccountingStorageEnforce at submit (the lab's config has
// associations,limits,qos): a user without an association, or asking for
// an account they have none under, is refused with Slurm's text; so is a
// QoS the association may not use. Without the key both are accepted: the
// job gets the user's default account.
func TestAccountingStorageEnforce(t *testing.T) {
	for _, enforced := range []bool{true, false} {
		t.Run(fmt.Sprintf("enforced=%v", enforced), func(t *testing.T) {
			extra := ""
			if !enforced {
				extra = "AccountingStorageEnforce=none\n"
			}
			d, _ := startOneConf(t, extra, func(*Options) {})
			privacyUsers(t, d)
			acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"chemistry"}})
			acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "qos", Names: []string{"high"}})
			carl := peer.Identity{UID: 60004, GID: 60004, User: "carl", Group: "carl"}
			spec := func(account, qos string) api.JobSpec {
				return api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: t.TempDir(), Hold: true, Account: account, QOS: qos}
			}
			for _, c := range []struct {
				who           peer.Identity
				account, qos  string
				refused       string // when enforced
				wantAcct, wQS string // when accepted
			}{
				{annID, "", "", "", "physics", "normal"},
				{rootID, "", "", "", "root", "normal"},
				{carl, "", "", api.ErrInvalidAccount, "", ""},
				{annID, "chemistry", "", api.ErrInvalidAccount, "physics", "normal"},
				{annID, "", "high", api.ErrInvalidQOS, "physics", "high"},
				{annID, "", "nosuch", api.ErrInvalidQOS, "", ""},
			} {
				jid, msg := submitAs(t, d, c.who, spec(c.account, c.qos))
				what := fmt.Sprintf("%s -A %q --qos %q", c.who.User, c.account, c.qos)
				want := ""
				if enforced || c.qos == "nosuch" {
					want = c.refused
				}
				if msg != want {
					t.Errorf("%s: refused %q, want %q", what, msg, want)
					continue
				}
				if msg != "" {
					continue
				}
				j, _ := jobsAs(t, d, rootID, jid)
				if j.Account != c.wantAcct || j.Spec.QOS != c.wQS {
					t.Errorf("%s: account %q qos %q, want %q %q", what, j.Account, j.Spec.QOS, c.wantAcct, c.wQS)
				}
			}
		})
	}
}

// testUserAssoc gives the user running the tests, if not root, an
// association, as an administrator would: the lab's config enforces
// associations, and the tests submit through the socket as that user.
func testUserAssoc(t testing.TB, d *Daemon) {
	t.Helper()
	if os.Getuid() == 0 {
		return
	}
	me := peer.LookupIdentity(uint32(os.Getuid()), uint32(os.Getgid()))
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"tests"}})
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{me.User}, Accounts: []string{"tests"}})
}

// Operators act on other users' jobs as root does (scancel, scontrol
// hold/release/update); another user may not.
func TestOperatorsActOnJobs(t *testing.T) {
	d, _ := startOne(t)
	privacyUsers(t, d)
	spec := api.JobSpec{Name: "j", Script: "#!/bin/sh\nsleep 300\n", WorkDir: "/tmp", Hold: true, TimeLimitMin: 10}
	a, msg := submitAs(t, d, annID, spec)
	if msg != "" {
		t.Fatal(msg)
	}
	control := func(id peer.Identity, action string) string {
		var out api.JobControlResponse
		askAs(t, d, id, d.handleJobControl, http.MethodPost, "/api/jobcontrol", api.JobControlRequest{Action: action, JobIDs: []uint64{a}}, &out)
		if len(out.Results) != 1 {
			t.Fatalf("%s as %s: %+v", action, id.User, out)
		}
		return out.Results[0].Error
	}
	if e := control(bobID, "release"); e != api.ErrAccessDenied {
		t.Errorf("bob releasing ann's job: %q", e)
	}
	if e := control(olgaID, "hold"); e != "" {
		t.Errorf("an operator holding ann's job: %q", e)
	}
	if j, _ := jobsAs(t, d, olgaID, a); j.Hold != "admin" {
		t.Errorf("an operator's hold is %q, want admin", j.Hold)
	}
	if e := control(annID, "release"); e != api.ErrAccessDenied {
		t.Errorf("ann releasing an administrator's hold: %q", e)
	}
	if err := d.updateJob(olgaID, api.UpdateRequest{JobID: a, Set: map[string]string{"TimeLimit": "60"}}); err != nil {
		t.Errorf("an operator extending ann's time limit: %v", err)
	}
	if err := d.updateJob(bobID, api.UpdateRequest{JobID: a, Set: map[string]string{"TimeLimit": "10"}}); err == nil {
		t.Error("bob updated ann's job")
	}
	var out api.CancelResponse
	askAs(t, d, bobID, d.handleCancel, http.MethodPost, "/api/cancel", api.CancelRequest{JobIDs: []uint64{a}}, &out)
	if len(out.Results) != 1 || out.Results[0].Error != api.ErrAccessDenied {
		t.Errorf("bob cancelling ann's job: %+v", out)
	}
	out = api.CancelResponse{}
	code, body := askAs(t, d, olgaID, d.handleCancel, http.MethodPost, "/api/cancel", api.CancelRequest{JobIDs: []uint64{a}}, &out)
	if len(out.Results) != 1 || out.Results[0].Error != "" {
		t.Errorf("an operator cancelling ann's job: %d %s", code, body)
	}
}
