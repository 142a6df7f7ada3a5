//go:build linux

package exec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

const nobody = 65534

func TestMain(m *testing.M) {
	InitIfChild()
	if os.Getenv(nonRootHelperEnv) != "" {
		os.Exit(nonRootHelper())
	}
	if os.Getenv(crashHelperEnv) != "" {
		os.Exit(crashHelper())
	}
	os.Exit(m.Run())
}

var env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// testBase is a directory every user can traverse, removed at the end.
func testBase(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hpc-exec-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Never remove through a mount: the state directory holds a bind
		// of the host's /.
		if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				if m, _ := isMountPoint(p); m {
					return fmt.Errorf("%s is still a mount point", p)
				}
			}
			return nil
		}); err != nil {
			t.Errorf("not removing %s: %v", dir, err)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// userDir makes a directory owned by uid under base.
func userDir(t testing.TB, base, name string, uid int) string {
	t.Helper()
	d := filepath.Join(base, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, uid, uid); err != nil {
		t.Fatal(err)
	}
	return d
}

// newContainerExecutor returns an executor in container mode, or skips.
func newContainerExecutor(t testing.TB, node string) *Executor {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("containers need root")
	}
	base := testBase(t)
	e, err := New(Options{StateDir: filepath.Join(base, "state"), NodeName: node})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if !e.Containers() {
		t.Skipf("containers are not usable here: %s", e.Mode())
	}
	return e
}

func newPlainExecutor(t testing.TB, node string) *Executor {
	t.Helper()
	e, err := New(Options{NodeName: node, ForcePlain: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if e.Containers() || !strings.HasPrefix(e.Mode(), "plain processes") {
		t.Fatalf("ForcePlain: mode %q", e.Mode())
	}
	return e
}

// modes runs f against a container executor and a plain one.
func modes(t *testing.T, f func(t *testing.T, e *Executor)) {
	t.Run("containers", func(t *testing.T) {
		f(t, newContainerExecutor(t, "cn-"+strings.ToLower(strings.SplitN(t.Name(), "/", 2)[0])))
	})
	t.Run("plain", func(t *testing.T) {
		f(t, newPlainExecutor(t, "pn"))
	})
}

func launch(t testing.TB, e *Executor, spec StepSpec) *Step {
	t.Helper()
	if spec.Env == nil {
		spec.Env = env
	}
	s, err := e.Launch(spec)
	if err != nil {
		t.Fatalf("Launch(%s): %v", spec.ID, err)
	}
	return s
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitForFile waits until p contains want (the step has got that far).
func waitForFile(t testing.TB, p, want string, s *Step) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), want) {
			return
		}
		select {
		case <-s.Done():
			b, _ := os.ReadFile(p)
			t.Fatalf("step ended before writing %q: %+v, output %q", want, s.Wait(), b)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("%s never contained %q", p, want)
}

func owner(t testing.TB, p string) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid)
}

func TestHelloAsRootAndUser(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		base := testBase(t)
		host, _ := os.Hostname()
		wantHost := host
		if e.Containers() {
			wantHost = e.node
		}
		for _, uid := range []int{0, nobody} {
			dir := userDir(t, base, "u"+strconv.Itoa(uid), uid)
			out := filepath.Join(dir, "hello.out")
			s := launch(t, e, StepSpec{
				ID:      fmt.Sprintf("1%d.batch", uid),
				Argv:    []string{"/bin/sh", "-c", "echo hi; id -u; hostname"},
				UID:     uint32(uid),
				GID:     uint32(uid),
				WorkDir: dir,
				Stdout:  out,
				Stderr:  out,
			})
			if s.Pid() <= 0 {
				t.Errorf("Pid() = %d", s.Pid())
			}
			r := s.Wait()
			if r.ExitCode != 0 || r.Signal != 0 || r.OOM || r.Err != nil {
				t.Errorf("uid %d: result %+v", uid, r)
			}
			if r.Start.IsZero() || r.End.Before(r.Start) {
				t.Errorf("uid %d: start %v end %v", uid, r.Start, r.End)
			}
			if got, want := readFile(t, out), fmt.Sprintf("hi\n%d\n%s\n", uid, wantHost); got != want {
				t.Errorf("uid %d: output %q, want %q", uid, got, want)
			}
			if o := owner(t, out); o != uid {
				t.Errorf("output owned by %d, want %d", o, uid)
			}
			// Wait again: same result.
			if r2 := s.Wait(); !reflect.DeepEqual(r2, r) {
				t.Errorf("second Wait: %+v, first %+v", r2, r)
			}
			if err := s.Signal(syscall.SIGTERM); !errors.Is(err, ErrStepEnded) {
				t.Errorf("Signal after the end: %v", err)
			}
		}
	})
}

func TestExitCodeAndOutputModes(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		out, errf := filepath.Join(dir, "o"), filepath.Join(dir, "e")
		run := func(id, script string, truncate bool) Result {
			return launch(t, e, StepSpec{ID: id, Argv: []string{"/bin/sh", "-c", script},
				UID: nobody, GID: nobody, Stdout: out, Stderr: errf, Truncate: truncate}).Wait()
		}
		if r := run("3.batch", "echo one; echo oops >&2; exit 3", false); r.ExitCode != 3 || r.Signal != 0 {
			t.Errorf("exit 3: %+v", r)
		}
		if r := run("4.batch", "echo two", false); r.ExitCode != 0 {
			t.Errorf("exit 0: %+v", r)
		}
		if got := readFile(t, out); got != "one\ntwo\n" {
			t.Errorf("appended stdout %q", got)
		}
		if got := readFile(t, errf); got != "oops\n" {
			t.Errorf("stderr %q", got)
		}
		run("5.batch", "echo three", true)
		if got := readFile(t, out); got != "three\n" {
			t.Errorf("truncated stdout %q", got)
		}
		// A process killed by a signal: Signal set, ExitCode 0.
		if r := run("6.batch", "kill -USR1 $$", false); r.Signal != int(syscall.SIGUSR1) || r.ExitCode != 0 {
			t.Errorf("killed by SIGUSR1: %+v", r)
		}
	})
}

