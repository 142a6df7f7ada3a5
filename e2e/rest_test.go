package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLabREST drives Slurm's REST API on nodes that do not lead: a lab of
// 4 (node1-3 controllers, node4 compute only). nobody makes a token with
// scontrol token on a node, then submits a job through the plain-HTTP
// side of a follower's API port and one through node4's (X-SLURM-USER-NAME
// and X-SLURM-USER-TOKEN), sees each in squeue and sacct as its own, and
// cancels each with DELETE on the node it used; without a token the API
// answers 401.
func TestLabREST(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-rest-", 4, "KillWait=2\n")
	work := filepath.Join(l.top, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	out, errs, code := l.run(nobody, work, "scontrol", "token", "lifespan=600")
	tok, ok := strings.CutPrefix(strings.TrimSpace(out), "SLURM_JWT=")
	if code != 0 || !ok {
		t.Fatalf("scontrol token: %d %q %q", code, out, errs)
	}
	leader := l.status("node1").Leader
	follower := "node1"
	if leader == follower {
		follower = "node2"
	}
	t.Logf("%s leads; submitting through %s and node4", leader, follower)

	for _, node := range []string{follower, "node4"} {
		base := fmt.Sprintf("http://%s%s:%d/slurm/v0.0.38", l.net, strings.TrimPrefix(node, "node"), l.api)
		if code, body := restCall(t, http.MethodGet, base+"/jobs", "", nil); code != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d %s", node, code, body)
		}
		name := "rest-" + node
		sub, _ := json.Marshal(map[string]any{
			"job": map[string]any{
				"name": name, "time_limit": 5, "current_working_directory": work,
				"environment": map[string]string{"PATH": "/bin:/usr/bin"},
			},
			"script": "#!/bin/sh\nexec sleep 300\n",
		})
		code, body := restCall(t, http.MethodPost, base+"/job/submit", tok, sub)
		var ans struct {
			JobID uint64 `json:"job_id"`
		}
		if err := json.Unmarshal(body, &ans); err != nil || code != http.StatusOK || ans.JobID == 0 {
			t.Fatalf("submit through %s: %d %s", node, code, body)
		}
		id := ans.JobID
		l.waitState(id, "R")
		if q, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(id), "-o", "%i %u %j %t"); strings.TrimSpace(q) != fmt.Sprintf("%d nobody %s R", id, name) {
			t.Errorf("squeue: %q", q)
		}
		if row := l.acctRowOf(id, "JobID,JobName,User,State"); row != fmt.Sprintf("%d|%s|nobody|RUNNING", id, name) {
			t.Errorf("sacct: %q", row)
		}
		if code, body := restCall(t, http.MethodGet, fmt.Sprintf("%s/job/%d", base, id), tok, nil); code != http.StatusOK || !strings.Contains(string(body), `"name": "`+name+`"`) {
			t.Errorf("GET job/%d through %s: %d %.300s", id, node, code, body)
		}
		if code, body := restCall(t, http.MethodDelete, fmt.Sprintf("%s/job/%d", base, id), tok, nil); code != http.StatusOK {
			t.Errorf("DELETE job/%d through %s: %d %s", id, node, code, body)
		}
		waitFor(t, 30*time.Second, fmt.Sprintf("job %d cancelled in sacct", id), func() (bool, string) {
			row := l.acctRowOf(id, "JobID,User,State")
			return strings.HasPrefix(row, fmt.Sprintf("%d|nobody|CANCELLED", id)), row
		})
	}
}

// restCall sends a REST request with nobody's token (none if tok is "")
// and returns the status and body.
func restCall(t *testing.T, method, url, tok string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("X-SLURM-USER-NAME", "nobody")
		req.Header.Set("X-SLURM-USER-TOKEN", tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// acctRowOf is the sacct -X -P line of a job in the fields named.
func (l *labT) acctRowOf(id uint64, fields string) string {
	l.t.Helper()
	out, errs, code := l.run(0, l.top, "acct", "-X", "-P", "-n", "-j", fmt.Sprint(id), "-o", fields)
	if code != 0 {
		l.t.Fatalf("acct: %s %s", out, errs)
	}
	return strings.TrimSpace(out)
}
