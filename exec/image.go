//go:build linux

package exec

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// Container images, as pyxis gives them to Slurm (srun and sbatch
// --container-image, --container-mounts, --container-workdir).
//
// A step with an Image runs in that root file system instead of the host's
// tree: the image's directory (or an OCI bundle's root.path) becomes the
// container's root, read-only, as enroot starts its containers by default
// and as Apptainer runs a sandbox directory; the image is used in place and
// shared by every step that names it, so no step may change it. The step
// gets, as it does on the host, a fresh /proc, a minimal /dev (with the
// devices cgroup of its GRES), /dev/shm, /dev/mqueue and the host's /sys
// read-only; besides a private tmpfs on /tmp, and the host's /etc/hosts and
// /etc/resolv.conf read-only (the step shares the host's network). The
// host directories it needs are bound in at their own paths: its working
// directory (unless a --container-mounts entry already shows that
// directory there), and the job's own directories the node names in Binds
// ($TMPDIR, $SCRATCH, the batch script's directory). The --container-mounts
// entries come last, over everything else. Its memory, CPU, pids and device
// limits are the same as on the host: only the file system changes.
//
// Mount points that the image lacks are created in it, as runc does in a
// bundle: empty directories (or files, for a file bound onto a path), made
// by root; so are those of the host's ELF loader in an image without a C
// library (see runtimeBinds). Those under /tmp and /dev land in the step's
// own tmpfs instead.
//
// Every process of the step is started through the image's /bin/sh, which
// changes to the --container-workdir and finds the command with the
// step's PATH in the image. So the image needs a /bin/sh (enroot's images
// need one too), and the host-side checks of the executor (the command is
// executable, see prepareIO) are made on /bin/sh, which every host has:
// whether the command itself exists is only known inside the image, where
// a missing one ends the task with slurmstepd's "execve(): ...: No such
// file or directory" and exit code 2.
//
// Everything the step names (the image, the mount sources, its working
// directory) is checked on the node when the step starts, with the user's
// permissions: a user can bind in only what the user can reach on the
// host. Paths are resolved to their real location then (symbolic links
// followed as the user). A user who swaps a directory for a link between
// that check and the mount could still aim a bind elsewhere, and see what
// lies below a directory the user cannot enter; never more than those
// files' own permissions allow.
//
// Only container mode runs images: a node that runs steps as plain
// processes refuses a step with an Image rather than run it on the host.

// Image is a root file system a step runs in, instead of the host's.
type Image struct {
	// Path is the image: a directory holding a root file system, or an OCI
	// runtime bundle (a directory with a config.json, whose root.path
	// names the root file system, usually "rootfs"). Of a bundle's
	// config.json only root.path is used: its process (args, env, cwd) is
	// ignored, since the step's command, environment and working directory
	// are the job's, as with any Slurm step (--export decides the
	// environment); its mounts and root.readonly are ignored too (the root
	// is always read-only, and mounts come from Mounts).
	Path string
	// Mounts are --container-mounts' entries (jobspec parses the option):
	// host paths bound into the image. Paths must be absolute; they are
	// checked here, on the node, whatever the client checked.
	Mounts []Mount
	// WorkDir is where the step's processes start in the image
	// (--container-workdir); empty means the step's WorkDir, which is
	// bound at its own path.
	WorkDir string
	// Binds are host directories the step needs at their own paths: the
	// job's $TMPDIR, $SCRATCH, the batch script's directory. Those missing
	// on the node are left out.
	Binds []Mount

	// Set by prepareImage.
	root    string  // the root file system, resolved
	mounts  []Mount // Mounts, parsed and resolved
	binds   []Mount // Binds and the working directory, resolved
	workDir string
}

// Mount is one bind mount into an image.
type Mount struct {
	Source      string // a host path
	Destination string // where it shows in the image; "" means Source
	ReadOnly    bool
}

