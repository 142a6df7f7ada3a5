package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

var nobodyID = peer.Identity{UID: 65534, GID: 65534, User: "nobody", Group: "nogroup"}

// runningAlloc submits a holder allocation of ntasks as id and waits
// for it to run.
func runningAlloc(t *testing.T, d *Daemon, cl *api.Client, id peer.Identity, ntasks int) uint64 {
	t.Helper()
	spec := api.JobSpec{Name: "alloc", Script: api.HolderScript, WorkDir: "/tmp", NTasks: ntasks, TimeLimitMin: 10}
	jid, msg := submitAs(t, d, id, spec)
	if msg != "" {
		t.Fatalf("submit as %s: %s", id.User, msg)
	}
	waitJob(t, cl, jid, api.StateRunning)
	return jid
}

// sstat through a real daemon: a step's two tasks, read live on the
// node (plain processes: /proc), for its owner; another user gets Slurm's
// "Invalid user id"; unknown jobs, unknown steps and ended jobs.
func TestSstatOneNode(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (steps as the job's user)")
	}
	d, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	jid := runningAlloc(t, d, cl, rootID, 2)
	sctx, stop := context.WithCancel(ctx)
	stepDone := make(chan error, 1)
	go func() {
		stepDone <- cl.RunStep(sctx, api.StepRequest{JobID: jid,
			Argv: []string{"sh", "-c", "head -c 3000000 /dev/zero >/dev/null; echo up; exec sleep 60"}, Env: []string{"PATH=/usr/bin:/bin"}},
			func(*api.StepEvent) error { return nil }, nil)
	}()
	var st api.StepStat
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := cl.Stat(ctx, api.StatRequest{JobID: jid})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Steps) == 1 && len(resp.Steps[0].Tasks) == 2 && resp.Steps[0].Tasks[0].ReadBytes >= 3000000 && resp.Steps[0].Tasks[1].ReadBytes >= 3000000 {
			st = resp.Steps[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live usage of the step: %+v", resp)
		}
	}
	if st.Step != "0" || st.JobID != jid || len(st.Nodes) != 1 || st.Nodes[0] != "node1" || st.Error != "" {
		t.Errorf("step %+v", st)
	}
	for i, task := range st.Tasks {
		if task.Task != i || task.Node != "node1" || len(task.Pids) == 0 || task.RSSKB <= 0 || task.VMSizeKB < task.RSSKB {
			t.Errorf("task %d: %+v", i, task)
		}
	}
	// -a lists the step too (a holder allocation has no batch step);
	// a step that is not there answers none.
	if resp, err := cl.Stat(ctx, api.StatRequest{JobID: jid, All: true}); err != nil || len(resp.Steps) != 1 {
		t.Errorf("-a: %+v %v", resp, err)
	}
	if resp, err := cl.Stat(ctx, api.StatRequest{JobID: jid, Step: "4"}); err != nil || len(resp.Steps) != 0 {
		t.Errorf("step 4: %+v %v", resp, err)
	}
	// Another user sees the step but not its usage.
	var other api.StatResponse
	if code, body := askAs(t, d, nobodyID, d.handleStat, http.MethodPost, "/api/stat", api.StatRequest{JobID: jid}, &other); code != http.StatusOK ||
		len(other.Steps) != 1 || other.Steps[0].Error != api.ErrUserIDMissing || len(other.Steps[0].Tasks) != 0 {
		t.Errorf("as nobody: %d %s", code, body)
	}
	if _, err := cl.Stat(ctx, api.StatRequest{JobID: 9999}); !isAPIErr(err, api.ErrInvalidJobID) {
		t.Errorf("unknown job: %v", err)
	}
	stop()
	<-stepDone
	if err := cl.Release(ctx, api.ReleaseRequest{JobID: jid}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, jid, api.StateCompleted)
	if resp, err := cl.Stat(ctx, api.StatRequest{JobID: jid}); err != nil || len(resp.Steps) != 0 {
		t.Errorf("ended job: %+v %v", resp, err)
	}
}

func isAPIErr(err error, msg string) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Message == msg
}

// putAs is /api/file/put as the caller id on the node's socket.
func putAs(d *Daemon, id peer.Identity, query string, body io.Reader) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/api/file/put?"+query, body)
	req = req.WithContext(peer.WithIdentity(req.Context(), id))
	rec := httptest.NewRecorder()
	d.handleFilePut(rec, req)
	return rec.Code, rec.Body.String()
}

