//go:build linux

package exec

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	_ "github.com/opencontainers/cgroups/devices" // device rules need the devices manager
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// StateRoot holds libcontainer's state of every node's containers, one
// directory per node (named like its cgroup parent), as runc keeps its own
// under /run/runc. It is not in the node's state directory on purpose:
// libcontainer seals the binary each container runs with a read-only
// overlay whose lower layers are the binary's directory and the container's
// state directory, which overlayfs refuses when one holds the other (a lab
// directory next to the hpc binary would), and falls back to copying the
// whole binary into memory for every process it starts (about 12 ms for a
// 28 MB binary).
const StateRoot = "/run/hpc"

// ContainerStateDir is where the executor of a node (NodeName node,
// StateDir stateDir) keeps libcontainer's state of its steps.
func ContainerStateDir(node, stateDir string) string {
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	return filepath.Join(StateRoot, nodeCgroup(node, stateDir))
}

// Limits every step gets.
const (
	pidsLimit    = 4096
	cpuPeriodUs  = 100000
	cgroupParent = "/hpc"
)

// How a step runs in container mode
//
// Each step is one libcontainer container whose init (pid 1 of the step's
// pid namespace) is the step's supervisor, this binary run as
// "<exe> init <pauseArg>" (see InitIfChild and stepd.go), with the step's
// user, limits and file system. It starts the step's command (or its srun
// tasks) as its own children, so that they are not pid 1: they get signals
// with their default actions (a SIGTERM-ed batch script dies and reports 0:15
// as under Slurm) and their exit statuses come straight from wait(2). It
// reports each end, and exits once every task has ended, which ends whatever
// is left in the pid namespace; the OOM counter is read, and the container
// (state directory and cgroup) is destroyed. The supervisor needs nothing
// from the daemon once it runs, so steps survive a restart of the daemon
// (reattach.go).
type containerRuntime struct {
	log      *slog.Logger
	node     string
	stateDir string // the executor's (absolute)
	mnt      string // an unbindable mount holding rootfs
	rootfs   string // the prepared bind of /
	ctrRoot  string // libcontainer's state root: /run/hpc/<node>-<hash> (see stateRoot)
	cgBase   string // where node cgroups go: /hpc, or a delegated unit (cgroupsetup.go)
	cgParent string // <cgBase>/<node>-<hash of the state directory>
	v2       bool
	memsw    bool              // v1: memory.memsw.* exists (swap accounting)
	cgPaths  map[string]string // the node's cgroup parent, per controller
	devRules []*devconfig.Rule
	hostCPUs []int      // what step cpusets are made of
	jobs     jobCgroups // jobcgroup.go
	// leftovers are the steps a previous executor left, for New to
	// re-attach.
	leftovers []*libcontainer.Container
}

// newContainerRuntime prepares container mode for a node whose cgroups go
// under the cgroup base (cgroupsetup.go: /hpc, or a unit delegated to the
// daemon).
func newContainerRuntime(stateDir, node, base string, log *slog.Logger) (_ *containerRuntime, retErr error) {
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	r := &containerRuntime{
		log:      log,
		node:     node,
		stateDir: stateDir,
		mnt:      filepath.Join(stateDir, "mnt"),
		ctrRoot:  ContainerStateDir(node, stateDir),
		cgBase:   base,
		cgParent: path.Join(base, nodeCgroup(node, stateDir)),
		v2:       cgroups.IsCgroup2UnifiedMode(),
		devRules: deviceRules(),
		hostCPUs: hostCPUs(),
	}
	defer func() {
		if retErr != nil {
			r.removeCgroupParent()
		}
	}()
	if err := r.probeCgroups(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.ctrRoot, 0o700); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.resultsDir(), 0o700); err != nil {
		return nil, err
	}
	r.leftovers = r.removeLeftovers()
	if r.rootfs, err = prepareRootfs(r.mnt); err != nil {
		return nil, fmt.Errorf("prepare the containers' root file system: %w", err)
	}
	// libcontainer's init and exec processes are grandchildren (nsexec forks
	// twice); waiting for them needs this process to be their reaper.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		teardownRootfs(r.mnt)
		return nil, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return r, nil
}

