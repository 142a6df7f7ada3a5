package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLeakCheck runs scripts/leak-check.sh on a 3-node lab of its own
// (the script's addresses and ports, which labAddrs keeps for it): mixed
// jobs that complete, fail, are cancelled pending and running, run over
// their memory, time out, and run srun steps across nodes, some of those
// failing or over their memory. Afterwards no step cgroup, container state, mount,
// process, $TMPDIR or batch script of theirs may remain, nor anything of
// the lab after hpc down. HPC_LEAK_JOBS sets the number of jobs (100 here;
// the closing notes' figure is 1000).
func TestLeakCheck(t *testing.T) {
	needLab(t)
	n := 100
	if v := os.Getenv("HPC_LEAK_JOBS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			t.Fatalf("HPC_LEAK_JOBS=%q: want a number of at least 10", v)
		}
	}
	// The script writes its lab's config itself: it must be the range
	// and ports labAddrs holds for this test, which no other lab uses.
	script := repoPath(t, "scripts", "leak-check.sh")
	net, port := labNet(t)
	text := readFileT(t, script)
	for _, want := range []string{"SlurmctldHost=node1(" + net + "1)", "NodeAddr=" + net + "[1-3]", fmt.Sprintf("HpcApiPort=%d\n", port)} {
		if !strings.Contains(text, want) {
			t.Fatalf("%s lacks %q: keep its lab's range and ports and the entry of labAddrs for %s the same", script, want, t.Name())
		}
	}
	cmd := exec.Command("bash", script, strconv.Itoa(n))
	cmd.Dir = repoPath(t)
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
