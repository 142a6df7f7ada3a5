package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// triggerScript writes an executable script, in a directory anyone may
// enter, that appends its arguments and its uid to out (a file anyone may
// write).
func triggerScript(t *testing.T) (prog, out string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "trig")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	out = filepath.Join(dir, "out")
	prog = filepath.Join(dir, "prog")
	script := "#!/bin/sh\necho \"$(id -u) $*\" >> " + out + "\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, out
}

// waitLines waits until out holds n lines and returns them.
func waitLines(t *testing.T, out string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(out)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(b) > 0 && len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q, want %d lines", out, b, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func triggerErr(body string) string {
	var ae api.Error
	json.Unmarshal([]byte(body), &ae)
	return ae.Message
}

// Set, get and clear through a real daemon, with Slurm's permissions: a
// user may not set triggers unless allow_user_triggers; a user clears
// only their own; the program must be executable by its owner.
func TestTriggerRoutes(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the daemon's SlurmUser must be root for user triggers")
	}
	prog, _ := triggerScript(t)
	d, cl := startOne(t)
	ctx := context.Background()
	down := api.Trigger{ResType: "node", ResID: "*", Types: []string{"down"}, Program: prog}
	code, body := askAs(t, d, annID, d.handleTriggerSet, http.MethodPost, "/api/trigger/set", down, nil)
	if code != http.StatusForbidden || triggerErr(body) != api.ErrAccessDenied {
		t.Errorf("user's set without allow_user_triggers: %d %s", code, body)
	}
	if err := cl.SetTrigger(ctx, down); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetTrigger(ctx, down); err == nil || err.Error() != api.ErrTriggerDup {
		t.Errorf("duplicate: %v", err)
	}
	if err := cl.SetTrigger(ctx, api.Trigger{ResType: "job", ResID: "42", Types: []string{"fini"}, Program: prog}); err == nil || err.Error() != api.ErrInvalidJobID {
		t.Errorf("trigger of no job: %v", err)
	}
	ts, err := cl.Triggers(ctx)
	if err != nil || len(ts) != 1 || ts[0].ID != 1 || ts[0].UID != 0 || ts[0].TypeName() != "down" {
		t.Fatalf("get: %+v %v", ts, err)
	}
	if err := cl.ClearTrigger(ctx, api.TriggerClearRequest{ID: 9}); err == nil || err.Error() != api.ErrNoSuchProcess {
		t.Errorf("clear of none: %v", err)
	}
	if err := cl.ClearTrigger(ctx, api.TriggerClearRequest{ID: 1}); err != nil {
		t.Errorf("clear: %v", err)
	}

	d, cl = startOneConf(t, "SlurmctldParameters=allow_user_triggers\n", func(*Options) {})
	if err := cl.SetTrigger(ctx, down); err != nil {
		t.Fatal(err)
	}
	up := api.Trigger{ResType: "node", ResID: "node1", Types: []string{"up"}, Program: prog + " --from-ann"}
	if code, body := askAs(t, d, annID, d.handleTriggerSet, http.MethodPost, "/api/trigger/set", up, nil); code != http.StatusOK {
		t.Fatalf("user's set with allow_user_triggers: %d %s", code, body)
	}
	os.Chmod(prog, 0o700) // root's alone now
	code, body = askAs(t, d, bobID, d.handleTriggerSet, http.MethodPost, "/api/trigger/set", down, nil)
	if code != http.StatusForbidden || triggerErr(body) != api.ErrAccessDenied {
		t.Errorf("program bob may not run: %d %s", code, body)
	}
	// Everyone sees every trigger (strigger filters).
	var list api.TriggerList
	if code, _ := askAs(t, d, bobID, d.handleTriggers, http.MethodGet, "/api/triggers", nil, &list); code != http.StatusOK ||
		len(list.Triggers) != 2 || list.Triggers[1].UID != annID.UID || list.Triggers[1].GID != annID.GID {
		t.Fatalf("bob's get: %+v", list)
	}
	clear := func(id peer.Identity, req api.TriggerClearRequest) (int, string) {
		return askAs(t, d, id, d.handleTriggerClear, http.MethodPost, "/api/trigger/clear", req, nil)
	}
	if code, body := clear(annID, api.TriggerClearRequest{ID: 1}); code == http.StatusOK || triggerErr(body) != api.ErrAccessDenied {
		t.Errorf("ann clears root's: %d %s", code, body)
	}
	if code, body := clear(annID, api.TriggerClearRequest{UID: annID.UID, UserSet: true}); code != http.StatusOK {
		t.Errorf("ann clears her own: %d %s", code, body)
	}
	if code, body := clear(rootID, api.TriggerClearRequest{ID: 1}); code != http.StatusOK {
		t.Errorf("root clears: %d %s", code, body)
	}
	if ts, _ := cl.Triggers(ctx); len(ts) != 0 {
		t.Errorf("left: %+v", ts)
	}
}

// Programs run when their event happens: a job's end, a node going DOWN
// and coming back, as the trigger's owner, once; a permanent trigger
// stays and fires again.
func TestTriggerProgramsRun(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: programs run as another user")
	}
	prog, out := triggerScript(t)
	d, cl := startOneConf(t, "SlurmctldParameters=allow_user_triggers\n", func(*Options) {})
	ctx := context.Background()
	id, err := cl.Submit(ctx, api.JobSpec{Script: "#!/bin/sh\nsleep 2\n", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fini := api.Trigger{ResType: "job", ResID: "1", Types: []string{"fini"}, Program: prog + " fini"}
	if code, body := askAs(t, d, annID, d.handleTriggerSet, http.MethodPost, "/api/trigger/set", fini, nil); code != http.StatusOK {
		t.Fatalf("fini trigger: %d %s", code, body)
	}
	if lines := waitLines(t, out, 1); lines[0] != "60001 fini 1" {
		t.Errorf("fini program: %q", lines)
	}
	waitJob(t, cl, id, api.StateCompleted)

	perm := api.Trigger{ResType: "node", ResID: "*", Types: []string{"down"}, Program: prog + " down", Perm: true}
	if err := cl.SetTrigger(ctx, perm); err != nil {
		t.Fatal(err)
	}
	upT := api.Trigger{ResType: "node", ResID: "node1", Types: []string{"up"}, Program: prog + " up"}
	if err := cl.SetTrigger(ctx, upT); err != nil {
		t.Fatal(err)
	}
	for i, state := range []string{"DOWN", "RESUME", "DOWN"} {
		if err := cl.Update(ctx, api.UpdateRequest{Nodes: []string{"node1"}, Set: map[string]string{"State": state, "Reason": "test"}}); err != nil {
			t.Fatal(err)
		}
		waitLines(t, out, i+2)
	}
	time.Sleep(3 * time.Second) // the leader's loop passes again: nothing more runs
	lines := waitLines(t, out, 4)
	want := []string{"60001 fini 1", "0 down node1", "0 up node1", "0 down node1"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("programs ran:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	ts, err := cl.Triggers(ctx)
	if err != nil || len(ts) != 1 || !ts[0].Perm {
		t.Errorf("triggers left: %+v %v", ts, err)
	}
}