// probeCgroups creates the node's cgroup parent and checks that the
// controllers the limits need are there.
func (r *containerRuntime) probeCgroups() error {
	m, err := manager.New(&cgroups.Cgroup{Path: r.cgParent, Resources: &cgroups.Resources{}})
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	r.cgPaths = m.GetPaths()
	if err := m.Apply(-1); err != nil {
		return fmt.Errorf("cannot create cgroup %s: %w", r.cgParent, err)
	}
	if r.v2 {
		dir := m.Path("")
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("cgroup v2: %w", err)
		}
		have := strings.Fields(string(b))
		for _, c := range []string{"memory", "cpu", "pids"} {
			if !slices.Contains(have, c) {
				return fmt.Errorf("cgroup v2 controller %q is not available in %s", c, dir)
			}
		}
		return nil
	}
	for _, c := range []string{"memory", "cpu", "pids", "devices"} {
		if r.cgPaths[c] == "" {
			return fmt.Errorf("cgroup v1 controller %q is not mounted", c)
		}
	}
	r.memsw = cgroups.PathExists(filepath.Join(r.cgPaths["memory"], "memory.memsw.limit_in_bytes"))
	return nil
}

// close undoes the root file system bind and removes the node's cgroup
// parent (if no step is left in it).
func (r *containerRuntime) close() error {
	err := teardownRootfs(r.mnt)
	r.removeCgroupParent()
	os.Remove(r.ctrRoot)
	os.Remove(StateRoot) // when no other node uses it
	return err
}

// removeCgroupParent removes /hpc/<node> (and /hpc) where they are empty.
// A delegated unit that holds the node's cgroup stays: it holds the daemon
// too, and is systemd's to remove.
func (r *containerRuntime) removeCgroupParent() {
	for _, p := range r.cgPaths {
		_ = unix.Rmdir(p)
		if r.cgBase == cgroupParent {
			_ = unix.Rmdir(filepath.Dir(p)) // /hpc, when no other node uses it
		}
	}
}

