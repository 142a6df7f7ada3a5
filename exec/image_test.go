//go:build linux

package exec

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"hpc/internal/testrootfs"
)

const imageMarker = "hpc exec test image\n"

// testImage builds a busybox root file system under base (or skips).
func testImage(t *testing.T, base string) string {
	t.Helper()
	return testrootfs.Build(t, filepath.Join(base, "img"), imageMarker)
}

// The batch step of a job with an image: it sees the image's files, not
// the host's; its working directory is the host's, writable; /proc, /dev,
// /dev/shm, /tmp work, /sys and the image's root are read-only; it runs as
// its user.
func TestImageBatch(t *testing.T) {
	e := newContainerExecutor(t, "img-batch")
	base := testBase(t)
	img := testImage(t, base)
	work := userDir(t, base, "work", nobody)
	hostOnly := filepath.Join(base, "host-only")
	os.WriteFile(hostOnly, []byte("x"), 0o644)
	script := `cat ` + testrootfs.Marker + `
test -e ` + hostOnly + ` && echo host-visible || echo host-hidden
pwd
echo written > here
id -u
test -r /proc/self/status && echo proc
echo shm > /dev/shm/x && cat /dev/shm/x
echo tmp > /tmp/t && cat /tmp/t
touch /sys/x 2>/dev/null && echo sys-writable || echo sys-read-only
touch /x 2>/dev/null && echo root-writable || echo root-read-only
echo null > /dev/null && echo devnull
id -un; id -gn; grep -c . /etc/passwd >/dev/null && echo passwd`
	out := filepath.Join(work, "out")
	r := launch(t, e, StepSpec{ID: "70.batch", UID: nobody, GID: nobody, WorkDir: work, Stdout: out, Stderr: out,
		Argv: []string{"/bin/sh", "-c", script}, Image: &Image{Path: img}}).Wait()
	// The user has entries in the image's /etc/passwd and /etc/group.
	group := "65534"
	if g, err := user.LookupGroupId("65534"); err == nil {
		group = g.Name
	}
	want := imageMarker + "host-hidden\n" + work + "\n65534\nproc\nshm\ntmp\nsys-read-only\nroot-read-only\ndevnull\nnobody\n" + group + "\npasswd\n"
	if got := readFile(t, out); r.ExitCode != 0 || r.Err != nil || got != want {
		t.Errorf("result %+v, output:\n%s\nwant:\n%s", r, got, want)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.ctr.stateDir, "etc")); len(ents) != 0 {
		t.Errorf("the step's /etc copies are left: %v", ents)
	}
	if got := readFile(t, filepath.Join(work, "here")); got != "written\n" {
		t.Errorf("file written in the working directory: %q", got)
	}
	if uid := fileOwner(t, filepath.Join(work, "here")); uid != nobody {
		t.Errorf("file written in the working directory is owned by %d", uid)
	}
}

func fileOwner(t *testing.T, p string) uint32 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// srun's tasks in an image: each finds its command there (not on the host),
// a command the image lacks fails as slurmstepd's execve() does, and the
// job's directories given as Binds are there at their own paths.
func TestImageTasks(t *testing.T) {
	e := newContainerExecutor(t, "img-tasks")
	base := testBase(t)
	img := testImage(t, base)
	work := userDir(t, base, "work", nobody)
	tmp := userDir(t, base, "jobtmp", nobody)
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		t.Skip("the host has no /usr/bin/perl to miss in the image")
	}
	var out, errb syncBuf
	tasks := []TaskSpec{
		{Argv: []string{"/bin/sh", "-c", `cat ` + testrootfs.Marker + `; echo task > "$TMPDIR/f"; readlink /bin/sh`}, Env: append([]string{"TMPDIR=" + tmp}, env...), Stdout: &out, Stderr: &errb},
		{Argv: []string{"/usr/bin/perl", "-v"}, Env: env, Stdout: &out, Stderr: &errb},
	}
	r := launch(t, e, StepSpec{ID: "71.0", UID: nobody, GID: nobody, WorkDir: work, Tasks: tasks,
		Image: &Image{Path: img, Binds: []Mount{{Source: tmp}, {Source: filepath.Join(base, "missing")}}}}).Wait()
	if want := []TaskResult{{ExitCode: 0}, {ExitCode: 2}}; !reflect.DeepEqual(r.Tasks, want) || r.Err != nil {
		t.Errorf("result %+v", r)
	}
	if got := out.String(); got != imageMarker+"/bin/busybox\n" {
		t.Errorf("stdout %q", got)
	}
	if got := errb.String(); got != "slurmstepd: error: execve(): /usr/bin/perl: No such file or directory\n" {
		t.Errorf("stderr %q", got)
	}
	if got := readFile(t, filepath.Join(tmp, "f")); got != "task\n" {
		t.Errorf("$TMPDIR/f: %q", got)
	}
}

