package netns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Spec says which namespaces Hold makes and what it sets in them.
type Spec struct {
	// Tag is the holder's first argument: Holders finds the holder by a
	// prefix of it. It must be unique to the holder.
	Tag string
	// Hostname, when set, gives the holder a UTS namespace of its own
	// with this host name.
	Hostname string
	// Hosts, when set, gives the holder a mount namespace of its own (a
	// slave of the caller's) with this file bound on /etc/hosts, so that
	// names resolve there as the file says.
	Hosts string
}

// Kinds are the namespaces a holder of the spec has, as Enter names them.
func (s Spec) Kinds() []string {
	kinds := []string{"net"}
	if s.Hostname != "" {
		kinds = append(kinds, "uts")
	}
	if s.Hosts != "" {
		kinds = append(kinds, "mnt")
	}
	return kinds
}

// holdScript sets the host name ($1) and binds the hosts file ($2) when
// given, says it is ready and sleeps for good; $0 is the tag.
const holdScript = `if [ -n "$1" ]; then printf %s "$1" >/proc/sys/kernel/hostname || exit 1; fi
if [ -n "$2" ]; then mount --bind "$2" /etc/hosts || exit 1; fi
echo ready
while :; do sleep 86400; done`

// Hold starts the process that holds the new namespaces of s, in a
// session of its own, and returns its pid once they are made. The holder
// outlives the caller; Remove ends it. It needs root.
func Hold(s Spec) (int, error) {
	if s.Tag == "" || strings.ContainsAny(s.Tag, "\x00\n") {
		return 0, fmt.Errorf("netns: tag %q: want one line", s.Tag)
	}
	args := []string{"--net"}
	if s.Hostname != "" {
		args = append(args, "--uts")
	}
	if s.Hosts != "" {
		args = append(args, "--mount", "--propagation", "slave")
	}
	args = append(args, "--", "sh", "-c", holdScript, s.Tag, s.Hostname, s.Hosts)
	cmd := exec.Command("unshare", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("netns: unshare: %w", err)
	}
	pid := cmd.Process.Pid
	// A holder outlives this process (Remove ends it); its exit is not
	// waited for here.
	go cmd.Wait()
	// "ready" comes after unshare and the settings: from then on the
	// pid's namespaces are the new ones, set up.
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		syscall.Kill(pid, syscall.SIGKILL)
		return 0, fmt.Errorf("netns: the holder %s did not start: %s", s.Tag, strings.TrimSpace(stderr.String()))
	}
	for _, kind := range s.Kinds() {
		mine, err1 := os.Readlink("/proc/self/ns/" + kind)
		its, err2 := os.Readlink(NS(pid, kind))
		if err := errors.Join(err1, err2); err != nil || mine == its {
			// Never touch the host's own namespaces.
			syscall.Kill(pid, syscall.SIGKILL)
			return 0, fmt.Errorf("netns: the holder %s is not in a %s namespace of its own (%v)", s.Tag, kind, err)
		}
	}
	return pid, nil
}

// NS is the path of pid's namespace of a kind ("net", "uts", "mnt").
func NS(pid int, kind string) string { return fmt.Sprintf("/proc/%d/ns/%s", pid, kind) }

// nsenterFlag is nsenter's option for a kind of namespace.
var nsenterFlag = map[string]string{"net": "--net", "uts": "--uts", "mnt": "--mount"}

// EnterArgs are nsenter's options that enter pid's namespaces of kinds.
func EnterArgs(pid int, kinds []string) ([]string, error) {
	var args []string
	for _, k := range kinds {
		f, ok := nsenterFlag[k]
		if !ok {
			return nil, fmt.Errorf("netns: unknown namespace kind %q", k)
		}
		args = append(args, f+"="+NS(pid, k))
	}
	return args, nil
}

