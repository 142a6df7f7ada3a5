package commands

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The dispatcher made from a multi-prog file runs each task's line, with
// %t and %o put in, and arguments kept whole whatever their quoting.
func TestMultiProg(t *testing.T) {
	dir := t.TempDir()
	conf := "# rank program args\n0 echo zero %t\n1-2 echo mid %o 'it''s'\n4,6 echo even-ish %t\n* echo other %t\n"
	os.WriteFile(filepath.Join(dir, "mp.conf"), []byte(conf), 0o644)
	argv, err := multiProg("mp.conf", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0": "zero 0", "1": "mid 0 'it''s'", "2": "mid 1 'it''s'", "3": "other 3", "4": "even-ish 4", "6": "even-ish 6"}
	for task, out := range want {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "SLURM_PROCID="+task)
		b, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(b)) != out {
			t.Errorf("task %s: %q %v, want %q", task, b, err, out)
		}
	}
	for _, bad := range []string{"", "# only a comment\n", "0\n", "x echo\n", "3-1 echo\n"} {
		os.WriteFile(filepath.Join(dir, "bad.conf"), []byte(bad), 0o644)
		if _, err := multiProg(filepath.Join(dir, "bad.conf"), "/"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := multiProg("nosuch.conf", dir); err == nil {
		t.Error("a missing file accepted")
	}
	// Without a * line, a task with no line fails with a clear message.
	os.WriteFile(filepath.Join(dir, "two.conf"), []byte("0-1 true\n"), 0o644)
	argv, _ = multiProg("two.conf", dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SLURM_PROCID=5")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no executable for task 5") {
		t.Errorf("task without a line: %q %v", out, err)
	}
}