// --container-mounts: a read-write and a read-only bind, and
// --container-workdir; a working directory a mount already shows is used
// through it.
func TestImageMounts(t *testing.T) {
	e := newContainerExecutor(t, "img-mounts")
	base := testBase(t)
	img := testImage(t, base)
	work := userDir(t, base, "work", nobody)
	data := userDir(t, base, "data", nobody)
	ro := userDir(t, base, "ro", nobody)
	os.WriteFile(filepath.Join(data, "in"), []byte("data in\n"), 0o644)
	os.WriteFile(filepath.Join(ro, "in"), []byte("ro in\n"), 0o644)
	out := filepath.Join(work, "out")
	script := `pwd; cat /data/in /ro/in; echo new > /data/new
(echo x > /ro/x) 2>/dev/null && echo ro-writable || echo ro-refused`
	r := launch(t, e, StepSpec{ID: "72.batch", UID: nobody, GID: nobody, WorkDir: work, Stdout: out, Stderr: out,
		Argv:  []string{"/bin/sh", "-c", script},
		Image: &Image{Path: img, Mounts: []Mount{{Source: data, Destination: "/data"}, {Source: ro, Destination: "/ro", ReadOnly: true}}, WorkDir: "/data"}}).Wait()
	if got, want := readFile(t, out), "/data\ndata in\nro in\nro-refused\n"; r.ExitCode != 0 || got != want {
		t.Errorf("result %+v, output %q, want %q", r, got, want)
	}
	if got := readFile(t, filepath.Join(data, "new")); got != "new\n" {
		t.Errorf("written through the mount: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ro, "x")); err == nil {
		t.Error("written through the read-only mount")
	}

	// The working directory shows through a mount of its parent: the step
	// starts there, and writes land on the host.
	r = launch(t, e, StepSpec{ID: "73.batch", UID: nobody, GID: nobody, WorkDir: data, Stdout: out, Stderr: out, Truncate: true,
		Argv: []string{"/bin/sh", "-c", "pwd; echo via-mount > via"}, Image: &Image{Path: img, Mounts: []Mount{{Source: base}}}}).Wait()
	if got := readFile(t, out); r.ExitCode != 0 || got != data+"\n" {
		t.Errorf("result %+v, output %q", r, got)
	}
	if got := readFile(t, filepath.Join(data, "via")); got != "via-mount\n" {
		t.Errorf("written in the working directory: %q", got)
	}

	// A --container-workdir the image lacks: slurmstepd's message, and /tmp.
	r = launch(t, e, StepSpec{ID: "74.batch", UID: nobody, GID: nobody, WorkDir: work, Stdout: out, Stderr: out, Truncate: true,
		Argv: []string{"/bin/sh", "-c", "pwd"}, Image: &Image{Path: img, WorkDir: "/nowhere"}}).Wait()
	if got, want := readFile(t, out), "slurmstepd: error: couldn't chdir to `/nowhere': No such file or directory: going to /tmp instead\n/tmp\n"; got != want {
		t.Errorf("missing workdir: %+v %q, want %q", r, got, want)
	}
}

// An OCI bundle: config.json's root.path is the root file system.
func TestImageBundle(t *testing.T) {
	e := newContainerExecutor(t, "img-bundle")
	base := testBase(t)
	bundle := filepath.Join(base, "bundle")
	testrootfs.Build(t, filepath.Join(bundle, "rootfs"), "bundle\n")
	os.WriteFile(filepath.Join(bundle, "config.json"), []byte(`{"ociVersion":"1.0.2","root":{"path":"rootfs","readonly":true},"process":{"args":["sh"],"env":["FROM_BUNDLE=1"],"cwd":"/"}}`), 0o644)
	work := userDir(t, base, "work", nobody)
	out := filepath.Join(work, "out")
	r := launch(t, e, StepSpec{ID: "75.batch", UID: nobody, GID: nobody, WorkDir: work, Stdout: out, Stderr: out,
		Argv: []string{"/bin/sh", "-c", "cat " + testrootfs.Marker + "; echo bundle env=$FROM_BUNDLE"}, Image: &Image{Path: bundle}}).Wait()
	if got := readFile(t, out); r.ExitCode != 0 || got != "bundle\nbundle env=\n" {
		t.Errorf("result %+v, output %q", r, got)
	}
}

// The memory limit holds in an image: a step over it is OOM-killed.
func TestImageMemoryLimit(t *testing.T) {
	e := newContainerExecutor(t, "img-oom")
	base := testBase(t)
	img := testImage(t, base)
	work := userDir(t, base, "work", nobody)
	r := launch(t, e, StepSpec{ID: "76.batch", UID: nobody, GID: nobody, WorkDir: work, MemMB: 32,
		Argv: []string{"/bin/sh", "-c", "dd if=/dev/zero of=/dev/null bs=100M count=1"}, Image: &Image{Path: img}}).Wait()
	if !r.OOM || r.OOMKills < 1 {
		t.Errorf("over the limit in an image: %+v", r)
	}
}

// What cannot be used fails the launch with a clear reason, and leaves
// nothing behind: the same step then runs.
func TestImageErrors(t *testing.T) {
	e := newContainerExecutor(t, "img-errors")
	base := testBase(t)
	img := testImage(t, base)
	work := userDir(t, base, "work", nobody)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o644)
	empty := userDir(t, base, "empty", 0)
	bundle := func(name, config string) string {
		d := filepath.Join(base, name)
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, "config.json"), []byte(config), 0o644)
		return d
	}
	private := filepath.Join(base, "private")
	os.Mkdir(private, 0o700)
	testrootfs.Build(t, filepath.Join(private, "img"), "private\n")
	missing := filepath.Join(base, "missing")
	for _, c := range []struct {
		name string
		img  Image
		want string
	}{
		{"missing", Image{Path: missing}, "Invalid container image " + missing + ": No such file or directory"},
		{"file", Image{Path: file}, "Invalid container image " + file + ": Not a directory"},
		{"relative", Image{Path: "img"}, `Invalid container image "img": not an absolute path`},
		{"no shell", Image{Path: empty}, "Invalid container image " + empty + ": it has no usable /bin/sh (every process of the step starts through it): No such file or directory"},
		{"bundle without rootfs", Image{Path: bundle("b1", `{"root":{"path":"rootfs"}}`)},
			"Invalid container image " + filepath.Join(base, "b1") + ": the OCI bundle's root file system " + filepath.Join(base, "b1", "rootfs") + ": No such file or directory"},
		{"bundle without root", Image{Path: bundle("b2", `{"ociVersion":"1.0.2"}`)}, "Invalid container image " + filepath.Join(base, "b2") + ": the OCI bundle's config.json has no root.path"},
		{"bundle bad json", Image{Path: bundle("b3", `{`)}, "Invalid container image " + filepath.Join(base, "b3") + ": the OCI bundle's config.json is not valid JSON"},
		{"unreachable", Image{Path: filepath.Join(private, "img")}, "Invalid container image " + filepath.Join(private, "img") + ": Permission denied"},
		{"mount source", Image{Path: img, Mounts: []Mount{{Source: missing, Destination: "/data"}}}, "Invalid container mount source " + missing + ": No such file or directory"},
		{"mount unreachable", Image{Path: img, Mounts: []Mount{{Source: filepath.Join(private, "img"), Destination: "/data"}}}, "Invalid container mount source " + filepath.Join(private, "img") + ": Permission denied"},
		{"mount proc", Image{Path: img, Mounts: []Mount{{Source: "/proc/1", Destination: "/p1"}}}, "Invalid container mount source /proc/1: the host's /proc cannot be mounted into a container"},
		{"mount relative", Image{Path: img, Mounts: []Mount{{Source: work, Destination: "data"}}}, `Invalid container mount "` + work + `:data": the destination must be an absolute path`},
		{"mount over sys", Image{Path: img, Mounts: []Mount{{Source: work, Destination: "/sys/x"}}}, `Invalid container mount "` + work + `:/sys/x": cannot mount over /sys: the step has its own`},
		{"relative workdir", Image{Path: img, WorkDir: "data"}, "Invalid container workdir data: not an absolute path"},
	} {
		img := c.img
		_, err := e.Launch(StepSpec{ID: "77.batch", UID: nobody, GID: nobody, WorkDir: work, Env: env,
			Argv: []string{"/bin/sh", "-c", "true"}, Image: &img})
		var ie *ImageError
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.As(err, &ie) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	r := launch(t, e, StepSpec{ID: "77.batch", UID: nobody, GID: nobody, WorkDir: work,
		Argv: []string{"/bin/sh", "-c", "exit 7"}, Image: &Image{Path: img}}).Wait()
	if r.ExitCode != 7 {
		t.Errorf("after the errors: %+v", r)
	}
}

