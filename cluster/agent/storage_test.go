package agent

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writeScript never writes or chowns through a link, even in a directory
// an earlier run left to the user.
func TestWriteScriptNoFollow(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "secret")
	if err := os.WriteFile(target, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jobDir := filepath.Join(dir, "jobs", "7")
	os.MkdirAll(jobDir, 0o777)
	if err := os.Symlink(target, filepath.Join(jobDir, "script")); err != nil {
		t.Fatal(err)
	}
	if err := writeScript(filepath.Join(jobDir, "script"), "#!/bin/sh\necho hi\n", 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "root's\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	fi, err := os.Lstat(filepath.Join(jobDir, "script"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("script: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(jobDir, "script")); !strings.Contains(string(b), "echo hi") {
		t.Errorf("script: %q", b)
	}
	if os.Geteuid() == 0 {
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 {
			t.Errorf("script owned by %d", st.Uid)
		}
		st, _ := os.Stat(target)
		if st.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Error("the link's target was chowned")
		}
	}
}

// In a world-writable area, whatever someone put under a user's name (a
// directory of theirs, a link to a root-owned directory) is moved aside
// and the user gets a directory of their own: the job does not fail, and
// nothing is chowned through the link.
func TestMakeOwnedDirMovesTrapsAside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as other users")
	}
	area := t.TempDir()
	os.Chmod(area, os.ModeSticky|0o777)
	ag := &Agent{log: slog.New(slog.NewTextHandler(io.Discard, nil))}

	trap := filepath.Join(area, "ann")
	os.Mkdir(trap, 0o777)
	os.Chown(trap, 65534, 65534)
	os.WriteFile(filepath.Join(trap, "planted"), nil, 0o666)
	if err := ag.makeOwnedDir(trap, 1000, 1000, 0o700, true); err != nil {
		t.Fatalf("someone else's directory: %v", err)
	}
	checkOwned(t, trap, 1000, 0o700)
	if _, err := os.Stat(filepath.Join(trap, "planted")); err == nil {
		t.Error("the user got the planted directory")
	}

	protected := t.TempDir()
	link := filepath.Join(area, "bob")
	os.Symlink(protected, link)
	if err := ag.makeOwnedDir(link, 1001, 1001, 0o700, true); err != nil {
		t.Fatalf("a link: %v", err)
	}
	checkOwned(t, link, 1001, 0o700)
	if st, _ := os.Stat(protected); st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("the link's target was chowned")
	}
	moved, _ := filepath.Glob(filepath.Join(area, ".refused-*"))
	if len(moved) != 2 {
		t.Errorf("moved aside: %v", moved)
	}
	// The user's own directory is kept as it is.
	os.WriteFile(filepath.Join(trap, "mine"), nil, 0o600)
	if err := ag.makeOwnedDir(trap, 1000, 1000, 0o700, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(trap, "mine")); err != nil {
		t.Error("the user's own directory was replaced")
	}
}

func checkOwned(t *testing.T, dir string, uid uint32, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("%s: %v %v", dir, fi, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || fi.Mode().Perm() != mode {
		t.Errorf("%s: uid %d mode %v", dir, st.Uid, fi.Mode())
	}
}
