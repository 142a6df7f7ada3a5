//go:build linux

package exec

import (
	"errors"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// A fake host: the files the placement reads, under a temporary root.

const (
	mountsV1Hybrid = "tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0\n" +
		"cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n" +
		"cgroup /sys/fs/cgroup/systemd cgroup rw,nosuid,nodev,noexec,relatime,xattr,name=systemd 0 0\n" +
		"cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0\n" +
		"cgroup /sys/fs/cgroup/pids cgroup rw,nosuid,nodev,noexec,relatime,pids 0 0\n"
	mountsV2 = "proc /proc proc rw 0 0\n" +
		"cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n"
	rootControllers = "cpuset cpu io memory hugetlb pids rdma misc"
	userUID         = 1000
	userSlice       = "/user.slice/user-1000.slice"
	userManager     = userSlice + "/user@1000.service"
	nodeUnit        = "/system.slice/system-hpc\\x2dnode.slice/hpc-node@node1.service"
)

type fakeHost struct {
	t    *testing.T
	root string
}

// newFakeHost makes a host with the given mount table, PID 1 (its comm)
// and own cgroup (the process's /proc/self/cgroup).
func newFakeHost(t *testing.T, mounts, init, selfCgroup string) *fakeHost {
	h := &fakeHost{t: t, root: t.TempDir()}
	h.write("proc/self/mounts", mounts)
	h.write("proc/1/comm", init+"\n")
	h.write("proc/self/cgroup", selfCgroup)
	if init == "systemd" {
		h.mkdir("run/systemd/system")
	}
	if strings.HasPrefix(mounts, "cgroup2") || strings.Contains(mounts, "cgroup2 /sys/fs/cgroup cgroup2") {
		h.cgroup("/", rootControllers)
	}
	return h
}

func (h *fakeHost) write(name, s string) {
	h.t.Helper()
	p := filepath.Join(h.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHost) read(name string) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.root, name))
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

