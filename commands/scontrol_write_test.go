package commands

import (
	"os"
	"path/filepath"
	"testing"
)

// scontrol write batch_script JOBID [FILE]: the script into FILE (by
// default slurm-JOBID.sh, "-" for stdout), and Slurm 22.05's texts when
// the controller refuses.
func TestScontrolWriteBatchScript(t *testing.T) {
	_, e, out, errb := newFake(t)
	script := "#!/bin/sh\nsleep 600\n"

	stdout, stderr, code := run(e, out, errb, "scontrol", "write", "batch_script", "15")
	if code != 0 || stderr != "" || stdout != "batch script for job 15 written to slurm-15.sh\n" {
		t.Fatalf("default file: %d %q %q", code, stdout, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(e.Cwd, "slurm-15.sh")); err != nil || string(b) != script {
		t.Errorf("slurm-15.sh: %q %v", b, err)
	}

	stdout, stderr, code = run(e, out, errb, "scontrol", "write", "batch_script", "15", "mine.sh")
	if code != 0 || stderr != "" || stdout != "batch script for job 15 written to mine.sh\n" {
		t.Fatalf("named file: %d %q %q", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(e.Cwd, "mine.sh")); string(b) != script {
		t.Errorf("mine.sh: %q", b)
	}

	stdout, stderr, code = run(e, out, errb, "scontrol", "-Q", "write", "batch", "15", "-")
	if code != 0 || stderr != "" || stdout != script {
		t.Fatalf("stdout: %d %q %q", code, stdout, stderr)
	}

	// Another user's job: refused, and the file scontrol opened is gone.
	stdout, stderr, code = run(e, out, errb, "scontrol", "write", "batch_script", "26")
	if code != 1 || stdout != "" || stderr != "job script retrieval failed: Invalid user id\n" {
		t.Errorf("another user's job: %d %q %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.Cwd, "slurm-26.sh")); !os.IsNotExist(err) {
		t.Errorf("slurm-26.sh left behind: %v", err)
	}
	_, stderr, code = run(e, out, errb, "scontrol", "write", "batch_script", "999", "-")
	if code != 1 || stderr != "job script retrieval failed: Invalid job id specified\n" {
		t.Errorf("unknown job: %d %q", code, stderr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"write"}, "too few arguments for keyword:write\n"},
		{[]string{"write", "nonsense"}, "invalid write argument:nonsense\n"},
		{[]string{"write", "batch_script", "15", "a", "b"}, "too many arguments for keyword:write\n"},
		{[]string{"write", "batch_script", "15", filepath.Join("no", "such", "dir")}, "failed to open file `no/such/dir`: No such file or directory\n"},
	} {
		_, stderr, code = run(e, out, errb, append([]string{"scontrol"}, c.args...)...)
		if code != 1 || stderr != c.want {
			t.Errorf("scontrol %v: %d %q, want %q", c.args, code, stderr, c.want)
		}
	}
}
