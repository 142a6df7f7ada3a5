package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/hostlist"
	"hpc/internal/netns"
)

func upCommand() *cli.Command {
	return &cli.Command{
		Name:  "up",
		Usage: "start a lab cluster on this machine (or, with --join, one node of a cluster)",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 3, Usage: "number of lab nodes (node1..nodeN on 127.0.1.1..)"},
			&cli.IntFlag{Name: "controllers", Usage: "dedicated controllers ctl1..ctlN on the addresses after the nodes' (0: node1-node3 are the controllers)"},
			&cli.StringFlag{Name: "config", Usage: "use this slurm.conf instead of writing the default one"},
			&cli.StringFlag{Name: "dir", Usage: "lab directory (default $HPC_DIR, /var/lib/hpc as root, ~/.local/share/hpc otherwise)"},
			&cli.StringFlag{Name: "join", Usage: "start only this machine's node and join the cluster at ADDR (host:gossip-port)"},
			&cli.StringFlag{Name: "name", Usage: "with --join: this node's name in the config (default: the host name)"},
			&cli.StringFlag{Name: "key-file", Usage: "with --join: the cluster key file of the cluster to join"},
			&cli.BoolFlag{Name: "plain", Usage: "run job steps as plain processes, without containers"},
			&cli.BoolFlag{Name: "netns", Usage: "each host in network, UTS and mount namespaces of its own on " + labNetPrefix + "0/24, plus a login node login1 (hpc login); needs root"},
			&cli.DurationFlag{Name: "timeout", Value: 90 * time.Second, Usage: "how long to wait for the cluster to come up"},
		},
		HideHelpCommand: true,
		Action:          runUp,
	}
}

// lab is one lab directory: the config, the key, one folder per node.
type lab struct {
	dir string
}

func (l lab) confPath() string            { return filepath.Join(l.dir, "slurm.conf") }
func (l lab) keyPath() string             { return filepath.Join(l.dir, "cluster.key") }
func (l lab) nodeDir(name string) string  { return filepath.Join(l.dir, name) }
func (l lab) pidPath(name string) string  { return filepath.Join(l.dir, name, "hpc.pid") }
func (l lab) logPath(name string) string  { return filepath.Join(l.dir, name, "hpc.log") }
func (l lab) sockPath(name string) string { return filepath.Join(l.dir, name, "hpc.sock") }

// running returns the pid of a node's daemon if it is alive.
func (l lab) running(name string) (int, bool) {
	b, err := os.ReadFile(l.pidPath(name))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !l.isDaemon(cmd, name) {
		return 0, false
	}
	return pid, true
}

// isDaemon reports whether a command line (/proc/PID/cmdline) is the
// daemon of node name in this lab, as startDaemon runs it (`daemon --name
// NAME --dir DIR`, maybe behind nsenter). A pid file outlives its daemon
// when that is killed, and pids come round again (every 32,768 on many
// machines): the same pid may then be another lab's daemon, which hpc
// down would stop and hpc up would take for this node's.
func (l lab) isDaemon(cmdline []byte, name string) bool {
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	i := slices.Index(args, "daemon")
	if i < 0 {
		return false
	}
	var gotName, gotDir string
	for rest := args[i+1:]; len(rest) >= 2; rest = rest[1:] {
		switch rest[0] {
		case "--name":
			gotName = rest[1]
		case "--dir":
			gotDir = rest[1]
		}
	}
	return gotName == name && gotDir != "" && samePath(gotDir, l.dir)
}

// samePath: two absolute paths name the same directory, through symbolic
// links too.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// nodes lists the node folders that have a pid file.
func (l lab) nodes() []string {
	m, _ := filepath.Glob(filepath.Join(l.dir, "*", "hpc.pid"))
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(filepath.Dir(p)))
	}
	return out
}

