package e2e

// cgroup v2 on the kernel most machines run, whatever the test machine's
// own cgroups are: scripts/qemu-cgroup2.sh boots Debian's kernel under
// qemu with the hpc binary in an initramfs, and the machine reports each
// check on its console (scripts/qemu-cgroup2-guest.sh). This test runs the
// script and holds each check's line to PASS.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// qemuChecks are the checks the guest reports, in its order.
var qemuChecks = []string{
	"cgroup2",         // cgroup2 at /sys/fs/cgroup with memory, cpu, pids, cpuset
	"up",              // hpc up --nodes 1; hpc status: containers (libcontainer, cgroup v2)
	"root-container",  // a root job in its job's cgroup under /hpc/node1-*/
	"alice-container", // a uid 1000 job as uid 1000, its output owned by it
	"oom",             // --mem=40M: memory.max 40 MiB, the job OUT_OF_MEMORY
	"maxrss",          // sacct MaxRSS of a 64 MiB buffer: 64 MiB and a little more
	"cpu-quota",       // -c 1, two busy loops: cpu.max 100000/100000, one CPU busy, the other not
	"cpu-two",         // -c 2, the same loops: both CPUs busy
	"no-cgroup-left",  // hpc down leaves no cgroup under /sys/fs/cgroup/hpc
	"gpu-devices",     // --gres=gpu:1 opens its device, is refused the other, even by mknod
	"no-cgroup-left-gpu",
	"unprivileged", // alice's own lab: plain processes, said by hpc status; her job as uid 1000
}

// qemuRequireEnv, when set (CI sets it), fails the test where it would
// skip for want of qemu or the kernel package.
const qemuRequireEnv = "HPC_QEMU_REQUIRE"

// qemuConsoleEnv names a directory to keep the machine's console in
// (qemu-cgroup2-console.txt); without it the console goes to a temporary
// directory whose path is logged, and into the log when the test fails.
const qemuConsoleEnv = "HPC_QEMU_ARTIFACTS"

func TestQemuCgroupV2(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a virtual machine")
	}
	skip := func(why string) {
		t.Helper()
		if os.Getenv(qemuRequireEnv) != "" {
			t.Fatalf("%s (and %s is set)", why, qemuRequireEnv)
		}
		t.Skip(why)
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		skip("qemu-system-x86_64 is not installed (scripts/ci-qemu.sh installs it)")
	}
	bin, _ := hpcBinary(t)
	dir := os.Getenv(qemuConsoleEnv)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	console := filepath.Join(dir, "qemu-cgroup2-console.txt")
	// The script limits the machine (HPC_QEMU_TIMEOUT, 240 s); this
	// bounds the rest: the package download and the initramfs.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, repoPath(t, "scripts", "qemu-cgroup2.sh"))
	cmd.Env = append(os.Environ(), "HPC_BIN="+bin, "HPC_QEMU_CONSOLE="+console)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("qemu-cgroup2.sh ran %s; console in %s", time.Since(start).Round(time.Second), console)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 77 {
		skip("no qemu or kernel package to be had:\n" + out.String())
	}
	text, rerr := os.ReadFile(console)
	if rerr != nil {
		t.Fatalf("qemu-cgroup2.sh: %v, no console (%v):\n%s", err, rerr, out.String())
	}
	results := qemuResults(string(text))
	for _, name := range qemuChecks {
		switch r, ok := results[name]; {
		case !ok:
			t.Errorf("check %s: missing from the console", name)
		case !strings.HasPrefix(r, "PASS"):
			t.Errorf("check %s: %s", name, r)
		default:
			t.Logf("check %s: %s", name, r)
		}
	}
	if !strings.Contains(string(text), "\nHPC-CHECKS-END") {
		t.Error("the machine did not finish its checks (no HPC-CHECKS-END)")
	}
	if err != nil && !t.Failed() {
		t.Errorf("qemu-cgroup2.sh: %v, though every check passed", err)
	}
	if t.Failed() {
		t.Logf("script output:\n%s", out.String())
	}
}

// qemuResults reads the console's "HPC-CHECK name PASS|FAIL detail" lines
// into name -> "PASS|FAIL detail" (the first line of each name).
func qemuResults(console string) map[string]string {
	results := map[string]string{}
	for _, line := range strings.Split(console, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "HPC-CHECK ")
		if !ok {
			continue
		}
		name, r, _ := strings.Cut(rest, " ")
		if _, seen := results[name]; !seen {
			results[name] = r
		}
	}
	return results
}

// The script's list of checks (which decides its exit status) and the
// test's are the same list, and the guest script reports each of them.
func TestQemuCheckNames(t *testing.T) {
	host, err := os.ReadFile(repoPath(t, "scripts", "qemu-cgroup2.sh"))
	if err != nil {
		t.Fatal(err)
	}
	guest, err := os.ReadFile(repoPath(t, "scripts", "qemu-cgroup2-guest.sh"))
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(host), "\nchecks=(")
	list, _, _ = strings.Cut(list, ")")
	if !ok || strings.Join(strings.Fields(list), " ") != strings.Join(qemuChecks, " ") {
		t.Errorf("scripts/qemu-cgroup2.sh checks=(%s), want (%s)", list, strings.Join(qemuChecks, " "))
	}
	for _, name := range qemuChecks {
		if !bytes.Contains(guest, []byte(name)) {
			t.Errorf("scripts/qemu-cgroup2-guest.sh never reports %s", name)
		}
	}
	got := qemuResults("boot noise\r\nHPC-CHECK up PASS hpc up in 1.6 s\r\nHPC-CHECK oom FAIL job 3 COMPLETED\nHPC-CHECK up FAIL later\n")
	if len(got) != 2 || got["up"] != "PASS hpc up in 1.6 s" || got["oom"] != "FAIL job 3 COMPLETED" {
		t.Errorf("qemuResults: %q", got)
	}
}
