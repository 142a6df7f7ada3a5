package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sattach in a real lab: a step that srun runs through node1 is attached
// to from node2 (its daemon passes the request on to the step's launcher):
// --layout says where the tasks run; attached with --output-filter and
// --input-filter, sattach's input reaches task 1 alone (on node2) and
// task 1's output comes back to it, while srun sees everything; another
// user may not attach; the step's end ends sattach.
func TestLabSattach(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-sattach-", 2, "")
	srun := exec.Command(filepath.Join(l.links, "srun"), "-v", "-N2", "-l", "bash", "-c",
		`while read line; do echo "task $SLURM_PROCID got $line"; [ "$line" = stop ] && exit 0; done`)
	srun.Dir = l.top
	srun.Env = append(os.Environ(), "HPC_DIR="+l.dir)
	stdin, _ := srun.StdinPipe()
	stdout, _ := srun.StdoutPipe()
	stderr, _ := srun.StderrPipe()
	if err := srun.Start(); err != nil {
		t.Fatal(err)
	}
	defer srun.Process.Kill()
	stepRE := regexp.MustCompile(`launching StepId=(\d+\.\d+)`)
	stepCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := stepRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case stepCh <- m[1]:
				default:
				}
			}
		}
	}()
	srunOut := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(stdout)
		srunOut <- string(b)
	}()
	var step string
	select {
	case step = <-stepCh:
	case <-time.After(60 * time.Second):
		t.Fatal("srun's step did not start")
	}

	sattach := func(uid int, input string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(l.links, "sattach"), args...)
		cmd.Dir = l.top
		cmd.Env = append(os.Environ(), "HPC_DIR="+l.dir, "HPC_SOCKET="+filepath.Join(l.dir, "node2", "hpc.sock"))
		cmd.Stdin = strings.NewReader(input)
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		}
		return cmd
	}
	out, err := sattach(0, "", "--layout", step).Output()
	if want := "Job step layout:\n\t2 tasks, 2 nodes (node[1-2])\n"; err != nil || !strings.HasPrefix(string(out), want) ||
		!strings.Contains(string(out), "Node 1 (node2), 1 task(s): 1 \n") {
		t.Errorf("sattach --layout: %v %q", err, out)
	}
	if out, err := sattach(nobody, "", step).CombinedOutput(); err == nil || !strings.Contains(string(out), "sattach: error: ") {
		t.Errorf("sattach as another user: %v %q", err, out)
	}

	att := sattach(0, "hello\n", "-l", "--output-filter=1", "--input-filter=1", step)
	var attOut syncBuffer
	att.Stdout = &attOut
	if err := att.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "task 1's answer to sattach", func() (bool, string) {
		return strings.Contains(attOut.String(), "1: task 1 got hello\n"), attOut.String()
	})
	fmt.Fprintln(stdin, "stop")
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- att.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("sattach at the step's end: %v", err)
		}
	case <-time.After(30 * time.Second):
		att.Process.Kill()
		t.Fatal("sattach did not end with the step")
	}
	if s := attOut.String(); strings.Contains(s, "0: ") || !strings.Contains(s, "1: task 1 got stop\n") {
		t.Errorf("sattach --output-filter=1 printed %q", s)
	}
	if err := srun.Wait(); err != nil {
		t.Errorf("srun: %v", err)
	}
	got := <-srunOut
	if strings.Contains(got, "0: task 0 got hello") || !strings.Contains(got, "1: task 1 got hello") || !strings.Contains(got, "0: task 0 got stop") {
		t.Errorf("srun's output %q", got)
	}
}