// ImageError is why a step's image cannot be used; it is the reason the
// step fails with ("Invalid container image /x: No such file or
// directory").
type ImageError struct {
	What string // "container image", "container mount", ...
	Path string
	Err  error
}

func (e *ImageError) Error() string {
	var en unix.Errno
	if errors.As(e.Err, &en) {
		return fmt.Sprintf("Invalid %s %s: %s", e.What, e.Path, errnoText(en))
	}
	return fmt.Sprintf("Invalid %s %s: %v", e.What, e.Path, e.Err)
}

func (e *ImageError) Unwrap() error { return e.Err }

// checkMounts checks the user's mounts (already parsed from
// --container-mounts by the caller): absolute paths, nothing over what the
// step gets of its own; an empty Destination means Source.
func checkMounts(ms []Mount) ([]Mount, error) {
	var out []Mount
	for _, m := range ms {
		bad := func(why string) error {
			return &ImageError{What: "container mount", Path: fmt.Sprintf("%q", m.Source+":"+m.Destination), Err: errors.New(why)}
		}
		if m.Destination == "" {
			m.Destination = m.Source
		}
		switch {
		case m.Source == "":
			return nil, bad("no source")
		case !filepath.IsAbs(m.Source):
			return nil, bad("the source must be an absolute path")
		case !filepath.IsAbs(m.Destination):
			return nil, bad("the destination must be an absolute path")
		}
		m.Source, m.Destination = filepath.Clean(m.Source), filepath.Clean(m.Destination)
		if err := checkDestination(m.Destination); err != nil {
			return nil, bad(err.Error())
		}
		out = append(out, m)
	}
	return out, nil
}

// checkDestination refuses what a step cannot have mounted over: its root,
// and the kernel's /proc and /sys it gets fresh (or read-only).
func checkDestination(dst string) error {
	if dst == "/" {
		return errors.New("cannot mount over the image's root")
	}
	for _, d := range []string{"/proc", "/sys"} {
		if dst == d || strings.HasPrefix(dst, d+"/") {
			return fmt.Errorf("cannot mount over %s: the step has its own", d)
		}
	}
	return nil
}

// prepareImage checks and resolves a step's image before the step starts,
// with the user's permissions, and makes every process of the step start
// through the image's shell (see above). spec.Image is replaced by a
// resolved copy; the caller's Image is not changed. Steps without an image
// are left alone.
func (e *Executor) prepareImage(spec *StepSpec) error {
	if spec.Image == nil {
		return nil
	}
	if e.ctr == nil {
		return fmt.Errorf("Containers are unavailable on node %s, so --container-image cannot be used: it runs steps as %s", e.node, e.mode)
	}
	img := *spec.Image
	img.Binds = append([]Mount(nil), img.Binds...)
	if img.Path == "" || !filepath.IsAbs(img.Path) {
		return &ImageError{What: "container image", Path: fmt.Sprintf("%q", img.Path), Err: errors.New("not an absolute path")}
	}
	if img.WorkDir != "" && !filepath.IsAbs(img.WorkDir) {
		return &ImageError{What: "container workdir", Path: img.WorkDir, Err: errors.New("not an absolute path")}
	}
	mounts, err := checkMounts(img.Mounts)
	if err != nil {
		return err
	}
	rt, err := runtimeLibs() // as the daemon: it reads its own executable
	if err != nil {
		return fmt.Errorf("cannot run steps in images on node %s: %w", e.node, err)
	}
	if err := asUser(spec.UID, spec.GID, groupsFor(spec), func() error {
		return img.resolve(mounts, spec.WorkDir, rt)
	}); err != nil {
		return err
	}
	spec.Image = &img

	wrap := func(argv []string) []string {
		return append([]string{imageShell, "-c", imageExec, "slurmstepd", img.workDir}, argv...)
	}
	spec.Argv = wrap(spec.Argv)
	if len(spec.Tasks) > 0 {
		tasks := make([]TaskSpec, len(spec.Tasks))
		for i, t := range spec.Tasks {
			t.Argv = wrap(t.Argv)
			tasks[i] = t
		}
		spec.Tasks = tasks
	}
	return nil
}

