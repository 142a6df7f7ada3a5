package cluster

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// A submission past a size limit is refused with Slurm's error, naming
// what was too big, and the controller goes on: the script
// (max_script_size), one environment variable, an array past MaxArraySize,
// a request body past its route's limit.
func TestSubmissionBounds(t *testing.T) {
	d, cl := startOneConf(t, "SchedulerParameters=max_script_size=1000\nMaxArraySize=10\n", func(*Options) {})
	ctx := context.Background()
	script := "#!/bin/sh\n" + strings.Repeat("# padding\n", 100)
	for name, c := range map[string]struct {
		spec   api.JobSpec
		msg    string
		detail string
	}{
		"script":   {api.JobSpec{Script: script, WorkDir: "/tmp"}, api.ErrTooLong, "script is 1010 bytes"},
		"variable": {api.JobSpec{Script: "#!/bin/sh\n", WorkDir: "/tmp", Env: []string{"BIG=" + strings.Repeat("x", 200<<10)}}, api.ErrTooLong, "environment variable"},
		"array":    {api.JobSpec{Script: "#!/bin/sh\n", WorkDir: "/tmp", Array: "0-10"}, api.ErrInvalidArray, ""},
		"name":     {api.JobSpec{Script: "#!/bin/sh\n", WorkDir: "/tmp", Name: strings.Repeat("n", 2000)}, api.ErrTooLong, "name"},
	} {
		_, err := cl.Submit(ctx, c.spec)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Message != c.msg || !strings.Contains(ae.Detail, c.detail) {
			t.Errorf("%s: %v (%+v), want %q", name, err, ae, c.msg)
		}
	}
	if _, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\n", WorkDir: "/tmp", Array: "0-9"}); err != nil {
		t.Errorf("an array within MaxArraySize: %v", err)
	}

	// A body past its route's limit: 413, read no further than the limit.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", cl.Socket)
	}}}
	big := `{"job_ids":[` + strings.Repeat("1,", 1<<20) + `1]}`
	resp, err := hc.Post("http://x/api/jobcontrol", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB job control request: %s", resp.Status)
	}
	if jobs, err := cl.Jobs(ctx); err != nil || len(jobs) != 10 {
		t.Errorf("after the refusals: %d jobs, %v", len(jobs), err)
	}
	_ = d
}

// Each user's submissions are held to the rate limit (a bucket of
// rl_bucket_size refilled rl_refill_rate a second); root is not limited,
// and one user's burst does not slow another.
func TestSubmitRateLimit(t *testing.T) {
	l := newSubmitLimiter(3, 1)
	t0 := time.Now()
	for i := range 3 {
		if !l.allow(1000, t0) {
			t.Fatalf("submission %d within the burst refused", i+1)
		}
	}
	if l.allow(1000, t0) {
		t.Error("a fourth submission in the same instant allowed")
	}
	if !l.allow(1001, t0) {
		t.Error("another user was slowed by the first")
	}
	if !l.allow(1000, t0.Add(1100*time.Millisecond)) {
		t.Error("no refill after a second")
	}
	for range 100 {
		if !l.allow(0, t0) {
			t.Fatal("root was limited")
		}
	}

	d, _ := startOneConf(t, "SlurmctldParameters=rl_bucket_size=2,rl_refill_rate=1\n", func(*Options) {})
	h := d.rateLimited(func(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
		peer.WriteJSON(w, struct{}{})
	})
	codes := ""
	for range 3 {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodPost, "/api/submit", nil), peer.Identity{UID: 1000, User: "ann"}, nil)
		codes += http.StatusText(rec.Code) + ";"
		if rec.Code == http.StatusTooManyRequests && !strings.Contains(rec.Body.String(), api.ErrRateLimit) {
			t.Errorf("refusal: %s", rec.Body)
		}
	}
	if codes != "OK;OK;Too Many Requests;" {
		t.Errorf("three submissions at once, bucket of 2: %s", codes)
	}
}
