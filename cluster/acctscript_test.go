package cluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// sacct -B and --env-vars: the accounting store keeps a batch job's
// script and environment only where AccountingStoreFlags asks for them,
// and /api/acct gives them, on a query by job id, to the job's owner,
// root and operators only (bob gets the row without them).
func TestAcctScriptAndEnv(t *testing.T) {
	for _, flags := range []string{"", "AccountingStoreFlags=job_script,job_env\n"} {
		t.Run(fmt.Sprintf("flags=%q", flags), func(t *testing.T) {
			d, cl := startOneConf(t, flags, func(*Options) {})
			privacyUsers(t, d)
			ctx := context.Background()
			jid, msg := submitAs(t, d, annID, api.JobSpec{Script: secretScript, WorkDir: t.TempDir(), Name: "secret",
				Env: []string{"PATH=/bin", "TOKEN=s3cret"}, Hold: true})
			if msg != "" {
				t.Fatalf("ann's submission: %s", msg)
			}
			t.Cleanup(func() { cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{jid}}) })
			for _, id := range []peer.Identity{annID, bobID, olgaID, rootID} {
				var out api.AcctResponse
				path := fmt.Sprintf("/api/acct?jobs=%d&all=1", jid)
				if code, body := askAs(t, d, id, d.handleAcct, http.MethodGet, path, nil, &out); code != http.StatusOK {
					t.Fatalf("acct as %s: %d %s", id.User, code, body)
				}
				if len(out.Rows) == 0 {
					t.Fatalf("acct as %s: no rows", id.User)
				}
				r := out.Rows[0]
				sees := flags != "" && id.User != "bob"
				gotScript := r.Script != nil && *r.Script == secretScript
				gotEnv := slices.Contains(r.Env, "TOKEN=s3cret")
				if gotScript != sees || gotEnv != sees || (!sees && (r.Script != nil || r.Env != nil)) {
					t.Errorf("acct as %s: script %v env %v, want them %v", id.User, r.Script, r.Env, sees)
				}
				if r.JobName != "secret" || r.Group == "" {
					t.Errorf("acct as %s: row %+v", id.User, r)
				}
			}
			// Without job ids, no texts, whoever asks.
			var out api.AcctResponse
			askAs(t, d, rootID, d.handleAcct, http.MethodGet, "/api/acct?all=1", nil, &out)
			for _, r := range out.Rows {
				if r.Script != nil || r.Env != nil {
					t.Errorf("texts in a query without job ids: %+v", r)
				}
			}
		})
	}
}
