//go:build linux

package exec

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// An image belongs to its user, who may change it while the executor looks
// into it: a path checked and then opened can be a symbolic link by the
// time it is opened, and root would follow it anywhere on the host (the
// cluster key included). So the executor, as root, opens a file of an
// image in one resolution confined to the image's root
// (filepath-securejoin, on openat2's RESOLVE_IN_ROOT where the kernel has
// it): links, absolute ones and "..", resolve as if the root were "/" and
// never lead out of it, whatever changes meanwhile.

// maxImageFile bounds what is read of a file of an image.
const maxImageFile = 1 << 20

// openImageRoot opens root, the real path of an image's root directory
// (resolve found it), as a handle. No component of a real path is a
// symbolic link, so one that is now was put there since: refused.
func openImageRoot(root string) (*os.File, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, root, &how)
	if err == unix.ENOSYS { // before Linux 5.6: the last component at least
		fd, err = unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open image root", Path: root, Err: err}
	}
	return os.NewFile(uintptr(fd), root), nil
}

// openInImage returns an O_PATH handle of p inside the image at root (see
// above): it can be inspected (Stat) but reads nothing, so a FIFO or a
// device found there cannot block or act.
func openInImage(root, p string) (*os.File, error) {
	dir, err := openImageRoot(root)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return pathrs.OpenatInRoot(dir, p)
}

// readImageFile reads p, a regular file of the image at root, of at most
// maxImageFile bytes. An error wrapping fs.ErrNotExist (or ENOTDIR) means
// the image has no such file; the others say why it cannot be read.
func readImageFile(root, p string) ([]byte, error) {
	h, err := openInImage(root, p)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	fi, err := h.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("its %s is %s, not a regular file", p, fileKind(fi.Mode()))
	case fi.Size() > maxImageFile:
		return nil, fmt.Errorf("its %s is larger than %d KiB", p, maxImageFile>>10)
	}
	f, err := pathrs.Reopen(h, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open its %s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxImageFile+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("read its %s: %w", p, err)
	case len(b) > maxImageFile: // it grew since
		return nil, fmt.Errorf("its %s is larger than %d KiB", p, maxImageFile>>10)
	}
	return b, nil
}

// fileKind names what a file that is not a regular one is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "something else"
}
