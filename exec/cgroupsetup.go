//go:build linux

package exec

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Where the node's cgroups go
//
// On cgroup v1, and on cgroup v2 without systemd, the executor makes its
// cgroups at the root of the tree (/hpc/<node>/job_N/<step>), as it always
// has. On a cgroup v2 host whose PID 1 is systemd the tree is systemd's:
// it may move or remove what others make outside the units it manages.
// The way to own a part of it is delegation, a unit with Delegate=yes,
// which is how slurmd runs on such hosts: the unit's subtree is then the
// daemon's to manage. cgroup v2 lets only leaves hold processes once
// controllers are enabled for children ("no internal processes"), so the
// daemon first moves itself (and whatever else runs in the unit) into a
// leaf, <unit>/daemon, then enables the controllers in the unit's
// cgroup.subtree_control, and makes the node's cgroups beside that leaf.
//
// The daemon is in a delegated unit when systemd started it so (a service
// with Delegate=yes: scripts/hpc-node@.service), or when an earlier
// executor of this process already made one. Otherwise it asks systemd,
// over D-Bus, for a transient scope of its own with Delegate=yes, holding
// itself. Without D-Bus it writes at the root of the tree as on other
// hosts, and says that systemd may undo it.
//
// Not root, the daemon can neither limit steps nor run them as their
// users: they are plain processes of its own user. On cgroup v2 the user's
// systemd usually delegates a subtree to the user (user@UID.service): the
// plan names it, so that status says what could hold the steps (nothing
// uses it yet).
//
// The decision reads only files under a root directory ("/" on a host, a
// fake tree in tests) and asks systemd only through cgroupBus, so a test
// can give it any host.

// leafName is the cgroup the daemon moves itself into inside a delegated
// unit.
const leafName = "daemon"

// wantControllers are the controllers the limits of steps use, in the
// order they are enabled.
var wantControllers = []string{"cpuset", "cpu", "io", "memory", "pids"}

// cgroupBus is what the placement asks of systemd (a D-Bus connection on a
// host, a fake in tests).
type cgroupBus interface {
	// Delegated reports whether the unit has Delegate=yes.
	Delegated(unit string) (bool, error)
	// StartScope starts the transient scope unit name with Delegate=yes
	// in slice, holding process pid, and waits until it runs. A scope of
	// that name that already exists (an earlier daemon's, whose jobs still
	// run in it) gives errUnitExists.
	StartScope(name, slice string, pid int) error
	Close()
}

// errUnitExists: the transient scope asked for exists already.
var errUnitExists = errors.New("the unit exists already")

// cgroupPlan is where the executor puts the node's cgroups and what it does
// first to be allowed to.
type cgroupPlan struct {
	// Version is the host's cgroup version: 1 (v1 or hybrid), 2 (unified),
	// 0 (no cgroup file system at /sys/fs/cgroup).
	Version int
	// Systemd: PID 1 is systemd.
	Systemd bool
	// Parent is the cgroup (a path in the hierarchy, "/hpc" or a
	// delegated unit's) under which the node's cgroup is made; empty when
	// steps get no cgroups (not root).
	Parent string
	// Scope, when set, is the transient scope (Delegate=yes, in Slice) to
	// ask systemd for, holding this process; Parent is its cgroup.
	Scope, Slice string
	// Leaf, when set: move this process, and whatever else runs in Parent
	// itself, into Parent/Leaf.
	Leaf string
	// Enable are the controllers to enable in Parent's
	// cgroup.subtree_control.
	Enable []string
	// UserCgroup is, not root on cgroup v2, the subtree delegated to the
	// daemon's user, and UserControllers its controllers; empty: none.
	UserCgroup      string
	UserControllers []string
	// Desc says where the cgroups are, for Mode and hpc up ("cgroup v2,
	// delegated by systemd: ...").
	Desc string
}

// rootOfTree is the plan of hosts where hpc's cgroups go at the root of
// the tree (/hpc), with why.
func rootOfTree(version int, systemd bool, why string) cgroupPlan {
	p := cgroupPlan{Version: version, Systemd: systemd, Parent: cgroupParent}
	switch version {
	case 2:
		p.Desc = "cgroup v2, under /sys/fs/cgroup" + cgroupParent
	default:
		p.Desc = "cgroup v1, under " + cgroupParent + " in each hierarchy"
	}
	if why != "" {
		p.Desc += ": " + why
	}
	return p
}