// removeLeftovers returns the steps a previous executor left in the state
// directory (running or not), to be re-attached, and destroys what cannot
// be: containers that are not steps, and cgroups without a container.
func (r *containerRuntime) removeLeftovers() []*libcontainer.Container {
	var keep []*libcontainer.Container
	kept := map[string]bool{}
	ents, _ := os.ReadDir(r.ctrRoot)
	for _, ent := range ents {
		id := ent.Name()
		c, err := libcontainer.Load(r.ctrRoot, id)
		if err != nil {
			r.log.Warn("removing unreadable container state", "container", id, "err", err)
			os.RemoveAll(filepath.Join(r.ctrRoot, id))
			continue
		}
		if lab := labelMap(c.Config().Labels); lab[labelStep] != "" {
			keep = append(keep, c)
			kept[id] = true
			if lab[labelJob] != "" {
				kept[jobCgroupName(lab[labelJob])] = true // its job cgroup stays
			}
			continue
		}
		st, _ := c.Status()
		if st != libcontainer.Stopped {
			r.log.Warn("killing a container that is not a step", "container", id)
			_ = c.Signal(unix.SIGKILL)
			for i := 0; i < 500; i++ {
				if st, _ = c.Status(); st == libcontainer.Stopped {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if err := c.Destroy(); err != nil {
			r.log.Warn("cannot remove a container left by a previous executor", "container", id, "err", err)
		}
	}
	// Results files and /etc copies of steps that are gone.
	res, _ := os.ReadDir(r.resultsDir())
	for _, ent := range res {
		if !kept[ent.Name()] {
			os.Remove(filepath.Join(r.resultsDir(), ent.Name()))
		}
	}
	etc, _ := os.ReadDir(filepath.Join(r.stateDir, "etc"))
	for _, ent := range etc {
		if !kept[ent.Name()] {
			os.RemoveAll(r.stepEtc(ent.Name()))
		}
	}
	// Cgroups of steps that have no container any more, with whatever still
	// runs in them.
	for _, p := range r.cgPaths {
		subs, _ := os.ReadDir(p)
		for _, s := range subs {
			if !s.IsDir() || kept[s.Name()] {
				continue
			}
			dir := filepath.Join(p, s.Name())
			for i := 0; i < 100; i++ {
				pids, _ := cgroups.GetAllPids(dir)
				if len(pids) == 0 {
					break
				}
				for _, pid := range pids {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := cgroups.RemovePath(dir); err != nil {
				r.log.Warn("cannot remove a step cgroup left by a previous executor", "cgroup", dir, "err", err)
			}
		}
	}
	return keep
}

// rootCaps are the capabilities root keeps in a step: the container
// runtimes' usual default set (no CAP_SYS_ADMIN, so no mounts and no way
// out of the step's namespaces and cgroup).
var rootCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// capsFor: root keeps rootCaps; everybody else runs with none.
func capsFor(uid uint32) *configs.Capabilities {
	if uid != 0 {
		return &configs.Capabilities{}
	}
	return &configs.Capabilities{
		Bounding:  rootCaps,
		Effective: rootCaps,
		Permitted: rootCaps,
	}
}

// devices in a step's /dev (besides /dev/pts, /dev/ptmx, /dev/shm, /dev/mqueue).
var stepDevices = []struct {
	path         string
	major, minor int64
}{
	{"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7},
	{"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0},
}

func deviceNodes() []*devconfig.Device {
	var out []*devconfig.Device
	for _, d := range stepDevices {
		out = append(out, &devconfig.Device{
			Path:     d.path,
			FileMode: 0o666,
			Rule: devconfig.Rule{
				Type: devconfig.CharDevice, Major: d.major, Minor: d.minor,
				Permissions: "rwm", Allow: true,
			},
		})
	}
	return out
}

// stepDeviceRules allows a step its own device files (allocated GRES): a
// rule per device, and a device node in the step's /dev for those that live
// under /dev (others are reached through the host's file system).
func stepDeviceRules(paths []string) ([]*devconfig.Rule, []*devconfig.Device, error) {
	var rules []*devconfig.Rule
	var nodes []*devconfig.Device
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return nil, nil, fmt.Errorf("GRES device %s: %w", p, err)
		}
		var typ devconfig.Type
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			typ = devconfig.CharDevice
		case unix.S_IFBLK:
			typ = devconfig.BlockDevice
		default:
			return nil, nil, fmt.Errorf("GRES device %s is not a device file", p)
		}
		rule := devconfig.Rule{Type: typ, Major: int64(unix.Major(uint64(st.Rdev))), Minor: int64(unix.Minor(uint64(st.Rdev))), Permissions: "rwm", Allow: true}
		rules = append(rules, &rule)
		if strings.HasPrefix(p, "/dev/") {
			nodes = append(nodes, &devconfig.Device{Path: p, FileMode: 0o666, Rule: rule})
		}
	}
	return rules, nodes, nil
}

// deviceRules: deny everything, then allow the step's devices and ptys.
func deviceRules() []*devconfig.Rule {
	rules := []*devconfig.Rule{{
		Type: devconfig.WildcardDevice, Major: devconfig.Wildcard, Minor: devconfig.Wildcard,
		Permissions: "rwm", Allow: false,
	}}
	for _, d := range deviceNodes() {
		rules = append(rules, &d.Rule)
	}
	rules = append(rules,
		&devconfig.Rule{Type: devconfig.CharDevice, Major: 5, Minor: 2, Permissions: "rwm", Allow: true},                    // /dev/ptmx
		&devconfig.Rule{Type: devconfig.CharDevice, Major: 136, Minor: devconfig.Wildcard, Permissions: "rwm", Allow: true}, // /dev/pts/*
	)
	return rules
}

// config is the container configuration of one step.
func (r *containerRuntime) config(cid string, spec *StepSpec) (*configs.Config, error) {
	binds, err := r.stepBinds(spec) // the host's directories, or an image's binds (image.go)
	if err != nil {
		return nil, err
	}
	pids := int64(pidsLimit)
	extraRules, extraNodes, err := stepDeviceRules(spec.Devices)
	if err != nil {
		return nil, err
	}
	res := &cgroups.Resources{Devices: append(append([]*devconfig.Rule(nil), r.devRules...), extraRules...), PidsLimit: &pids}
	if spec.MemMB > 0 {
		res.Memory = max(spec.MemMB, MinMemMB) << 20
		if r.v2 || r.memsw {
			res.MemorySwap = res.Memory // memory+swap = memory: no swap
		}
	}
	if spec.CPUs > 0 {
		res.CpuPeriod = cpuPeriodUs
		res.CpuQuota = int64(spec.CPUs) * cpuPeriodUs
	}
	res.CpusetCpus = r.cpuset(spec.CPUIDs)
	const (
		nosuid = unix.MS_NOSUID
		nodev  = unix.MS_NODEV
		noexec = unix.MS_NOEXEC
	)
	mounts := append(binds,
		&configs.Mount{Source: "proc", Destination: "/proc", Device: "proc", Flags: nosuid | nodev | noexec},
		&configs.Mount{Source: "tmpfs", Destination: "/dev", Device: "tmpfs", Flags: nosuid | unix.MS_STRICTATIME, Data: "mode=755,size=65536k"},
		&configs.Mount{Source: "devpts", Destination: "/dev/pts", Device: "devpts", Flags: nosuid | noexec, Data: "newinstance,ptmxmode=0666,mode=0620,gid=5"},
		&configs.Mount{Source: "shm", Destination: "/dev/shm", Device: "tmpfs", Flags: nosuid | nodev, Data: "mode=1777"},
		&configs.Mount{Source: "mqueue", Destination: "/dev/mqueue", Device: "mqueue", Flags: nosuid | nodev | noexec},
		&configs.Mount{
			// sysfs cannot be mounted without a network namespace
			// (EBUSY): bind the host's, read-only all the way down
			// (MS_RDONLY alone left /sys/fs/cgroup writable).
			Source: "/sys", Destination: "/sys", Device: "bind",
			Flags:   unix.MS_BIND | unix.MS_REC | unix.MS_RDONLY | nosuid | nodev | noexec,
			RecAttr: &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC},
		},
	)
	return r.withImage(&configs.Config{ // an image's root and mounts (image.go)
		Rootfs:   r.rootfs,
		Hostname: r.node,
		Namespaces: configs.Namespaces{
			{Type: configs.NEWNS}, {Type: configs.NEWPID}, {Type: configs.NEWUTS}, {Type: configs.NEWIPC},
		},
		Cgroups: &cgroups.Cgroup{Path: r.stepCgroupPath(spec, cid), Resources: res},
		Mounts:  mounts,
		Devices: append(deviceNodes(), extraNodes...),
		MaskPaths: []string{
			"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
			"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
			"/sys/firmware", "/sys/devices/virtual/powercap",
			r.mnt, // the copy of the prepared tree (see hostBinds)
		},
		ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		Capabilities:  capsFor(spec.UID),
	}, spec)
}

// ctrStep delivers signals to a container step.
type ctrStep struct {
	mu      sync.Mutex
	ended   bool
	c       *libcontainer.Container
	initPid int
}

// signal sends sig to every process in the step's cgroup except the init
// (which ignores signals anyway).
func (k *ctrStep) signal(sig syscall.Signal) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended {
		return ErrStepEnded
	}
	pids, err := k.c.Processes()
	if err != nil {
		return fmt.Errorf("list the step's processes: %w", err)
	}
	for _, p := range pids {
		if p == k.initPid {
			continue
		}
		if err := unix.Kill(p, sig); err != nil && err != unix.ESRCH {
			return fmt.Errorf("kill %d: %w", p, err)
		}
	}
	return nil
}

// kill ends the pid namespace: SIGKILL to its init kills every process in it.
func (k *ctrStep) kill() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended {
		return nil
	}
	return k.c.Signal(unix.SIGKILL)
}

// end marks the step ended: signals are no longer delivered.
func (k *ctrStep) end() {
	k.mu.Lock()
	k.ended = true
	k.mu.Unlock()
}

func (e *Executor) launchContainer(s *Step, cid string, spec StepSpec) (retErr error) {
	r := e.ctr
	groups := groupsFor(&spec)
	io, err := prepareIO(&spec, groups, true)
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			io.removeCreated(&spec, groups, true)
			os.RemoveAll(r.stepEtc(cid)) // an image's /etc copies (imageuser.go)
		}
	}()
	cfg, err := r.config(cid, &spec)
	if err != nil {
		return fmt.Errorf("step %s: %w", spec.ID, err)
	}
	l := &ctrLaunch{e: e, r: r, s: s, cid: cid, spec: &spec, io: io, start: time.Now()}
	cfg.Labels = stepLabels(&spec, l.start)
	if l.tio, err = startTaskIO(&spec); err != nil {
		return err
	}
	if label := l.planTasks(); label != "" {
		cfg.Labels = append(cfg.Labels, label)
	}
	defer l.closeSupervisorFiles()
	if err := l.openSupervisorFiles(); err != nil {
		return err
	}
	if err := l.create(cfg); err != nil {
		return err
	}
	first, err := l.startSupervisor(groups)
	if err != nil {
		return err
	}
	l.handOff(first)
	return nil
}

