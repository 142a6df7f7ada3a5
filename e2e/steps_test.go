package e2e

// Issue 4's end-to-end test: steps (srun in a batch job, srun on its own,
// salloc) across a real 3-node lab with libcontainer steps, their
// environment, signals and accounting; memory limits to OUT_OF_MEMORY;
// output file patterns and unwritable outputs; $TMPDIR and $SCRATCH.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	hpcexec "hpc/exec"
)

// startStepsLab starts a 3-node lab of its own with srun, salloc and
// sbatch on PATH, and returns it with root's and nobody's working
// directories.
func startStepsLab(t *testing.T) (l *labT, rootDir, userDir string) {
	t.Helper()
	l, _ = startLab(t, "hpc-steps-", 3, "KillWait=3\n")
	l.commandsOnPath(t)
	top := l.top
	rootDir = filepath.Join(top, "root-work")
	userDir = filepath.Join(top, "nobody-work")
	os.Mkdir(rootDir, 0o755)
	os.Mkdir(userDir, 0o755)
	os.Chown(userDir, nobody, nobody)
	return l, rootDir, userDir
}

// stepRows returns sacct -P's lines of a job and its steps.
func (l *labT) stepRows(id uint64) []string {
	l.t.Helper()
	out, errs, code := l.run(0, l.top, "acct", "-a", "-P", "-n", "-j", fmt.Sprint(id), "-o", "JobID,JobName,State,ExitCode,NodeList")
	if code != 0 {
		l.t.Fatalf("acct: %s %s", out, errs)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// waitRow polls sacct until a job's rows include want.
func (l *labT) waitRow(id uint64, want string) {
	l.t.Helper()
	waitFor(l.t, 30*time.Second, fmt.Sprintf("job %d's sacct row %q", id, want), func() (bool, string) {
		rows := l.stepRows(id)
		return slices.Contains(rows, want), fmt.Sprintf("%q", rows)
	})
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(lines)
	return lines
}

func TestLabSteps(t *testing.T) {
	needLab(t)
	l, rootDir, userDir := startStepsLab(t)
	idOf := func(out string) uint64 {
		m := submittedRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("not a submission: %q", out)
		}
		id, _ := strconv.ParseUint(m[1], 10, 64)
		return id
	}

	t.Run("SrunInBatch", func(t *testing.T) {
		l := l.with(t)
		// ../shared/slurm-reference/14
		out, errs, code := l.run(0, rootDir, "submit", "--wait", "-J", "stepdump", "-N2", "-n4", "-o", "step_n4.out", "--wrap",
			`srun -l bash -c "echo SLURM_PROCID=\$SLURM_PROCID SLURM_LOCALID=\$SLURM_LOCALID SLURM_NODEID=\$SLURM_NODEID SLURMD_NODENAME=\$SLURMD_NODENAME SLURM_STEP_ID=\$SLURM_STEP_ID" | sort; srun -N1 -n1 true`)
		if code != 0 {
			t.Fatalf("sbatch: %d %q %q", code, out, errs)
		}
		id := idOf(out)
		want := "0: SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 SLURMD_NODENAME=node1 SLURM_STEP_ID=0\n" +
			"1: SLURM_PROCID=1 SLURM_LOCALID=1 SLURM_NODEID=0 SLURMD_NODENAME=node1 SLURM_STEP_ID=0\n" +
			"2: SLURM_PROCID=2 SLURM_LOCALID=0 SLURM_NODEID=1 SLURMD_NODENAME=node2 SLURM_STEP_ID=0\n" +
			"3: SLURM_PROCID=3 SLURM_LOCALID=1 SLURM_NODEID=1 SLURMD_NODENAME=node2 SLURM_STEP_ID=0\n"
		got, _ := os.ReadFile(filepath.Join(rootDir, "step_n4.out"))
		// The allocation is two nodes; which two is the scheduler's call.
		re := regexp.MustCompile(`node\d`)
		if norm := re.ReplaceAllStringFunc(string(got), func(string) string { return "nodeX" }); norm != re.ReplaceAllStringFunc(want, func(string) string { return "nodeX" }) {
			t.Errorf("output:\n%s\nwant:\n%s", got, want)
		}
		nodes := l.job(id).NodeNames()
		for _, w := range []string{
			fmt.Sprintf("%d|stepdump|COMPLETED|0:0|", id),
			fmt.Sprintf("%d.batch|batch|COMPLETED|0:0|%s", id, nodes[0]),
			fmt.Sprintf("%d.0|bash|COMPLETED|0:0|%s", id, hostlist.Compress(nodes)),
			fmt.Sprintf("%d.1|true|COMPLETED|0:0|%s", id, nodes[0]),
		} {
			found := false
			for _, r := range l.stepRows(id) {
				found = found || strings.HasPrefix(r, w)
			}
			if !found {
				t.Errorf("no sacct row %q in %q", w, l.stepRows(id))
			}
		}
	})

	t.Run("SrunAlone", func(t *testing.T) {
		l := l.with(t)
		// ../shared/slurm-reference/15
		out, errs, code := l.run(0, rootDir, "srun", "-N2", "-n4", "-l", "bash", "-c",
			"echo SLURM_PROCID=$SLURM_PROCID SLURM_LOCALID=$SLURM_LOCALID SLURM_NODEID=$SLURM_NODEID")
		want := []string{
			"0: SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0", "1: SLURM_PROCID=1 SLURM_LOCALID=1 SLURM_NODEID=0",
			"2: SLURM_PROCID=2 SLURM_LOCALID=0 SLURM_NODEID=1", "3: SLURM_PROCID=3 SLURM_LOCALID=1 SLURM_NODEID=1",
		}
		if got := sortedLines(out); code != 0 || errs != "" || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("srun: exit %d stderr %q output %q", code, errs, got)
		}
		id := l.lastJob()
		l.waitRow(id, fmt.Sprintf("%d|bash|COMPLETED|0:0|%s", id, hostlist.Compress(l.job(id).NodeNames())))

		// ../shared/slurm-reference/20 and 21: the highest exit code, and
		// srun's line for each failed task.
		out, errs, code = l.run(0, rootDir, "srun", "false")
		if code != 1 || out != "" || !regexp.MustCompile(`^srun: error: node\d: task 0: Exited with exit code 1\n$`).MatchString(errs) {
			t.Errorf("srun false: exit %d %q %q", code, out, errs)
		}
		out, errs, code = l.run(0, rootDir, "srun", "-N2", "bash", "-c", "exit 3")
		if code != 3 || out != "" || len(sortedLines(errs)) != 2 ||
			!regexp.MustCompile(`^srun: error: node\d: task 0: Exited with exit code 3$`).MatchString(sortedLines(errs)[0]) ||
			!regexp.MustCompile(`^srun: error: node\d: task 1: Exited with exit code 3$`).MatchString(sortedLines(errs)[1]) {
			t.Errorf("srun exit 3: exit %d %q %q", code, out, errs)
		}
		id = l.lastJob()
		l.waitRow(id, fmt.Sprintf("%d|bash|FAILED|3:0|%s", id, hostlist.Compress(l.job(id).NodeNames())))
		l.waitRow(id, fmt.Sprintf("%d.0|bash|FAILED|3:0|%s", id, hostlist.Compress(l.job(id).NodeNames())))

		// Errors as Slurm prints them.
		_, errs, code = l.run(0, rootDir, "srun", "-p", "nosuch", "true")
		if code != 1 || errs != "srun: error: invalid partition specified: nosuch\nsrun: error: Unable to allocate resources: Invalid partition name specified\n" {
			t.Errorf("srun -p nosuch: %d %q", code, errs)
		}
		_, errs, code = l.run(0, rootDir, "srun", "-N", "10", "true")
		if code != 1 || errs != "srun: error: Unable to allocate resources: More processors requested than permitted\n" {
			t.Errorf("srun -N 10: %d %q", code, errs)
		}
		_, errs, code = l.run(0, rootDir, "srun", "nosuchcommand")
		if code != 2 || !strings.Contains(errs, "slurmstepd: error: execve(): nosuchcommand: No such file or directory") ||
			!strings.Contains(errs, ": task 0: Exited with exit code 2") {
			t.Errorf("srun nosuchcommand: %d %q", code, errs)
		}
	})

	t.Run("Environment", func(t *testing.T) {
		l := l.with(t)
		// ../shared/slurm-reference/16, and PyTorch's variables.
		out, errs, code := l.run(0, rootDir, "srun", "-N2", "-n4", "bash", "-c", `if [ $SLURM_PROCID = 3 ]; then env | sort; fi`)
		if code != 0 {
			t.Fatalf("srun: %d %q", code, errs)
		}
		env := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = v
			}
		}
		id := l.lastJob()
		nodes := l.job(id).Steps[0].Nodes
		want := map[string]string{
			"SLURM_JOB_ID": fmt.Sprint(id), "SLURM_JOBID": fmt.Sprint(id), "SLURM_STEP_ID": "0", "SLURM_STEPID": "0",
			"SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NODEID": "1", "SLURM_NTASKS": "4", "SLURM_NPROCS": "4",
			"SLURM_NNODES": "2", "SLURM_JOB_NUM_NODES": "2", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NUM_TASKS": "4",
			"SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_JOB_CPUS_PER_NODE": "2(x2)",
			"SLURM_GTIDS": "2,3", "SLURM_CPUS_ON_NODE": "2", "SLURMD_NODENAME": nodes[1], "SLURM_CLUSTER_NAME": "lab",
			"SLURM_JOB_NODELIST": hostlist.Compress(nodes), "SLURM_STEP_NODELIST": hostlist.Compress(nodes), "SLURM_JOB_NAME": "bash",
			"SLURM_JOB_PARTITION": "debug", "SLURM_JOB_USER": "root", "SLURM_JOB_UID": "0", "SLURM_SUBMIT_DIR": rootDir,
			"SLURM_UMASK": "0022", "SLURM_CONF": filepath.Join(l.dir, "slurm.conf"),
			"MASTER_ADDR": l.net + nodes[0][4:], "MASTER_PORT": fmt.Sprint(10000 + id%50000),
			"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s=%q, want %q", k, env[k], v)
			}
		}

		// --export: NONE passes only SLURM_* (PATH is the default one);
		// a list passes what it names.
		cmd := []string{"sh", "-c", "echo FOO=${FOO-unset} BAR=${BAR-unset} JOB=${SLURM_JOB_ID-unset}"}
		t.Setenv("FOO", "foo")
		for _, c := range []struct{ export, want string }{
			{"ALL", "FOO=foo BAR=unset JOB="},
			{"NONE", "FOO=unset BAR=unset JOB="},
			{"FOO,BAR=bar", "FOO=foo BAR=bar JOB="},
			{"BAR=bar", "FOO=unset BAR=bar JOB="},
			{"ALL,BAR=bar", "FOO=foo BAR=bar JOB="},
		} {
			out, errs, code := l.run(0, rootDir, append([]string{"srun", "--export=" + c.export}, cmd...)...)
			if code != 0 || !strings.HasPrefix(out, c.want) || strings.HasSuffix(out, "JOB=unset\n") {
				t.Errorf("--export=%s: %d %q %q, want %q", c.export, code, out, errs, c.want)
			}
		}
	})

	t.Run("AsUser", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(nobody, userDir, "srun", "-n2", "-l", "sh", "-c", `echo $(id -u) $(pwd); touch "$TMPDIR/x"`)
		if got := sortedLines(out); code != 0 || len(got) != 2 || got[0] != fmt.Sprintf("0: %d %s", nobody, userDir) || got[1] != fmt.Sprintf("1: %d %s", nobody, userDir) {
			t.Errorf("srun as nobody: %d %q %q", code, out, errs)
		}
		// Another user's job is not theirs to run steps in.
		roots := l.submit(0, rootDir, "--wrap", "sleep 300")
		l.waitState(roots, "R")
		_, errs, code = l.run(nobody, userDir, "srun", "--jobid", fmt.Sprint(roots), "true")
		if code != 1 || errs != fmt.Sprintf("srun: error: Unable to create step for job %d: Access/permission denied\n", roots) {
			t.Errorf("step in root's job: %d %q", code, errs)
		}
		l.run(0, rootDir, "cancel", fmt.Sprint(roots))
	})

	t.Run("CtrlC", func(t *testing.T) {
		l := l.with(t)
		// -X: the first Ctrl-C is passed on rather than answered with the
		// tasks' states; a second within a second ends the step.
		cmd := exec.Command(l.bin, "srun", "-X", "-N2", "-l", "bash", "-c",
			`trap 'echo "got INT"' INT; trap '' TERM; echo up; while :; do sleep 0.05; done`)
		cmd.Dir = rootDir
		cmd.Env = append(os.Environ(), "HPC_DIR="+l.dir)
		stdout, _ := cmd.StdoutPipe()
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		errText := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(stderr)
			errText <- string(b)
		}()
		expect := func(want ...string) {
			var got []string
			timeout := time.After(30 * time.Second)
			for len(got) < len(want) {
				select {
				case s, ok := <-lines:
					if !ok {
						t.Fatalf("srun ended; got %q, want %q", got, want)
					}
					got = append(got, s)
				case <-timeout:
					cmd.Process.Kill()
					t.Fatalf("got %q, want %q", got, want)
				}
			}
			sort.Strings(got)
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("got %q, want %q", got, want)
			}
		}
		expect("0: up", "1: up")
		cmd.Process.Signal(syscall.SIGINT)
		expect("0: got INT", "1: got INT")
		cmd.Process.Signal(syscall.SIGINT) // the tasks ignore SIGTERM: SIGKILL ends them
		err := cmd.Wait()
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != 128+9 {
			t.Errorf("srun after two Ctrl-C: %v", err)
		}
		id := l.lastJob()
		stderrText := <-errText
		for _, w := range []string{
			fmt.Sprintf("srun: sending Ctrl-C to StepId=%d.0\n", id), "srun: forcing job termination\n",
			": task 0: Killed\n", ": task 1: Killed\n",
		} {
			if !strings.Contains(stderrText, w) {
				t.Errorf("stderr lacks %q:\n%s", w, stderrText)
			}
		}
		l.waitRow(id, fmt.Sprintf("%d.0|bash|CANCELLED|0:9|%s", id, hostlist.Compress(l.job(id).NodeNames())))
	})

	t.Run("Salloc", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(0, rootDir, "salloc", "-N2", "sh", "-c",
			`srun -l printenv SLURMD_NODENAME | sort; echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST"; exit 4`)
		id := l.lastJob()
		nodes := l.job(id).NodeNames()
		want := fmt.Sprintf("0: %s\n1: %s\njob %d on %s\n", nodes[0], nodes[1], id, hostlist.Compress(nodes))
		wantErr := fmt.Sprintf("salloc: Granted job allocation %d\nsalloc: Nodes %s are ready for job\nsalloc: Relinquishing job allocation %d\n", id, hostlist.Compress(nodes), id)
		if code != 4 || out != want || errs != wantErr {
			t.Errorf("salloc: exit %d\n%q\n%q\nwant\n%q\n%q", code, out, errs, want, wantErr)
		}
		l.waitRow(id, fmt.Sprintf("%d|sh|FAILED|4:0|%s", id, hostlist.Compress(nodes)))
		l.waitRow(id, fmt.Sprintf("%d.0|printenv|COMPLETED|0:0|%s", id, hostlist.Compress(nodes)))
		// Released at once, maybe before its holder started.
		for range 5 {
			if _, errs, code := l.run(0, rootDir, "salloc", "-Q", "true"); code != 0 || errs != "" {
				t.Fatalf("salloc true: %d %q", code, errs)
			}
			id := l.lastJob()
			l.waitRow(id, fmt.Sprintf("%d|true|COMPLETED|0:0|%s", id, l.job(id).NodeNames()[0]))
		}
	})

	t.Run("CancelEndsSteps", func(t *testing.T) {
		l := l.with(t)
		id := l.submit(0, rootDir, "-N3", "-o", "cancel.out", "--wrap", "srun sh -c 'echo up; exec sleep 300'")
		l.waitRow(id, fmt.Sprintf("%d.0|sh|RUNNING|0:0|node[1-3]", id))
		waitFor(t, 30*time.Second, "the step's tasks to start", func() (bool, string) {
			b, _ := os.ReadFile(filepath.Join(rootDir, "cancel.out"))
			return string(b) == "up\nup\nup\n", fmt.Sprintf("%q", b)
		})
		if _, errs, code := l.run(0, rootDir, "cancel", fmt.Sprint(id)); code != 0 {
			t.Fatalf("cancel: %q", errs)
		}
		l.waitState(id, "CA")
		l.waitRow(id, fmt.Sprintf("%d.0|sh|CANCELLED|0:15|node[1-3]", id))
		// Nothing of the step is left on any node.
		waitFor(t, 20*time.Second, "the step's containers and TMPDIRs to go", func() (bool, string) {
			var left []string
			for _, n := range []string{"node1", "node2", "node3"} {
				ents, _ := os.ReadDir(hpcexec.ContainerStateDir(n, filepath.Join(l.dir, n, "exec")))
				_, err := os.Stat(filepath.Join(l.dir, n, "tmp", fmt.Sprintf("job%d", id)))
				if len(ents) != 0 || !os.IsNotExist(err) {
					left = append(left, fmt.Sprintf("%s: containers %v, TMPDIR %v", n, ents, err))
				}
			}
			return len(left) == 0, strings.Join(left, "; ")
		})
	})

	t.Run("SignalReachesSteps", func(t *testing.T) {
		l := l.with(t)
		// scancel --signal reaches every task of every step, on every node.
		id := l.submit(0, rootDir, "-N2", "-o", "signal.out", "--wrap",
			`trap '' USR1; srun -l sh -c 'trap "echo USR1" USR1; echo up; while :; do sleep 0.05; done'`)
		out := filepath.Join(rootDir, "signal.out")
		bothTasks := func(what string, n int) {
			waitFor(t, 30*time.Second, fmt.Sprintf("%q to reach both tasks", what), func() (bool, string) {
				b, _ := os.ReadFile(out)
				return strings.Count(string(b), "0: "+what) >= n && strings.Count(string(b), "1: "+what) >= n, fmt.Sprintf("%q", b)
			})
		}
		bothTasks("up", 1)
		if _, errs, code := l.run(0, rootDir, "cancel", "--signal=USR1", fmt.Sprint(id)); code != 0 {
			t.Fatalf("scancel --signal: %d %q", code, errs)
		}
		bothTasks("USR1", 1)
		l.waitState(id, "R")
		l.run(0, rootDir, "cancel", fmt.Sprint(id))
		l.waitState(id, "CA")
	})

	t.Run("Stdin", func(t *testing.T) {
		l := l.with(t)
		// srun's standard input reaches every task by default, one task
		// with --input=N, none with --input=none; a batch script's srun
		// (stdin /dev/null) gives its tasks /dev/null.
		run := func(stdin string, args ...string) (string, string, int) {
			return l.runInput(0, rootDir, strings.NewReader(stdin), args...)
		}
		big := strings.Repeat("0123456789abcdef", 16<<10) // 256 KiB: many pieces
		out, errs, code := run("hello\n"+big, "srun", "-N2", "-n2", "-l", "sh", "-c", "read x; echo $x; wc -c")
		if code != 0 || !reflect.DeepEqual(sortedLines(out), []string{"0: 262144", "0: hello", "1: 262144", "1: hello"}) {
			t.Errorf("stdin to all: %d %q %q", code, out, errs)
		}
		out, errs, code = run("only one\n", "srun", "-n2", "-l", "--input=1", "sh", "-c", "cat; echo end")
		if code != 0 || !reflect.DeepEqual(sortedLines(out), []string{"0: end", "1: end", "1: only one"}) {
			t.Errorf("--input=1: %d %q %q", code, out, errs)
		}
		out, errs, code = run("ignored\n", "srun", "--input=none", "cat")
		if code != 0 || out != "" {
			t.Errorf("--input=none: %d %q %q", code, out, errs)
		}
		if _, errs, code = run("", "srun", "--input=x.txt", "true"); code == 0 || !strings.Contains(errs, "Could not open stdin file") {
			t.Errorf("--input=missing file: %d %q", code, errs)
		}
		// --input=FILE and -o with %t: files on srun's side.
		os.WriteFile(filepath.Join(rootDir, "in.txt"), []byte("from file\n"), 0o644)
		out, errs, code = run("ignored\n", "srun", "-n2", "--input=in.txt", "-o", "io_%j_%t.out", "sh", "-c", "cat; echo $SLURM_PROCID")
		files, _ := filepath.Glob(filepath.Join(rootDir, "io_*_1.out"))
		if code != 0 || out != "" || len(files) != 1 {
			t.Fatalf("--input=FILE -o %%t: %d %q %q %q", code, out, errs, files)
		}
		if b, _ := os.ReadFile(files[0]); string(b) != "from file\n1\n" {
			t.Errorf("task 1's file: %q", b)
		}
	})

	t.Run("Pty", func(t *testing.T) {
		l := l.with(t)
		// srun --pty: task 0 runs on a terminal of srun's terminal's size,
		// keys reach it raw (Ctrl-C interrupts the command on the task's
		// terminal, not srun), and what it writes comes back.
		master, slave := testPTY(t, 33, 77)
		cmd := exec.Command(l.bin, "srun", "--pty", "sh")
		cmd.Dir, cmd.Env = rootDir, append(os.Environ(), "HPC_DIR="+l.dir, "PS1=$ ")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		var got syncBuffer
		go io.Copy(&got, master)
		waitOut := func(what string) {
			waitFor(t, 30*time.Second, fmt.Sprintf("%q on the terminal", what), func() (bool, string) {
				s := got.String()
				return strings.Contains(s, what), fmt.Sprintf("%q", s)
			})
		}
		// What the task prints is computed, so that the terminal's echo of
		// the command line cannot pass for it.
		io.WriteString(master, "test -t 0 && echo tty-$((6*7)); stty size\r")
		waitOut("33 77")
		waitOut("tty-42")
		io.WriteString(master, "sleep 30; echo after-$((1+1))\r")
		time.Sleep(500 * time.Millisecond)
		io.WriteString(master, "\x03") // Ctrl-C: the sleep ends, the shell stays
		io.WriteString(master, "echo still-$((2+3)); exit 5\r")
		waitOut("still-5")
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 {
				t.Errorf("srun --pty: %v, output %q", err, got.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("srun --pty did not end: %q", got.String())
		}
		if strings.Contains(got.String(), "after-2") {
			t.Errorf("Ctrl-C did not reach the task's terminal: %q", got.String())
		}
	})

	t.Run("Usage", func(t *testing.T) {
		l := l.with(t)
		// sacct shows what each step used: MaxRSS (its peak memory) on
		// MaxRSSNode, and TotalCPU; the job's TotalCPU sums its steps'.
		out, errs, code := l.run(0, rootDir, "submit", "--wait", "-N2", "-o", "usage.out", "--wrap",
			`head -c 80M /dev/zero | tail | wc -c; srun -N1 -n1 -w node2 sh -c 'head -c 40M /dev/zero | tail | wc -c'`)
		if code != 0 {
			t.Fatalf("job: %d %q %q", code, out, errs)
		}
		id := idOf(out)
		out, _, _ = l.run(0, rootDir, "sacct", "-j", fmt.Sprint(id), "-P", "-n", "-o", "JobID,MaxRSS,MaxRSSNode,TotalCPU")
		rows := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Split(line, "|")
			rows[f[0]] = f[1:]
		}
		kb := func(s string) int64 {
			n, _ := strconv.ParseInt(strings.TrimSuffix(s, "K"), 10, 64)
			return n
		}
		job, batch, step := rows[fmt.Sprint(id)], rows[fmt.Sprintf("%d.batch", id)], rows[fmt.Sprintf("%d.0", id)]
		if len(job) != 3 || len(batch) != 3 || len(step) != 3 {
			t.Fatalf("sacct:\n%s", out)
		}
		if job[0] != "" || job[2] == "" {
			t.Errorf("job row: %q", job)
		}
		if kb(batch[0]) < 80<<10 || batch[1] != "node1" || batch[2] == "" {
			t.Errorf("batch step: %q", batch)
		}
		if kb(step[0]) < 40<<10 || kb(step[0]) >= kb(batch[0]) || step[1] != "node2" || step[2] == "" {
			t.Errorf("step 0: %q", step)
		}
	})

	t.Run("SignalScopes", func(t *testing.T) {
		l := l.with(t)
		// scancel -s reaches the steps only; -b the batch shell only; -f
		// both; as Slurm's scancel does.
		script := `trap 'echo batch got USR1' USR1; trap 'echo batch got USR2' USR2
srun sh -c 'trap "echo step got USR1" USR1; echo up; while :; do sleep 0.05; done' &
while :; do sleep 0.05; done`
		id := l.submit(0, rootDir, "-o", "scopes.out", "--wrap", script)
		out := filepath.Join(rootDir, "scopes.out")
		wait := func(what string) {
			waitFor(t, 30*time.Second, fmt.Sprintf("%q in %s", what, out), func() (bool, string) {
				b, _ := os.ReadFile(out)
				return strings.Contains(string(b), what), fmt.Sprintf("%q", b)
			})
		}
		wait("up")
		l.run(0, rootDir, "cancel", "-s", "USR1", fmt.Sprint(id))
		wait("step got USR1")
		time.Sleep(300 * time.Millisecond)
		if b, _ := os.ReadFile(out); strings.Contains(string(b), "batch got") {
			t.Errorf("scancel -s reached the batch shell:\n%s", b)
		}
		l.run(0, rootDir, "cancel", "-b", "-s", "USR2", fmt.Sprint(id))
		wait("batch got USR2")
		l.run(0, rootDir, "cancel", "-f", "-s", "USR1", fmt.Sprint(id))
		wait("batch got USR1")
		l.run(0, rootDir, "cancel", fmt.Sprint(id))
		l.waitState(id, "CA")
	})

	t.Run("WarningSignal", func(t *testing.T) {
		l := l.with(t)
		// --signal=B:USR1@58 with a one-minute limit: the batch shell gets
		// USR1 about two seconds in, well before the limit, and can end
		// cleanly; without B: the signal goes to the steps.
		out, errs, code := l.run(0, rootDir, "submit", "--wait", "-t", "1", "--signal=B:USR1@58", "-o", "warn.out", "--wrap",
			`trap 'echo warned; exit 0' USR1; while :; do sleep 0.05; done`)
		if code != 0 {
			t.Fatalf("B:USR1: exit %d %q %q", code, out, errs)
		}
		if got := readFileT(t, filepath.Join(rootDir, "warn.out")); got != "warned\n" {
			t.Errorf("batch warning: %q", got)
		}
		out, errs, code = l.run(0, rootDir, "submit", "--wait", "-t", "1", "--signal=USR1@58", "-o", "warn2.out", "--wrap",
			`trap '' USR1; srun sh -c 'trap "echo step warned; exit 0" USR1; while :; do sleep 0.05; done'`)
		if code != 0 {
			t.Fatalf("USR1 to steps: exit %d %q %q", code, out, errs)
		}
		// The step's processes all get it (its sleep too, which the task's
		// shell reports), as slurmstepd signals a step.
		if got := readFileT(t, filepath.Join(rootDir, "warn2.out")); !strings.Contains(got, "step warned\n") {
			t.Errorf("step warning: %q", got)
		}
	})

	t.Run("OutOfMemory", func(t *testing.T) {
		l := l.with(t)
		hog := "dd if=/dev/zero of=/dev/null bs=200M count=1"
		out, _, code := l.run(0, rootDir, "submit", "--wait", "-J", "oom", "--mem=50M", "-o", "oom.out", "--wrap", hog)
		id := idOf(out)
		// Slurm shows an OOM kill as OUT_OF_MEMORY 0:125, and slurmstepd
		// says so at the end of the job's output.
		if code == 0 {
			t.Errorf("batch over --mem: exit %d", code)
		}
		l.waitRow(id, fmt.Sprintf("%d|oom|OUT_OF_MEMORY|0:125|%s", id, l.job(id).NodeNames()[0]))
		if b, _ := os.ReadFile(filepath.Join(rootDir, "oom.out")); !strings.HasSuffix(string(b),
			fmt.Sprintf("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=%d.batch. Some of your processes may have been killed by the cgroup out-of-memory handler.\n", id)) {
			t.Errorf("output of the OOM job: %q", b)
		}
		// A step over the job's memory: the step ends OUT_OF_MEMORY, srun
		// says so.
		out, errs, code := l.run(0, rootDir, "srun", "--mem=50M", "sh", "-c", hog)
		id = l.lastJob()
		node := l.job(id).NodeNames()[0]
		if code != 125 || !strings.Contains(errs, fmt.Sprintf("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=%d.0.", id)) ||
			!strings.Contains(errs, fmt.Sprintf("srun: error: %s: task 0: Out Of Memory\n", node)) {
			t.Errorf("srun over --mem: %d %q %q", code, out, errs)
		}
		l.waitRow(id, fmt.Sprintf("%d.0|sh|OUT_OF_MEMORY|0:125|%s", id, node))
		l.waitRow(id, fmt.Sprintf("%d|sh|OUT_OF_MEMORY|0:125|%s", id, node))
		if os.Getenv(labRaceEnv) != "" {
			return // a race-built srun alone needs more than the 20M below
		}
		// srun in a batch job shares the job's memory with its step: the
		// OOM killer takes the task over the limit, not srun nor a
		// step's supervisor, both bigger programs than Slurm's (tasks
		// start with a raised OOM score, srun lowers its own).
		out, _, _ = l.run(0, rootDir, "submit", "--wait", "-J", "srunoom", "--mem=20M", "-o", "srunoom.out", "--wrap",
			"echo adj=$(cat /proc/self/oom_score_adj)\nsrun sleep 1 & sleep 0.5; echo srun adj=$(cat /proc/$!/oom_score_adj) supervisor adj=$(cat /proc/1/oom_score_adj); wait\nsrun "+hog+"; echo srun=$?")
		id = idOf(out)
		node = l.job(id).NodeNames()[0]
		b, _ := os.ReadFile(filepath.Join(rootDir, "srunoom.out"))
		if got := string(b); !strings.HasPrefix(got, "adj=500\nsrun adj=0 supervisor adj=0\n") || !strings.Contains(got, fmt.Sprintf("srun: error: %s: task 0: Out Of Memory\n", node)) ||
			!strings.HasSuffix(got, "srun=125\n") {
			t.Errorf("srun over the job's memory:\n%s", got)
		}
		l.waitRow(id, fmt.Sprintf("%d.1|dd|OUT_OF_MEMORY|0:125|%s", id, node))
		// --mem-per-cpu sizes the limit from the CPUs: 2 x 60M holds 100M.
		out, _, code = l.run(0, rootDir, "submit", "--wait", "-c2", "--mem-per-cpu=60M", "--wrap", "dd if=/dev/zero of=/dev/null bs=100M count=1")
		if code != 0 {
			t.Errorf("within --mem-per-cpu: %d %q acct %q", code, out, l.acctRow(idOf(out)))
		}
		out, _, _ = l.run(0, rootDir, "submit", "--wait", "-J", "oom", "--mem-per-cpu=60M", "--wrap", "dd if=/dev/zero of=/dev/null bs=100M count=1")
		id = idOf(out)
		l.waitRow(id, fmt.Sprintf("%d|oom|OUT_OF_MEMORY|0:125|%s", id, l.job(id).NodeNames()[0]))
	})

	t.Run("OutputFiles", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(nobody, userDir, "submit", "--wait", "-J", "pat", "-o", "%x-%j-%u-%N-%A-%a-%s-%t-%%.out", "--wrap", "echo hi")
		if code != 0 {
			t.Fatalf("submit: %d %q %q", code, out, errs)
		}
		id := idOf(out)
		name := fmt.Sprintf("pat-%d-nobody-%s-%d-4294967294-batch-0-%%.out", id, l.job(id).NodeNames()[0], id)
		if b, err := os.ReadFile(filepath.Join(userDir, name)); err != nil || string(b) != "hi\n" {
			t.Errorf("%s: %q %v", name, b, err)
		}
		// Output files are truncated, unless --open-mode=append.
		f := filepath.Join(userDir, "mode.out")
		os.WriteFile(f, []byte("old\n"), 0o644)
		os.Chown(f, nobody, nobody)
		l.run(nobody, userDir, "submit", "--wait", "-o", f, "--open-mode=append", "--wrap", "echo new")
		if b, _ := os.ReadFile(f); string(b) != "old\nnew\n" {
			t.Errorf("append: %q", b)
		}
		l.run(nobody, userDir, "submit", "--wait", "-o", f, "--wrap", "echo fresh")
		if b, _ := os.ReadFile(f); string(b) != "fresh\n" {
			t.Errorf("truncate: %q", b)
		}
		// An output file the user cannot write: the job fails with the
		// reason; the node goes on running jobs.
		private := filepath.Join(l.top, "private")
		os.Mkdir(private, 0o700)
		out, _, code = l.run(nobody, userDir, "submit", "--wait", "-o", filepath.Join(private, "x.out"), "--wrap", "echo never")
		id = idOf(out)
		reason := "Could not open stdout file " + filepath.Join(private, "x.out") + ": Permission denied"
		if j := l.job(id); code == 0 || j.State != api.StateFailed || j.Reason != reason || j.ExitCode != 1 {
			t.Errorf("unwritable output: exit %d, job %s %q %d", code, j.State, j.Reason, j.ExitCode)
		}
		show, _, _ := l.run(0, l.top, "scontrol", "show", "job", fmt.Sprint(id))
		if !strings.Contains(show, "Reason="+strings.ReplaceAll(reason, " ", "_")) {
			t.Errorf("scontrol show job:\n%s", show)
		}
		if _, _, code := l.run(nobody, userDir, "submit", "--wait", "--wrap", "true"); code != 0 {
			t.Error("the next job failed")
		}
	})

	t.Run("Storage", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(nobody, userDir, "submit", "--wait", "-N2", "-o", "storage.out", "--wrap",
			`echo "tmp=$TMPDIR scratch=$SCRATCH"; touch "$TMPDIR/batch" "$SCRATCH/kept"; stat -c '%U %a' "$TMPDIR" "$SCRATCH"; srun -N2 sh -c 'touch $TMPDIR/step; echo $TMPDIR'`)
		if code != 0 {
			t.Fatalf("submit: %d %q %q", code, out, errs)
		}
		id := idOf(out)
		b, _ := os.ReadFile(filepath.Join(userDir, "storage.out"))
		nodes := l.job(id).NodeNames()
		scratch := filepath.Join(l.dir, "scratch", "nobody")
		want := []string{
			fmt.Sprintf("tmp=%s scratch=%s", filepath.Join(l.dir, nodes[0], "tmp", fmt.Sprintf("job%d", id)), scratch),
			"nobody 700", "nobody 700",
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 5 || strings.Join(lines[:3], "|") != strings.Join(want, "|") {
			t.Fatalf("output %q, want %q and two $TMPDIRs", lines, want)
		}
		if steps := sortedLines(strings.Join(lines[3:], "\n")); steps[0] != filepath.Join(l.dir, nodes[0], "tmp", fmt.Sprintf("job%d", id)) ||
			steps[1] != filepath.Join(l.dir, nodes[1], "tmp", fmt.Sprintf("job%d", id)) {
			t.Errorf("steps' TMPDIRs %q", steps)
		}
		if _, err := os.Stat(filepath.Join(scratch, "kept")); err != nil {
			t.Errorf("SCRATCH not kept: %v", err)
		}
		waitFor(t, 20*time.Second, fmt.Sprintf("the TMPDIRs of job %d to go", id), func() (bool, string) {
			var left []string
			for _, n := range nodes {
				if _, err := os.Stat(filepath.Join(l.dir, n, "tmp", fmt.Sprintf("job%d", id))); !os.IsNotExist(err) {
					left = append(left, fmt.Sprintf("%s's still there (%v)", n, err))
				}
			}
			return len(left) == 0, strings.Join(left, "; ")
		})
	})
}

