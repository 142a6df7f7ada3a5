package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"hpc/cluster/api"
)

// A submission sent twice with the same token (a client's retry after a
// lost answer) makes one job, and both answers name it; another token makes
// another job.
func TestSubmitTokenOnce(t *testing.T) {
	_, cl := startOne(t)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", cl.Socket)
	}}}
	post := func(body string) uint64 {
		t.Helper()
		resp, err := hc.Post("http://x/api/submit", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out api.SubmitResponse
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
			t.Fatalf("submit: %s %s", resp.Status, b)
		}
		return out.JobID
	}
	body := `{"spec":{"script":"#!/bin/sh\ntrue\n","work_dir":"/tmp","hold":true},"token":"0123456789abcdef"}`
	first, again := post(body), post(body)
	if first != again {
		t.Errorf("the same token answered jobs %d and %d", first, again)
	}
	other := post(strings.Replace(body, "0123456789abcdef", "fedcba9876543210", 1))
	if other == first {
		t.Errorf("another token answered the same job %d", other)
	}
	jobs, err := cl.Jobs(context.Background())
	if err != nil || len(jobs) != 2 {
		t.Fatalf("jobs after three posts of two tokens: %+v %v", jobs, err)
	}
	// The client's token call: the same.
	spec := api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true}
	tok := api.NewSubmitToken()
	a, err := cl.SubmitToken(context.Background(), spec, tok)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := cl.SubmitToken(context.Background(), spec, tok); err != nil || b != a {
		t.Errorf("SubmitToken again: %d %v, want %d", b, err, a)
	}
}