// ctrLaunch is a container step on its way up: what launchContainer's
// steps hand on to each other, and to the watcher of the running step.
type ctrLaunch struct {
	e     *Executor
	r     *containerRuntime
	s     *Step
	cid   string
	spec  *StepSpec
	start time.Time
	io    *stepIO
	tio   *taskIO // nil without Tasks
	// What the supervisor gets (see stepd.go): the plan, the results file,
	// the events pipe and the tasks' output, as its extra files.
	plan       supPlan
	files      []*os.File
	planFile   *os.File
	results    *os.File
	resultPath string
	evR, evW   *os.File   // the supervisor's events
	evs        *supReader // supevents.go
	goR, goW   *os.File   // its go-ahead
	c          *libcontainer.Container
	sup        *libcontainer.Process
	notice     *os.File // the step's stderr, for the OOM notice (finishStep)
}

// planTasks writes the supervisor's plan of the tasks and the extra files
// they need (after the first four, which openSupervisorFiles fills in).
// For a step with Tasks it returns the label that says where the
// supervisor holds their read ends.
func (l *ctrLaunch) planTasks() string {
	spec, io, tio := l.spec, l.io, l.tio
	l.files = []*os.File{nil, nil, nil, nil}
	fd := func(f *os.File) int {
		for i, g := range l.files[supFirstFD-supPlanFD:] {
			if g == f {
				return supFirstFD + i
			}
		}
		l.files = append(l.files, f)
		return supPlanFD + len(l.files) - 1
	}
	setup := setupOf(spec) // taskexec.go
	argv := func(a []string) []string {
		if setup == nil {
			return a
		}
		return setup.wrap(a)
	}
	if tio == nil {
		l.plan.Tasks = []supTask{{Argv: argv(spec.Argv), Env: spec.Env, Dir: io.cwd, Stdout: fd(io.stdout), Stderr: fd(io.stderr), Report: setup != nil}}
		return ""
	}
	for i, t := range spec.Tasks {
		st := supTask{Argv: argv(t.Argv), Env: t.Env, Dir: io.cwd, Stdout: fd(tio.stdout[i]), Stderr: fd(tio.stderr[i]), TTY: t.TTY, Report: setup != nil}
		if tio.stdin[i] != nil {
			st.Stdin = fd(tio.stdin[i])
		}
		l.plan.Tasks = append(l.plan.Tasks, st)
	}
	// The supervisor holds the read ends too (see supPlan.Keep); the
	// label says where, for a new executor (reattach.go).
	ends := make([][3]int, len(spec.Tasks))
	for i := range spec.Tasks {
		for k, r := range []*os.File{tio.outR[i], tio.errR[i], tio.inW[i]} {
			if r != nil {
				ends[i][k] = fd(r)
				l.plan.Keep = append(l.plan.Keep, ends[i][k])
			}
		}
	}
	return ioLabel(ends, spec.Tasks)
}