// Without root the same steps run as plain processes of the user.
func TestLabStepsUnprivileged(t *testing.T) {
	needLab(t)
	l, home, _ := startUserLab(t, "hpc-steps-user-", 2)
	out, errs, code := l.run(nobody, home, "srun", "-N2", "-n4", "-l", "sh", "-c", `echo $(id -u) $SLURMD_NODENAME $RANK/$WORLD_SIZE; exit $SLURM_PROCID`)
	want := []string{
		fmt.Sprintf("0: %d node1 0/4", nobody), fmt.Sprintf("1: %d node1 1/4", nobody),
		fmt.Sprintf("2: %d node2 2/4", nobody), fmt.Sprintf("3: %d node2 3/4", nobody),
	}
	wantErr := []string{
		"srun: error: node1: task 1: Exited with exit code 1",
		"srun: error: node2: task 2: Exited with exit code 2", "srun: error: node2: task 3: Exited with exit code 3",
	}
	if got := sortedLines(out); code != 3 || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("srun: exit %d, output %q, want %q", code, got, want)
	}
	// Tasks 2 and 3 end on node2 with different codes: one line each.
	if got := sortedLines(errs); strings.Join(got, "|") != strings.Join(wantErr, "|") {
		t.Errorf("stderr %q, want %q", got, wantErr)
	}
}

// testPTY opens a pseudo-terminal of rows x cols: a terminal for srun.
func testPTY(t *testing.T, rows, cols uint16) (master, slave *os.File) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	master = os.NewFile(uintptr(m), "ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		t.Fatal(errno)
	}
	slave = os.NewFile(sfd, "pts")
	if err := unix.IoctlSetWinsize(int(sfd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// syncBuffer is a bytes.Buffer several goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
