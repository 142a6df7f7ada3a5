package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// TestJobOutputTail: the tail of a running job's output, read on its
// batch host as the job's owner: its owner, root and an operator get it,
// bounded (api.MaxJobOutputTail, or less if asked) and from a whole
// line; another user and the anonymous viewer do not, nor does the
// anonymous viewer on the web side; a symbolic link put in the output's
// place, even to a file its owner may read, and a file only root may
// read are refused and leak nothing.
func TestJobOutputTail(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (files read as the job's user)")
	}
	d, cl := startOne(t)
	ctx := context.Background()
	// The batch script of nobody's job is read from the node's state
	// directory: let nobody through the test's directories.
	for p := d.o.Dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	privacyUsers(t, d) // ann, bob; olga an operator
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"nobody"}, Accounts: []string{"physics"}})
	dir, err := os.MkdirTemp("", "joboutput")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)

	// 3000 lines of 41 bytes: 123,000 bytes, more than one tail.
	script := "#!/bin/sh\nfor i in $(seq 1 3000); do printf 'tail-line-%05d ........................\\n' $i; done\nsleep 300\n"
	jid, msg := submitAs(t, d, nobodyID, api.JobSpec{Name: "tail", Script: script, WorkDir: dir})
	if msg != "" {
		t.Fatal(msg)
	}
	waitJob(t, cl, jid, api.StateRunning)
	path := filepath.Join(dir, fmt.Sprintf("slurm-%d.out", jid))
	identities := map[string]peer.Identity{"nobody": nobodyID, "root": rootID, "olga": olgaID, "bob": bobID, "anonymous": anonymous.Identity}
	ask := func(who string, query string) (int, api.JobOutput, string) {
		var out api.JobOutput
		code, body := askAs(t, d, identities[who], d.handleJobOutput, http.MethodGet, "/api/job/output?job="+itoa(jid)+query, nil, &out)
		return code, out, body
	}
	var got api.JobOutput
	waitUntil(t, 20*time.Second, "the whole output written", func() (bool, string) {
		code, out, body := ask("nobody", "")
		got = out
		return code == http.StatusOK && strings.HasSuffix(out.Data, "tail-line-03000 ........................\n"), body
	})
	if got.Size != 123000 || got.Offset < got.Size-api.MaxJobOutputTail || len(got.Data) > api.MaxJobOutputTail ||
		!strings.HasPrefix(got.Data, "tail-line-") || got.Path != path || got.Node != "node1" || got.Stream != "stdout" {
		t.Errorf("the owner's tail: size %d offset %d, %d bytes from %.20q, %s on %s", got.Size, got.Offset, len(got.Data), got.Data, got.Path, got.Node)
	}
	if int64(len(got.Data)) != got.Size-got.Offset {
		t.Errorf("%d bytes from offset %d of %d", len(got.Data), got.Offset, got.Size)
	}
	if code, out, body := ask("nobody", "&max=100&stream=stderr"); code != http.StatusOK || len(out.Data) > 100 || !strings.HasSuffix(out.Data, "03000 ........................\n") {
		t.Errorf("max=100 of stderr (the same file): %d %s", code, body)
	}
	for _, who := range []string{"root", "olga"} {
		if code, out, body := ask(who, ""); code != http.StatusOK || out.Data != got.Data {
			t.Errorf("%s: %d %.200s", who, code, body)
		}
	}
	for _, who := range []string{"bob", "anonymous"} {
		if code, _, body := ask(who, ""); code != http.StatusForbidden || !strings.Contains(body, api.ErrUserIDMissing) || strings.Contains(body, "tail-line") {
			t.Errorf("%s: %d %.200s", who, code, body)
		}
	}
	// The web side: the anonymous viewer is refused; the owner's token
	// reads it.
	if code, _, body := dashGet(t, d, "/hpc/dashboard/job/output?id="+itoa(jid), nil); code != http.StatusForbidden || strings.Contains(string(body), "tail-line") {
		t.Errorf("anonymous on the web: %d %.200s", code, body)
	}
	tok, err := cl.Token(ctx, api.TokenRequest{User: "nobody", Lifespan: 300})
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := dashGet(t, d, "/hpc/dashboard/job/output?id="+itoa(jid), map[string]string{"Cookie": tokenCookie + "=" + tok})
	var web api.JobOutput
	if json.Unmarshal(body, &web); code != http.StatusOK || web.Data != got.Data {
		t.Errorf("the owner on the web: %d %.200s", code, body)
	}

	// The output's place taken by a link to root's file, by a link to a
	// file nobody may read, and by root's own file: refused, nothing of
	// them shown.
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("root-secret\n"), 0o600)
	readable := filepath.Join(dir, "readable")
	os.WriteFile(readable, []byte("readable-by-all\n"), 0o644)
	for _, c := range []struct {
		name, target, want string
		link               bool
	}{
		{"a link to root's file", secret, "Too many levels of symbolic links", true},
		{"a link to a readable file", readable, "Too many levels of symbolic links", true},
		{"root's file", secret, "Permission denied", false},
	} {
		os.Remove(path)
		if c.link {
			os.Symlink(c.target, path)
		} else {
			b, _ := os.ReadFile(c.target)
			os.WriteFile(path, b, 0o600)
		}
		code, _, body := ask("nobody", "")
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) || strings.Contains(body, "secret") || strings.Contains(body, "readable-by-all") {
			t.Errorf("%s: %d %.200s", c.name, code, body)
		}
		if code, _, body := ask("root", ""); code != http.StatusBadRequest || strings.Contains(body, "root-secret") {
			t.Errorf("%s, asked by root: %d %.200s", c.name, code, body)
		}
	}
	if _, err := cl.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{jid}}); err != nil {
		t.Fatal(err)
	}
}
