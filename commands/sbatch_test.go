package commands

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hpc/cluster/api"
)

func TestSbatch(t *testing.T) {
	f, e, out, errb := newFake(t)
	script := filepath.Join(e.Cwd, "job.sh")
	os.WriteFile(script, []byte("#!/bin/bash\n#SBATCH -J fromscript\n#SBATCH -p debug -t 5\n#SBATCH --mem-per-cpu=500\nhostname\n"), 0o644)
	e.Environ = append(e.Environ, "SBATCH_PARTITION=gpu", "SBATCH_ACCOUNT=proj")

	stdout, stderr, code := run(e, out, errb, "sbatch", "--gres=gpu:1", "-H", "--dependency=afterok:15", "job.sh", "arg1")
	if stdout != "Submitted batch job 31\n" || stderr != "" || code != 0 {
		t.Fatalf("sbatch: %d %q %q", code, stdout, stderr)
	}
	s := f.submits[0]
	if s.Name != "fromscript" || s.Partition != "gpu" || s.Account != "proj" || s.TimeLimitMin != 5 || s.MemPerCPUMB != 500 ||
		s.Gres != "gpu:1" || !s.Hold || s.Dependency != "afterok:15" || s.WorkDir != e.Cwd || s.SubmitHost != "submithost" {
		t.Errorf("spec %+v", s)
	}
	if stdout, _, _ := run(e, out, errb, "sbatch", "--parsable", "-p", "debug", "--wrap", "true"); stdout != "32\n" {
		t.Errorf("--parsable: %q", stdout)
	}
	if stdout, _, _ := run(e, out, errb, "hpc", "submit", "-Q", "--wrap", "true"); stdout != "" || len(f.submits) != 3 {
		t.Errorf("-Q: %q", stdout)
	}
	_, stderr, code = run(e, out, errb, "sbatch", "--mail-type=END", "--wrap", "true")
	if code != 0 || stderr != "sbatch: notice: this cluster sends no mail; --mail-type and --mail-user are recorded only\n" {
		t.Errorf("mail notice: %d %q", code, stderr)
	}
	for _, c := range []struct {
		args   []string
		stderr string
		code   int
	}{
		{[]string{"sbatch", "-p", "nosuch", "--wrap", "true"}, "sbatch: error: invalid partition specified: nosuch\nsbatch: error: Batch job submission failed: Invalid partition name specified\n", 1},
		{[]string{"sbatch", "--bogus", "--wrap", "true"}, "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information\n", 255},
		{[]string{"sbatch", "-t", "abc", "--wrap", "true"}, "sbatch: error: Invalid --time specification\n", 255},
		{[]string{"sbatch", "--mem=1G", "--mem-per-cpu=1G", "--wrap", "true"}, "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.\n", 1},
		{[]string{"sbatch"}, "sbatch: error: Batch script is empty!\n", 1},
	} {
		if _, stderr, code := run(e, out, errb, c.args...); stderr != c.stderr || code != c.code {
			t.Errorf("%v: %d %q, want %d %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
	if stdout, _, code := run(e, out, errb, "sbatch", "--version"); stdout != "slurm-wlm 22.05.8\n" || code != 0 {
		t.Errorf("--version: %q", stdout)
	}
}

func TestSbatchWaitExitStatus(t *testing.T) {
	for _, c := range []struct {
		j    api.Job
		want int
	}{
		{api.Job{State: api.StateCompleted}, 0},
		{api.Job{State: api.StateFailed, ExitCode: 3}, 3},
		{api.Job{State: api.StateCancelled}, 1},
		{api.Job{State: api.StateNodeFail}, 1},
	} {
		if got := jobExitStatus(&c.j); got != c.want {
			t.Errorf("%s exit %d: %d, want %d", c.j.State, c.j.ExitCode, got, c.want)
		}
	}
}

func TestSacct(t *testing.T) {
	f, e, out, errb := newFake(t)
	stdout, stderr, code := run(e, out, errb, "sacct", "-X", "-P", "-o", "JobID,JobName,State", "-j", "14,15")
	if stdout != "JobID|JobName|State\n14|wrap|COMPLETED\n15|sleeper|RUNNING\n" || stderr != "" || code != 0 {
		t.Errorf("sacct -X -P: %d %q %q", code, stdout, stderr)
	}
	if got := f.acctQ[len(f.acctQ)-1]; got != "jobs=14%2C15&jobs_only=1" {
		t.Errorf("query %q", got)
	}
	stdout, _, _ = run(e, out, errb, "sacct", "-a", "-n", "-p", "-o", "jobid", "-r", "gpu")
	if stdout != "19|\n19.batch|\n" {
		t.Errorf("sacct -r gpu: %q", stdout)
	}
	stdout, _, _ = run(e, out, errb, "sacct", "-n", "-b", "-s", "CD")
	if stdout != "14            COMPLETED      0:0 \n14.batch      COMPLETED      0:0 \n" {
		t.Errorf("sacct -b -s CD: %q", stdout)
	}
	stdout, _, _ = run(e, out, errb, "sacct", "-n", "-X", "-P", "-o", "jobid", "--name=multi,gpujob", "-N", "node3")
	if stdout != "18\n19\n" {
		t.Errorf("sacct --name -N: %q", stdout)
	}
	// Times are in the past for sacct: 04:59:25 is today, 05:00 yesterday.
	stdout, _, _ = run(e, out, errb, "sacct", "-n", "-X", "-P", "-o", "jobid", "-S", "04:59:25", "-E", "now")
	if stdout != "15\n16\n17\n18\n19\n" { // 14 ended at 04:59:21
		t.Errorf("sacct -S: %q", stdout)
	}
	stdout, _, _ = run(e, out, errb, "sacct", "-n", "-X", "-P", "-o", "jobid", "-S", "05:00")
	if stdout != "14\n15\n16\n17\n18\n19\n" {
		t.Errorf("sacct -S yesterday: %q", stdout)
	}
	stdout, _, _ = run(e, out, errb, "sacct", "-e")
	if !strings.HasPrefix(stdout, "Account             AdminComment        AllocCPUS") {
		t.Errorf("sacct -e: %q", stdout)
	}
	for _, c := range []struct {
		args   []string
		stderr string
		code   int
	}{
		{[]string{"sacct", "-o", "bogus"}, "sacct: error: Invalid field requested: \"bogus\"\n", 1},
		{[]string{"sacct", "--bogus"}, "sacct: unrecognized option '--bogus'\n", 1},
		{[]string{"sacct", "-l", "-o", "jobid"}, "sacct: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", 1},
		{[]string{"sacct", "-k", "0"}, "sacct: fatal: Invalid time limit specification\n", 1},
	} {
		if _, stderr, code := run(e, out, errb, c.args...); stderr != c.stderr || code != c.code {
			t.Errorf("%v: %d %q, want %d %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}

func TestInstallLinks(t *testing.T) {
	_, e, out, errb := newFake(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e.Executable = func() (string, error) { return exe, nil }
	dir := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "sprio"), []byte("real slurm"), 0o755) // never replaced
	os.Symlink("/nonexistent/old-hpc", filepath.Join(dir, "sacct"))        // replaced

	stdout, stderr, code := run(e, out, errb, "hpc", "install-links", dir)
	if code != 1 || !strings.Contains(stderr, "sprio exists and is not a link; leaving it alone") {
		t.Errorf("install-links: %d %q %q", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "export PATH="+dir+":$PATH") || strings.Contains(stdout, "Not implemented yet") {
		t.Errorf("install-links output: %q", stdout)
	}
	real, _ := filepath.EvalSymlinks(exe)
	for _, n := range LinkNames {
		target, err := filepath.EvalSymlinks(filepath.Join(dir, n))
		if n == "sprio" {
			if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != "real slurm" {
				t.Errorf("sprio was replaced")
			}
			continue
		}
		if err != nil || target != real {
			t.Errorf("%s -> %q %v", n, target, err)
		}
	}
	// A second run keeps the links.
	stdout, _, _ = run(e, out, errb, "hpc", "install-links", dir)
	if !strings.Contains(stdout, "Already linked: sbatch srun") {
		t.Errorf("second run: %q", stdout)
	}
	// Default directory: next to the binary.
	other := t.TempDir()
	fake := filepath.Join(other, "hpc")
	os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755)
	e.Executable = func() (string, error) { return fake, nil }
	if stdout, _, code := run(e, out, errb, "hpc", "install-links"); code != 0 || !strings.Contains(stdout, "Linked sbatch") {
		t.Errorf("default dir: %d %q", code, stdout)
	}
	if target, err := os.Readlink(filepath.Join(other, "squeue")); err != nil || target != fake {
		t.Errorf("default dir link: %q %v", target, err)
	}

	// Run through the links: this test binary acts as the command it is
	// invoked as (see TestMain).
	for _, c := range []struct {
		name   string
		args   []string
		stdout string
		stderr string
		code   int
	}{
		{"sinfo", []string{"-V"}, "slurm-wlm 22.05.8\n", "", 0},
		{"squeue", []string{"--usage"}, squeueUsage, "", 0},
		{"scontrol", []string{"show", "hostnames", "n[1-2]"}, "n1\nn2\n", "", 0},
	} {
		cmd := exec.Command(filepath.Join(dir, c.name), c.args...)
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if so.String() != c.stdout || se.String() != c.stderr || code != c.code {
			t.Errorf("%s %v: %d %q %q", c.name, c.args, code, so.String(), se.String())
		}
	}
	// The names not implemented yet say so.
	for _, n := range LinkNames {
		if _, ok := slurmCommands[n]; ok || n == "sprio" { // sprio is the foreign file
			continue
		}
		cmd := exec.Command(filepath.Join(dir, n), "-v")
		var se strings.Builder
		cmd.Stderr = &se
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || se.String() != n+": error: not implemented yet in hpc\n" {
			t.Errorf("%s: %v %q", n, err, se.String())
		}
	}
}

// TestMain lets the test binary act as hpc when it is run through a link
// named like a Slurm command (TestInstallLinks does that).
func TestMain(m *testing.M) {
	for _, n := range LinkNames {
		if filepath.Base(os.Args[0]) == n {
			os.Exit(Run(os.Args))
		}
	}
	os.Exit(m.Run())
}