// procStart is a process's start time, to tell it from a later one with the
// same pid.
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return "", false
	}
	if f[0] == "Z" { // a zombie has ended
		return "", false
	}
	return f[19], true
}

// stepProcs lists the host pids of a step's processes (with start times).
func stepProcs(t testing.TB, s *Step) map[int]string {
	t.Helper()
	var pids []int
	switch k := s.sig.(type) {
	case *ctrStep:
		var err error
		if pids, err = k.c.Processes(); err != nil {
			t.Fatal(err)
		}
	case *plainStep:
		ents, _ := os.ReadDir("/proc")
		for _, ent := range ents {
			pid, err := strconv.Atoi(ent.Name())
			if err != nil {
				continue
			}
			if pg, err := unix.Getpgid(pid); err == nil && pg == k.pgid {
				pids = append(pids, pid)
			}
		}
	}
	out := map[int]string{}
	for _, p := range pids {
		if st, ok := procStart(p); ok {
			out[p] = st
		}
	}
	return out
}

func checkGone(t testing.TB, procs map[int]string) {
	t.Helper()
	for pid, start := range procs {
		if st, ok := procStart(pid); ok && st == start {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Errorf("process %d (%q) of the step is still there", pid, cmd)
		}
	}
}

func TestKill(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		out := filepath.Join(dir, "kill.out")
		// A batch script with a backgrounded grandchild.
		s := launch(t, e, StepSpec{ID: "7.batch", UID: nobody, GID: nobody, Stdout: out, Stderr: out,
			Argv: []string{"/bin/sh", "-c", "sleep 1000 & echo started; sleep 1000; echo not killed"}})
		waitForFile(t, out, "started", s)
		procs := stepProcs(t, s)
		if len(procs) < 3 {
			t.Fatalf("expected the shell and two sleeps, got %v", procs)
		}
		s.Kill(10 * time.Minute)
		r := s.Wait()
		// SIGTERM did it (the SIGKILL after KillWait would read 9).
		if r.Signal != int(syscall.SIGTERM) || r.ExitCode != 0 {
			t.Errorf("result %+v, want Signal 15", r)
		}
		checkGone(t, procs)
		if strings.Contains(readFile(t, out), "not killed") {
			t.Error("the script went on after Kill")
		}

		// A step that ignores SIGTERM is killed after the grace time.
		s = launch(t, e, StepSpec{ID: "8.batch", UID: nobody, GID: nobody, Stdout: out, Stderr: out, Truncate: true,
			Argv: []string{"/bin/sh", "-c", "trap '' TERM; sleep 1000 & echo started; wait"}})
		waitForFile(t, out, "started", s)
		procs = stepProcs(t, s)
		s.Kill(100 * time.Millisecond)
		if r := s.Wait(); r.Signal != int(syscall.SIGKILL) {
			t.Errorf("TERM-proof step: %+v, want Signal 9", r)
		}
		checkGone(t, procs)
		s.Kill(time.Second) // after the end: nothing happens
	})
}

func TestSignal(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		out := filepath.Join(dir, "sig.out")
		s := launch(t, e, StepSpec{ID: "9.batch", UID: nobody, GID: nobody, Stdout: out, Stderr: out,
			Argv: []string{"/bin/sh", "-c", "trap 'echo got USR1; exit 42' USR1; echo ready; while :; do sleep 0.05; done"}})
		waitForFile(t, out, "ready", s)
		if err := s.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if r := s.Wait(); r.ExitCode != 42 {
			t.Errorf("result %+v, want exit 42", r)
		}
		if got := readFile(t, out); !strings.Contains(got, "got USR1") {
			t.Errorf("output %q", got)
		}
	})
}

func TestOutputNotWritable(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		base := testBase(t)
		private := filepath.Join(base, "private")
		if err := os.Mkdir(private, 0o700); err != nil {
			t.Fatal(err)
		}
		mine := userDir(t, base, "mine", nobody)
		bad := filepath.Join(private, "x.out")
		good := filepath.Join(mine, "ok.out")
		for _, c := range []struct{ stdout, stderr string }{{bad, bad}, {good, bad}, {bad, good}} {
			_, err := e.Launch(StepSpec{ID: "10.batch", Argv: []string{"/bin/true"}, Env: env,
				UID: nobody, GID: nobody, Stdout: c.stdout, Stderr: c.stderr})
			which := "stdout"
			if c.stdout == good {
				which = "stderr"
			}
			want := "Could not open " + which + " file " + bad + ": Permission denied"
			var oe *OutputError
			if err == nil || err.Error() != want || !errors.As(err, &oe) || !errors.Is(err, fs.ErrPermission) {
				t.Errorf("stdout %s stderr %s: error %v, want %q", c.stdout, c.stderr, err, want)
			}
			for _, p := range []string{bad, good} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was left behind", p)
				}
			}
		}
		// An output file the user may not write, in a directory the user
		// may: an existing file is opened, not replaced.
		theirs := filepath.Join(mine, "root.out")
		if err := os.WriteFile(theirs, []byte("root's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := e.Launch(StepSpec{ID: "11.batch", Argv: []string{"/bin/true"}, Env: env,
			UID: nobody, GID: nobody, Stdout: theirs})
		if err == nil || !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("root-owned output file: %v", err)
		}
		if got := readFile(t, theirs); got != "root's\n" {
			t.Errorf("root's file now holds %q", got)
		}
		checkNoLeftovers(t, e)
	})
}