// openSupervisorFiles makes the supervisor's first four extra files: the
// plan, the results file, the events pipe and the go-ahead pipe. On error
// the launch is undone (abandon); closeSupervisorFiles still closes this
// process's copies.
func (l *ctrLaunch) openSupervisorFiles() error {
	var err error
	if l.planFile, err = memFile("hpc-step-plan", l.plan); err != nil {
		l.abandon(false)
		return fmt.Errorf("step %s: %w", l.spec.ID, err)
	}
	l.resultPath = l.r.resultPath(l.cid)
	l.results, err = os.OpenFile(l.resultPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND|unix.O_CLOEXEC, 0o600)
	if err != nil {
		l.abandon(false)
		return fmt.Errorf("step %s: results file: %w", l.spec.ID, err)
	}
	if l.evR, l.evW, err = os.Pipe(); err != nil {
		l.abandon(false)
		return fmt.Errorf("step %s: %w", l.spec.ID, err)
	}
	if l.goR, l.goW, err = os.Pipe(); err != nil {
		l.abandon(false)
		return fmt.Errorf("step %s: %w", l.spec.ID, err)
	}
	l.files[0], l.files[1], l.files[2], l.files[3] = l.planFile, l.results, l.evW, l.goR
	return nil
}

// closeSupervisorFiles closes this process's copies of the plan, the
// results file and the supervisor's go-ahead (at the latest) when the
// launch returns; those it never opened are nil.
func (l *ctrLaunch) closeSupervisorFiles() {
	for _, f := range []*os.File{l.goW, l.results, l.planFile} {
		if f != nil {
			f.Close()
		}
	}
}

