package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The trust boundary, attacked as a hostile local user (uid 65534, no
// cluster key) would, with real processes against a real 3-node lab:
// testdata/attacker run from outside and from inside that user's job. No
// attack gets through, nothing forged takes effect, and afterwards the
// cluster still schedules that user's job.
func TestAttacks(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-attack-", 3, "")
	attacker := filepath.Join(l.top, "attacker")
	build := exec.Command("go", "build", "-o", attacker, "./e2e/testdata/attacker")
	build.Dir = repoPath(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the attacker: %v\n%s", err, out)
	}
	for _, f := range []string{"/tmp/hpc-forged-entry", "/tmp/hpc-forged-api", "/tmp/hpc-forged-launch"} {
		os.Remove(f)
	}
	node1 := l.net + "1"
	api, raftPort, gossip := fmt.Sprintf("%s:%d", node1, l.api), fmt.Sprintf("%s:%d", node1, l.api+1), fmt.Sprintf("%s:%d", node1, l.api+2)
	socket := filepath.Join(l.dir, "node1", "hpc.sock")

	// attack runs the attacker as nobody and checks its verdicts.
	attack := func(want int, args ...string) {
		t.Helper()
		cmd := exec.Command(attacker, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		checkVerdicts(t, strings.Join(args[:1], " "), string(out), want, err)
	}
	attack(2, "raft", raftPort)
	attack(2, "api", api)
	attack(4, "internal", socket)
	attack(1, "bigbody", socket)
	attack(1, "slowloris", socket)
	attack(9, "garbage", api, raftPort, gossip)

	// Another user's script and environment: root's job holds a secret in
	// both; nobody reads every route that returns jobs.
	secret := "hpc-secret-7f3a9c"
	rootWork := filepath.Join(l.top, "root-work")
	os.Mkdir(rootWork, 0o700)
	cmd := exec.Command(l.bin, "submit", "--hold", "--export=ALL,API_TOKEN="+secret, "--wrap", "echo "+secret)
	cmd.Dir, cmd.Env = rootWork, append(os.Environ(), "HPC_DIR="+l.dir)
	b, err := cmd.CombinedOutput()
	m := submittedRE.FindStringSubmatch(string(b))
	if err != nil || m == nil {
		t.Fatalf("root's job: %v %s", err, b)
	}
	attack(5, "snoop", socket, m[1], secret)
	if _, _, code := l.run(nobody, l.top, "scontrol", "write", "batch_script", m[1], "-"); code == 0 {
		t.Error("scontrol write batch_script of root's job worked for nobody")
	}
	l.run(0, l.top, "scancel", m[1])

	// The same from inside a job of that user: its processes have the
	// user's rights and the node's network.
	work := filepath.Join(l.top, "nobody")
	os.Mkdir(work, 0o755)
	os.Chown(work, nobody, nobody)
	out := filepath.Join(work, "attack-from-job.out")
	script := fmt.Sprintf("%[1]s internal $HPC_SOCKET; %[1]s raft %[2]s; %[1]s api %[3]s", attacker, raftPort, api)
	_, errs, code := l.run(nobody, work, "submit", "--wait", "-o", out, "--wrap", script)
	if code != 0 {
		t.Errorf("the attacking job: exit %d %s", code, errs)
	}
	b, _ = os.ReadFile(out)
	checkVerdicts(t, "from a job", string(b), 8, nil)

	// Nothing forged took effect: no file written by a forged job, no job
	// but the attacker's own.
	time.Sleep(time.Second)
	for _, f := range []string{"/tmp/hpc-forged-entry", "/tmp/hpc-forged-api", "/tmp/hpc-forged-launch"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists: a forged job ran", f)
		}
	}
	queue, _, _ := l.run(0, l.top, "queue", "-h", "-t", "all", "-o", "%i %u %j")
	if lines := strings.Split(strings.TrimSpace(queue), "\n"); len(lines) != 2 || strings.Contains(queue, "forged") {
		t.Errorf("jobs after the attacks (root's held one and nobody's attacking one):\n%s", queue)
	}
	// And the cluster still schedules.
	if _, errs, code := l.run(nobody, work, "submit", "--wait", "-o", "/dev/null", "--wrap", "true"); code != 0 {
		t.Errorf("a job after the attacks: exit %d %s", code, errs)
	}
}

// checkVerdicts requires want "ATTACK" lines in out, none of them saying
// the attack got through.
func checkVerdicts(t *testing.T, what, out string, want int, err error) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "ATTACK ") {
			continue
		}
		n++
		t.Log(line)
		if strings.Contains(line, "GOT THROUGH") {
			t.Errorf("%s: %s", what, line)
		}
	}
	if n != want || err != nil {
		t.Errorf("%s: %d verdicts, want %d (%v)\n%s", what, n, want, err, out)
	}
}