// Output files the user may write but does not own keep their owner.
func TestForeignOutputFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		shared := filepath.Join(dir, "shared.log")
		if err := os.WriteFile(shared, []byte("root was here\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		os.Chmod(shared, 0o666)
		r := launch(t, e, StepSpec{ID: "15.batch", Argv: []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 4"},
			UID: nobody, GID: nobody, Stdout: shared, Stderr: shared}).Wait()
		if got := readFile(t, shared); got != "root was here\nout\nerr\n" || r.ExitCode != 4 {
			t.Errorf("output %q (%+v)", got, r)
		}
		if o := owner(t, shared); o != 0 {
			t.Errorf("the shared file now belongs to %d", o)
		}
		// A root job writing to a user's file.
		mine := filepath.Join(dir, "mine.log")
		if err := os.WriteFile(mine, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(mine, nobody, nobody)
		launch(t, e, StepSpec{ID: "16.batch", Argv: []string{"/bin/sh", "-c", "echo root"}, Stdout: mine}).Wait()
		if got := readFile(t, mine); got != "root\n" || owner(t, mine) != nobody {
			t.Errorf("user's file: %q, owner %d", got, owner(t, mine))
		}
	})
}

func TestLaunchErrors(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		out := filepath.Join(dir, "o")
		garbage := filepath.Join(dir, "garbage")
		if err := os.WriteFile(garbage, []byte{0, 1, 2, 3}, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			spec StepSpec
			want string
		}{
			{"relative command", StepSpec{ID: "a", Argv: []string{"sh"}}, "absolute path"},
			{"missing command", StepSpec{ID: "b", Argv: []string{"/no/such/program"}, Stdout: out}, "execve(): /no/such/program: No such file or directory"},
			{"relative output", StepSpec{ID: "c", Argv: []string{"/bin/true"}, Stdout: "x.out"}, "not absolute"},
			{"no id", StepSpec{Argv: []string{"/bin/true"}}, "step ID is empty"},
			{"a directory", StepSpec{ID: "d", Argv: []string{dir}, Stdout: out}, dir}, // fails after the container exists
			{"bad environment", StepSpec{ID: "e", Argv: []string{"/bin/true"}, Env: []string{"A=1", "B"}, Stdout: out}, `invalid environment entry "B"`},
		} {
			c.spec.UID, c.spec.GID = nobody, nobody
			if c.spec.Env == nil {
				c.spec.Env = env
			}
			_, err := e.Launch(c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.want)
			}
		}
		if _, err := os.Lstat(out); err == nil {
			t.Errorf("%s was left behind", out)
		}
		checkNoLeftovers(t, e)
		// A file that is not a program: execve says so at once.
		if _, err := e.Launch(StepSpec{ID: "f", Argv: []string{garbage}, Env: env, UID: nobody, GID: nobody, Stdout: out, Stderr: out}); err == nil || !strings.Contains(strings.ToLower(err.Error()), "exec format error") {
			t.Errorf("not a program: %v", err)
		}
		checkNoLeftovers(t, e)
		var s *Step
		// Duplicate IDs.
		s = launch(t, e, StepSpec{ID: "12.batch", UID: nobody, GID: nobody, Stdout: out,
			Argv: []string{"/bin/sh", "-c", "echo up; exec sleep 1000"}})
		waitForFile(t, out, "up", s)
		if _, err := e.Launch(StepSpec{ID: "12.batch", Argv: []string{"/bin/true"}, Env: env, UID: nobody, GID: nobody}); err == nil || !strings.Contains(err.Error(), "already running") {
			t.Errorf("duplicate ID: %v", err)
		}
		s.Kill(0)
		if r := s.Wait(); r.Signal != int(syscall.SIGTERM) && r.Signal != int(syscall.SIGKILL) {
			t.Errorf("killed: %+v", r)
		}
		checkNoLeftovers(t, e)
	})
}

func TestWorkDirFallback(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		base := testBase(t)
		private := filepath.Join(base, "private")
		if err := os.Mkdir(private, 0o700); err != nil {
			t.Fatal(err)
		}
		dir := userDir(t, base, "u", nobody)
		out := filepath.Join(dir, "o")
		r := launch(t, e, StepSpec{ID: "13.batch", Argv: []string{"/bin/sh", "-c", "pwd"},
			UID: nobody, GID: nobody, WorkDir: private, Stdout: out, Stderr: out}).Wait()
		want := "slurmstepd: error: couldn't chdir to `" + private + "': Permission denied: going to /tmp instead\n/tmp\n"
		if got := readFile(t, out); got != want || r.ExitCode != 0 {
			t.Errorf("output %q (%+v), want %q", got, r, want)
		}
	})
}

func TestUserGroups(t *testing.T) {
	g, err := UserGroups(0)
	if err != nil || !contains32(g, 0) {
		t.Errorf("UserGroups(0) = %v, %v", g, err)
	}
	if _, err := UserGroups(4000000000); err == nil {
		t.Error("unknown uid: no error")
	}
}

func contains32(l []uint32, x uint32) bool {
	for _, v := range l {
		if v == x {
			return true
		}
	}
	return false
}

func TestSupplementaryGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		out := filepath.Join(dir, "o")
		launch(t, e, StepSpec{ID: "14.batch", Argv: []string{"/bin/sh", "-c", "id -G"},
			UID: nobody, GID: nobody, Groups: []uint32{nobody, 4242}, Stdout: out}).Wait()
		if got := strings.Fields(readFile(t, out)); strings.Join(got, " ") != "65534 4242" {
			t.Errorf("id -G: %q", got)
		}
	})
}

// --- container mode only ---------------------------------------------------