// abandon undoes a launch whose container did not start: the events pipe,
// the tasks' pipes, the results file and (joined) the step's place in its
// job's cgroup.
func (l *ctrLaunch) abandon(joined bool) {
	if l.evR != nil {
		l.evR.Close()
		l.evW.Close()
	}
	if l.tio != nil {
		l.tio.closeWriters()
		l.tio.drain(0)
		l.tio.closeInputs()
	}
	if l.results != nil {
		os.Remove(l.resultPath)
	}
	if joined {
		l.r.leaveJob(l.spec.Job)
	}
}

// create puts the step under its job's cgroup and creates its container.
func (l *ctrLaunch) create(cfg *configs.Config) error {
	if err := l.r.joinJob(l.spec); err != nil {
		l.abandon(false)
		return fmt.Errorf("step %s: %w", l.spec.ID, err)
	}
	c, err := libcontainer.Create(l.r.ctrRoot, l.cid, cfg)
	if err != nil {
		l.abandon(true)
		return fmt.Errorf("step %s: create container: %w", l.spec.ID, err)
	}
	l.c = c
	return nil
}

// startSupervisor runs the step's supervisor as its container's init and
// reads its first event: the tasks started. On error the container is
// gone (fail).
func (l *ctrLaunch) startSupervisor(groups []uint32) (supEvent, error) {
	spec := l.spec
	addGroups := make([]int, len(groups))
	for i, g := range groups {
		addGroups[i] = int(g)
	}
	nnp := spec.UID != 0
	l.sup = &libcontainer.Process{
		// /proc/self/exe at exec time is runc init's sealed copy of this
		// binary, which the user may run even where its path is not
		// reachable for them.
		Args: []string{"/proc/self/exe", "init", pauseArg},
		// One P and no collector: the supervisor is small and starts
		// on every step's path.
		Env:              []string{"PATH=/usr/local/bin:/usr/bin:/bin", "GOMAXPROCS=1", "GOGC=off"},
		UID:              int(spec.UID),
		GID:              int(spec.GID),
		AdditionalGroups: addGroups,
		Cwd:              "/",
		ExtraFiles:       l.files,
		Capabilities:     capsFor(spec.UID),
		NoNewPrivileges:  &nnp,
		Init:             true,
	}
	runErr := l.c.Run(l.sup)
	l.evW.Close() // the supervisor has its own
	l.goR.Close()
	// The step's stderr stays open here for slurmstepd's OOM notice.
	if l.tio == nil && runErr == nil {
		if fd, err := unix.FcntlInt(l.io.stderr.Fd(), unix.F_DUPFD_CLOEXEC, 0); err == nil {
			l.notice = os.NewFile(uintptr(fd), spec.Stderr)
		}
	}
	closeHandedIO(l.io, l.tio)
	if runErr != nil {
		return supEvent{}, l.fail(false, fmt.Errorf("start container: %w", runErr))
	}
	l.evs = newSupReader(l.evR)
	first, err := l.evs.started(len(l.plan.Tasks))
	if err != nil {
		return supEvent{}, l.fail(true, err)
	}
	return first, nil
}