// Enter rewrites cmd to run inside pid's namespaces of kinds. nsenter
// enters them and execs the program in its own place, so cmd's process
// is the program itself and signals reach it directly.
func Enter(pid int, kinds []string, cmd *exec.Cmd) error {
	if cmd.Err != nil {
		return cmd.Err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	args, err := EnterArgs(pid, kinds)
	if err != nil {
		return err
	}
	cmd.Args = append(append(append([]string{"nsenter"}, args...), "--", cmd.Path), cmd.Args[1:]...)
	cmd.Path = nsenter
	return nil
}

// Command returns a command that runs name with args inside pid's
// namespaces of kinds (and nowhere else: it keeps the caller's users and
// processes' view).
func Command(pid int, kinds []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	if err := Enter(pid, kinds, cmd); err != nil {
		cmd.Err = err
	}
	return cmd
}

// IP runs iproute2's ip inside pid's network namespace (pid 0: the
// caller's own), its output in the error.
func IP(pid int, args ...string) error {
	cmd := exec.Command("ip", args...)
	if pid != 0 {
		cmd = Command(pid, []string{"net"}, "ip", args...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s (in %s): %v: %s", strings.Join(args, " "), where(pid), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func where(pid int) string {
	if pid == 0 {
		return "the host's namespace"
	}
	return NS(pid, "net")
}

// Bridge makes a bridge named name, up, in hub's network namespace.
func Bridge(hub int, name string) error {
	if err := IP(hub, "link", "add", name, "type", "bridge"); err != nil {
		return err
	}
	return IP(hub, "link", "set", name, "up")
}

// Join joins node's network namespace to bridge in hub's by a veth pair:
// port on the hub's side, on the bridge; link (with the address cidr, up,
// and the node's loopback up) on the node's. Both ends are made inside
// the two namespaces, so no name is ever taken in the host's.
func Join(hub int, bridge, port string, node int, link, cidr string) error {
	steps := []struct {
		pid  int
		args []string
	}{
		{hub, []string{"link", "add", port, "type", "veth", "peer", "name", link, "netns", strconv.Itoa(node)}},
		{hub, []string{"link", "set", port, "master", bridge, "up"}},
		{node, []string{"addr", "add", cidr, "dev", link}},
		{node, []string{"link", "set", link, "up"}},
		{node, []string{"link", "set", "lo", "up"}},
	}
	for _, s := range steps {
		if err := IP(s.pid, s.args...); err != nil {
			return err
		}
	}
	return nil
}

// Holders returns the live holders whose tag begins with prefix: tag ->
// pid.
func Holders(prefix string) (map[string]int, error) {
	tags := map[int]string{}
	pids, err := pidsWhere(func(pid int) bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for _, arg := range strings.Split(string(b), "\x00") {
			if strings.HasPrefix(arg, prefix) {
				tags[pid] = arg
				return true
			}
		}
		return false
	})
	out := make(map[string]int, len(pids))
	for _, pid := range pids {
		out[tags[pid]] = pid
	}
	return out, err
}

// Remove finds the holders whose tag begins with prefix and kills every
// process in their network namespaces, holders last: the namespaces,
// their veth pairs and bridges go with the last of them.
func Remove(prefix string) error {
	holders, err := Holders(prefix)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range holders {
		errs = append(errs, Kill(h))
	}
	return errors.Join(errs...)
}

// Kill kills (SIGKILL) the processes in holder's network namespace, the
// holder included, until none is left: a shell may start a child between
// two looks. A holder already gone is no error.
func Kill(holder int) error {
	ns, err := os.Readlink(NS(holder, "net"))
	if err != nil {
		return nil // gone meanwhile
	}
	self := os.Getpid()
	for range 100 {
		pids, err := pidsWhere(func(pid int) bool {
			l, _ := os.Readlink(NS(pid, "net"))
			return l == ns && pid != self
		})
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGCONT) // a frozen one dies too
			syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("netns: processes of %s (holder %d) outlive SIGKILL", ns, holder)
}

// pidsWhere lists the live processes (not zombies: a killed process that
// no one has waited for yet is done) for which keep is true.
func pidsWhere(keep func(pid int) bool) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !keep(pid) {
			continue
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !zombie(string(st)) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// zombie reads the state field of /proc/PID/stat (after the command's
// closing parenthesis, which the command itself may contain).
func zombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i >= 0 && strings.HasPrefix(stat[i+1:], " Z")
}