func TestOOM(t *testing.T) {
	e := newContainerExecutor(t, "oomnode")
	dir := userDir(t, testBase(t), "u", nobody)
	out := filepath.Join(dir, "oom.out")
	r := launch(t, e, StepSpec{ID: "20.batch", UID: nobody, GID: nobody, Stdout: out, Stderr: out, MemMB: 64,
		Argv: []string{"/bin/sh", "-c", "head -c 300M /dev/zero | tail; echo after"}}).Wait()
	if !r.OOM || r.OOMKills != 1 {
		t.Errorf("over the limit: %+v, output %q", r, readFile(t, out))
	}
	if got := readFile(t, out); !strings.HasSuffix(got, "after\n"+OOMNotice("20.batch", 1)) {
		t.Errorf("output %q lacks slurmstepd's notice at its end", got)
	}
	r = launch(t, e, StepSpec{ID: "21.batch", UID: nobody, GID: nobody, Stdout: out, MemMB: 64,
		Argv: []string{"/bin/sh", "-c", "head -c 16M /dev/zero | tail | wc -c"}}).Wait()
	if r.OOM || r.ExitCode != 0 {
		t.Errorf("within the limit: %+v", r)
	}
}

// TestCpuset: a step runs on the CPUs it was given, mapped onto the host's
// (wrapping around where the node claims more CPUs than the host has).
func TestCpuset(t *testing.T) {
	e := newContainerExecutor(t, "cpusetnode")
	host := hostCPUs()
	if len(host) == 0 {
		t.Skip("sched_getaffinity failed")
	}
	dir := userDir(t, testBase(t), "u", nobody)
	out := filepath.Join(dir, "cpuset.out")
	for i, c := range []struct {
		ids  []int
		want []int
	}{
		{[]int{len(host) - 1}, []int{host[len(host)-1]}},
		{[]int{0, len(host)}, []int{host[0]}}, // the same host CPU twice
		{nil, host},
	} {
		r := launch(t, e, StepSpec{ID: fmt.Sprintf("23.%d", i), UID: nobody, GID: nobody, Stdout: out, Stderr: out, Truncate: true,
			CPUIDs: c.ids, Argv: []string{"/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"}}).Wait()
		want := "Cpus_allowed_list:\t" + cpuList(c.want) + "\n"
		if got := readFile(t, out); r.ExitCode != 0 || got != want {
			t.Errorf("CPUIDs %v: %+v, output %q, want %q", c.ids, r, got, want)
		}
	}
}