// A step's GRES devices are in its /dev in an image too, and only those.
func TestImageDevices(t *testing.T) {
	e := newContainerExecutor(t, "img-dev")
	for _, p := range []string{"/dev/fuse", "/dev/net/tun"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs %s", p)
		}
	}
	base := testBase(t)
	img := testImage(t, base)
	work := userDir(t, base, "work", nobody)
	out := filepath.Join(work, "out")
	script := `(exec 3</dev/fuse) && echo fuse-opened; test -e /dev/net/tun && echo tun-visible || echo tun-absent`
	r := launch(t, e, StepSpec{ID: "81.batch", UID: nobody, GID: nobody, WorkDir: work, Stdout: out, Stderr: out,
		Devices: []string{"/dev/fuse"}, Argv: []string{"/bin/sh", "-c", script}, Image: &Image{Path: img}}).Wait()
	if got := readFile(t, out); r.ExitCode != 0 || got != "fuse-opened\ntun-absent\n" {
		t.Errorf("devices in an image: %+v %q", r, got)
	}
}

// An image with a C library of its own runs the step's supervisor with it:
// a copy of the host's works; one that lacks the symbol versions this
// program needs is refused with the reason.
func TestImageOwnCLibrary(t *testing.T) {
	e := newContainerExecutor(t, "img-libc")
	rt, err := runtimeLibs()
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.files) < 2 || len(rt.versions["libc.so.6"]) == 0 {
		t.Skipf("not a dynamically linked glibc program: %+v", rt)
	}
	base := testBase(t)
	work := userDir(t, base, "work", nobody)
	copyIn := func(root, hostPath, to string) {
		b, err := os.ReadFile(hostPath)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, to)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var libc string
	for _, f := range rt.files[1:] {
		if filepath.Base(f) == "libc.so.6" {
			libc = f
		}
	}
	good := testrootfs.Build(t, filepath.Join(base, "good"), "own libc\n")
	for _, f := range rt.files {
		copyIn(good, f, f)
	}
	if b, err := runtimeBinds(good); err != nil || len(b) != 0 {
		t.Errorf("an image with its own loader gets binds %v, %v", b, err)
	}
	out := filepath.Join(work, "out")
	r := launch(t, e, StepSpec{ID: "79.batch", UID: nobody, GID: nobody, WorkDir: work, Stdout: out, Stderr: out,
		Argv: []string{"/bin/sh", "-c", "cat " + testrootfs.Marker}, Image: &Image{Path: good}}).Wait()
	if got := readFile(t, out); r.ExitCode != 0 || got != "own libc\n" {
		t.Errorf("image with its own C library: %+v %q", r, got)
	}

	// Another library in libc's place: it defines none of glibc's versions.
	// Debian's multiarch directories of amd64 and arm64, then Fedora's.
	var other string
	for _, p := range []string{"/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libm.so.6",
		"/lib/aarch64-linux-gnu/libz.so.1", "/usr/lib/aarch64-linux-gnu/libz.so.1", "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libz.so.1"} {
		if f, err := elfVersions(p); err == nil && len(f) > 0 && !f[rt.versions["libc.so.6"][0]] {
			other = p
			break
		}
	}
	if other == "" {
		t.Skip("no library to stand in for an old C library")
	}
	old := testrootfs.Build(t, filepath.Join(base, "old"), "old libc\n")
	copyIn(old, rt.files[0], rt.files[0])
	copyIn(old, other, libc)
	_, err = e.Launch(StepSpec{ID: "80.batch", UID: nobody, GID: nobody, WorkDir: work, Env: env,
		Argv: []string{"/bin/sh", "-c", "true"}, Image: &Image{Path: old}})
	want := "Invalid container image " + old + ": its libc.so.6 lacks GLIBC_"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("image with an old C library: %v, want %q...", err, want)
	}
}