// cgroupScopeName is the transient scope of the node whose cgroup is
// named node (nodeCgroup): unit names have no '+'.
func cgroupScopeName(node string) string {
	return "hpc-" + strings.ReplaceAll(node, "+", "_") + ".scope"
}

// planCgroups decides where the node's cgroups go on the host under root,
// for a daemon of uid whose node cgroup is named node (nodeCgroup). bus is
// nil when systemd cannot be reached over D-Bus; busErr says why.
func planCgroups(root string, uid int, node string, bus cgroupBus, busErr error) cgroupPlan {
	version := cgroupVersion(root)
	systemd := systemdIsInit(root)
	if uid != 0 {
		return planUnprivileged(root, uid, version, systemd)
	}
	if version != 2 || !systemd {
		return rootOfTree(version, systemd, "")
	}
	own, err := ownCgroup(root)
	if err != nil {
		return rootOfTree(version, systemd, fmt.Sprintf("systemd is PID 1 but this process's cgroup is unknown (%v): writing at the root of the tree, which systemd may undo", err))
	}
	// An earlier executor of this process moved it into the leaf of a
	// delegated unit: that unit is still the daemon's.
	unit := own
	if path.Base(own) == leafName {
		unit = path.Dir(own)
	}
	if isDelegated(root, unit, bus) {
		p := cgroupPlan{Version: 2, Systemd: true, Parent: unit}
		if unit == own {
			p.Leaf = leafName
		}
		p.Enable = controllersToEnable(root, unit)
		p.Desc = fmt.Sprintf("cgroup v2, delegated by systemd: unit %s (/sys/fs/cgroup%s)", path.Base(unit), unit)
		return p
	}
	if bus == nil {
		why := "systemd is PID 1 but no delegation"
		if busErr != nil {
			why += fmt.Sprintf(" (D-Bus: %v)", busErr)
		}
		return rootOfTree(version, systemd, why+": writing at the root of the tree, which systemd may undo")
	}
	scope := cgroupScopeName(node)
	const slice = "system.slice"
	parent := "/" + slice + "/" + scope
	return cgroupPlan{
		Version: 2, Systemd: true, Parent: parent, Scope: scope, Slice: slice, Leaf: leafName,
		// systemd delegates to the scope the controllers it manages
		// that the host has.
		Enable: intersect(wantControllers, readControllers(root, "/")),
		Desc:   fmt.Sprintf("cgroup v2, delegated by systemd: transient scope %s (/sys/fs/cgroup%s)", scope, parent),
	}
}

// planUnprivileged: not root, steps are plain processes; on cgroup v2 the
// plan names the subtree delegated to the user, if there is one.
func planUnprivileged(root string, uid, version int, systemd bool) cgroupPlan {
	p := cgroupPlan{Version: version, Systemd: systemd, Desc: "plain processes (not root: no cgroup limits or user switching)"}
	if version != 2 {
		return p
	}
	own, err := ownCgroup(root)
	if err != nil {
		return p
	}
	where := "could hold them"
	p.UserCgroup = userDelegation(root, own, uid)
	if p.UserCgroup == "" {
		// Started from a login session (session-N.scope, not the user's):
		// the user's systemd may still have a delegated subtree.
		mgr := fmt.Sprintf("/user.slice/user-%d.slice/user@%d.service", uid, uid)
		if !ownedBy(cgroupDir(root, mgr), uid) {
			return p
		}
		p.UserCgroup = mgr
		where = "could hold them, for a daemon started inside it"
	}
	p.UserControllers = readControllers(root, p.UserCgroup)
	ctl := "no controllers"
	if len(p.UserControllers) > 0 {
		ctl = "controllers " + strings.Join(p.UserControllers, " ")
	}
	p.Desc = fmt.Sprintf("plain processes (not root: no cgroup limits or user switching; the delegated user cgroup /sys/fs/cgroup%s, %s, %s)", p.UserCgroup, ctl, where)
	return p
}