func TestCPUList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""}, {[]int{3}, "3"}, {[]int{0, 1, 2}, "0-2"}, {[]int{5, 0, 1, 1, 3}, "0-1,3,5"}, {[]int{7, 8, 10, 11, 12}, "7-8,10-12"},
	} {
		if got := cpuList(c.in); got != c.want {
			t.Errorf("cpuList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLimits(t *testing.T) {
	e := newContainerExecutor(t, "limitnode")
	dir := userDir(t, testBase(t), "u", nobody)
	out := filepath.Join(dir, "limits.out")
	s := launch(t, e, StepSpec{ID: "22.batch", UID: nobody, GID: nobody, Stdout: out, Stderr: out,
		CPUs: 2, MemMB: 100, Argv: []string{"/bin/sh", "-c", "echo up; exec sleep 1000"}})
	defer s.Wait()
	defer s.Kill(0)
	waitForFile(t, out, "up", s)
	st, err := s.sig.(*ctrStep).c.State()
	if err != nil {
		t.Fatal(err)
	}
	p := st.CgroupPaths
	mem := strconv.Itoa(100 << 20)
	want := map[string]string{}
	if cgroups.IsCgroup2UnifiedMode() {
		want[filepath.Join(p[""], "cpu.max")] = "200000 100000"
		want[filepath.Join(p[""], "memory.max")] = mem
		want[filepath.Join(p[""], "pids.max")] = "4096"
		if _, err := os.Stat(filepath.Join(p[""], "memory.swap.max")); err == nil {
			want[filepath.Join(p[""], "memory.swap.max")] = "0"
		}
	} else {
		want[filepath.Join(p["cpu"], "cpu.cfs_quota_us")] = "200000"
		want[filepath.Join(p["cpu"], "cpu.cfs_period_us")] = "100000"
		want[filepath.Join(p["memory"], "memory.limit_in_bytes")] = mem
		want[filepath.Join(p["pids"], "pids.max")] = "4096"
		if e.ctr.memsw {
			want[filepath.Join(p["memory"], "memory.memsw.limit_in_bytes")] = mem
		}
	}
	for f, w := range want {
		if got := strings.TrimSpace(readFile(t, f)); got != w {
			t.Errorf("%s = %q, want %q", f, got, w)
		}
	}
	// The step really is in those cgroups.
	cgdir := p["pids"]
	if cgroups.IsCgroup2UnifiedMode() {
		cgdir = p[""]
	}
	procs, err := cgroups.GetAllPids(cgdir)
	if err != nil || !containsInt(procs, s.Pid()) {
		t.Errorf("step pid %d not in its cgroup (%v, %v)", s.Pid(), procs, err)
	}
}

func containsInt(l []int, x int) bool {
	for _, v := range l {
		if v == x {
			return true
		}
	}
	return false
}

func TestSandbox(t *testing.T) {
	e := newContainerExecutor(t, "sandnode")
	base := testBase(t)
	home := userDir(t, base, "home", nobody)
	work := userDir(t, base, "work", nobody)
	out := filepath.Join(userDir(t, base, "out", nobody), "o")
	// As a user: the usual places are writable, the usual devices work,
	// pid 1 is the step's own init.
	script := `set -e
for d in "$HOME" "$PWD" /tmp /var/tmp /dev/shm; do f=$d/hpc-sandbox-$$; echo x > $f; rm $f; done
echo x > /dev/null; head -c 4 /dev/zero | wc -c; head -c 4 /dev/urandom | wc -c; test -c /dev/tty
cat /proc/1/cmdline | tr '\0' ' '; echo
grep -c . /proc/self/status >/dev/null
test "$(grep CapEff /proc/self/status | awk '{print $2}')" = 0000000000000000
echo ok`
	r := launch(t, e, StepSpec{ID: "30.batch", UID: nobody, GID: nobody, WorkDir: work,
		Env: append([]string{"HOME=" + home}, env...), Stdout: out, Stderr: out,
		Argv: []string{"/bin/sh", "-c", script}}).Wait()
	got := readFile(t, out)
	if r.ExitCode != 0 || !strings.HasSuffix(got, "ok\n") || !strings.Contains(got, "init "+pauseArg) {
		t.Errorf("as a user: %+v, output %q", r, got)
	}

	// As root: no way to cgroups or host kernel state: every cgroup mount
	// is read-only, /sys too, and the prepared tree is masked.
	escape := `for mp in $(grep -E ' - (cgroup|cgroup2) ' /proc/self/mountinfo | cut -d' ' -f5); do
  mkdir "$mp/hpc-escape-test" 2>/dev/null && echo "ESCAPED mkdir $mp"
  echo $$ 2>/dev/null > "$mp/cgroup.procs" && echo "ESCAPED procs $mp"
done
touch /sys/hpc-escape-test 2>/dev/null && echo "ESCAPED sys"
touch /hpc-escape-test 2>/dev/null && echo "ESCAPED root"
ls -A ` + e.ctr.mnt + ` | grep . && echo "SEES the prepared tree"
touch /etc/hpc-sandbox-test && rm /etc/hpc-sandbox-test && echo "root writes /etc"
echo done`
	r = launch(t, e, StepSpec{ID: "31.batch", Env: env, Stdout: out, Stderr: out, Truncate: true,
		Argv: []string{"/bin/sh", "-c", escape}}).Wait()
	got = readFile(t, out)
	if r.ExitCode != 0 || strings.Contains(got, "ESCAPED") || strings.Contains(got, "SEES") ||
		!strings.Contains(got, "root writes /etc") || !strings.HasSuffix(got, "done\n") {
		t.Errorf("as root: %+v, output %q", r, got)
	}
	for _, d := range mustGlob(t, "/sys/fs/cgroup/*/hpc-escape-test") {
		os.Remove(d)
	}
	// The host's view of the prepared tree is read-only.
	if err := os.WriteFile(filepath.Join(e.ctr.rootfs, "tmp", "hpc-through-rootfs"), nil, 0o644); err == nil {
		os.Remove(filepath.Join(e.ctr.rootfs, "tmp", "hpc-through-rootfs"))
		t.Error("the prepared root file system is writable from the host")
	}
}

func mustGlob(t testing.TB, pattern string) []string {
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// cgroupDirs lists a node's cgroup parent (a path under /hpc) in every
// hierarchy.
func cgroupDirs(t testing.TB, parent string) []string {
	return append(mustGlob(t, "/sys/fs/cgroup/*"+parent), mustGlob(t, "/sys/fs/cgroup"+parent)...)
}

// checkNoLeftovers: no step cgroup, no container state.
func checkNoLeftovers(t testing.TB, e *Executor) {
	t.Helper()
	if e.ctr == nil {
		return
	}
	for _, d := range cgroupDirs(t, e.ctr.cgParent) {
		ents, _ := os.ReadDir(d)
		for _, ent := range ents {
			if ent.IsDir() {
				t.Errorf("cgroup %s/%s is left", d, ent.Name())
			}
		}
	}
	ents, err := os.ReadDir(e.ctr.ctrRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		t.Errorf("container state %s is left", ent.Name())
	}
	e.mu.Lock()
	n := len(e.active)
	e.mu.Unlock()
	if n != 0 {
		t.Errorf("%d steps still listed as active", n)
	}
}

func TestNoLeaks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := testBase(t)
	e, err := New(Options{StateDir: filepath.Join(base, "state"), NodeName: "leaknode"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if !e.Containers() {
		e.Close()
		t.Skipf("containers are not usable here: %s", e.Mode())
	}
	dir := userDir(t, base, "u", nobody)
	out := filepath.Join(dir, "o")
	for i := range 20 {
		spec := StepSpec{ID: fmt.Sprintf("%d.batch", 100+i), UID: nobody, GID: nobody, Env: env, Stdout: out, Stderr: out}
		switch i % 4 {
		case 0:
			spec.Argv = []string{"/bin/true"}
		case 1:
			spec.Argv = []string{"/bin/sh", "-c", "sleep 1000 & exit 1"}
		case 2:
			spec.Argv = []string{"/bin/sh", "-c", "echo up; sleep 1000"}
		case 3: // fails to launch: before the container exists, or half way
			spec.Argv = []string{"/no/such/program"}
			if i%8 == 7 {
				spec.Argv = []string{dir} // passes the access check, fails in the container
			}
		}
		s, err := e.Launch(spec)
		if i%4 == 3 {
			if err == nil {
				t.Fatal("launch of a missing program succeeded")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%4 == 2 {
			waitForFile(t, out, "up", s)
			s.Kill(time.Minute)
		}
		s.Wait()
	}
	checkNoLeftovers(t, e)
	rootfs, parent := e.ctr.rootfs, e.ctr.cgParent
	if len(cgroupDirs(t, parent)) == 0 {
		t.Fatalf("no cgroup parent %s found: the leak check would see nothing", parent)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if d := cgroupDirs(t, parent); len(d) != 0 {
		t.Errorf("node cgroups left after Close: %v", d)
	}
	if m, _ := isMountPoint(rootfs); m {
		t.Errorf("%s still mounted after Close", rootfs)
	}
	if _, err := e.Launch(StepSpec{ID: "x", Argv: []string{"/bin/true"}}); err == nil {
		t.Error("Launch after Close succeeded")
	}
}

// A new executor removes what a crashed one left: its root file system bind
// and its containers, running ones included.
const crashHelperEnv = "HPC_EXEC_TEST_CRASH"

// crashHelper runs in a copy of the test binary: it launches the steps
// TestRestartReattaches takes over and dies without cleaning anything up, as
// a daemon killed with SIGKILL would.
func crashHelper() int {
	dir := os.Getenv(crashHelperEnv)
	e, err := New(Options{StateDir: filepath.Join(dir, "state"), NodeName: "crashnode"})
	if err != nil || !e.Containers() {
		fmt.Println("FAIL", err, e.Mode())
		return 1
	}
	out := filepath.Join(dir, "u", "o")
	steps := []StepSpec{
		// Runs on until the test lets it finish.
		{ID: "40.batch", UID: nobody, GID: nobody, Stdout: out, Env: env,
			Argv: []string{"/bin/sh", "-c", "echo up; while [ ! -e " + filepath.Join(dir, "u", "go") + " ]; do sleep 0.05; done; echo done; exit 7"}},
		// Ends while no executor is there.
		{ID: "41.batch", UID: nobody, GID: nobody, Env: env,
			Argv: []string{"/bin/sh", "-c", "while [ ! -e " + filepath.Join(dir, "u", "go41") + " ]; do sleep 0.05; done; exit 3"}},
		// Killed by the test.
		{ID: "42.0", UID: nobody, GID: nobody, Tasks: []TaskSpec{
			{Argv: []string{"/bin/sleep", "1000"}, Env: env}, {Argv: []string{"/bin/sleep", "1000"}, Env: env}}},
		// srun-like, whose tasks end with output nobody has read: it
		// waits in its supervisor for the next executor.
		{ID: "43.0", UID: nobody, GID: nobody, Tag: "run 43", Tasks: []TaskSpec{
			{Argv: []string{"/bin/sh", "-c", "echo a; while [ ! -e " + filepath.Join(dir, "u", "go43") + " ]; do sleep 0.05; done; echo b; exit 5"},
				Env: env, Stdout: io.Discard, Stderr: io.Discard},
			{Argv: []string{"/bin/sh", "-c", "while [ ! -e " + filepath.Join(dir, "u", "go43") + " ]; do sleep 0.05; done; head -c 60000 /dev/zero | tr '\\0' x >&2"},
				Env: env, Stdout: io.Discard, Stderr: io.Discard}}},
		// Reads input from this executor and the next.
		{ID: "44.0", UID: nobody, GID: nobody, Tasks: []TaskSpec{
			{Argv: []string{"/bin/sh", "-c", `read a; read b; echo "$a $b"`}, Env: env, Stdin: true, Stdout: io.Discard}}},
	}
	for _, spec := range steps {
		s, err := e.Launch(spec)
		if err != nil {
			fmt.Println("FAIL", err)
			return 1
		}
		if spec.ID == "44.0" {
			if _, err := io.WriteString(s.Stdin(0), "before\n"); err != nil {
				fmt.Println("FAIL", err)
				return 1
			}
		}
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(out); string(b) == "up\n" {
			break
		}
	}
	fmt.Println("PASS")
	unix.Kill(os.Getpid(), unix.SIGKILL)
	return 1
}

func TestRestartReattaches(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := testBase(t)
	state := filepath.Join(base, "state")
	userDir(t, base, "u", nobody)
	// The executor that launches the steps dies with its process.
	cmd := osexec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+base)
	b, _ := cmd.CombinedOutput()
	if !strings.HasPrefix(string(b), "PASS") {
		t.Fatalf("helper: %q", b)
	}
	// A step cgroup without a container, with a process in it.
	probe, err := New(Options{StateDir: filepath.Join(base, "probe"), NodeName: "probenode"})
	if err != nil || !probe.Containers() {
		t.Skipf("containers are not usable here: %v", err)
	}
	probe.Close()
	cgParent := cgroupParent + "/" + nodeCgroup("crashnode", state)
	stale := ""
	for _, d := range cgroupDirs(t, cgParent) {
		if strings.Contains(d, "/pids/") || cgroups.IsCgroup2UnifiedMode() {
			stale = filepath.Join(d, "stale")
		}
	}
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := osexec.Command("/bin/sleep", "1000")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
		sleeper.Process.Kill()
		t.Fatal(err)
	}
	sleeperDone := make(chan error, 1)
	go func() { sleeperDone <- sleeper.Wait() }()
	// Step 41 ends before the new executor starts; step 43's tasks write
	// their output with nobody reading it.
	for _, f := range []string{"go41", "go43"} {
		if err := os.WriteFile(filepath.Join(base, "u", f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"41.batch", "43.0"} {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if b, _ := os.ReadFile(filepath.Join(state, "results", id)); strings.Contains(string(b), `"done":true`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("step %s did not end", id)
			}
		}
	}

	// A new executor re-attaches to the steps.
	e2, err := New(Options{StateDir: state, NodeName: "crashnode"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e2.Close() })
	steps := map[string]*Step{}
	for _, s := range e2.Reattached() {
		steps[s.ID()] = s
	}
	if len(steps) != 5 || steps["40.batch"] == nil || steps["41.batch"] == nil || steps["42.0"] == nil || steps["43.0"] == nil || steps["44.0"] == nil {
		t.Fatalf("re-attached %v", steps)
	}
	if len(e2.Reattached()) != 0 {
		t.Error("Reattached gives its steps twice")
	}
	// Launching a step that runs again is refused.
	if _, err := e2.Launch(StepSpec{ID: "40.batch", Argv: []string{"/bin/true"}, Env: env}); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("launch of a re-attached step: %v", err)
	}
	if r := steps["41.batch"].Wait(); r.ExitCode != 3 || r.Signal != 0 {
		t.Errorf("step that ended meanwhile: %+v", r)
	}
	s40 := steps["40.batch"]
	select {
	case <-s40.Done():
		t.Fatal("the running step did not survive its executor")
	default:
	}
	if err := os.WriteFile(filepath.Join(base, "u", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := s40.Wait()
	if r.ExitCode != 7 || r.Signal != 0 || r.Start.IsZero() || r.End.Before(r.Start) {
		t.Errorf("re-attached step: %+v", r)
	}
	if got := readFile(t, filepath.Join(base, "u", "o")); got != "up\ndone\n" {
		t.Errorf("output %q", got)
	}
	// Step 43's output and task ends go to their new owner, the output
	// written meanwhile included.
	s43 := steps["43.0"]
	if s43.Tasks() != 2 || s43.Tag() != "run 43" {
		t.Errorf("re-attached step 43.0 has %d tasks, tag %q", s43.Tasks(), s43.Tag())
	}
	var out0, err1 bytes.Buffer
	ends := make([]TaskResult, 2)
	if err := s43.AttachTasks([]io.Writer{&out0, nil}, []io.Writer{nil, &err1}, func(i int, r TaskResult) { ends[i] = r }); err != nil {
		t.Fatal(err)
	}
	if err := s43.AttachTasks(nil, nil, nil); err == nil {
		t.Error("a step's tasks attached twice")
	}
	r43 := s43.Wait()
	if out0.String() != "b\n" || err1.Len() != 60000 || strings.Trim(err1.String(), "x") != "" {
		t.Errorf("re-attached output: stdout %q, stderr %d bytes", out0.String(), err1.Len())
	}
	if ends[0].ExitCode != 5 || ends[1] != (TaskResult{}) || r43.ExitCode != 5 || len(r43.Tasks) != 2 {
		t.Errorf("re-attached task ends %+v, step %+v", ends, r43)
	}
	// Step 44's task gets the rest of its input from the new executor,
	// and its end.
	s44 := steps["44.0"]
	var out44 bytes.Buffer
	if err := s44.AttachTasks([]io.Writer{&out44}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if in := s44.Stdin(0); in == nil {
		t.Error("a re-attached task that reads input has no Stdin")
	} else {
		io.WriteString(in, "after\n")
		in.Close()
	}
	if r := s44.Wait(); r.ExitCode != 0 || out44.String() != "before after\n" {
		t.Errorf("re-attached step with input: %+v, output %q", r, out44.String())
	}
	if err := steps["40.batch"].AttachTasks(nil, nil, nil); err == nil {
		t.Error("a batch step's tasks attached")
	}
	s42 := steps["42.0"]
	procs := stepProcs(t, s42)
	if len(procs) < 2 {
		t.Errorf("step 42.0 has processes %v", procs)
	}
	s42.Kill(0)
	r = s42.Wait()
	if len(r.Tasks) != 2 || r.Signal == 0 {
		t.Errorf("killed re-attached step: %+v", r)
	}
	checkGone(t, procs)
	select {
	case <-sleeperDone:
	case <-time.After(time.Minute):
		sleeper.Process.Kill()
		t.Error("the process in a stale step cgroup survived")
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("stale cgroup %s is still there", stale)
	}
	checkNoLeftovers(t, e2)
	if ents, _ := os.ReadDir(e2.ctr.resultsDir()); len(ents) != 0 {
		t.Errorf("results files left: %v", ents)
	}
	if got := countMounts(t, e2.ctr.rootfs); got != 1 {
		t.Errorf("%d root file system mounts stacked, want 1", got)
	}
}

func countMounts(t testing.TB, dir string) int {
	ms, err := mountsUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range ms {
		if m.point == dir {
			n++
		}
	}
	return n
}

// --- not root -----------------------------------------------------------

const nonRootHelperEnv = "HPC_EXEC_TEST_NONROOT"

// nonRootHelper runs in a copy of the test binary started as nobody.
func nonRootHelper() int {
	fail := func(f string, a ...any) int { fmt.Printf("FAIL "+f+"\n", a...); return 1 }
	e, err := New(Options{NodeName: "nr", StateDir: os.Getenv(nonRootHelperEnv)})
	if err != nil {
		return fail("New: %v", err)
	}
	defer e.Close()
	if want := "plain processes (not root: no cgroup limits or user switching)"; e.Mode() != want {
		return fail("mode %q, want %q", e.Mode(), want)
	}
	_, err = e.Launch(StepSpec{ID: "1.batch", Argv: []string{"/bin/true"}, UID: 0, GID: 0})
	if err == nil || err.Error() != "cannot run jobs as uid 0: the node daemon is not root" {
		return fail("Launch as root: %v", err)
	}
	out := filepath.Join(os.Getenv(nonRootHelperEnv), "o")
	s, err := e.Launch(StepSpec{ID: "2.batch", Argv: []string{"/bin/sh", "-c", "id -u; exit 5"}, Env: env,
		UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Stdout: out})
	if err != nil {
		return fail("Launch as self: %v", err)
	}
	if r := s.Wait(); r.ExitCode != 5 {
		return fail("result %+v", r)
	}
	if b, _ := os.ReadFile(out); string(b) != "65534\n" {
		return fail("output %q", b)
	}
	fmt.Println("PASS")
	return 0
}

func TestNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		// Already not root: the helper's checks apply directly.
		t.Setenv(nonRootHelperEnv, t.TempDir())
		if nonRootHelper() != 0 {
			t.Fail()
		}
		return
	}
	dir := userDir(t, testBase(t), "nr", nobody)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "exec.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(bin, "-test.run=^$")
	cmd.Env = append(env, nonRootHelperEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "PASS") {
		t.Errorf("helper as uid %d: %v\n%s", nobody, err, got)
	}
}

// --- benchmark --------------------------------------------------------------

func BenchmarkLaunchTrue(b *testing.B) {
	run := func(b *testing.B, e *Executor, pidEnv string) {
		benchSteps(b, e, func(i int) StepSpec {
			return StepSpec{ID: strconv.Itoa(i) + ".batch", Argv: []string{"/bin/true"}, Env: env, PidEnv: pidEnv}
		}, func(r Result) bool { return r.ExitCode == 0 && r.Err == nil })
	}
	b.Run("container", func(b *testing.B) { run(b, newContainerExecutor(b, "benchnode"), "") })
	b.Run("plain", func(b *testing.B) { run(b, newPlainExecutor(b, "benchnode"), "") })
	// As the agent launches every step: each task starts through the
	// task-setup wrapper (SLURM_TASK_PID, umask, limits; taskexec.go).
	b.Run("container-tasksetup", func(b *testing.B) { run(b, newContainerExecutor(b, "benchnode"), "SLURM_TASK_PID") })
	b.Run("plain-tasksetup", func(b *testing.B) { run(b, newPlainExecutor(b, "benchnode"), "SLURM_TASK_PID") })
}

// benchSteps launches spec(i) and waits for it, b.N times: a step's median
// time (median-ms, the target is a median) and its CPU time
// (cpu-ms/op, everything the machine spent on it: on two cores, one step's
// CPU bounds how many steps a second a node can run).
func benchSteps(b *testing.B, e *Executor, spec func(i int) StepSpec, ok func(Result) bool) {
	var times []time.Duration
	cpu0 := cpuTime(b)
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		s, err := e.Launch(spec(i))
		if err != nil {
			b.Fatal(err)
		}
		if r := s.Wait(); !ok(r) {
			b.Fatalf("%+v", r)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2])/1e6, "median-ms")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time, user and system, this process and the children
// it has waited for have used: for a step, the executor's part, the
// container's init, the supervisor it becomes, and the tasks.
func cpuTime(b *testing.B) time.Duration {
	var self, children unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &self) != nil || unix.Getrusage(unix.RUSAGE_CHILDREN, &children) != nil {
		b.Fatal("getrusage failed")
	}
	var t time.Duration
	for _, tv := range []unix.Timeval{self.Utime, self.Stime, children.Utime, children.Stime} {
		t += time.Duration(tv.Nano())
	}
	return t
}

// TestUsage: a step's peak memory and CPU time are measured (sacct's
// MaxRSS and TotalCPU): a step that holds 64 MiB and spins a little shows
// at least that.
func TestUsage(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		r := launch(t, e, StepSpec{ID: "60.batch", UID: nobody, GID: nobody, WorkDir: dir,
			Argv: []string{"/bin/sh", "-c", "head -c 64M /dev/zero | tail | wc -c; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"}}).Wait()
		if r.ExitCode != 0 {
			t.Fatalf("%+v", r)
		}
		if r.Usage.MaxRSSKB < 60<<10 || r.Usage.MaxRSSKB > 4<<20 {
			t.Errorf("MaxRSS %d KiB, want about 64 MiB", r.Usage.MaxRSSKB)
		}
		if r.Usage.UserCPU+r.Usage.SystemCPU <= 0 || r.Usage.UserCPU+r.Usage.SystemCPU > r.End.Sub(r.Start)*2+time.Second {
			t.Errorf("CPU %v + %v in %v", r.Usage.UserCPU, r.Usage.SystemCPU, r.End.Sub(r.Start))
		}
	})
}

// TestJobCgroup: the steps of a job share its memory limit (a job cgroup
// above theirs): two steps that each stay within it but not together end
// with the second OOM-killed; the job cgroup goes with the last step.
func TestJobCgroup(t *testing.T) {
	e := newContainerExecutor(t, "jobcgnode")
	dir := userDir(t, testBase(t), "u", nobody)
	hold := filepath.Join(dir, "hold")
	a := launch(t, e, StepSpec{ID: "80.batch", UID: nobody, GID: nobody, Job: "80", JobMemMB: 200, MemMB: 200, Stdout: hold,
		Argv: []string{"/bin/sh", "-c", "head -c 120M /dev/zero > /dev/shm/x && echo holding; sleep 1000"}}) // its /dev/shm is charged to it
	waitForFile(t, hold, "holding", a)
	jobDirs := mustGlob(t, "/sys/fs/cgroup/memory"+e.ctr.cgParent+"/job_80")
	if cgroups.IsCgroup2UnifiedMode() {
		jobDirs = mustGlob(t, "/sys/fs/cgroup"+e.ctr.cgParent+"/job_80")
	}
	if len(jobDirs) != 1 {
		t.Fatalf("job cgroup: %v", jobDirs)
	}
	// Room is left for the second step's own start (its init), not for
	// what it then allocates.
	b := launch(t, e, StepSpec{ID: "80.0", UID: nobody, GID: nobody, Job: "80", JobMemMB: 200, MemMB: 200,
		Argv: []string{"/bin/sh", "-c", "head -c 120M /dev/zero | tail | wc -c"}}).Wait()
	if !b.OOM {
		t.Errorf("second step over the job's limit together: %+v", b)
	}
	a.Kill(0)
	a.Wait()
	if _, err := os.Stat(jobDirs[0]); err == nil {
		t.Errorf("job cgroup %s left", jobDirs[0])
	}
	// A step of another job is not held by it.
	if r := launch(t, e, StepSpec{ID: "81.batch", UID: nobody, GID: nobody, Job: "81", JobMemMB: 200, MemMB: 200,
		Argv: []string{"/bin/sh", "-c", "head -c 120M /dev/zero | tail | wc -c"}}).Wait(); r.OOM || r.ExitCode != 0 {
		t.Errorf("a job alone within its limit: %+v", r)
	}
	checkNoLeftovers(t, e)
}

// TestPidOfQuickStep: a step's process has its host pid even when it has
// ended by the time the launch returns (the supervisor's child until it
// is reaped), for a single process and for tasks.
func TestPidOfQuickStep(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		for i := range 12 {
			spec := StepSpec{ID: fmt.Sprintf("9%d.batch", i), Argv: []string{"/bin/true"}}
			if i%2 == 1 {
				spec = StepSpec{ID: fmt.Sprintf("9%d.0", i), Tasks: []TaskSpec{{Argv: []string{"/bin/true"}, Env: env}, {Argv: []string{"/bin/true"}, Env: env}}}
			}
			s := launch(t, e, spec)
			if s.Pid() <= 0 {
				t.Errorf("%s: Pid() = %d", spec.ID, s.Pid())
			}
			if r := s.Wait(); r.ExitCode != 0 || r.Err != nil {
				t.Errorf("%s: %+v", spec.ID, r)
			}
		}
		checkNoLeftovers(t, e)
	})
}