// elfVersions returns the symbol versions an ELF library defines.
func elfVersions(p string) (map[string]bool, error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vs, err := f.DynamicVersions()
	out := map[string]bool{}
	for _, v := range vs {
		out[v.Name] = true
	}
	return out, err
}

// Plain mode cannot run images: the step fails instead of running on the
// host.
func TestImagePlainMode(t *testing.T) {
	e := newPlainExecutor(t, "pn")
	base := testBase(t)
	ran := filepath.Join(base, "ran")
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	_, err := e.Launch(StepSpec{ID: "78.batch", UID: uid, GID: gid, Env: env,
		Argv: []string{"/bin/sh", "-c", "touch " + ran}, Image: &Image{Path: base}})
	if err == nil || !strings.HasPrefix(err.Error(), "Containers are unavailable on node pn, so --container-image cannot be used: it runs steps as plain processes") {
		t.Errorf("plain mode with an image: %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the step ran on the host")
	}
}

// checkMounts refuses what no step may mount, whoever parsed the option.
func TestCheckMounts(t *testing.T) {
	for _, c := range []struct {
		in   []Mount
		want []Mount
		err  string
	}{
		{nil, nil, ""},
		{[]Mount{{Source: "/a"}}, []Mount{{Source: "/a", Destination: "/a"}}, ""},
		{[]Mount{{Source: "/a/", Destination: "/b/", ReadOnly: true}}, []Mount{{Source: "/a", Destination: "/b", ReadOnly: true}}, ""},
		{[]Mount{{Destination: "/b"}}, nil, `Invalid container mount ":/b": no source`},
		{[]Mount{{Source: "a", Destination: "/b"}}, nil, `Invalid container mount "a:/b": the source must be an absolute path`},
		{[]Mount{{Source: "/a", Destination: "/"}}, nil, `Invalid container mount "/a:/": cannot mount over the image's root`},
		{[]Mount{{Source: "/a", Destination: "/proc"}}, nil, `Invalid container mount "/a:/proc": cannot mount over /proc: the step has its own`},
	} {
		got, err := checkMounts(c.in)
		if fmt.Sprint(err) != c.err && !(err == nil && c.err == "") || !reflect.DeepEqual(got, c.want) {
			t.Errorf("checkMounts(%v) = %v, %v; want %v, %q", c.in, got, err, c.want, c.err)
		}
	}
}

// inRoot resolves links as if the root were "/": nothing leads out.
func TestInRoot(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755)
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "usr/bin/dash"), nil, 0o755)
	os.Symlink("usr/bin", filepath.Join(root, "bin"))
	os.Symlink("dash", filepath.Join(root, "usr/bin/sh"))
	os.Symlink("/usr/bin/dash", filepath.Join(root, "usr/bin/abs"))
	os.Symlink("../../../../../etc", filepath.Join(root, "usr/bin/up"))
	os.Symlink("loop", filepath.Join(root, "loop"))
	for _, c := range []struct{ in, want, err string }{
		{"/bin/sh", root + "/usr/bin/dash", ""},
		{"/bin/abs", root + "/usr/bin/dash", ""},
		{"/bin/up", root + "/etc", ""},
		{"/../../usr/../etc", root + "/etc", ""},
		{"/bin/../etc", "", "no such file or directory"}, // /usr/etc
		{"/bin/none", "", "no such file or directory"},
		{"/loop", "", "too many levels of symbolic links"},
	} {
		got, err := inRoot(root, c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("inRoot(%q) = %q, %v; want %q, %q", c.in, got, err, c.want, c.err)
		}
	}
}
