//go:build linux

package exec

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// The containers' root file system is the host's own tree: a recursive bind
// of / prepared once per executor (libcontainer cannot pivot into / itself:
// pivot_root fails with EBUSY, and without pivot_root with ELOOP).
//
// That prepared bind is read-only, nosuid and nodev all the way down, and
// private, so it never changes after it is made: whoever walks into it from
// the host (rm -rf on the state directory, say) can change nothing through
// it. Each container then binds the host's top-level directories (/home,
// /tmp, /var, /etc, /usr, ... everything but /proc, /sys and /dev, which it
// gets fresh) read-write over its copy, each with the mount flags it has on
// the host (plus nosuid and nodev), so a step writes wherever its user may
// write on the host, exactly as under Slurm; only / itself stays read-only.
// Kernel pseudo file systems (sysfs, cgroup, proc, ...) found mounted below
// those directories are bound read-only again over the copies, so root in a
// step cannot leave its cgroup through them; /sys is the host's, bound
// read-only recursively, and /proc is fresh.

// prepareRootfs binds the host's / onto <mnt>/rootfs, after undoing what a
// crashed executor may have left there. mnt itself becomes an unbindable
// mount, so that the containers' recursive binds of the host's directories
// leave the prepared tree out instead of nesting a copy of it.
func prepareRootfs(mnt string) (string, error) {
	dir := filepath.Join(mnt, "rootfs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return "", err
	}
	if err := unmountAll(dir); err != nil {
		return "", fmt.Errorf("remove stale root file system at %s: %w", dir, err)
	}
	if err := unmountAll(mnt); err != nil {
		return "", fmt.Errorf("remove stale mount at %s: %w", mnt, err)
	}
	if err := unix.Mount(mnt, mnt, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind %s: %w", mnt, err)
	}
	if err := unix.Mount("", mnt, "", unix.MS_UNBINDABLE, ""); err != nil {
		unmountAll(mnt)
		return "", fmt.Errorf("make %s unbindable: %w", mnt, err)
	}
	if err := attachRoot(dir); err != nil {
		unmountAll(dir)
		unmountAll(mnt)
		return "", err
	}
	return dir, nil
}

// teardownRootfs undoes prepareRootfs.
func teardownRootfs(mnt string) error {
	dir := filepath.Join(mnt, "rootfs")
	if err := unmountAll(dir); err != nil {
		return err
	}
	os.Remove(dir)
	if err := unmountAll(mnt); err != nil {
		return err
	}
	os.Remove(mnt)
	return nil
}

// attachRoot mounts a read-only, private, recursive copy of / on dir.
func attachRoot(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree(/): %w", err)
	}
	defer unix.Close(fd)
	attr := &unix.MountAttr{
		Attr_set:    unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Propagation: unix.MS_PRIVATE,
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
		return fmt.Errorf("mount_setattr on the copy of /: %w", err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount to %s: %w", dir, err)
	}
	// Attaching under a shared mount makes the copy shared: make it private
	// again, so that nothing mounted on the host later shows up in it.
	if err := unix.MountSetattr(unix.AT_FDCWD, dir, unix.AT_RECURSIVE, &unix.MountAttr{Propagation: unix.MS_PRIVATE}); err != nil {
		return fmt.Errorf("mount_setattr(MS_PRIVATE) on %s: %w", dir, err)
	}
	return nil
}

// pseudoFS are the file systems through which root in a container could
// reach host kernel state (cgroups above its own among them).
var pseudoFS = map[string]bool{
	"sysfs": true, "cgroup": true, "cgroup2": true, "proc": true, "securityfs": true,
	"debugfs": true, "tracefs": true, "bpf": true, "configfs": true, "efivarfs": true,
	"pstore": true, "fusectl": true, "binfmt_misc": true,
}

// replacedDirs are the top-level directories a step gets its own of.
var replacedDirs = map[string]bool{"proc": true, "sys": true, "dev": true}