func runUp(c *cli.Context) error {
	dir := c.String("dir")
	if dir == "" {
		dir = labDir()
	}
	dir, _ = filepath.Abs(dir)
	l := lab{dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Exit("hpc: error: "+err.Error(), 1)
	}
	inNetns, err := chooseNetns(c, l)
	if err != nil {
		return cli.Exit("hpc: error: "+err.Error(), 1)
	}
	cfg, err := prepareConfig(c, l, inNetns)
	if err != nil {
		return cli.Exit("hpc: error: "+err.Error(), 1)
	}
	if err := ensureKey(l, c.String("key-file")); err != nil {
		return cli.Exit("hpc: error: "+err.Error(), 1)
	}
	if err := makeStorage(cfg.Storage(dir)); err != nil {
		return cli.Exit("hpc: error: storage areas: "+err.Error(), 1)
	}
	exe, err := os.Executable()
	if err != nil {
		return cli.Exit("hpc: error: "+err.Error(), 1)
	}
	names := make([]string, 0, len(cfg.Nodes))
	var already []string
	if join := c.String("join"); join != "" {
		name := c.String("name")
		if name == "" {
			name, _ = os.Hostname()
		}
		if _, ok := cfg.HostAddr(name); !ok {
			return cli.Exit(fmt.Sprintf("hpc: error: node %q is not in %s (add a NodeName or SlurmctldHost line, or pass --name)", name, l.confPath()), 1)
		}
		names = append(names, name)
	} else {
		names = labHosts(cfg)
	}
	// Nodes whose daemon runs are left alone: a second `hpc up` says the
	// lab is up, or restarts only the nodes that have stopped.
	var missing []string
	for _, n := range names {
		if _, ok := l.running(n); ok {
			already = append(already, n)
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		fmt.Printf("The lab in %s is already up (nodes running: %s).\n", dir, strings.Join(already, " "))
		fmt.Println("Use `hpc status` to look at it, `hpc down` to stop it.")
		return nil
	}
	if len(already) > 0 {
		fmt.Printf("Already running: %s; restarting %s.\n", strings.Join(already, " "), strings.Join(missing, " "))
	}
	if os.Geteuid() != 0 {
		fmt.Println("Note: not running as root, so job steps run as plain processes of your user, without cgroup limits.")
	}
	holders, err := upHosts(l, cfg, inNetns)
	if err != nil {
		return cli.Exit("hpc: error: network namespaces: "+err.Error(), 1)
	}
	fmt.Printf("Starting %d node(s) in %s ...\n", len(missing), dir)
	for _, name := range missing {
		if err := startDaemon(l, exe, name, c.String("join"), c.Bool("plain"), holders[name]); err != nil {
			return cli.Exit("hpc: error: "+err.Error(), 1)
		}
	}
	if err := waitUp(l, names, c.Duration("timeout")); err != nil {
		fmt.Fprintf(os.Stderr, "hpc: error: %v\n", err)
		for _, n := range names {
			fmt.Fprintf(os.Stderr, "  log of %s: %s\n", n, l.logPath(n))
		}
		// Leave nothing half up: stop the daemons this call started, and
		// the namespaces once no daemon of the lab runs in them.
		if stopped := stopNodes(l, missing); len(stopped) > 0 {
			fmt.Fprintf(os.Stderr, "  stopped %s again\n", strings.Join(stopped, " "))
		}
		if inNetns && len(runningNodes(l)) == 0 {
			if err := removeNet(l); err != nil {
				fmt.Fprintf(os.Stderr, "  removing the namespaces: %v\n", err)
			}
		}
		return exit(1)
	}
	printSummary(l, cfg, names)
	return nil
}

// chooseNetns decides whether the lab's hosts run in namespaces of their
// own: asked with --netns, or a lab made so before. A new lab that cannot
// have them (not root, tools missing) is the loopback lab, and up says
// why; a lab made with them cannot go on without them (its addresses
// exist nowhere else), nor can a lab made without them take them on.
func chooseNetns(c *cli.Context, l lab) (bool, error) {
	made := l.isNetns()
	if !c.Bool("netns") && !made {
		return false, nil
	}
	if c.String("join") != "" {
		return false, errors.New("--netns makes a whole lab on this machine; --join starts one node of a cluster of several machines")
	}
	if why := netnsUnavailable(); why != "" {
		if made {
			return false, fmt.Errorf("the lab in %s runs in network namespaces, but %s", l.dir, why)
		}
		fmt.Printf("hpc up --netns: %s.\n", why)
		fmt.Println("Starting the loopback lab instead: every node on an address of this machine's own loopback network (127.0.1.x), without a login node.")
		return false, nil
	}
	if !made && c.String("config") == "" && fileExists(l.confPath()) {
		return false, fmt.Errorf("the lab in %s was made without --netns (its nodes are on this machine's loopback addresses); run `hpc down --purge` first to make one with --netns", l.dir)
	}
	return true, nil
}

// upHosts makes what is missing of the namespaces of a --netns lab's
// hosts and returns each host's holder (nil for a loopback lab).
func upHosts(l lab, cfg *config.Config, inNetns bool) (map[string]int, error) {
	if !inNetns {
		return nil, nil
	}
	hosts, err := netHosts(cfg)
	if err != nil {
		return nil, err
	}
	holders, err := upNet(l, hosts)
	if err != nil && len(runningNodes(l)) == 0 {
		// Nothing of the lab runs: leave no half-made network behind.
		if rerr := removeNet(l); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return holders, err
}

// runningNodes are the lab's hosts whose daemon runs.
func runningNodes(l lab) []string {
	var out []string
	for _, n := range l.nodes() {
		if _, ok := l.running(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// prepareConfig writes the lab's slurm.conf when it has none (or --config
// gives one) and reads it; a --netns lab's is on the namespaces' network,
// with a login node.
func prepareConfig(c *cli.Context, l lab, inNetns bool) (*config.Config, error) {
	switch {
	case c.String("config") != "":
		b, err := os.ReadFile(c.String("config"))
		if err != nil {
			return nil, err
		}
		if _, err := config.Parse(strings.NewReader(string(b))); err != nil {
			return nil, err
		}
		if err := os.WriteFile(l.confPath(), b, 0o644); err != nil {
			return nil, err
		}
		// gres.conf and topology.conf travel with the given slurm.conf.
		for _, extra := range []string{"gres.conf", "topology.conf"} {
			src := filepath.Join(filepath.Dir(c.String("config")), extra)
			dst := filepath.Join(l.dir, extra)
			if b, err := os.ReadFile(src); err == nil {
				if err := os.WriteFile(dst, b, 0o644); err != nil {
					return nil, err
				}
			} else {
				_ = os.Remove(dst)
			}
		}
	case fileExists(l.confPath()):
		cfg, err := config.LoadAll(l.confPath())
		if err != nil {
			return nil, err
		}
		if c.IsSet("nodes") && c.Int("nodes") != len(cfg.Nodes) {
			return nil, fmt.Errorf("the lab in %s has %d nodes; run `hpc down --purge` first to make one with %d", l.dir, len(cfg.Nodes), c.Int("nodes"))
		}
		if have := dedicatedControllers(cfg); c.IsSet("controllers") && c.Int("controllers") != have {
			return nil, fmt.Errorf("the lab in %s has %d dedicated controllers; run `hpc down --purge` first to make one with %d", l.dir, have, c.Int("controllers"))
		}
	default:
		o := config.LabOptions{Nodes: c.Int("nodes"), Controllers: c.Int("controllers")}
		if inNetns {
			o.Net, o.SubmitHosts = labNetPrefix, 1
		}
		text, err := config.LabWith(o)
		if err != nil {
			return nil, err
		}
		text += storageConf(l.dir)
		if err := os.WriteFile(l.confPath(), []byte(text), 0o644); err != nil {
			return nil, err
		}
		cfg, err := config.Load(l.confPath())
		if err != nil {
			return nil, err
		}
		if err := writeFakeGPUs(l, cfg); err != nil {
			return nil, err
		}
	}
	return config.LoadAll(l.confPath())
}

// writeFakeGPUs gives the lab's GPU nodes device files (links to
// /dev/null, as Slurm's documentation allows for testing) and the gres.conf
// that names them, so GPU jobs see CUDA_VISIBLE_DEVICES and device cgroups
// exactly as on real GPUs.
func writeFakeGPUs(l lab, cfg *config.Config) error {
	byCount := map[int][]string{}
	most := 0
	for _, n := range cfg.Nodes {
		if k := n.GresCount("gpu"); k > 0 {
			byCount[k] = append(byCount[k], n.Name)
			most = max(most, k)
		}
	}
	if most == 0 {
		return nil
	}
	dev := filepath.Join(l.dir, "fakedev")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	for i := 0; i < most; i++ {
		p := filepath.Join(dev, fmt.Sprintf("nvidia%d", i))
		if _, err := os.Lstat(p); err != nil {
			if err := os.Symlink("/dev/null", p); err != nil {
				return err
			}
		}
	}
	var b strings.Builder
	b.WriteString("# gres.conf written by `hpc up`: fake GPUs, links to /dev/null.\n")
	for k := 1; k <= most; k++ {
		if nodes := byCount[k]; len(nodes) > 0 {
			fmt.Fprintf(&b, "NodeName=%s Name=gpu File=%s/nvidia[0-%d]\n", hostlist.Compress(nodes), dev, k-1)
		}
	}
	return os.WriteFile(filepath.Join(l.dir, "gres.conf"), []byte(b.String()), 0o644)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ensureKey makes the cluster key that nodes sign their requests with.
func ensureKey(l lab, from string) error {
	if from != "" {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(l.keyPath(), b, 0o600)
	}
	if fileExists(l.keyPath()) {
		return nil
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	return os.WriteFile(l.keyPath(), []byte(hex.EncodeToString(k)+"\n"), 0o600)
}

// startDaemon starts name's daemon in a session of its own, inside the
// namespaces of holder when it is not 0 (a --netns lab), and writes its
// pid file.
func startDaemon(l lab, exe, name, join string, plain bool, holder int) error {
	if err := os.MkdirAll(l.nodeDir(name), 0o755); err != nil {
		return err
	}
	// The log holds job ids, users and errors: root's (or the lab
	// owner's) and its group's to read, no one else's.
	logf, err := os.OpenFile(l.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	defer logf.Close()
	if err := logf.Chmod(0o640); err != nil { // a log made before was 0644
		return err
	}
	args := []string{"daemon", "--name", name, "--dir", l.dir}
	if join != "" {
		args = append(args, "--join", join)
	}
	if plain {
		args = append(args, "--plain")
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if holder != 0 {
		// nsenter execs the daemon in its own place: the pid is the
		// daemon's.
		if err := netns.Enter(holder, hostKinds, cmd); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	// Start returns as the child's execve begins to replace it; its
	// command line (what running checks) appears a moment later, so a
	// busy machine could see a daemon that is still starting as gone.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)); err != nil || l.isDaemon(b, name) {
			break
		}
	}
	if err := os.WriteFile(l.pidPath(name), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// labHosts are the hosts a lab runs a daemon on: its nodes, then the
// controller-only SlurmctldHosts, then the submit hosts (login nodes).
func labHosts(cfg *config.Config) []string {
	names := make([]string, 0, len(cfg.Nodes)+len(cfg.ControlHosts)+len(cfg.SubmitHosts))
	for _, n := range cfg.Nodes {
		names = append(names, n.Name)
	}
	for _, h := range cfg.ControlHosts {
		if cfg.ControllerOnly(h.Name) {
			names = append(names, h.Name)
		}
	}
	for _, h := range cfg.SubmitHosts {
		names = append(names, h.Name)
	}
	return names
}

// dedicatedControllers counts the controller-only hosts.
func dedicatedControllers(cfg *config.Config) int {
	n := 0
	for _, h := range cfg.ControlHosts {
		if cfg.ControllerOnly(h.Name) {
			n++
		}
	}
	return n
}

// hostsUp counts the names that are up: compute nodes the leader's node
// list has UP (or any state but UNKNOWN and DOWN), controllers that answer
// for their Raft (a controller-only host is in no node list), and other
// hosts (submit hosts) that are alive gossip members.
func hostsUp(names []string, nodes []api.Node, ctls []api.ControllerState, members []api.Member) int {
	up := map[string]bool{}
	for _, n := range nodes {
		st := strings.TrimSuffix(n.State, "*") // not responding: not up yet
		up[n.Name] = st != api.NodeUnknown && st != api.NodeDown
	}
	for _, c := range ctls {
		if _, node := up[c.Name]; !node {
			up[c.Name] = c.Role != api.RoleDown
		}
	}
	for _, m := range members {
		if _, known := up[m.Name]; !known {
			up[m.Name] = m.State == "alive"
		}
	}
	count := 0
	for _, n := range names {
		if up[n] {
			count++
		}
	}
	return count
}

// waitUp shows progress until a leader is elected and every node is up.
func waitUp(l lab, names []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cl := api.NewClient(l.sockPath(names[0]))
	last := ""
	// On a terminal a bar of the hosts up shows the same words on one
	// line; elsewhere each new state is a line, as scripts read it.
	bar := newProgress(os.Stdout, len(names), "starting")
	defer bar.done()
	say := func(s string) {
		if bar != nil {
			bar.describe(s)
		} else if s != last {
			fmt.Println("  " + s)
		}
		last = s
	}
	for {
		for _, n := range names {
			if _, ok := l.running(n); !ok {
				return fmt.Errorf("the daemon of %s exited; its log: %s\n%s", n, l.logPath(n), tail(l.logPath(n), 10))
			}
		}
		st, err := cl.Status(ctx)
		switch {
		case err != nil:
			say("waiting for the nodes to listen ...")
		case st.Leader == "":
			say("waiting for the controllers to elect a leader ...")
		default:
			// The node list comes from the leader (a node that is no
			// controller forwards the request to one).
			resp, err := cl.Nodes(ctx)
			if err != nil {
				say("leader " + st.Leader + " elected; waiting for it to answer ...")
				break
			}
			upCount := hostsUp(names, resp.Nodes, st.Controllers, st.Members)
			bar.set(upCount)
			say(fmt.Sprintf("leader %s (term %d); nodes up: %d/%d", st.Leader, st.Term, upCount, len(names)))
			if upCount == len(names) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("the cluster did not come up in time")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

func printSummary(l lab, cfg *config.Config, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl := api.NewClient(l.sockPath(names[0]))
	st, _ := cl.Status(ctx)
	fmt.Println()
	fmt.Printf("Cluster %q is up.\n", cfg.ClusterName)
	for _, n := range cfg.Nodes {
		role := "compute"
		if cfg.IsController(n.Name) {
			role = "compute + controller"
		}
		if st != nil && st.Leader == n.Name {
			role += " (leader)"
		}
		fmt.Printf("  %-8s %-12s %d CPUs %6d MB  %s\n", n.Name, n.Addr, n.CPUs, n.RealMemoryMB, role)
	}
	for _, h := range cfg.ControlHosts {
		if !cfg.ControllerOnly(h.Name) {
			continue
		}
		role := "controller only (runs no jobs)"
		if st != nil && st.Leader == h.Name {
			role += " (leader)"
		}
		fmt.Printf("  %-8s %-12s %-18s %s\n", h.Name, h.Addr, "", role)
	}
	for _, h := range cfg.SubmitHosts {
		fmt.Printf("  %-8s %-12s %-18s %s\n", h.Name, h.Addr, "", "login (submit host: runs no jobs; hpc login)")
	}
	if l.isNetns() {
		fmt.Printf("Each host has network, UTS and mount namespaces of its own on %s0/24 (this machine: %s on %s);\n", labNetPrefix, labHostAddr, labHostLink)
		fmt.Printf("their /etc/hosts is %s.\n", l.hostsPath())
	}
	if st != nil {
		fmt.Printf("Job steps run as: %s\n", st.ExecMode)
	}
	if addr, ok := cfg.HostAddr(names[0]); ok {
		// Every node serves it on its API address; anonymous viewers on
		// this machine may look, a token from scontrol token lets a
		// user act.
		fmt.Printf("Dashboard: http://%s/\n", net.JoinHostPort(addr, strconv.Itoa(cfg.APIPort)))
	}
	fmt.Println()
	printStorage(cfg.Storage(l.dir))
	fmt.Println()
	if exe, err := os.Executable(); err == nil {
		exe, _ = filepath.EvalSymlinks(exe)
		dir := filepath.Dir(exe)
		if target, err := os.Readlink(filepath.Join(dir, "sbatch")); err == nil && (target == exe || filepath.Join(dir, target) == exe) {
			fmt.Println("The Slurm commands (sbatch, squeue, sinfo, scancel, sacct, scontrol, srun, ...) are here; for this shell:")
		} else {
			fmt.Println("For the Slurm commands (sbatch, squeue, sinfo, ...): `hpc install-links`, then for this shell:")
		}
		fmt.Printf("  export PATH=%s:$PATH\n", dir)
	}
	if l.isNetns() && len(cfg.SubmitHosts) > 0 {
		fmt.Printf("Log in: hpc login   (a shell on %s, as you, with the Slurm commands; hpc login -c CMD runs one command)\n", cfg.SubmitHosts[0].Name)
	}
	fmt.Println("Try:")
	fmt.Println("  hpc submit testdata/jobs/hello.sh   # or: hpc submit --wrap 'hostname'")
	fmt.Println("  hpc queue; hpc nodes; hpc acct; hpc status")
	if l.dir != labDir() {
		fmt.Printf("  (export HPC_DIR=%s so the commands find this lab)\n", l.dir)
	}
	fmt.Printf("Config: %s\n", l.confPath())
	fmt.Printf("Logs:   %s\n", filepath.Join(l.dir, "<node>", "hpc.log"))
	fmt.Println("Stop:   hpc down   (keeps state; hpc down --purge removes it)")
}

// ---- storage areas ----

// storageConf is the commented storage block of the config `hpc up` writes.
func storageConf(dir string) string {
	return fmt.Sprintf(`
# Storage areas, shared by every node (hpc's own keys). hpc up makes them
# here; on several machines, point them at file systems all nodes mount.
#   home:    for the home directories of the lab's users (0755). Jobs keep
#            the submitter's $HOME, as in Slurm.
#   scratch: sticky and world-writable (1777). A user's first job makes
#            scratch/<user> (0700, the user's): the jobs' $SCRATCH. It is
#            kept after jobs end; nothing cleans it.
#   project: one directory per Unix group, project/<group> (2770: root and
#            the group; files keep the group), made by the group's first
#            job: the jobs' $PROJECT, shared by the members of the group.
# Each job also gets a private $TMPDIR on each of its nodes, removed when
# the job ends.
HpcHomeDir=%s
HpcScratchDir=%s
HpcProjectDir=%s
`, filepath.Join(dir, "home"), filepath.Join(dir, "scratch"), filepath.Join(dir, "project"))
}

// makeStorage makes the areas that are missing: home and project 0755,
// scratch sticky and world-writable. Existing ones are left as they are.
func makeStorage(a config.Storage) error {
	for _, area := range []struct {
		dir  string
		mode os.FileMode
	}{{a.Home, 0o755}, {a.Scratch, os.ModeSticky | 0o777}, {a.Project, 0o755}} {
		if fi, err := os.Stat(area.dir); err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", area.dir)
			}
			continue
		}
		if err := os.MkdirAll(area.dir, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(area.dir, area.mode); err != nil {
			return err
		}
	}
	return nil
}

// printStorage shows the areas (hpc up's summary, hpc status).
func printStorage(a config.Storage) {
	fmt.Println("Storage (the same directories on every node):")
	fmt.Printf("  home     %s\n", a.Home)
	fmt.Printf("  scratch  %s   ($SCRATCH is scratch/<user>, kept)\n", a.Scratch)
	fmt.Printf("  project  %s   ($PROJECT is project/<group>, shared by the group)\n", a.Project)
	fmt.Println("  $TMPDIR  private to each job on each node, removed when the job ends")
}
