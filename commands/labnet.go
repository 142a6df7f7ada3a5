package commands

// The lab of `hpc up --netns`: every host (the nodes, dedicated
// controllers and the login node) in network, UTS and mount namespaces of
// its own, as on a real cluster of several machines. Each host has its own
// address on 10.70.0.0/24 (its eth0, a veth pair to a bridge in a hub
// namespace), its own host name, and /etc/hosts bound to the lab's hosts
// file, so node1, login1, ... resolve inside. Everything else of the file
// system is this machine's, seen alike from every host: the storage areas
// (home, scratch, project), the lab directory and its sockets.
//
// The bridge lives in the hub's namespace, not this machine's, so that the
// machine's firewall (a FORWARD chain that drops, as Docker sets it) never
// sees the traffic between hosts. This machine joins the bridge as
// 10.70.0.254 by one veth pair whose end here is hpcl0: the dashboard and
// the API ports are reachable from here.
//
// The namespaces are held by processes (internal/netns) tagged with the
// lab's directory, so that hpc down, or the next hpc up, finds them again
// whatever process made them. Removing the holders and everything in
// their namespaces removes the namespaces, the bridge, the veth pairs and
// hpcl0 with them.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/config"
	"hpc/internal/netns"
)

const (
	// labNetPrefix is the --netns lab's /24, without its last part.
	labNetPrefix = "10.70.0."
	// labHostAddr is this machine's address on the lab's network.
	labHostAddr = labNetPrefix + "254"
	// labHostLink is this machine's end of its link to the lab's bridge.
	labHostLink = "hpcl0"
	// labBridge is the bridge, in the hub's namespace.
	labBridge = "br0"
	// labTagPrefix begins every holder's tag: labTagPrefix + dir + "|" + role.
	labTagPrefix = "hpclab:"
)

// hostKinds are the namespaces each host of the lab has.
var hostKinds = []string{"net", "uts", "mnt"}

func (l lab) netnsDir() string  { return filepath.Join(l.dir, "netns") }
func (l lab) hostsPath() string { return filepath.Join(l.netnsDir(), "hosts") }
func (l lab) linksDir() string  { return filepath.Join(l.netnsDir(), "bin") }

// isNetns is whether the lab was made by hpc up --netns (its hosts file is
// kept until hpc down --purge): its addresses exist only in namespaces.
func (l lab) isNetns() bool { return fileExists(l.hostsPath()) }

// netTag is the tag of the lab's holder of role: "hub", "host:NAME", or
// "" for the prefix of them all.
func (l lab) netTag(role string) string { return labTagPrefix + l.dir + "|" + role }

// netnsUnavailable says why this process cannot make the lab's
// namespaces, "" when it can.
func netnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "network namespaces, a bridge and veth pairs are root's to make (run it as root: sudo hpc up --netns)"
	}
	for _, tool := range []string{"ip", "unshare", "nsenter", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s is not installed (it needs iproute2's ip and util-linux's unshare, nsenter and mount)", tool)
		}
	}
	return ""
}

// netHost is a host of the lab with a namespace: its name and address.
type netHost struct{ name, addr string }

// netHosts are the hosts of cfg that the lab runs a daemon on, each with
// its address, which must be one of the lab's network (.1 to .253).
func netHosts(cfg *config.Config) ([]netHost, error) {
	var out []netHost
	seen := map[string]string{}
	for _, name := range labHosts(cfg) {
		addr, _ := cfg.HostAddr(name)
		last, ok := strings.CutPrefix(addr, labNetPrefix)
		n, err := strconv.Atoi(last)
		if !ok || err != nil || n < 1 || n > 253 || strconv.Itoa(n) != last {
			return nil, fmt.Errorf("%s's address %s is not on the --netns lab's network (%s1 to %s253)", name, addr, labNetPrefix, labNetPrefix)
		}
		if other, dup := seen[addr]; dup {
			return nil, fmt.Errorf("%s and %s both have the address %s", other, name, addr)
		}
		seen[addr] = name
		out = append(out, netHost{name, addr})
	}
	return out, nil
}