func (h *fakeHost) mkdir(name string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Join(h.root, name), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

// cgroup makes cgroup cg with its interface files and controllers.
func (h *fakeHost) cgroup(cg, controllers string, procs ...string) {
	dir := filepath.Join("sys/fs/cgroup", cg)
	h.write(filepath.Join(dir, "cgroup.controllers"), controllers+"\n")
	h.write(filepath.Join(dir, "cgroup.subtree_control"), "")
	h.write(filepath.Join(dir, "cgroup.threads"), "")
	var b strings.Builder
	for _, p := range procs {
		b.WriteString(p + "\n")
	}
	h.write(filepath.Join(dir, "cgroup.procs"), b.String())
}

// chownTree gives cgroup cg and everything below it to uid, as a
// delegating manager does.
func (h *fakeHost) chownTree(cg string, uid int) {
	h.t.Helper()
	err := filepath.Walk(filepath.Join(h.root, "sys/fs/cgroup", cg), func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, uid, uid)
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// fakeBus answers as systemd would: which units are delegated, and
// transient scopes, whose start moves the process (the fake
// /proc/self/cgroup) into the scope's cgroup.
type fakeBus struct {
	h         *fakeHost
	delegated map[string]bool
	startErr  error
	started   []string // "name slice pid"
}

func (b *fakeBus) Delegated(unit string) (bool, error) {
	v, ok := b.delegated[unit]
	if !ok {
		return false, errors.New("no such unit")
	}
	return v, nil
}

func (b *fakeBus) StartScope(name, slice string, pid int) error {
	b.started = append(b.started, strings.Join([]string{name, slice, strconv.Itoa(pid)}, " "))
	if b.startErr != nil {
		return b.startErr
	}
	cg := "/" + slice + "/" + name
	b.h.cgroup(cg, "cpuset cpu io memory pids", strconv.Itoa(pid))
	b.h.write("proc/self/cgroup", "0::"+cg+"\n")
	return nil
}

func (b *fakeBus) Close() {}

const testNode = "node1-1a2b3c4d"

// The plan for each kind of host: where the node's cgroups go, what the
// daemon does first, and what Mode says.
func TestPlanCgroups(t *testing.T) {
	const scope = "hpc-" + testNode + ".scope"
	cases := []struct {
		name  string
		uid   int
		setup func(t *testing.T) (*fakeHost, cgroupBus, error)
		want  cgroupPlan
	}{{
		name: "v1 hybrid (as today)",
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			h := newFakeHost(t, mountsV1Hybrid, "systemd", "4:memory:/system.slice/x.service\n0::/system.slice/x.service\n")
			return h, nil, nil
		},
		want: cgroupPlan{Version: 1, Systemd: true, Parent: "/hpc", Desc: "cgroup v1, under /hpc in each hierarchy"},
	}, {
		name: "v2 without systemd (as today)",
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			return newFakeHost(t, mountsV2, "process_api", "0::/\n"), nil, nil
		},
		want: cgroupPlan{Version: 2, Parent: "/hpc", Desc: "cgroup v2, under /sys/fs/cgroup/hpc"},
	}, {
		name: "v2 systemd, in a unit with Delegate=yes",
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			h := newFakeHost(t, mountsV2, "systemd", "0::"+nodeUnit+"\n")
			h.cgroup(nodeUnit, "cpuset cpu io memory pids", "4242")
			return h, &fakeBus{h: h, delegated: map[string]bool{"hpc-node@node1.service": true}}, nil
		},
		want: cgroupPlan{Version: 2, Systemd: true, Parent: nodeUnit, Leaf: "daemon",
			Enable: []string{"cpuset", "cpu", "io", "memory", "pids"},
			Desc:   `cgroup v2, delegated by systemd: unit hpc-node@node1.service (/sys/fs/cgroup` + nodeUnit + ")"},
	}, {
		name: "v2 systemd, already in the leaf of its delegated unit",
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			h := newFakeHost(t, mountsV2, "systemd", "0::"+nodeUnit+"/daemon\n")
			h.cgroup(nodeUnit, "cpu memory pids")
			h.cgroup(nodeUnit+"/daemon", "", "4242")
			return h, &fakeBus{h: h, delegated: map[string]bool{"hpc-node@node1.service": true}}, nil
		},
		want: cgroupPlan{Version: 2, Systemd: true, Parent: nodeUnit,
			Enable: []string{"cpu", "memory", "pids"},
			Desc:   `cgroup v2, delegated by systemd: unit hpc-node@node1.service (/sys/fs/cgroup` + nodeUnit + ")"},
	}, {
		name: "v2 systemd, not delegated: a transient scope",
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			h := newFakeHost(t, mountsV2, "systemd", "0::/user.slice/user-0.slice/session-3.scope\n")
			h.cgroup("/user.slice/user-0.slice/session-3.scope", "cpu memory pids", "4242")
			return h, &fakeBus{h: h, delegated: map[string]bool{"session-3.scope": false}}, nil
		},
		want: cgroupPlan{Version: 2, Systemd: true, Parent: "/system.slice/" + scope, Scope: scope, Slice: "system.slice", Leaf: "daemon",
			Enable: []string{"cpuset", "cpu", "io", "memory", "pids"},
			Desc:   "cgroup v2, delegated by systemd: transient scope " + scope + " (/sys/fs/cgroup/system.slice/" + scope + ")"},
	}, {
		name: "v2 systemd, not delegated, no D-Bus",
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			h := newFakeHost(t, mountsV2, "systemd", "0::/user.slice/user-0.slice/session-3.scope\n")
			h.cgroup("/user.slice/user-0.slice/session-3.scope", "cpu memory pids", "4242")
			return h, nil, errors.New("dial unix /run/systemd/private: connect: no such file or directory")
		},
		want: cgroupPlan{Version: 2, Systemd: true, Parent: "/hpc",
			Desc: "cgroup v2, under /sys/fs/cgroup/hpc: systemd is PID 1 but no delegation (D-Bus: dial unix /run/systemd/private: connect: no such file or directory): writing at the root of the tree, which systemd may undo"},
	}, {
		name: "v2 unprivileged, delegated user cgroup",
		uid:  userUID,
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			h := newFakeHost(t, mountsV2, "systemd", "0::"+userManager+"/app.slice/term.scope\n")
			h.cgroup(userSlice, "cpu memory pids")
			h.cgroup(userManager, "cpu memory pids")
			h.cgroup(userManager+"/app.slice", "cpu memory pids")
			h.cgroup(userManager+"/app.slice/term.scope", "", "4242")
			h.chownTree(userManager, userUID)
			return h, nil, nil
		},
		want: cgroupPlan{Version: 2, Systemd: true, UserCgroup: userManager, UserControllers: []string{"cpu", "memory", "pids"},
			Desc: "plain processes (not root: no cgroup limits or user switching; the delegated user cgroup /sys/fs/cgroup" + userManager + ", controllers cpu memory pids, could hold them)"},
	}, {
		name: "v2 unprivileged, no delegated user cgroup",
		uid:  userUID,
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			h := newFakeHost(t, mountsV2, "systemd", "0::"+userSlice+"/session-2.scope\n")
			h.cgroup(userSlice, "cpu memory pids")
			h.cgroup(userSlice+"/session-2.scope", "", "4242")
			return h, nil, nil
		},
		want: cgroupPlan{Version: 2, Systemd: true, Desc: "plain processes (not root: no cgroup limits or user switching)"},
	}, {
		name: "v2 unprivileged, in a login session beside the user's delegated cgroup",
		uid:  userUID,
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			h := newFakeHost(t, mountsV2, "systemd", "0::"+userSlice+"/session-2.scope\n")
			h.cgroup(userSlice, "cpu memory pids")
			h.cgroup(userSlice+"/session-2.scope", "", "4242")
			h.cgroup(userManager, "memory pids")
			h.chownTree(userManager, userUID)
			return h, nil, nil
		},
		want: cgroupPlan{Version: 2, Systemd: true, UserCgroup: userManager, UserControllers: []string{"memory", "pids"},
			Desc: "plain processes (not root: no cgroup limits or user switching; the delegated user cgroup /sys/fs/cgroup" + userManager + ", controllers memory pids, could hold them, for a daemon started inside it)"},
	}, {
		name: "v1 unprivileged",
		uid:  userUID,
		setup: func(t *testing.T) (*fakeHost, cgroupBus, error) {
			return newFakeHost(t, mountsV1Hybrid, "systemd", "0::/user.slice\n"), nil, nil
		},
		want: cgroupPlan{Version: 1, Systemd: true, Desc: "plain processes (not root: no cgroup limits or user switching)"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.uid != 0 && os.Geteuid() != 0 {
				t.Skip("the fake tree's owners need root to set")
			}
			h, bus, busErr := c.setup(t)
			got := planCgroups(h.root, c.uid, testNode, bus, busErr)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("plan\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// systemd 251 and later mark a delegated unit's cgroup: no need to ask.
func TestPlanCgroupsDelegationMark(t *testing.T) {
	h := newFakeHost(t, mountsV2, "systemd", "0::"+nodeUnit+"\n")
	h.cgroup(nodeUnit, "cpu memory pids", "4242")
	attr := "trusted.delegate"
	if os.Geteuid() != 0 {
		attr = "user.delegate"
	}
	if err := unix.Setxattr(filepath.Join(h.root, "sys/fs/cgroup", nodeUnit), attr, []byte("1"), 0); err != nil {
		t.Skipf("the test's file system keeps no %s: %v", attr, err)
	}
	got := planCgroups(h.root, 0, testNode, nil, errors.New("no bus"))
	if got.Parent != nodeUnit || got.Leaf != "daemon" || got.Scope != "" {
		t.Errorf("marked unit: %+v", got)
	}
}

// In a delegated unit the daemon moves itself and the unit's other
// processes into the leaf, then enables the controllers for its children.
func TestApplyCgroupPlanDelegatedUnit(t *testing.T) {
	h := newFakeHost(t, mountsV2, "systemd", "0::"+nodeUnit+"\n")
	h.cgroup(nodeUnit, "cpu memory pids", "77", "4242")
	bus := &fakeBus{h: h, delegated: map[string]bool{"hpc-node@node1.service": true}}
	got := placeCgroupsAt(h.root, 4242, testNode, func() (cgroupBus, error) { return bus, nil }, slog.New(slog.DiscardHandler))
	if got.Parent != nodeUnit || got.Scope != "" || len(bus.started) != 0 {
		t.Fatalf("plan %+v, scopes started %q", got, bus.started)
	}
	unit := filepath.Join("sys/fs/cgroup", nodeUnit)
	if s := h.read(filepath.Join(unit, "daemon/cgroup.procs")); s != "4242\n77\n" {
		t.Errorf("the leaf's cgroup.procs got %q", s)
	}
	if s := h.read(filepath.Join(unit, "cgroup.subtree_control")); s != "+cpu +memory +pids\n" {
		t.Errorf("the unit's cgroup.subtree_control got %q", s)
	}
}

// Outside a delegated unit the daemon asks systemd for a scope with
// Delegate=yes holding itself, and settles in its leaf; a scope an earlier
// daemon left (with its jobs) is joined.
func TestApplyCgroupPlanTransientScope(t *testing.T) {
	const session = "/user.slice/user-0.slice/session-3.scope"
	const scope = "/system.slice/hpc-" + testNode + ".scope"
	for _, exists := range []bool{false, true} {
		t.Run(map[bool]string{false: "new", true: "exists"}[exists], func(t *testing.T) {
			h := newFakeHost(t, mountsV2, "systemd", "0::"+session+"\n")
			h.cgroup(session, "cpu memory pids", "4242")
			bus := &fakeBus{h: h, delegated: map[string]bool{}}
			if exists {
				h.cgroup(scope, "cpuset cpu io memory pids")
				h.cgroup(scope+"/daemon", "")
				bus.startErr = errUnitExists
			}
			got := placeCgroupsAt(h.root, 4242, testNode, func() (cgroupBus, error) { return bus, nil }, slog.New(slog.DiscardHandler))
			if want := []string{"hpc-" + testNode + ".scope system.slice 4242"}; !reflect.DeepEqual(bus.started, want) {
				t.Errorf("scopes started %q, want %q", bus.started, want)
			}
			if got.Parent != scope || !strings.Contains(got.Desc, "transient scope") {
				t.Errorf("plan %+v", got)
			}
			dir := filepath.Join("sys/fs/cgroup", scope)
			if s := h.read(filepath.Join(dir, "daemon/cgroup.procs")); !strings.Contains(s, "4242\n") {
				t.Errorf("the leaf's cgroup.procs got %q", s)
			}
			if s := h.read(filepath.Join(dir, "cgroup.subtree_control")); s != "+cpuset +cpu +io +memory +pids\n" {
				t.Errorf("the scope's cgroup.subtree_control got %q", s)
			}
		})
	}
}

// When systemd cannot be had, the cgroups go at the root of the tree, and
// the plan says so plainly.
func TestPlaceCgroupsFallback(t *testing.T) {
	const session = "/user.slice/user-0.slice/session-3.scope"
	for _, c := range []struct {
		name string
		dial func(h *fakeHost) func() (cgroupBus, error)
		want string
	}{{
		name: "no D-Bus",
		dial: func(*fakeHost) func() (cgroupBus, error) {
			return func() (cgroupBus, error) { return nil, errors.New("no bus here") }
		},
		want: "cgroup v2, under /sys/fs/cgroup/hpc: systemd is PID 1 but no delegation (D-Bus: no bus here): writing at the root of the tree, which systemd may undo",
	}, {
		name: "scope refused",
		dial: func(h *fakeHost) func() (cgroupBus, error) {
			return func() (cgroupBus, error) {
				return &fakeBus{h: h, delegated: map[string]bool{}, startErr: errors.New("access denied")}, nil
			}
		},
		want: "cgroup v2, under /sys/fs/cgroup/hpc: systemd is PID 1 but delegation failed (transient scope hpc-" + testNode + ".scope: access denied): writing at the root of the tree, which systemd may undo",
	}} {
		t.Run(c.name, func(t *testing.T) {
			h := newFakeHost(t, mountsV2, "systemd", "0::"+session+"\n")
			h.cgroup(session, "cpu memory pids", "4242")
			got := placeCgroupsAt(h.root, 4242, testNode, c.dial(h), slog.New(slog.DiscardHandler))
			if got.Parent != "/hpc" || got.Desc != c.want {
				t.Errorf("plan %+v\nwant desc %q", got, c.want)
			}
		})
	}
}

// On cgroup v1 and on v2 without systemd nothing is asked of systemd and
// nothing is moved.
func TestPlaceCgroupsAsToday(t *testing.T) {
	for _, mounts := range []string{mountsV1Hybrid, mountsV2} {
		init := "systemd"
		if mounts == mountsV2 {
			init = "tini"
		}
		h := newFakeHost(t, mounts, init, "0::/\n")
		dial := func() (cgroupBus, error) { t.Fatal("systemd was asked"); return nil, nil }
		got := placeCgroupsAt(h.root, 4242, testNode, dial, slog.New(slog.DiscardHandler))
		if got.Parent != "/hpc" || got.Leaf != "" || got.Scope != "" || len(got.Enable) != 0 {
			t.Errorf("%s: plan %+v", init, got)
		}
		if _, err := os.Stat(filepath.Join(h.root, "sys/fs/cgroup/daemon")); err == nil {
			t.Errorf("%s: a leaf was made", init)
		}
	}
}

// This host, as it is: the detection agrees with libcontainer's, and the
// plan of a root daemon on a host that is not cgroup v2 with systemd is
// the root of the tree.
func TestPlanCgroupsThisHost(t *testing.T) {
	v := cgroupVersion("/")
	if (v == 2) != cgroups.IsCgroup2UnifiedMode() {
		t.Errorf("cgroupVersion says %d, libcontainer says unified=%v", v, cgroups.IsCgroup2UnifiedMode())
	}
	comm, _ := os.ReadFile("/proc/1/comm")
	_, runErr := os.Stat("/run/systemd/system")
	if want := strings.TrimSpace(string(comm)) == "systemd" || runErr == nil; systemdIsInit("/") != want {
		t.Errorf("systemdIsInit = %v, PID 1 is %q", !want, comm)
	}
	if v == 2 && systemdIsInit("/") {
		t.Skip("a cgroup v2 host run by systemd: the VM test covers it")
	}
	p := planCgroups("/", 0, testNode, nil, nil)
	if p.Parent != "/hpc" || p.Scope != "" || p.Leaf != "" {
		t.Errorf("plan %+v", p)
	}
	own, err := ownCgroup("/")
	if v == 2 && (err != nil || !path.IsAbs(own)) {
		t.Errorf("own cgroup %q %v", own, err)
	}
}

// A container executor on this host says where its cgroups are, and puts
// them there: at the root of the tree on cgroup v1 and on v2 without
// systemd; in a unit delegated by systemd, with this process in the
// unit's leaf, on v2 with systemd.
func TestExecutorCgroupPlacement(t *testing.T) {
	e := newContainerExecutor(t, "cgplace")
	v := cgroupVersion("/")
	t.Logf("mode: %s", e.Mode())
	if v != 2 || !systemdIsInit("/") {
		want := "containers (libcontainer, " + rootOfTree(v, systemdIsInit("/"), "").Desc + ")"
		if e.Mode() != want || e.ctr.cgBase != "/hpc" {
			t.Errorf("mode %q, cgroups under %q; want %q under /hpc", e.Mode(), e.ctr.cgBase, want)
		}
		return
	}
	if !strings.Contains(e.Mode(), "delegated by systemd") {
		t.Fatalf("mode %q", e.Mode())
	}
	own, err := ownCgroup("/")
	if err != nil || own != e.ctr.cgBase+"/"+leafName {
		t.Errorf("this process is in %q (%v), the node's cgroups under %q", own, err, e.ctr.cgBase)
	}
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", e.ctr.cgBase, "cgroup.subtree_control"))
	if err != nil || !strings.Contains(string(b), "memory") || !strings.Contains(string(b), "pids") {
		t.Errorf("%s's cgroup.subtree_control: %q %v", e.ctr.cgBase, b, err)
	}
}