// hostBinds lists the mounts that make the host's file system writable in a
// step (see above). Mounts below skip (the prepared tree) are left out.
//
// The directory that holds skip is bound first: the bind copies the
// container's own root (a copy of the prepared tree) as it is at that moment,
// still small and read-only, before the other binds are stacked on it. The
// caller masks skip, so steps never see that copy.
func hostBinds(skip string) ([]*configs.Mount, error) {
	ents, err := os.ReadDir("/")
	if err != nil {
		return nil, err
	}
	var out []*configs.Mount
	top := map[string]bool{}
	for _, ent := range ents {
		name := ent.Name()
		if !ent.IsDir() || replacedDirs[name] { // symlinks (/bin -> usr/bin) resolve inside
			continue
		}
		top[name] = true
		m := &configs.Mount{
			Source: "/" + name, Destination: "/" + name, Device: "bind",
			// No other flags: they would make libcontainer remount the
			// bind and clear the host's own (read-only, say). RecAttr
			// only adds.
			Flags:   unix.MS_BIND | unix.MS_REC,
			RecAttr: &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV},
		}
		if strings.HasPrefix(skip, "/"+name+"/") {
			out = append([]*configs.Mount{m}, out...)
		} else {
			out = append(out, m)
		}
	}
	mounts, err := mountsUnder("/")
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		// Read-only ones stay read-only in a bind (another executor's
		// prepared tree, for one).
		if !pseudoFS[m.fstype] || m.readonly || m.point == skip || strings.HasPrefix(m.point, skip+"/") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(m.point, "/"), "/")
		if !top[first] {
			continue
		}
		out = append(out, &configs.Mount{
			Source: m.point, Destination: m.point, Device: "bind",
			Flags:   unix.MS_BIND | unix.MS_REC,
			RecAttr: &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC},
		})
	}
	return out, nil
}

type mountEntry struct {
	point, fstype string
	readonly      bool // the mount (not necessarily its file system) is read-only
}

// mountsUnder lists the mounts at or below dir, from the calling thread's
// mountinfo. Not /proc/self/mountinfo: that is the main thread's view, and
// libcontainer joins a container's mount namespace on a locked thread of
// this process (its mount-source helper) which, when it happens to be the
// main thread, the Go runtime parks there for good instead of ending it;
// /proc/self/mountinfo then lists a dead container's mounts.
func mountsUnder(dir string) ([]mountEntry, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		if len(fields) < 7 {
			continue
		}
		point := unescapeMountinfo(fields[4])
		if dir != "/" && point != dir && !strings.HasPrefix(point, dir+"/") {
			continue
		}
		fstype := ""
		for i := 6; i < len(fields)-1; i++ {
			if fields[i] == "-" {
				fstype = fields[i+1]
				break
			}
		}
		ro := false
		for _, o := range strings.Split(fields[5], ",") {
			ro = ro || o == "ro"
		}
		out = append(out, mountEntry{point: point, fstype: fstype, readonly: ro})
	}
	return out, sc.Err()
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space...).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, ok := octal3(s[i+1 : i+4]); ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal3(s string) (byte, bool) {
	if len(s) != 3 {
		return 0, false
	}
	var v int
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}

// isMountPoint reports whether dir is the root of a mount.
func isMountPoint(dir string) (bool, error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BASIC_STATS, &stx); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	// Old kernel: compare with the parent directory.
	var st, pst unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(dir+"/..", &pst); err != nil {
		return false, err
	}
	return st.Dev != pst.Dev || st.Ino == pst.Ino, nil
}

// unmountAll detaches every mount stacked on dir.
func unmountAll(dir string) error {
	for range 64 {
		mounted, err := isMountPoint(dir)
		if err != nil || !mounted {
			return err
		}
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("umount %s: %w", dir, err)
		}
	}
	return fmt.Errorf("umount %s: still mounted", dir)
}