// sbcast's and sgather's routes through a real daemon, for a job of
// nobody's: the file lands as nobody's, streamed in several pieces; an
// existing file needs force; a symlink at the destination is replaced,
// not followed; a directory nobody may not write refuses; another user
// may neither look the job up nor send into it; sgather's read and
// remove.
func TestFileCopyOneNode(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (files written as the job's user)")
	}
	d, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The batch script of nobody's job is read from the node's state
	// directory: let nobody through the test's directories.
	for p := d.o.Dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	privacyUsers(t, d)
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"nobody"}, Accounts: []string{"physics"}})
	jid := runningAlloc(t, d, cl, nobodyID, 1)
	dir, err := os.MkdirTemp("", "sbcast")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), (9<<20)/16+5) // three pieces
	dest := filepath.Join(dir, "copy")
	mtime := time.Unix(1_600_000_000, 0)
	put := func(path string, force bool) error {
		return cl.PutFile(ctx, api.PutFile{JobID: jid, Node: "node1", Path: path, Force: force, Preserve: true,
			Info: api.FileInfo{Size: int64(len(data)), Mode: 0o640, Atime: mtime, Mtime: mtime}}, bytes.NewReader(data))
	}
	if err := put(dest, false); err != nil {
		t.Fatal(err)
	}
	checkCopy := func(path string) {
		t.Helper()
		got, err := os.ReadFile(path)
		fi, serr := os.Lstat(path)
		if err != nil || serr != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes, %v %v", path, len(got), err, serr)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 65534 || fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(mtime) {
			t.Errorf("%s: uid %d mode %v mtime %v", path, st.Uid, fi.Mode(), fi.ModTime())
		}
	}
	checkCopy(dest)
	if err := put(dest, false); !isAPIErr(err, "File exists") {
		t.Errorf("again without force: %v", err)
	}
	if err := put(dest, true); err != nil {
		t.Errorf("with force: %v", err)
	}
	// A link planted at the destination is replaced, never written through.
	target := filepath.Join(t.TempDir(), "roots")
	os.WriteFile(target, []byte("root's"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	if err := put(link, true); err != nil {
		t.Fatal(err)
	}
	checkCopy(link)
	if b, _ := os.ReadFile(target); string(b) != "root's" {
		t.Errorf("the link's target was written: %q", b)
	}
	// A directory only root may write.
	closed := t.TempDir()
	os.Chmod(closed, 0o700)
	if err := put(filepath.Join(closed, "x"), false); !isAPIErr(err, "Permission denied") {
		t.Errorf("into root's directory: %v", err)
	}
	if err := cl.PutFile(ctx, api.PutFile{JobID: jid, Node: "node9", Path: dest}, strings.NewReader("x")); !isAPIErr(err, "Invalid node name specified") {
		t.Errorf("node outside the job: %v", err)
	}
	// A body shorter than the file said (a command gone) lands nowhere.
	short := filepath.Join(dir, "short")
	if err := cl.PutFile(ctx, api.PutFile{JobID: jid, Node: "node1", Path: short, Info: api.FileInfo{Size: 10}}, strings.NewReader("abc")); err == nil {
		t.Error("a short body was taken")
	}
	if _, err := os.Lstat(short); err == nil {
		t.Error("a short body was written")
	}
	// Another user may not look the job up, nor send into it.
	if code, body := askAs(t, d, annID, d.handleFileJob, http.MethodPost, "/api/file/job", api.FileJobRequest{JobID: jid}, nil); code != http.StatusForbidden ||
		!strings.Contains(body, api.ErrAccessDenied) {
		t.Errorf("file job as ann: %d %s", code, body)
	}
	var fj api.FileJob
	if code, body := askAs(t, d, nobodyID, d.handleFileJob, http.MethodPost, "/api/file/job", api.FileJobRequest{JobID: jid}, &fj); code != http.StatusOK ||
		fj.UID != 65534 || len(fj.Nodes) != 1 {
		t.Errorf("file job as its owner: %d %s", code, body)
	}
	q := "job=" + jobIDText(jid) + "&node=node1&path=" + filepath.Join(dir, "ann")
	if code, body := putAs(d, annID, q, strings.NewReader("ann's")); code == http.StatusOK || !strings.Contains(body, api.ErrAccessDenied) {
		t.Errorf("put as ann: %d %s", code, body)
	}
	if _, err := os.Lstat(filepath.Join(dir, "ann")); err == nil {
		t.Error("ann's file was written")
	}
	// sgather: read it back, then remove it.
	body, info, err := cl.GetFile(ctx, jid, "node1", dest, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(body)
	body.Close()
	if err != nil || !bytes.Equal(got, data) || info.Size != int64(len(data)) || info.Mode != 0o640 || !info.Mtime.Equal(mtime) {
		t.Errorf("get: %d bytes %v %+v", len(got), err, info)
	}
	if _, _, err := cl.GetFile(ctx, jid, "node1", filepath.Join(closed, "none"), false); !isAPIErr(err, "Permission denied") {
		t.Errorf("get from root's directory: %v", err)
	}
	if _, _, err := cl.GetFile(ctx, jid, "node1", dest, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dest); !os.IsNotExist(err) {
		t.Errorf("not removed: %v", err)
	}
	// No hidden pieces left behind.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if err := cl.Release(ctx, api.ReleaseRequest{JobID: jid}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, cl, jid, api.StateCompleted)
	if _, err := cl.FileJob(ctx, jid); !isAPIErr(err, api.ErrAlreadyDone) {
		t.Errorf("ended job: %v", err)
	}
}

func jobIDText(n uint64) string { b, _ := json.Marshal(n); return string(b) }