// cgroupVersion reads the mount table under root: cgroup2 mounted at
// /sys/fs/cgroup is v2; cgroup (v1) hierarchies under it, v1 (hybrid when
// a cgroup2 is mounted beside them). The last mount on a path wins, as it
// hides those below.
func cgroupVersion(root string) int {
	f, err := os.Open(filepath.Join(root, "proc/self/mounts"))
	if err != nil {
		return 0
	}
	defer f.Close()
	version := 0
	v1 := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		mnt, typ := fields[1], fields[2]
		switch {
		case mnt == "/sys/fs/cgroup" && typ == "cgroup2":
			version = 2
		case mnt == "/sys/fs/cgroup":
			version = 0 // a tmpfs holding v1 hierarchies (or nothing)
			v1 = false
		case typ == "cgroup" && strings.HasPrefix(mnt, "/sys/fs/cgroup/"):
			v1 = true
		}
	}
	if version == 0 && v1 {
		return 1
	}
	return version
}

// systemdIsInit reports whether PID 1 is systemd: systemd makes
// /run/systemd/system when it boots (sd_booted's test), and names itself
// in /proc/1/comm.
func systemdIsInit(root string) bool {
	if fi, err := os.Stat(filepath.Join(root, "run/systemd/system")); err == nil && fi.IsDir() {
		return true
	}
	b, err := os.ReadFile(filepath.Join(root, "proc/1/comm"))
	return err == nil && strings.TrimSpace(string(b)) == "systemd"
}

// ownCgroup is this process's cgroup in the v2 hierarchy (the "0::" line
// of /proc/self/cgroup under root).
func ownCgroup(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") {
			// A deleted cgroup reads "/x (deleted)".
			p, _, _ = strings.Cut(p, " ")
			return path.Clean(p), nil
		}
	}
	return "", errors.New("no cgroup v2 line in /proc/self/cgroup")
}

// cgroupDir is the directory of cgroup cg (a path in the v2 hierarchy).
func cgroupDir(root, cg string) string {
	return filepath.Join(root, "sys/fs/cgroup", filepath.FromSlash(cg))
}

// isDelegated reports whether cgroup cg is a unit delegated to its
// processes: systemd (251 and later) marks such a cgroup with the
// extended attribute trusted.delegate (user.delegate in a user's
// manager); older ones are asked for the unit's Delegate property.
func isDelegated(root, cg string, bus cgroupBus) bool {
	if cg == "/" {
		return false
	}
	dir := cgroupDir(root, cg)
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		buf := make([]byte, 8)
		if n, err := unix.Getxattr(dir, attr, buf); err == nil && string(buf[:n]) == "1" {
			return true
		}
	}
	unit := path.Base(cg)
	if bus == nil || !(strings.HasSuffix(unit, ".service") || strings.HasSuffix(unit, ".scope")) {
		return false
	}
	ok, err := bus.Delegated(unit)
	return err == nil && ok
}

// userDelegation is, for a daemon of uid in cgroup own, the top of the
// subtree delegated to uid that holds own: a cgroup whose directory and
// cgroup.procs, cgroup.subtree_control and cgroup.threads are uid's, as a
// delegating manager leaves them (user@UID.service on most systems);
// empty when own is in none.
func userDelegation(root, own string, uid int) string {
	top := ""
	for cg := own; cg != "/"; cg = path.Dir(cg) {
		if !ownedBy(cgroupDir(root, cg), uid) {
			break
		}
		top = cg
	}
	return top
}

// ownedBy: the cgroup directory and the files that delegation hands over
// belong to uid.
func ownedBy(dir string, uid int) bool {
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != uid {
			return false
		}
	}
	return true
}

