//go:build linux

package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// asUser runs fn on a dedicated OS thread whose file-system identity (fsuid,
// fsgid and supplementary groups) is the user's, so that every path fn opens
// is checked against the user's permissions and every file it creates is
// owned by the user. Only that thread changes: the raw per-thread system
// calls are used on purpose (Go's syscall wrappers change every thread), and
// the goroutine exits still locked to the thread, so the Go runtime
// destroys the thread instead of reusing it.
func asUser(uid, gid uint32, groups []uint32, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: this thread's credentials are the user's now.
		if err := setThreadFSIdentity(uid, gid, groups); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func setThreadFSIdentity(uid, gid uint32, groups []uint32) error {
	var e unix.Errno
	if len(groups) > 0 {
		_, _, e = unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0)
	} else {
		_, _, e = unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0)
	}
	if e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	// setfsgid/setfsuid always return the previous value; calling them with
	// an invalid id (-1) changes nothing and reads the current one back.
	const query = uintptr(^uint32(0))
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(gid), 0, 0)
	if cur, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, query, 0, 0); uint32(cur) != gid {
		return fmt.Errorf("setfsgid(%d) did not take effect", gid)
	}
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(uid), 0, 0)
	if cur, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, query, 0, 0); uint32(cur) != uid {
		return fmt.Errorf("setfsuid(%d) did not take effect", uid)
	}
	return nil
}

// stepIO is what a step gets before it starts: its output files and the
// directory it starts in.
type stepIO struct {
	stdout, stderr *os.File
	created        []string // output files this launch created
	cwd            string
}

// close closes the parent's copies of the output files.
func (io *stepIO) close() {
	if io.stdout != nil {
		io.stdout.Close()
	}
	if io.stderr != nil && io.stderr != io.stdout {
		io.stderr.Close()
	}
}

// prepareIO checks what the step needs with the user's identity (when
// switch is set; otherwise with the daemon's own, which is then the user's):
// its command must be executable, its output files are opened (created if
// missing), and its working directory must be enterable; if it is not, the
// step starts in /tmp and its stderr says why, as slurmstepd does.
// On error nothing created is left behind.
func prepareIO(spec *StepSpec, groups []uint32, switchUser bool) (*stepIO, error) {
	io := &stepIO{}
	work := func() error {
		err := io.open(spec)
		if err != nil {
			io.undo()
		}
		return err
	}
	var err error
	if switchUser {
		err = asUser(spec.UID, spec.GID, groups, work)
	} else {
		err = work()
	}
	if err != nil {
		return nil, err
	}
	return io, nil
}

func (io *stepIO) open(spec *StepSpec) error {
	progs := []string{spec.Argv[0]}
	for _, t := range spec.Tasks {
		if t.Argv[0] != progs[len(progs)-1] {
			progs = append(progs, t.Argv[0])
		}
	}
	for _, p := range progs {
		if err := unix.Faccessat2(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS); err != nil && err != unix.ENOSYS {
			return fmt.Errorf("execve(): %s: %s", p, errnoText(err))
		}
	}
	var err error
	if io.stdout, err = io.openOutput(spec.Stdout, spec.Truncate); err != nil {
		return &OutputError{Stream: "stdout", Path: spec.Stdout, Err: err}
	}
	if spec.Stderr != "" && filepath.Clean(spec.Stderr) == filepath.Clean(spec.Stdout) {
		io.stderr = io.stdout
	} else if io.stderr, err = io.openOutput(spec.Stderr, spec.Truncate); err != nil {
		return &OutputError{Stream: "stderr", Path: spec.Stderr, Err: err}
	}
	io.cwd = spec.WorkDir
	if io.cwd == "" {
		io.cwd = "/"
	}
	if err := enterable(io.cwd); err != nil {
		// slurmstepd: "couldn't chdir to `%s': %m: going to /tmp instead"
		fmt.Fprintf(io.stderr, "slurmstepd: error: couldn't chdir to `%s': %s: going to /tmp instead\n", io.cwd, errnoText(err))
		io.cwd = "/tmp"
	}
	return nil
}

// enterable checks that the current (fs) identity can chdir into dir.
func enterable(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	if err := unix.Faccessat2(unix.AT_FDCWD, dir, unix.X_OK, unix.AT_EACCESS); err != nil && err != unix.ENOSYS {
		return err
	}
	return nil
}

// openOutput opens one output file for writing, creating it (owned by the
// current fs identity) if needed. Empty path: /dev/null.
func (io *stepIO) openOutput(path string, truncate bool) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	const base = os.O_WRONLY | os.O_APPEND | unix.O_NOCTTY
	var err error
	for range 3 {
		var f *os.File
		f, err = os.OpenFile(path, base|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			io.created = append(io.created, path)
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		flags := base
		if truncate {
			flags |= os.O_TRUNC
		}
		f, err = os.OpenFile(path, flags, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed in between (or a dangling link): try again
		}
		return f, err
	}
	return nil, err
}

// undo closes the files and removes those this launch created. It runs with
// the same identity that created them.
func (io *stepIO) undo() {
	io.close()
	io.stdout, io.stderr = nil, nil
	for _, p := range io.created {
		os.Remove(p)
	}
	io.created = nil
}

// removeCreated removes the output files this launch created, as the user.
func (io *stepIO) removeCreated(spec *StepSpec, groups []uint32, switchUser bool) {
	io.close()
	if len(io.created) == 0 {
		return
	}
	rm := func() error {
		for _, p := range io.created {
			os.Remove(p)
		}
		return nil
	}
	if switchUser {
		_ = asUser(spec.UID, spec.GID, groups, rm)
	} else {
		_ = rm()
	}
	io.created = nil
}

// errnoText spells an errno as strerror(3) does ("Permission denied").
func errnoText(err error) string {
	var en unix.Errno
	if errors.As(err, &en) {
		s := en.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return err.Error()
}
