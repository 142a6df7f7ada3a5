package e2e

// A lab whose nodes each live in a network namespace of their own
// (internal/faultnet): node<i> on 10.<subnet>.0.<i>, on the standard
// ports, each daemon started inside its node's namespace. The addresses
// exist only on the lab's own bridge, so these labs need no entry in
// labAddrs and meet no other lab. Commands reach a node through its unix
// socket, which no network namespace stands in the way of.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/internal/faultnet"
)

type netLab struct {
	*labT
	fn    *faultnet.Net
	nodes []string

	mu   sync.Mutex
	logs map[string]*os.File // each daemon's log as its start opened it
}

// startNetLab starts config.Lab(nodes) in namespaces on 10.<subnet>.0.x,
// with extra lines added to the config, and waits until a leader is
// elected and every node is idle. Everything is stopped and removed at
// cleanup (the daemons' logs shown if the test failed).
func startNetLab(t *testing.T, subnet, nodes int, extra string) *netLab {
	t.Helper()
	bin, links := hpcBinary(t)
	top, err := os.MkdirTemp("", "hpc-netlab-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeLabDir(t, top) })
	os.Chmod(top, 0o755)
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node%d", i+1)
	}
	fn, err := faultnet.New(faultnet.Options{Prefix: "hpc-" + t.Name(), Subnet: subnet, Nodes: names})
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the lab's own cleanup, so it runs after it: it
	// ends whatever hpc down left, and the namespaces.
	t.Cleanup(func() {
		if err := fn.Close(); err != nil {
			t.Error(err)
		}
	})
	l := &netLab{
		labT:  &labT{t: t, bin: bin, links: links, net: fmt.Sprintf("10.%d.0.", subnet), api: config.DefaultAPIPort, top: top, dir: filepath.Join(top, "lab")},
		fn:    fn,
		nodes: names,
		logs:  map[string]*os.File{},
	}
	l.prepare(nodes, extra)
	t.Cleanup(l.stop)
	for _, n := range names {
		l.start(n)
	}
	l.waitUp(names[0])
	return l
}