// imageShell starts every process of a step with an image.
const imageShell = "/bin/sh"

// imageExec is the script imageShell runs: $1 is the directory to start in
// ("" to stay where the step starts), the rest the command. A directory it
// cannot enter is reported as slurmstepd reports one and the command
// starts in /tmp; a command it cannot find is reported as slurmstepd's
// failed execve() is, with exit code 2 (ENOENT).
const imageExec = "d=$1; shift\n" +
	"if [ -n \"$d\" ] && ! cd \"$d\" 2>/dev/null; then\n" +
	"\tif [ ! -e \"$d\" ]; then r='No such file or directory'; elif [ ! -d \"$d\" ]; then r='Not a directory'; else r='Permission denied'; fi\n" +
	"\tprintf 'slurmstepd: error: couldn'\\''t chdir to `%s'\\'': %s: going to /tmp instead\\n' \"$d\" \"$r\" >&2\n" +
	"\tcd /tmp\n" +
	"fi\n" +
	"case $1 in\n" +
	"*/*) [ -e \"$1\" ] ;;\n" +
	"*) command -v \"$1\" >/dev/null 2>&1 ;;\n" +
	"esac || { printf 'slurmstepd: error: execve(): %s: No such file or directory\\n' \"$1\" >&2; exit 2; }\n" +
	"exec \"$@\""

// resolve checks the image and its mounts with the calling thread's
// file-system identity (the user's, see asUser) and records their real
// paths.
func (img *Image) resolve(mounts []Mount, workDir string, rt *runtimeInfo) error {
	root, err := imageRoot(img.Path)
	if err != nil {
		return err
	}
	img.root = root
	sh, err := inRoot(root, imageShell)
	if err == nil {
		err = unix.Faccessat2(unix.AT_FDCWD, sh, unix.X_OK, unix.AT_EACCESS)
		if err == unix.ENOSYS {
			err = nil
		}
	}
	if err != nil {
		return &ImageError{What: "container image", Path: img.Path, Err: fmt.Errorf("it has no usable %s (every process of the step starts through it): %s", imageShell, errnoText(err))}
	}
	if err := checkRuntime(root, rt); err != nil {
		return &ImageError{What: "container image", Path: img.Path, Err: err}
	}

	for _, m := range mounts {
		src, err := realDir(m.Source, false)
		if err != nil {
			return &ImageError{What: "container mount source", Path: m.Source, Err: err}
		}
		if err := checkSource(src); err != nil {
			return &ImageError{What: "container mount source", Path: m.Source, Err: err}
		}
		img.mounts = append(img.mounts, Mount{Source: src, Destination: m.Destination, ReadOnly: m.ReadOnly})
	}

	// The step's own directories, at their own paths. Those the user
	// cannot reach are left out: the step learns about its working
	// directory the usual way (prepareIO), and the others are the node's.
	own := append([]Mount(nil), img.Binds...)
	if workDir != "" && filepath.Clean(workDir) != "/" && !img.reachable(workDir) {
		own = append(own, Mount{Source: workDir})
	}
	for _, b := range own {
		if b.Source == "" || !filepath.IsAbs(b.Source) {
			continue
		}
		dst := b.Destination
		if dst == "" {
			dst = filepath.Clean(b.Source)
		}
		src, err := realDir(b.Source, true)
		if err != nil || checkSource(src) != nil || checkDestination(dst) != nil {
			continue
		}
		img.binds = append(img.binds, Mount{Source: src, Destination: dst, ReadOnly: b.ReadOnly})
	}
	img.workDir = img.WorkDir
	return nil
}