// writeHosts writes the hosts file every host sees as /etc/hosts: the
// loopback names, this machine and every host of the lab.
func writeHosts(l lab, hosts []netHost) error {
	if err := os.MkdirAll(l.netnsDir(), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# /etc/hosts of the hosts of the hpc lab (hpc up --netns): each host sees\n")
	b.WriteString("# this file there; it is written again at every hpc up.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	fmt.Fprintf(&b, "%s\tlabhost\t# this machine (%s)\n", labHostAddr, labHostLink)
	for _, h := range hosts {
		fmt.Fprintf(&b, "%s\t%s\n", h.addr, h.name)
	}
	// Written in place: a bind mount holds the file's inode, so a new
	// file renamed over it would not be seen by hosts already up.
	f, err := os.OpenFile(l.hostsPath(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// upNet makes what is missing of the lab's network and returns each
// host's holder: name -> pid. A set whose hub is gone is removed and made
// anew; holders that live are kept, with the daemons running in them.
func upNet(l lab, hosts []netHost) (map[string]int, error) {
	if err := writeHosts(l, hosts); err != nil {
		return nil, err
	}
	holders, err := netns.Holders(l.netTag(""))
	if err != nil {
		return nil, err
	}
	hub, ok := holders[l.netTag("hub")]
	if !ok {
		if len(holders) > 0 {
			if err := removeNet(l); err != nil {
				return nil, err
			}
			holders = nil
		}
		if hub, err = makeHub(l); err != nil {
			return nil, err
		}
	}
	out := map[string]int{}
	for _, h := range hosts {
		tag := l.netTag("host:" + h.name)
		if pid, ok := holders[tag]; ok {
			out[h.name] = pid
			continue
		}
		pid, err := netns.Hold(netns.Spec{Tag: tag, Hostname: h.name, Hosts: l.hostsPath()})
		if err != nil {
			return nil, err
		}
		out[h.name] = pid
		port := "v" + strings.TrimPrefix(h.addr, labNetPrefix)
		if err := netns.Join(hub, labBridge, port, pid, "eth0", h.addr+"/24"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// makeHub makes the hub's namespace with the bridge, and this machine's
// link to it. It refuses while another lab's network holds the link.
func makeHub(l lab) (int, error) {
	if _, err := net.InterfaceByName(labHostLink); err == nil {
		return 0, fmt.Errorf("this machine already has %s: %s", labHostLink, netOwner())
	}
	hub, err := netns.Hold(netns.Spec{Tag: l.netTag("hub")})
	if err != nil {
		return 0, err
	}
	if err := netns.Bridge(hub, labBridge); err != nil {
		return 0, err
	}
	steps := []struct {
		pid  int
		args []string
	}{
		{0, []string{"link", "add", labHostLink, "type", "veth", "peer", "name", "host", "netns", strconv.Itoa(hub)}},
		{hub, []string{"link", "set", "host", "master", labBridge, "up"}},
		{0, []string{"addr", "add", labHostAddr + "/24", "dev", labHostLink}},
		{0, []string{"link", "set", labHostLink, "up"}},
	}
	for _, s := range steps {
		if err := netns.IP(s.pid, s.args...); err != nil {
			return 0, err
		}
	}
	return hub, nil
}

// netOwner names the lab whose network holds labHostLink, for the message
// that refuses to make a second one.
func netOwner() string {
	holders, _ := netns.Holders(labTagPrefix)
	var dirs []string
	for tag := range holders {
		if dir, ok := strings.CutSuffix(strings.TrimPrefix(tag, labTagPrefix), "|hub"); ok {
			dirs = append(dirs, dir)
		}
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		return "something other than an hpc lab made it; remove it (ip link del " + labHostLink + ") or use another machine"
	}
	return "the --netns lab in " + strings.Join(dirs, ", ") + " is up (one per machine): stop it first (hpc down --dir DIR)"
}

// removeNet ends every process in the lab's namespaces (the daemons
// should be stopped first: this is SIGKILL) and the namespaces with them,
// then waits for this machine's link to go: the kernel removes a dead
// namespace's links a moment later.
func removeNet(l lab) error {
	holders, err := netns.Holders(l.netTag(""))
	if err != nil {
		return err
	}
	_, hadHub := holders[l.netTag("hub")]
	if err := netns.Remove(l.netTag("")); err != nil {
		return err
	}
	if !hadHub {
		return nil
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := net.InterfaceByName(labHostLink); err != nil {
			return nil
		}
	}
	return errors.New(labHostLink + " is still there 10 seconds after the lab's namespaces were removed")
}

// netHolders returns the holders of the lab's hosts: name -> pid.
func netHolders(l lab) (map[string]int, error) {
	holders, err := netns.Holders(l.netTag("host:"))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for tag, pid := range holders {
		out[strings.TrimPrefix(tag, l.netTag("host:"))] = pid
	}
	return out, nil
}