// fail undoes a launch whose container was created but whose tasks did
// not start; running: its supervisor runs (and is killed).
func (l *ctrLaunch) fail(running bool, err error) error {
	if l.notice != nil {
		l.notice.Close()
	}
	if running {
		_ = l.c.Signal(unix.SIGKILL)
		_, _ = l.sup.Wait()
	}
	l.evR.Close()
	if l.tio != nil {
		l.tio.drain(outputGrace)
		l.tio.closeInputs()
	}
	_ = l.c.Destroy()
	os.Remove(l.resultPath)
	l.r.leaveJob(l.spec.Job)
	return fmt.Errorf("step %s: %w", l.spec.ID, err)
}

// handOff makes the step running (its start, pid, inputs and signals),
// lets the supervisor go ahead and watches the step until it ends.
func (l *ctrLaunch) handOff(first supEvent) {
	s := l.s
	s.start = l.start
	supPid, _ := l.sup.Pid()
	s.pid = hostPid(l.c, supPid, first.Pids[0])
	l.goW.Close()
	if l.tio != nil {
		s.inputs, s.ttys = l.tio.inputs, l.tio.ttys
	}
	k := &ctrStep{c: l.c, initPid: supPid}
	s.sig = k
	st, _ := l.c.State()
	var cgPaths map[string]string
	if st != nil {
		cgPaths = st.CgroupPaths
	}
	go l.watch(k, cgPaths)
}

// watch reads the tasks' ends from the supervisor's events until it ends,
// then finishes the step.
func (l *ctrLaunch) watch(k *ctrStep, cgPaths map[string]string) {
	spec, tio := l.spec, l.tio
	n := len(l.plan.Tasks)
	results := make([]TaskResult, n)
	got := make([]bool, n)
	var peakKB int64 // the largest task's high-water mark
	var ended sync.WaitGroup
	var bad error // a malformed report: the step fails with it
	for {
		ev, done, err := l.evs.taskEnd(got)
		if errors.Is(err, errMalformedReport) {
			// Nothing it reports can be trusted any more: the step ends
			// here, its tasks with it.
			bad = err
			_ = k.kill()
			break
		}
		if err != nil { // the pipe failed: as if the supervisor had gone
			break
		}
		if done {
			break
		}
		i := ev.Task
		results[i] = TaskResult{ExitCode: ev.Exit, Signal: ev.Signal}
		peakKB = max(peakKB, ev.MaxRSSKB)
		if tio != nil {
			ended.Go(func() { tio.reportEnd(spec, i, results[i]) })
		}
	}
	_, werr := l.sup.Wait()
	end := time.Now()
	k.end()
	l.evR.Close()
	// A supervisor that was killed (a cancelled step) took the tasks
	// that had not ended with it.
	for i := range results {
		if !got[i] {
			results[i] = TaskResult{Signal: int(unix.SIGKILL)}
			if tio != nil && spec.OnTaskEnd != nil {
				ended.Go(func() { tio.reportEnd(spec, i, results[i]) })
			}
		}
	}
	settleTasks(tio, &ended)
	res := l.r.finishStep(l.c, spec, cgPaths, results, peakKB, l.notice, tio != nil)
	res.Start, res.End = l.start, end
	if bad != nil && res.Err == nil {
		res.Err = fmt.Errorf("step %s: %w", spec.ID, bad)
	}
	if res.Err == nil && werr != nil && !isExitError(werr) {
		res.Err = fmt.Errorf("wait for step %s: %w", spec.ID, werr)
	}
	l.e.forget(l.cid, l.s)
	l.s.finish(res)
}