// reachable reports whether the host directory dir already shows at its
// own path in the image through one of its mounts.
func (img *Image) reachable(dir string) bool {
	dir = filepath.Clean(dir)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	for _, m := range img.mounts {
		rel, err := filepath.Rel(m.Destination, dir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if p := filepath.Join(m.Source, rel); p == dir || p == real {
			return true
		}
	}
	return false
}

// imageRoot returns the root file system of an image directory or OCI
// bundle, its real path.
func imageRoot(path string) (string, error) {
	bad := func(err error) error { return &ImageError{What: "container image", Path: path, Err: err} }
	dir, err := realDir(path, true)
	if err != nil {
		return "", bad(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dir, nil // a plain root file system
	case err != nil:
		return "", bad(fmt.Errorf("cannot read the OCI bundle's config.json: %w", err))
	}
	var cfg struct {
		Root *struct {
			Path string `json:"path"`
		} `json:"root"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", bad(fmt.Errorf("the OCI bundle's config.json is not valid JSON: %w", err))
	}
	if cfg.Root == nil || cfg.Root.Path == "" {
		return "", bad(errors.New("the OCI bundle's config.json has no root.path"))
	}
	rootfs := cfg.Root.Path
	if !filepath.IsAbs(rootfs) {
		rootfs = filepath.Join(dir, rootfs)
	}
	real, err := realDir(rootfs, true)
	if err != nil {
		return "", bad(fmt.Errorf("the OCI bundle's root file system %s: %s", rootfs, errnoText(err)))
	}
	return real, nil
}

// realDir resolves path's symbolic links and checks that it exists (and,
// with dir, is a directory the caller may enter).
func realDir(path string, dir bool) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return "", pe.Err
		}
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil {
		return "", err
	}
	if !dir {
		return real, nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", unix.ENOTDIR
	}
	if err := unix.Faccessat2(unix.AT_FDCWD, real, unix.X_OK, unix.AT_EACCESS); err != nil && err != unix.ENOSYS {
		return "", err
	}
	return real, nil
}

// checkSource refuses to bind the kernel's own trees in: a step has its own
// /proc and a read-only /sys.
func checkSource(src string) error {
	for _, d := range []string{"/proc", "/sys"} {
		if src == d || strings.HasPrefix(src, d+"/") {
			return fmt.Errorf("the host's %s cannot be mounted into a container", d)
		}
	}
	return nil
}

// inRoot resolves p inside root as if root were "/": symbolic links,
// absolute ones included, never lead out of it. It returns the host path
// of what p names; every component but the last must exist.
func inRoot(root, p string) (string, error) {
	cur := "/"
	rest := strings.Split(p, "/")
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return "", pe.Err
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return "", unix.ELOOP
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.Join(root, cur), nil
}

// stepBinds returns the mounts a step's container gets before its /proc,
// /dev and /sys: the host's directories (see hostBinds) or, for a step
// with an image, the step's own (see above).
func (r *containerRuntime) stepBinds(spec *StepSpec) ([]*configs.Mount, error) {
	img := spec.Image
	if img == nil {
		binds, err := hostBinds(r.mnt)
		if err != nil {
			return nil, fmt.Errorf("list the host's mounts: %w", err)
		}
		return binds, nil
	}
	if img.root == "" {
		return nil, errors.New("the step's container image was not prepared")
	}
	// Kernel file systems mounted below the image's directory (an image
	// of "/", say) come along with the recursive bind of the root: make
	// them read-only as hostBinds does, so root in a step cannot leave
	// its cgroup through them. Those under /proc, /sys and /dev are
	// replaced anyway.
	out, err := readonlyPseudo(img.root, "/", r.mnt)
	if err != nil {
		return nil, err
	}
	rt, err := runtimeBinds(img.root)
	if err != nil {
		return nil, err
	}
	out = append(out, rt...)
	out = append(out, &configs.Mount{
		Source: "tmpfs", Destination: "/tmp", Device: "tmpfs",
		Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: "mode=1777",
	})
	for _, f := range []string{"/etc/hosts", "/etc/resolv.conf"} {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			out = append(out, bindMount(f, f, true))
		}
	}
	users, err := r.userFiles(spec) // imageuser.go
	if err != nil {
		return nil, fmt.Errorf("the user's entries for the image: %w", err)
	}
	out = append(out, users...)
	for _, b := range img.binds {
		ms, err := r.bindTree(b)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// withImage finishes the configuration of a step with an image: its root
// file system, read-only, and its --container-mounts last, over the
// standard mounts. Other steps' configurations are returned as they are.
func (r *containerRuntime) withImage(cfg *configs.Config, spec *StepSpec) (*configs.Config, error) {
	img := spec.Image
	if img == nil {
		return cfg, nil
	}
	cfg.Rootfs = img.root
	cfg.Readonlyfs = true
	for _, m := range img.mounts {
		ms, err := r.bindTree(m)
		if err != nil {
			return nil, err
		}
		cfg.Mounts = append(cfg.Mounts, ms...)
	}
	return cfg, nil
}

// bindTree is a recursive bind of m, and read-only binds over the kernel
// file systems mounted below its source.
func (r *containerRuntime) bindTree(m Mount) ([]*configs.Mount, error) {
	out := []*configs.Mount{bindMount(m.Source, m.Destination, m.ReadOnly)}
	pseudo, err := readonlyPseudo(m.Source, m.Destination, r.mnt)
	if err != nil {
		return nil, err
	}
	return append(out, pseudo...), nil
}

// bindMount is a recursive bind, nosuid and nodev (and read-only with ro)
// all the way down. As in hostBinds, the flags go in RecAttr only, so that
// the host's own flags of the mounts stay.
func bindMount(src, dst string, ro bool) *configs.Mount {
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if ro {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	return &configs.Mount{
		Source: src, Destination: dst, Device: "bind",
		Flags:   unix.MS_BIND | unix.MS_REC,
		RecAttr: &unix.MountAttr{Attr_set: attr},
	}
}

// readonlyPseudo lists read-only binds of the writable kernel file systems
// mounted below the host directory src, at their places below dst; mounts
// below skip (the executor's prepared tree) and those that land on the
// step's own /proc, /sys and /dev are left out.
func readonlyPseudo(src, dst, skip string) ([]*configs.Mount, error) {
	mounts, err := mountsUnder(src)
	if err != nil {
		return nil, fmt.Errorf("list the host's mounts: %w", err)
	}
	var out []*configs.Mount
	for _, m := range mounts {
		if !pseudoFS[m.fstype] || m.readonly || m.point == skip || strings.HasPrefix(m.point, skip+"/") {
			continue
		}
		rel, err := filepath.Rel(src, m.point)
		if err != nil || rel == "." {
			continue
		}
		to := filepath.Join(dst, rel)
		if checkDestination(to) != nil || to == "/dev" || strings.HasPrefix(to, "/dev/") {
			continue
		}
		out = append(out, &configs.Mount{
			Source: m.point, Destination: to, Device: "bind",
			Flags:   unix.MS_BIND | unix.MS_REC,
			RecAttr: &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC},
		})
	}
	return out, nil
}

// The step's supervisor (its container's init, see stepd.go) is this
// program, started inside the image once the image is the container's root;
// so the image must be able to run it. A static build can run anywhere. A
// dynamically linked one (cgo) needs its ELF interpreter and C library:
// when the image lacks the interpreter at the path the program names
// (a busybox or musl image), runtimeBinds binds the host's in, read-only,
// with the shared libraries the program needs at the paths the host's
// loader finds them, each only where the image has nothing. An image with
// an interpreter of its own there (a glibc image) runs the supervisor with
// its own C library, which must be as new as the host's (the symbol
// versions the program was linked against): prepareImage refuses an older
// one with that reason (checkRuntime) rather than let the step die
// unexplained. Starting the supervisor through the host's loader instead
// would lift that limit, and a static build of hpc has none.

// runtimeInfo is what this program needs from its host to start.
type runtimeInfo struct {
	// files are its ELF interpreter, then its shared libraries, as host
	// paths (none for a static build).
	files []string
	// versions are the symbol versions it uses, by library name
	// ("libc.so.6": GLIBC_2.2.5 ... GLIBC_2.34).
	versions map[string][]string
}

// runtimeLibs reads, once, what this program needs to start (see above).
var runtimeLibs = sync.OnceValues(func() (*runtimeInfo, error) {
	exe := fmt.Sprintf("/proc/%d/exe", os.Getpid())
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("read this program's ELF headers: %w", err)
	}
	defer f.Close()
	info := &runtimeInfo{versions: map[string][]string{}}
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return nil, fmt.Errorf("read this program's ELF interpreter: %w", err)
			}
			interp = string(bytes.TrimRight(b, "\x00"))
		}
	}
	if interp == "" {
		return info, nil // static
	}
	if syms, err := f.ImportedSymbols(); err == nil {
		seen := map[string]bool{}
		for _, sym := range syms {
			if k := sym.Library + " " + sym.Version; sym.Library != "" && sym.Version != "" && !seen[k] {
				seen[k] = true
				info.versions[sym.Library] = append(info.versions[sym.Library], sym.Version)
			}
		}
	}
	// The loader itself says where it finds the libraries.
	out, err := osexec.Command(interp, "--list", exe).Output()
	if err != nil {
		return nil, fmt.Errorf("list this program's shared libraries (%s --list): %w", interp, err)
	}
	info.files = []string{interp}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)"
		_, rest, ok := strings.Cut(sc.Text(), "=> ")
		if f := strings.Fields(rest); ok && len(f) > 0 && filepath.IsAbs(f[0]) {
			info.files = append(info.files, filepath.Clean(f[0]))
		}
	}
	return info, nil
})

// runtimeBinds returns the binds an image needs to run this program (see
// above): none if it has an ELF interpreter of its own where the program
// looks for one.
func runtimeBinds(root string) ([]*configs.Mount, error) {
	rt, err := runtimeLibs()
	if err != nil || len(rt.files) == 0 || hasFile(root, rt.files[0]) {
		return nil, err
	}
	var out []*configs.Mount
	for _, p := range rt.files {
		if hasFile(root, p) {
			continue
		}
		src, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("this program's runtime file %s: %w", p, err)
		}
		out = append(out, bindMount(src, p, true))
	}
	return out, nil
}

// checkRuntime refuses an image whose own C library cannot start this
// program (see above): one that lacks a symbol version the program uses
// (an older glibc than the host's). Libraries it does not find where the
// host keeps them are not judged.
func checkRuntime(root string, rt *runtimeInfo) error {
	if len(rt.files) == 0 || !hasFile(root, rt.files[0]) {
		return nil // static, or it gets the host's (runtimeBinds)
	}
	for _, p := range rt.files[1:] {
		name := filepath.Base(p)
		need := rt.versions[name]
		if len(need) == 0 {
			continue
		}
		var lib string
		for _, d := range []string{filepath.Dir(p), "/usr" + filepath.Dir(p), "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
			if hasFile(root, filepath.Join(d, name)) {
				lib, _ = inRoot(root, filepath.Join(d, name))
				break
			}
		}
		if lib == "" {
			continue
		}
		have := map[string]bool{}
		if f, err := elf.Open(lib); err == nil {
			vs, _ := f.DynamicVersions()
			f.Close()
			for _, v := range vs {
				have[v.Name] = true
			}
		}
		if len(have) == 0 {
			continue
		}
		for _, v := range need {
			if !have[v] {
				return fmt.Errorf("its %s lacks %s, which this node's hpc needs to start the step in it (the image's C library is older than the node's; a newer image, or an image without one, works)", name, v)
			}
		}
	}
	return nil
}

// hasFile reports whether p names a file with content in the image at
// root. The empty files that earlier steps' binds left as mount points do
// not count.
func hasFile(root, p string) bool {
	f, err := openInImage(root, p) // imagefile.go: links never lead out
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular() && fi.Size() > 0
}