// readControllers is cgroup cg's cgroup.controllers: what it may enable
// for its children.
func readControllers(root, cg string) []string {
	b, err := os.ReadFile(filepath.Join(cgroupDir(root, cg), "cgroup.controllers"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// controllersToEnable: those the steps' limits use that cg has.
func controllersToEnable(root, cg string) []string {
	return intersect(wantControllers, readControllers(root, cg))
}

// intersect keeps the elements of want that have has, in want's order.
func intersect(want, has []string) []string {
	var out []string
	for _, c := range want {
		if slices.Contains(has, c) {
			out = append(out, c)
		}
	}
	return out
}

// applyCgroupPlan does what plan asks before the node's cgroups can be
// made under its Parent: the scope from systemd, the move into the leaf,
// the controllers for the children. It returns the plan as done (Parent
// where systemd put the scope).
func applyCgroupPlan(root string, p cgroupPlan, pid int, bus cgroupBus) (cgroupPlan, error) {
	if p.Scope != "" {
		err := bus.StartScope(p.Scope, p.Slice, pid)
		switch {
		case errors.Is(err, errUnitExists):
			// An earlier daemon's scope, with the jobs it left running:
			// this daemon joins its leaf below.
		case err != nil:
			return p, fmt.Errorf("transient scope %s: %w", p.Scope, err)
		default:
			if own, err := ownCgroup(root); err == nil && path.Base(own) == p.Scope {
				p.Parent = own
			}
		}
	}
	if p.Leaf != "" {
		if err := moveIntoLeaf(root, p.Parent, p.Leaf, pid); err != nil {
			return p, err
		}
	}
	if len(p.Enable) > 0 {
		ctl := "+" + strings.Join(p.Enable, " +")
		if err := writeCgroupFile(filepath.Join(cgroupDir(root, p.Parent), "cgroup.subtree_control"), ctl); err != nil {
			return p, fmt.Errorf("enable %s in %s: %w", ctl, p.Parent, err)
		}
	}
	return p, nil
}

// moveIntoLeaf moves pid and every process of cgroup parent itself into
// parent/leaf, so that parent holds none and may enable controllers.
func moveIntoLeaf(root, parent, leaf string, pid int) error {
	dir := cgroupDir(root, parent)
	leafDir := filepath.Join(dir, leaf)
	if err := os.Mkdir(leafDir, 0o755); err != nil && !os.IsExist(err) {
		return fmt.Errorf("make the daemon's cgroup: %w", err)
	}
	pids := []int{pid}
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
		for f := range strings.FieldsSeq(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && n != pid {
				pids = append(pids, n)
			}
		}
	}
	for _, p := range pids {
		err := writeCgroupFile(filepath.Join(leafDir, "cgroup.procs"), strconv.Itoa(p))
		if err != nil && !(p != pid && errors.Is(err, unix.ESRCH)) { // another that has ended
			return fmt.Errorf("move process %d into %s/%s: %w", p, parent, leaf, err)
		}
	}
	return nil
}

// writeCgroupFile makes one write of the line s to a cgroup file (the
// kernel takes one pid, or one list of controllers, per write). A missing file is made:
// a fake tree has only what a test put there, and cgroupfs refuses the
// creation anyway.
func writeCgroupFile(name, s string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// placeMu serialises placeCgroups.
var placeMu sync.Mutex

// placeCgroups decides where the cgroups of the node (named node, with its
// state in stateDir) go on this host, and prepares that place.
func placeCgroups(node, stateDir string, log *slog.Logger) cgroupPlan {
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	// Executors of one process share its cgroup: the second must see
	// the unit the first moved the process into, or it would move the
	// process on and leave the first one's scope empty, which systemd
	// then stops.
	placeMu.Lock()
	defer placeMu.Unlock()
	return placeCgroupsAt("/", os.Getpid(), nodeCgroup(node, stateDir), dialSystemd, log)
}

// placeCgroupsAt is placeCgroups for the host under root and process pid,
// reaching systemd through dial. When the delegation systemd offers cannot
// be set up, the cgroups go at the root of the tree as on other hosts, and
// the plan says why.
func placeCgroupsAt(root string, pid int, node string, dial func() (cgroupBus, error), log *slog.Logger) cgroupPlan {
	var bus cgroupBus
	var busErr error
	// Only a cgroup v2 host run by systemd has anything to ask it.
	if cgroupVersion(root) == 2 && systemdIsInit(root) {
		if bus, busErr = dial(); bus != nil {
			defer bus.Close()
		}
	}
	plan := planCgroups(root, 0, node, bus, busErr)
	done, err := applyCgroupPlan(root, plan, pid, bus)
	if err != nil {
		log.Warn("cannot use the cgroup delegated by systemd", "err", err)
		return rootOfTree(plan.Version, plan.Systemd, fmt.Sprintf("systemd is PID 1 but delegation failed (%v): writing at the root of the tree, which systemd may undo", err))
	}
	if done.Scope != "" || done.Leaf != "" {
		log.Info("cgroups delegated by systemd", "parent", done.Parent)
	}
	return done
}