// finishStep sums up an ended step: its tasks' ends, the OOM killer's
// kills (announced on notice, the step's stderr, when given), and removes
// its container and results file. peakKB is the largest task's memory
// high-water mark, for a cgroup that keeps none.
func (r *containerRuntime) finishStep(c *libcontainer.Container, spec *StepSpec, cgPaths map[string]string, tasks []TaskResult, peakKB int64, notice *os.File, multi bool) Result {
	var res Result
	sumTasks(&res, tasks, multi)
	// Each step's cgroup is its own and new (New removes leftovers), so
	// every kill its counter shows happened in the step: reading it before
	// the tasks start would race with a task killed at once.
	if n, err := readOOMKills(cgPaths, r.v2); err == nil && n > 0 {
		res.OOM, res.OOMKills = true, int(n)
		if notice != nil {
			fmt.Fprint(notice, OOMNotice(spec.ID, res.OOMKills))
		}
	}
	if notice != nil {
		notice.Close()
	}
	res.Usage = cgroupUsage(cgPaths, r.v2)
	if res.Usage.MaxRSSKB == 0 {
		// cgroup v2 before Linux 5.19 keeps no memory.peak: the largest
		// task's own, as plain steps report it.
		res.Usage.MaxRSSKB = peakKB
	}
	if err := c.Destroy(); err != nil {
		res.Err = fmt.Errorf("clean up step %s: %w", spec.ID, err)
	}
	r.leaveJob(spec.Job)
	os.Remove(r.resultPath(c.ID()))
	os.RemoveAll(r.stepEtc(c.ID()))
	return res
}

// isExitError: the supervisor's own exit status says nothing about the step.
func isExitError(err error) bool {
	var ee *osexec.ExitError
	return errors.As(err, &ee)
}

// memFile returns a sealed-size in-memory file holding v as JSON, read from
// its start.
func memFile(name string, v any) (*os.File, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// hostPid maps the pid of a task in a step's namespace to the host's,
// looking among the children of the supervisor's main thread, which
// starts the tasks (init.go; a task that has ended is one until the
// supervisor reaps it), then among the step's processes (its cgroup's);
// 0 if gone.
func hostPid(c *libcontainer.Container, supervisor, nsPid int) int {
	want := strconv.Itoa(nsPid)
	find := func(pids []int) int {
		for _, p := range pids {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(strings.TrimPrefix(line, "NSpid:")); strings.HasPrefix(line, "NSpid:") && len(f) > 0 && f[len(f)-1] == want {
					return p
				}
			}
		}
		return 0
	}
	var children []int
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", supervisor, supervisor)); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				children = append(children, p)
			}
		}
	}
	if p := find(children); p != 0 {
		return p
	}
	if pids, err := c.Processes(); err == nil {
		return find(pids)
	}
	return 0
}

// readOOMKills reads the oom_kill counter of a step's memory cgroup
// (v1: memory.oom_control, v2: memory.events).
func readOOMKills(paths map[string]string, v2 bool) (uint64, error) {
	var file string
	if v2 {
		file = filepath.Join(paths[""], "memory.events")
	} else {
		if paths["memory"] == "" {
			return 0, errors.New("no memory cgroup")
		}
		file = filepath.Join(paths["memory"], "memory.oom_control")
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == "oom_kill" {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no oom_kill counter", file)
}

// nodeCgroup names a node's cgroup parent. Several labs on one machine may
// each have a node1: the state directory's hash keeps their cgroups (and
// the crash clean-up New does in them) apart.
func nodeCgroup(node, stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return sanitizeID(node) + "-" + hex.EncodeToString(sum[:4])
}
