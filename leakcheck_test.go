package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLeakCheck runs scripts/leak-check.sh on a 3-node lab of its own
// (addresses 127.0.93.x, ports 29317-29319): mixed jobs that complete,
// fail, are cancelled pending and running, run over their memory, time
// out, and run srun steps across nodes, some of those failing or over
// their memory. Afterwards no step cgroup, container state, mount,
// process, $TMPDIR or batch script of theirs may remain, nor anything of
// the lab after hpc down. HPC_LEAK_JOBS sets the number of jobs (100 here;
// the closing notes' figure is 1000).
func TestLeakCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real 3-node cluster and runs a minute and more")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the steps run in containers")
	}
	n := 100
	if v := os.Getenv("HPC_LEAK_JOBS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			t.Fatalf("HPC_LEAK_JOBS=%q: want a number of at least 10", v)
		}
	}
	cmd := exec.Command("bash", "scripts/leak-check.sh", strconv.Itoa(n))
	cmd.Env = append(os.Environ(), "LEAK_TIMEOUTS=2")
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err != nil || !strings.HasSuffix(out, "\nno leaks\n") {
		t.Fatalf("leak-check: %v\n%s", err, out)
	}
	// Every kind of end the mix is for happened, to every job.
	section := func(title string) map[string]int {
		_, rest, _ := strings.Cut(out, title+"\n")
		counts := map[string]int{}
		for _, line := range strings.Split(rest, "\n") {
			m := regexp.MustCompile(`^\s+(\d+) (\S+)$`).FindStringSubmatch(line)
			if m == nil {
				break
			}
			counts[m[2]], _ = strconv.Atoi(m[1])
		}
		return counts
	}
	jobs := section("job states (sacct -X):")
	total := 0
	for _, c := range jobs {
		total += c
	}
	for _, st := range []string{"COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY", "TIMEOUT"} {
		if jobs[st] == 0 {
			t.Errorf("no job ended %s:\n%s", st, out)
		}
	}
	if total != n+2 {
		t.Errorf("%d jobs in sacct, want %d:\n%s", total, n+2, out)
	}
	steps := section("step states (sacct, steps .0):")
	for _, st := range []string{"COMPLETED", "FAILED", "OUT_OF_MEMORY"} {
		if steps[st] == 0 {
			t.Errorf("no srun step ended %s:\n%s", st, out)
		}
	}
	t.Logf("%s", out)
}
