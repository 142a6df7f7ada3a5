package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"os/user"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// whoami asks the web side of d's API port who it takes the caller for.
func whoami(t *testing.T, d *Daemon, method string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+d.addr(d.cfg.APIPort)+"/hpc/whoami", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestWebIdentity(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()

	// No token, from the machine itself: an anonymous viewer, who may
	// only look.
	if code, out := whoami(t, d, http.MethodGet, nil); code != http.StatusOK || out["anonymous"] != true || out["user"] != "(anonymous)" || out["uid"] != float64(anonymousUID) {
		t.Errorf("anonymous: %d %v", code, out)
	}
	if code, _ := whoami(t, d, http.MethodPost, nil); code != http.StatusForbidden {
		t.Errorf("anonymous POST: %d, want 403", code)
	}

	// scontrol token's token names the caller (root here).
	tok, err := cl.Token(ctx, api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	me, _ := user.Current()
	code, out := whoami(t, d, http.MethodGet, map[string]string{hdrSlurmUser: me.Username, hdrSlurmToken: tok})
	if code != http.StatusOK || out["user"] != me.Username || out["anonymous"] != false {
		t.Errorf("with a token: %d %v", code, out)
	}
	if code, out := whoami(t, d, http.MethodGet, map[string]string{"Authorization": "Bearer " + tok}); code != http.StatusOK || out["user"] != me.Username {
		t.Errorf("bearer: %d %v", code, out)
	}

	for name, hdr := range map[string]map[string]string{
		"another user's name": {hdrSlurmUser: "nobody-else", hdrSlurmToken: tok},
		"a forged token":      {hdrSlurmUser: me.Username, hdrSlurmToken: tok[:len(tok)-2] + "xx"},
		"a name, no token":    {hdrSlurmUser: me.Username},
		"another key's token": {hdrSlurmToken: mustToken(t, []byte("some other cluster's key, 32 by!"), me.Username, time.Now(), time.Hour)},
		"an expired token":    {hdrSlurmToken: mustToken(t, d.o.Key, me.Username, time.Now().Add(-2*time.Hour), time.Hour)},
	} {
		if code, out := whoami(t, d, http.MethodGet, hdr); code != http.StatusUnauthorized {
			t.Errorf("%s: %d %v, want 401", name, code, out)
		}
	}

	// Root may make a token for another user; the API itself is not a web
	// route.
	if me.Uid == "0" {
		tok, err := cl.Token(ctx, api.TokenRequest{User: "nobody", Lifespan: 60})
		if err != nil {
			t.Fatal(err)
		}
		if code, out := whoami(t, d, http.MethodGet, map[string]string{hdrSlurmToken: tok}); code != http.StatusOK || out["user"] != "nobody" || out["anonymous"] != false {
			t.Errorf("root's token for nobody: %d %v", code, out)
		}
		if _, err := cl.Token(ctx, api.TokenRequest{User: "no-such-user-here"}); err == nil {
			t.Error("a token for a user the machine does not know")
		}
	}
	resp, err := http.Get("http://" + d.addr(d.cfg.APIPort) + "/api/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/api/jobs over plain HTTP: %s", resp.Status)
	}
}

func mustToken(t *testing.T, key []byte, user string, now time.Time, life time.Duration) string {
	t.Helper()
	tok, err := peer.MakeToken(key, user, now, life)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestLoopbackPeer(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:5000": true, "127.66.3.1:1": true, "[::1]:80": true,
		"10.0.0.1:5000": false, "[2001:db8::1]:80": false, "garbage": false,
	} {
		if got := loopbackPeer(addr); got != want {
			t.Errorf("loopbackPeer(%q) = %v", addr, got)
		}
	}
}
