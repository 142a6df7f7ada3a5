package e2e

// What every lab test shares: the skip condition (needLab), the hpc binary
// and its Slurm-named links, built once per test process (hpcBinary), the
// repository's files (repoPath), the one polling function (waitFor, poll),
// the table that gives each lab a loopback range and ports of its own
// (labAddrs, labNet), and the lab harness (labT, startLab, ...).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// nobody is the unprivileged user (uid and gid 65534) the labs submit as.
const nobody = 65534

// labRaceEnv, when set, builds the labs' hpc with the race detector: a
// daemon's log that reports a data race fails the test.
const labRaceEnv = "HPC_LAB_RACE"

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// needLab skips a test that starts real hpc daemons: under -short, and
// when not run as root (labs run steps in libcontainer containers, submit
// as another user, and make device nodes).
func needLab(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real cluster of hpc daemons")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: labs run steps in containers and submit as another user")
	}
}

// --- The repository and the binary.

// repoRoot is the module's root directory (where go.mod is), found once.
var repoRoot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod), nil
})

// repoPath returns a path in the repository: repoPath(t) is its root,
// repoPath(t, "testdata", "jobs") a folder in it.
func repoPath(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// built is hpc, built once per test process (with -race under
// HPC_LAB_RACE) into a directory every user can traverse, removed by
// TestMain, and the Slurm-named links to it (hpc install-links).
var built struct {
	once  sync.Once
	dir   string // holds hpc and bin/
	bin   string // dir/hpc
	links string // dir/bin: sbatch, srun, squeue, ... -> dir/hpc
	err   error
}

// hpcBinary returns the labs' hpc binary and the directory of its
// Slurm-named links, building them on first use.
func hpcBinary(t testing.TB) (bin, links string) {
	t.Helper()
	root := repoPath(t)
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "hpc-e2e-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		if err := os.Chmod(dir, 0o755); err != nil {
			built.err = err
			return
		}
		bin := filepath.Join(dir, "hpc")
		tags, err := os.ReadFile(filepath.Join(root, "scripts", "go-tags"))
		if err != nil {
			built.err = err
			return
		}
		args := []string{"build", "-tags", strings.TrimSpace(string(tags)), "-o", bin}
		if os.Getenv(labRaceEnv) != "" {
			args = append(args, "-race")
		}
		build := exec.Command("go", append(args, ".")...)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go %s .: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		links := filepath.Join(dir, "bin")
		if out, err := exec.Command(bin, "install-links", links).CombinedOutput(); err != nil {
			built.err = fmt.Errorf("hpc install-links: %v\n%s", err, out)
			return
		}
		built.bin, built.links = bin, links
	})
	if built.err != nil {
		t.Fatalf("building hpc: %v", built.err)
	}
	return built.bin, built.links
}

// --- Waiting.

// pollInterval is how long poll and waitFor wait between two looks.
const pollInterval = 100 * time.Millisecond

// poll calls cond until it reports done, every pollInterval, for at most
// timeout (cond is always called at least once, and once after the
// deadline has passed). It returns whether cond was met and what cond last
// said it saw.
func poll(timeout time.Duration, cond func() (done bool, seen string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		done, seen := cond()
		if done {
			return true, seen
		}
		if time.Now().After(deadline) {
			return false, seen
		}
		time.Sleep(pollInterval)
	}
}

// waitFor polls cond (see poll) and fails the test if it is not met within
// timeout, naming what was awaited and what cond last saw. It returns
// what cond saw when it was met.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (done bool, seen string)) string {
	t.Helper()
	ok, seen := poll(timeout, cond)
	if !ok {
		if seen == "" {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		t.Fatalf("timed out after %v waiting for %s; last seen: %s", timeout, what, seen)
	}
	return seen
}

// waitFile waits until the file has a line containing want and returns it.
func waitFile(t *testing.T, path, want string) string {
	t.Helper()
	var line string
	waitFor(t, 60*time.Second, fmt.Sprintf("a line with %q in %s", want, path), func() (bool, string) {
		b, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, want) {
				line = l
				return true, ""
			}
		}
		return false, fmt.Sprintf("%q", b)
	})
	return line
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --- Addresses.

// labAddr is a lab's place on this machine: its nodes listen on
// 127.0.octet.1, 127.0.octet.2, ... and on the ports api (the API), api+1
// (Raft) and api+2 (gossip).
type labAddr struct {
	octet int
	api   int
}