// prepare writes what `hpc up --config` would before it starts daemons:
// the lab directory's slurm.conf, cluster key and storage areas.
func (l *netLab) prepare(nodes int, extra string) {
	t := l.t
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(l.dir, "slurm.conf")
	writeLabConfig(t, conf, nodes, l.net, l.api, extra)
	key := make([]byte, 32)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(l.dir, "cluster.key"), []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadAll(conf)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Storage(l.dir)
	for dir, mode := range map[string]os.FileMode{a.Home: 0o755, a.Scratch: os.ModeSticky | 0o777, a.Project: 0o755} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// daemon makes the command of node's daemon as hpc up's startDaemon does:
// `hpc daemon --name N --dir D`, its log appended to N/hpc.log, in a
// session of its own.
func (l *netLab) daemon(node string) *exec.Cmd {
	if err := os.MkdirAll(filepath.Join(l.dir, node), 0o755); err != nil {
		l.t.Error(err)
	}
	logf, err := os.OpenFile(filepath.Join(l.dir, node, "hpc.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		l.t.Error(err)
		return exec.Command("false")
	}
	l.mu.Lock()
	l.logs[node] = logf
	l.mu.Unlock()
	cmd := exec.Command(l.bin, "daemon", "--name", node, "--dir", l.dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// start starts node's daemon in its namespace (restart: again after
// Kill9) and writes its pid file, so that hpc down and hpc up know it.
func (l *netLab) start(node string) {
	l.started(node, l.fn.Start(node, func() *exec.Cmd { return l.daemon(node) }))
}

func (l *netLab) restart(node string) { l.started(node, l.fn.Restart(node)) }

func (l *netLab) started(node string, err error) {
	t := l.t
	t.Helper()
	l.mu.Lock()
	if f := l.logs[node]; f != nil {
		f.Close() // the daemon has its own copy
		delete(l.logs, node)
	}
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(l.fn.Pid(node)) + "\n"
	if err := os.WriteFile(filepath.Join(l.dir, node, "hpc.pid"), []byte(pid), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stop thaws every daemon (one frozen when a test failed would hold hpc
// down up) and starts any killed one again, so that hpc down stops what
// it left (its mounts); then it stops the lab as hpc down does.
func (l *netLab) stop() {
	for _, n := range l.nodes {
		if l.fn.Thaw(n) != nil { // not running
			l.started(n, l.fn.Restart(n))
		}
	}
	if out, errs, code := l.run(0, l.top, "down", "--dir", l.dir); code != 0 {
		l.t.Logf("hpc down: exit %d\n%s%s", code, out, errs)
	}
	if os.Getenv(labRaceEnv) != "" {
		for _, n := range l.nodes {
			if b, _ := os.ReadFile(filepath.Join(l.dir, n, "hpc.log")); strings.Contains(string(b), "WARNING: DATA RACE") {
				l.t.Errorf("%s's daemon found a data race", n)
			}
		}
	}
	if l.t.Failed() {
		for _, n := range l.nodes {
			b, _ := os.ReadFile(filepath.Join(l.dir, n, "hpc.log"))
			l.t.Logf("--- log of %s:\n%s", n, b)
		}
	}
}

// on returns the lab as seen through node's socket: its commands go to
// that node's daemon and no other.
func (l *netLab) on(node string) *labT {
	c := *l.labT
	c.env = append(c.env, "HPC_SOCKET="+filepath.Join(l.dir, node, "hpc.sock"))
	return &c
}

// status is node's answer to hpc status (nil if it gives none within two
// seconds: a frozen or cut off node).
func (l *netLab) status(node string) *api.Status {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := api.NewClient(filepath.Join(l.dir, node, "hpc.sock")).Status(ctx)
	if err != nil {
		return nil
	}
	return st
}

// leader is the leader node names, "" if none.
func (l *netLab) leader(node string) string {
	if st := l.status(node); st != nil {
		return st.Leader
	}
	return ""
}

// nodeStates is sinfo's long state of each node, asked through via.
func (l *netLab) nodeStates(via string) map[string]string {
	out, _, _ := l.on(via).run(0, l.top, "sinfo", "-N", "-h", "-o", "%N %T")
	states := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			states[f[0]] = f[1]
		}
	}
	return states
}

// waitNode waits until sinfo through via shows node's state matching re.
func (l *netLab) waitNode(via, node, re string, timeout time.Duration) {
	l.t.Helper()
	m := regexp.MustCompile(re)
	waitFor(l.t, timeout, fmt.Sprintf("%s to be %s (sinfo through %s)", node, re, via), func() (bool, string) {
		st := l.nodeStates(via)
		return m.MatchString(st[node]), fmt.Sprint(st)
	})
}

// waitUp waits until via knows a leader and every node is idle.
func (l *netLab) waitUp(via string) {
	l.t.Helper()
	waitFor(l.t, 90*time.Second, "a leader and every node idle", func() (bool, string) {
		st := l.nodeStates(via)
		for _, n := range l.nodes {
			if st[n] != "idle" {
				return false, fmt.Sprint(st)
			}
		}
		return l.leader(via) != "", fmt.Sprint(st)
	})
}

// runJob submits a job that ends at once through via and waits until
// accounting through via has it COMPLETED.
func (l *netLab) runJob(via string, timeout time.Duration) uint64 {
	l.t.Helper()
	lv := l.on(via)
	id := lv.submit(0, l.top, "--wrap", "true")
	waitFor(l.t, timeout, fmt.Sprintf("job %d COMPLETED (through %s)", id, via), func() (bool, string) {
		out, errs, _ := lv.run(0, l.top, "sacct", "-X", "-n", "-P", "-j", strconv.FormatUint(id, 10), "-o", "State,NodeList")
		return strings.HasPrefix(out, "COMPLETED|"), out + errs
	})
	return id
}
