package e2e

// The lab of `hpc up --netns`: each host in network, UTS and mount
// namespaces of its own on 10.70.0.0/24, with the login node login1, and
// `hpc login` into it; `hpc down` removes it all. Without root, up says
// why and starts the loopback lab.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hpc/cluster/config"
	"hpc/internal/netns"
)

// netnsLabTag begins the tags of the holders of the --netns lab in dir
// (commands/labnet.go's labTagPrefix + dir + "|").
func netnsLabTag(dir string) string { return "hpclab:" + dir + "|" }

func TestLabNetns(t *testing.T) {
	needLab(t)
	for _, tool := range []string{"ip", "unshare", "nsenter", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (iproute2's ip, util-linux's unshare, nsenter and setpriv) to make and enter namespaces", tool)
		}
	}
	if _, err := net.InterfaceByName("hpcl0"); err == nil {
		t.Skip("another --netns lab is up on this machine (hpcl0 exists): one at a time")
	}
	bin, links := hpcBinary(t)
	top, err := os.MkdirTemp("", "hpc-netns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeLabDir(t, top) })
	os.Chmod(top, 0o755)
	l := &labT{t: t, bin: bin, links: links, net: "10.70.0.", api: config.DefaultAPIPort, top: top, dir: filepath.Join(top, "lab")}
	hosts := []string{"node1", "node2", "node3", "login1"}
	t.Cleanup(func() {
		l.run(0, top, "down", "--dir", l.dir)
		// Whatever down left (it failed), so that nothing outlives the test.
		if err := netns.Remove(netnsLabTag(l.dir)); err != nil {
			t.Error(err)
		}
		for _, n := range hosts {
			if b, _ := os.ReadFile(filepath.Join(l.dir, n, "hpc.log")); os.Getenv(labRaceEnv) != "" && strings.Contains(string(b), "WARNING: DATA RACE") {
				t.Errorf("%s's daemon found a data race", n)
			}
		}
		if t.Failed() {
			for _, n := range hosts {
				b, _ := os.ReadFile(filepath.Join(l.dir, n, "hpc.log"))
				t.Logf("--- log of %s:\n%s", n, b)
			}
		}
	})
	began := time.Now()
	out, errs, code := l.run(0, top, "up", "--netns", "--nodes", "3", "--dir", l.dir)
	if code != 0 {
		t.Fatalf("hpc up --netns: exit %d\n%s\n%s", code, out, errs)
	}
	t.Logf("hpc up --netns --nodes 3 took %v", time.Since(began).Round(time.Millisecond))
	for _, want := range []string{"login1   10.70.0.4", "login (submit host", "hpc login"} {
		if !strings.Contains(out, want) {
			t.Errorf("up's summary has no %q:\n%s", want, out)
		}
	}
	pids := checkHostNamespaces(t, l, hosts)

	t.Run("login node", func(t *testing.T) { checkLoginNode(t, l.with(t)) })

	out, errs, code = l.run(0, top, "down", "--dir", l.dir)
	if code != 0 || !strings.Contains(out, "Removed the lab's namespaces (4 hosts") {
		t.Errorf("hpc down: exit %d\n%s\n%s", code, out, errs)
	}
	checkNetnsGone(t, l.dir, pids)

	t.Run("without root", func(t *testing.T) { checkNetnsFallback(t, l.with(t)) })
}

