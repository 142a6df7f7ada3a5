//go:build linux

package exec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// An image knows nothing of the cluster's users: its /etc/passwd and
// /etc/group lack the step's user, and whoami, id -un, a shell's prompt or
// Python's getpass fail. As enroot does for pyxis, the step sees the
// image's files with the user's entries added: copies made per step in the
// executor's state directory (etc/<step>/), bound read-only over the
// image's, and removed when the step ends.

// stepEtc is where a step's copies of /etc/passwd and /etc/group are.
func (r *containerRuntime) stepEtc(cid string) string { return filepath.Join(r.stateDir, "etc", cid) }

// userFiles makes the step's /etc/passwd and /etc/group and returns their
// binds; none when the host does not know the user either.
func (r *containerRuntime) userFiles(spec *StepSpec) ([]*configs.Mount, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(spec.UID), 10))
	if err != nil {
		return nil, nil
	}
	groupName := strconv.FormatUint(uint64(spec.GID), 10)
	if g, err := user.LookupGroupId(groupName); err == nil {
		groupName = g.Name
	}
	home := u.HomeDir
	if home == "" {
		home = "/"
	}
	dir := r.stepEtc(sanitizeID(spec.ID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := []struct {
		name  string
		id    uint32
		entry string
	}{
		{"passwd", spec.UID, fmt.Sprintf("%s:x:%d:%d:%s:%s:/bin/sh", u.Username, spec.UID, spec.GID, u.Username, home)},
		{"group", spec.GID, fmt.Sprintf("%s:x:%d:", groupName, spec.GID)},
	}
	var out []*configs.Mount
	for _, f := range files {
		text, err := imageEtcFile(spec.Image, f.name)
		if err != nil {
			return nil, err
		}
		if !hasID(text, f.id) {
			if len(text) > 0 && !bytes.HasSuffix(text, []byte("\n")) {
				text = append(text, '\n')
			}
			text = append(text, f.entry+"\n"...)
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, text, 0o644); err != nil {
			return nil, err
		}
		out = append(out, bindMount(p, "/etc/"+f.name, true))
	}
	return out, nil
}

// imageEtcFile reads the image's /etc/<name> as root, confined to the
// image (readImageFile): a symbolic link resolves inside it, so one that
// names a host file (the cluster key, say) finds nothing there, and the
// step's copy is made without it, as for an image that has none. What is
// there but cannot be read as a passwd or group file (not a regular file,
// over maxImageFile, a link loop) refuses the step with the reason.
func imageEtcFile(img *Image, name string) ([]byte, error) {
	b, err := readImageFile(img.root, "/etc/"+name)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENOTDIR):
		return nil, nil
	case errors.As(err, new(unix.Errno)): // a link loop, say
		err = fmt.Errorf("its /etc/%s cannot be opened: %s", name, errnoText(err))
		fallthrough
	case err != nil:
		return nil, &ImageError{What: "container image", Path: img.Path, Err: err}
	}
	return b, nil
}

// hasID reports whether a passwd or group file has an entry with id as its
// third field.
func hasID(text []byte, id uint32) bool {
	want := strconv.FormatUint(uint64(id), 10)
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		if f := strings.SplitN(sc.Text(), ":", 4); len(f) >= 3 && f[2] == want {
			return true
		}
	}
	return false
}