// labAddrs gives every test that starts daemons a loopback range and ports
// no other test uses, so that no two labs meet, whichever tests run one
// after another or side by side, nor a lab someone runs on this machine
// with a plain `hpc up` (127.0.1.x). Subtests share their test's lab. The
// unit tests of package cluster use 127.66.x.x.
var labAddrs = map[string]labAddr{
	"TestLabEndToEnd":               {77, 27817},
	"TestLabUnprivileged":           {78, 27917},
	"TestLabSteps":                  {79, 28117},
	"TestLabStepsUnprivileged":      {80, 28217},
	"TestStorageLab":                {81, 31917},
	"TestParity":                    {91, 28817},
	"TestRealWorldScripts":          {92, 29817},
	"TestLeakCheck":                 {93, 29317}, // written into scripts/leak-check.sh
	"TestLabRestartKeepsSteps":      {94, 32217},
	"TestLabJoin":                   {95, 30817},
	"TestContainerImage":            {96, 31417},
	"TestSchedLab":                  {97, 31817},
	"TestLabRestartKeepsJobs":       {98, 32017},
	"TestLabRestartKeepsAllocation": {112, 35317},
	"TestLabGPUDevices":             {99, 29917},
	"TestAttacks":                   {82, 32617},
	"TestStriggerLab":               {84, 33217},
	"TestLabSstatSbcast":            {83, 33117},
	"TestPartitionLab":              {85, 33317},
	"TestLabSattach":                {86, 33417},
	"TestLabFailoverSubmit":         {88, 33617},
	"TestLabOutbox":                 {87, 33517},
	"TestLabSnapshotCatchUp":        {101, 34117},
	"TestLabControllers":            {100, 34017},
	"TestDashboard":                 {105, 34617},
	"TestLabREST":                   {104, 34517},
	"TestLabMetrics":                {106, 34717},
	"TestScenarios":                 {108, 35017},
	"TestExportRealSlurm":           {111, 34917},
	"TestLabNetns":                  {109, 35117}, // the loopback lab it falls back to without root
	"scripts/arm64.sh":              {102, 34217}, // its one-node smoke lab; no test of this name
	// Not a test: the hpc lab of scripts/bench/side-by-side.sh.
	"scripts/bench/side-by-side.sh": {103, 34317},
	"scripts/bench/scale.sh":        {107, 34817},
	// Its four real nodes; its simulated ones are on 127.1.x.y.
	"scripts/bench/nodes.sh": {110, 35217},
}

// checkLabAddrs reports two tests of labAddrs that share a range or a
// port, or a range outside 127.0.2.x-127.0.254.x.
func checkLabAddrs() error {
	names := make([]string, 0, len(labAddrs))
	for n := range labAddrs {
		names = append(names, n)
	}
	slices.Sort(names)
	var errs []error
	for i, a := range names {
		if o := labAddrs[a].octet; o < 2 || o > 254 {
			errs = append(errs, fmt.Errorf("%s: 127.0.%d.x is not a lab's range (127.0.1.x is hpc up's own)", a, o))
		}
		for _, b := range names[i+1:] {
			x, y := labAddrs[a], labAddrs[b]
			if x.octet == y.octet {
				errs = append(errs, fmt.Errorf("%s and %s both use 127.0.%d.x", a, b, x.octet))
			}
			if x.api-y.api < 3 && y.api-x.api < 3 {
				errs = append(errs, fmt.Errorf("%s (ports %d-%d) and %s (ports %d-%d) share ports", a, x.api, x.api+2, b, y.api, y.api+2))
			}
		}
	}
	return errors.Join(errs...)
}

func TestLabAddrs(t *testing.T) {
	if err := checkLabAddrs(); err != nil {
		t.Fatal(err)
	}
}