// checkHostNamespaces checks that each host's daemon runs in network, UTS
// and mount namespaces of its own, with its own address on eth0 and its
// host name, and that the lab's names resolve there. It returns the
// daemons' pids.
func checkHostNamespaces(t *testing.T, l *labT, hosts []string) []int {
	t.Helper()
	var pids []int
	seen := map[string]string{}
	for i, h := range hosts {
		b, err := os.ReadFile(filepath.Join(l.dir, h, "hpc.pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		pids = append(pids, pid)
		for _, kind := range []string{"net", "uts", "mnt"} {
			ns, err := os.Readlink(netns.NS(pid, kind))
			mine, _ := os.Readlink("/proc/self/ns/" + kind)
			if err != nil || ns == mine {
				t.Errorf("%s's daemon (pid %d) is not in a %s namespace of its own: %q %v", h, pid, kind, ns, err)
			}
			if other, dup := seen[ns]; dup && kind != "mnt" {
				t.Errorf("%s and %s share the %s namespace %s", other, h, kind, ns)
			}
			seen[ns] = h
		}
		cmd := netns.Command(pid, []string{"net", "uts", "mnt"}, "sh", "-c", "hostname; ip -o -4 addr show dev eth0; getent hosts login1 node3")
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in %s's namespaces: %v\n%s", h, err, got)
		}
		text := string(got)
		addr := fmt.Sprintf("10.70.0.%d/24", i+1)
		if !strings.HasPrefix(text, h+"\n") || !strings.Contains(text, "inet "+addr) ||
			!regexp.MustCompile(`10\.70\.0\.4\s+login1`).MatchString(text) || !regexp.MustCompile(`10\.70\.0\.3\s+node3`).MatchString(text) {
			t.Errorf("%s's namespaces: want host name %s, %s on eth0 and the lab's names:\n%s", h, h, addr, text)
		}
	}
	return pids
}

// checkLoginNode checks what login1 is: not in sinfo, no jobs, and where
// `hpc login -c` submits from.
func checkLoginNode(t *testing.T, l *labT) {
	out, _, _ := l.run(0, l.top, "sinfo", "-N", "-h", "-o", "%N")
	if strings.Contains(out, "login1") || !strings.Contains(out, "node3") {
		t.Errorf("sinfo -N lists:\n%s", out)
	}
	// The shell is login1's: its host name, the Slurm commands on PATH,
	// reaching the cluster through login1's daemon.
	out, errs, code := l.run(0, l.top, "login", "-c", "hostname; command -v sbatch; hpc status")
	if code != 0 || !strings.HasPrefix(out, "login1\n") || !strings.Contains(out, filepath.Join(l.dir, "netns", "bin", "sbatch")) ||
		!strings.Contains(out, "login1 (Submit host") || !strings.Contains(out, "Leader:") {
		t.Errorf("hpc login: exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code := l.run(nobody, l.top, "login", "-c", "true"); code == 0 || !strings.Contains(errs, "needs root") {
		t.Errorf("hpc login as nobody: exit %d %s", code, errs)
	}
	scratch := filepath.Join(l.dir, "scratch")
	out, errs, code = l.run(0, l.top, "login", "-c", "cd "+scratch+" && sbatch --wait -o netns-%j.out --wrap 'hostname; getent hosts login1'")
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("sbatch --wait from login1: exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(scratch, "netns-"+m[1]+".out"))
	if err != nil {
		t.Fatalf("the job's output is not on the shared scratch: %v", err)
	}
	ran := strings.SplitN(string(b), "\n", 2)[0]
	if !regexp.MustCompile(`^node[1-3]$`).MatchString(ran) || !strings.Contains(string(b), "login1") {
		t.Errorf("the job's output: %q", b)
	}
	out, _, _ = l.run(0, l.top, "scontrol", "show", "job", m[1])
	if !strings.Contains(out, "AllocNode:Sid=login1:0") || !strings.Contains(out, "BatchHost="+ran) {
		t.Errorf("scontrol show job %s: want submitted from login1, run on %s:\n%s", m[1], ran, out)
	}
	// An srun step from login1: the launcher is login1's daemon, the
	// tasks run on the compute nodes.
	out, errs, code = l.run(0, l.top, "login", "-c", "srun -N3 hostname | sort")
	if code != 0 || out != "node1\nnode2\nnode3\n" {
		t.Errorf("srun -N3 hostname from login1: exit %d\n%s\n%s", code, out, errs)
	}
	out, _, _ = l.run(0, l.top, "sacct", "-X", "-n", "-P", "-o", "NodeList")
	if strings.Contains(out, "login1") {
		t.Errorf("a job ran on login1:\n%s", out)
	}
}

// checkNetnsGone checks that nothing of the lab is left: no holder, no
// daemon, no hpcl0.
func checkNetnsGone(t *testing.T, dir string, pids []int) {
	t.Helper()
	if h, err := netns.Holders(netnsLabTag(dir)); err != nil || len(h) > 0 {
		t.Errorf("namespaces left after hpc down: %v %v", h, err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(b), dir) {
				t.Errorf("daemon %d outlives hpc down: %q", pid, b)
			}
		}
	}
	if _, err := net.InterfaceByName("hpcl0"); err == nil {
		t.Error("hpcl0 is left after hpc down")
	}
}

// checkNetnsFallback runs up --netns as nobody: it says why it cannot,
// and starts the loopback lab (on this test's addresses, from --config);
// hpc login says it needs root.
func checkNetnsFallback(t *testing.T, l *labT) {
	net, port := labNet(t)
	home := filepath.Join(l.top, "home")
	os.Mkdir(home, 0o755)
	os.Chown(home, nobody, nobody)
	conf := filepath.Join(home, "lab.conf")
	writeLabConfig(t, conf, 1, net, port, "")
	l.dir = filepath.Join(home, "lab")
	out, errs, code := l.run(nobody, home, "up", "--netns", "--dir", l.dir, "--config", conf)
	t.Cleanup(func() { l.run(nobody, home, "down", "--dir", l.dir) })
	if code != 0 || !strings.Contains(out, "hpc up --netns: network namespaces, a bridge and veth pairs are root's to make") ||
		!strings.Contains(out, "Starting the loopback lab instead") || !strings.Contains(out, "node1    "+net+"1") {
		t.Fatalf("up --netns as nobody: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(l.dir, "netns")); err == nil {
		t.Error("the loopback lab has a netns folder")
	}
	_, errs, code = l.run(nobody, home, "login", "--dir", l.dir, "-c", "true")
	if code == 0 || !strings.Contains(errs, "runs without namespaces") {
		t.Errorf("hpc login in a loopback lab: exit %d %s", code, errs)
	}
}
