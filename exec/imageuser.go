//go:build linux

package exec

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
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
		text := imageFile(spec.Image.root, "/etc/"+f.name)
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

// imageFile reads a regular file of the image (links resolved inside it),
// up to 1 MiB; nothing when it is not there.
func imageFile(root, p string) []byte {
	path, err := inRoot(root, p)
	if err != nil {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return b
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