// labNet returns the address prefix (e.g. "127.0.77.") and API port of t's
// test (a subtest gets its test's) from labAddrs.
func labNet(t testing.TB) (net string, api int) {
	t.Helper()
	name, _, _ := strings.Cut(t.Name(), "/")
	a, ok := labAddrs[name]
	if !ok {
		t.Fatalf("%s has no entry in labAddrs (e2e/helpers_test.go): give it a loopback range and ports of its own", name)
	}
	if err := checkLabAddrs(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.%d.", a.octet), a.api
}

// --- The lab.

type labT struct {
	t     *testing.T
	bin   string   // the hpc binary
	links string   // a directory of the Slurm-named links to bin
	net   string   // the lab's addresses: net+"1" is node1's
	api   int      // its ports: api, api+1, api+2
	dir   string   // lab directory
	top   string   // a directory every user can traverse
	env   []string // more of the commands' environment (HPC_SOCKET: one node's)
}

// run runs the hpc binary as uid (0 = root) in dir and returns stdout,
// stderr and the exit status.
func (l *labT) run(uid int, dir string, args ...string) (string, string, int) {
	l.t.Helper()
	return l.runInput(uid, dir, nil, args...)
}

// runInput is run with stdin as the command's standard input (nil:
// /dev/null).
func (l *labT) runInput(uid int, dir string, stdin io.Reader, args ...string) (string, string, int) {
	l.t.Helper()
	cmd := exec.Command(l.bin, args...)
	cmd.Dir, cmd.Stdin = dir, stdin
	cmd.Env = append(append(os.Environ(), "HPC_DIR="+l.dir), l.env...)
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		cmd.Env = append(cmd.Env, "HOME="+dir, "USER=nobody")
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		l.t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// with returns a copy of l that reports to t (a subtest).
func (l *labT) with(t *testing.T) *labT {
	c := *l
	c.t = t
	return &c
}

var submittedRE = regexp.MustCompile(`^Submitted batch job (\d+)\n$`)

func (l *labT) submit(uid int, dir string, args ...string) uint64 {
	l.t.Helper()
	out, errs, code := l.run(uid, dir, append([]string{"submit"}, args...)...)
	m := submittedRE.FindStringSubmatch(out)
	if m == nil {
		l.t.Fatalf("submit %v: stdout %q stderr %q exit %d", args, out, errs, code)
	}
	id, _ := strconv.ParseUint(m[1], 10, 64)
	return id
}

// acctRow returns the sacct -P line of a job (without steps).
func (l *labT) acctRow(id uint64) string {
	l.t.Helper()
	out, errs, code := l.run(0, l.top, "acct", "-X", "-P", "-n", "-j", fmt.Sprint(id), "-o", "JobID,User,State,ExitCode,NodeList")
	if code != 0 {
		l.t.Fatalf("acct: %s %s", out, errs)
	}
	return strings.TrimSpace(out)
}

// waitState polls squeue -j until the job shows the state code.
func (l *labT) waitState(id uint64, st string) {
	l.t.Helper()
	waitFor(l.t, 60*time.Second, fmt.Sprintf("job %d to reach %s", id, st), func() (bool, string) {
		out, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(id), "-o", "%t")
		return strings.TrimSpace(out) == st, fmt.Sprintf("%q", out)
	})
}

// lastJob is the newest job's id.
func (l *labT) lastJob() uint64 {
	l.t.Helper()
	cl := api.NewClient(filepath.Join(l.dir, "node1", "hpc.sock"))
	jobs, err := cl.Jobs(context.Background())
	if err != nil || len(jobs) == 0 {
		l.t.Fatalf("jobs: %v %v", jobs, err)
	}
	return jobs[len(jobs)-1].ID
}

func (l *labT) job(id uint64) *api.Job {
	l.t.Helper()
	cl := api.NewClient(filepath.Join(l.dir, "node1", "hpc.sock"))
	jobs, err := cl.Jobs(context.Background())
	if err != nil {
		l.t.Fatal(err)
	}
	for i := range jobs {
		if jobs[i].ID == id {
			return &jobs[i]
		}
	}
	l.t.Fatalf("no job %d", id)
	return nil
}

// commandsOnPath puts the lab's Slurm-named links (srun, salloc, sbatch,
// sacct, squeue, scontrol, ...) first on PATH for the test: batch scripts
// get the submitter's PATH, so the srun in them is this one.
func (l *labT) commandsOnPath(t *testing.T) {
	t.Setenv("PATH", l.links+":"+os.Getenv("PATH"))
}

func owner(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// startLab starts a lab of the given size from config.Lab in a new
// directory every user can traverse, moved to the test's addresses and
// ports (labNet) so that labs never meet; extra lines are added to the
// config. It returns the lab and what `hpc up` printed; the lab is stopped
// (its logs shown if the test failed) and removed at cleanup.
func startLab(t *testing.T, prefix string, nodes int, extra string, prepare ...func(top string)) (*labT, string) {
	t.Helper()
	l := newLabT(t, prefix)
	top := l.top
	for _, p := range prepare {
		p(top) // e.g. a gres.conf next to the config
	}
	conf := filepath.Join(top, "lab.conf")
	writeLabConfig(t, conf, nodes, l.net, l.api, extra)
	out, errs, code := l.run(0, top, "up", "--dir", l.dir, "--config", conf)
	t.Cleanup(func() {
		l.run(0, top, "down", "--dir", l.dir)
		for i := 1; i <= nodes && os.Getenv(labRaceEnv) != ""; i++ {
			if b, _ := os.ReadFile(filepath.Join(l.dir, fmt.Sprintf("node%d", i), "hpc.log")); bytes.Contains(b, []byte("WARNING: DATA RACE")) {
				t.Errorf("node%d's daemon found a data race", i)
			}
		}
		if t.Failed() {
			for i := 1; i <= nodes; i++ {
				b, _ := os.ReadFile(filepath.Join(l.dir, fmt.Sprintf("node%d", i), "hpc.log"))
				t.Logf("--- log of node%d:\n%s", i, b)
			}
		}
	})
	if code != 0 {
		t.Fatalf("hpc up: exit %d\n%s\n%s", code, out, errs)
	}
	l.letNobodySubmit()
	return l, out
}

// letNobodySubmit gives nobody, the user the labs submit as, an
// association under the root account, as a site's administrator would:
// the lab's config enforces associations (AccountingStorageEnforce), and
// a fresh cluster has root's only. Root runs sacctmgr on the lab's socket.
func (l *labT) letNobodySubmit() {
	l.t.Helper()
	l.mgr("add", "user", "nobody", "account=root")
}

// startUserLab starts a lab of the given size as uid 65534 (nobody), in a
// home directory of nobody's, so steps run as plain processes. It returns
// the lab, the home directory and what `hpc up` printed.
func startUserLab(t *testing.T, prefix string, nodes int) (*labT, string, string) {
	t.Helper()
	l := newLabT(t, prefix)
	home := filepath.Join(l.top, "home")
	os.Mkdir(home, 0o755)
	os.Chown(home, nobody, nobody)
	conf := filepath.Join(home, "lab.conf")
	writeLabConfig(t, conf, nodes, l.net, l.api, "")
	l.dir = filepath.Join(home, "lab")
	out, errs, code := l.run(nobody, home, "up", "--dir", l.dir, "--config", conf)
	t.Cleanup(func() { l.run(nobody, home, "down", "--dir", l.dir) })
	if code != 0 {
		t.Fatalf("up as nobody: %d\n%s\n%s", code, out, errs)
	}
	// nobody runs this lab's daemons: its SlurmUser, with an association
	// from the start.
	return l, home, out
}

// newLabT makes a directory every user can traverse (removed at cleanup)
// for a lab of the test's addresses, run by the shared hpc binary.
func newLabT(t *testing.T, prefix string) *labT {
	t.Helper()
	bin, links := hpcBinary(t)
	net, port := labNet(t)
	top, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeLabDir(t, top) })
	os.Chmod(top, 0o755)
	return &labT{t: t, bin: bin, links: links, net: net, api: port, top: top, dir: filepath.Join(top, "lab")}
}

// writeLabConfig writes config.Lab(nodes) moved to the addresses net* and
// the ports port, port+1, port+2, with extra lines.
func writeLabConfig(t *testing.T, path string, nodes int, net string, port int, extra string) {
	t.Helper()
	text, err := config.Lab(nodes)
	if err != nil {
		t.Fatal(err)
	}
	text = strings.ReplaceAll(text, "127.0.1.", net) + "\n" + extra +
		fmt.Sprintf("HpcApiPort=%d\nHpcRaftPort=%d\nHpcGossipPort=%d\n", port, port+1, port+2)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// removeLabDir removes a lab's directory: first it unmounts whatever a
// daemon that died left mounted below it (a step's root file system binds
// the host's), so that removing never reaches into the host's files.
func removeLabDir(t *testing.T, dir string) {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var mounts []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mounts = append(mounts, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", m, err)
		}
	}
	if len(mounts) > 0 {
		t.Errorf("%d mounts were left under %s (a daemon died?), such as %s", len(mounts), dir,
			strings.Join(mounts[len(mounts)-min(len(mounts), 4):], " "))
	}
	os.RemoveAll(dir)
}
