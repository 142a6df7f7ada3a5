package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"

	"golang.org/x/sys/unix"
)

// runStorage makes sure a job run's storage is prepared once on this node,
// whichever of its batch step and its srun steps arrives first (an srun
// step may reach a node before the batch step that holds an allocation
// does): the first of a run makes a fresh $TMPDIR (a requeued job's old
// one goes), the others use it as it is.
type runStorage struct {
	mu       sync.Mutex
	prepared map[uint64]time.Time // job id -> the start of the run prepared
}

// jobRunStorage returns j's $TMPDIR and $SCRATCH on this node for its
// current run (see jobStorage).
func (ag *Agent) jobRunStorage(j *api.Job) (tmp, scratch string, err error) {
	s := &ag.runStore
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared == nil {
		s.prepared = map[uint64]time.Time{}
	}
	at, ok := s.prepared[j.ID]
	fresh := !ok || !at.Equal(j.StartTime)
	tmp, scratch, err = ag.jobStorage(j, fresh)
	if err == nil {
		s.prepared[j.ID] = j.StartTime
	}
	return tmp, scratch, err
}

// keepRunStorage records a run whose storage is in use already (a step a
// new daemon re-attached to): the run's next steps share it.
func (ag *Agent) keepRunStorage(jobID uint64, start time.Time) {
	s := &ag.runStore
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared == nil {
		s.prepared = map[uint64]time.Time{}
	}
	s.prepared[jobID] = start
}

// forgetRunStorage drops a run once its $TMPDIR is gone.
func (ag *Agent) forgetRunStorage(jobID uint64, start time.Time) {
	s := &ag.runStore
	s.mu.Lock()
	if at, ok := s.prepared[jobID]; ok && at.Equal(start) {
		delete(s.prepared, jobID)
	}
	s.mu.Unlock()
}

// The lab's storage, laid out as HPC centres lay theirs: home directories,
// a scratch area and project areas, shared by every node. On a one-machine
// lab they are directories under the lab's root (hpc up makes them); on
// several machines, point the keys at file systems all nodes mount.
//
//	HpcHomeDir=    home directories of the lab's users (0755); jobs keep
//	               the submitter's $HOME, as in Slurm
//	HpcScratchDir= sticky and world-writable (1777); a user's first job
//	               makes scratch/<user> (0700, the user's): $SCRATCH
//	HpcProjectDir= 0755; a group's first job makes project/<group>
//	               (2770, root and the group, files keep the group):
//	               $PROJECT, shared by the members of the job's group
//
// A relative path is taken from the lab's root; unset keys mean <root>/home,
// <root>/scratch and <root>/project.
type storageAreas struct{ config.Storage }

// storage is this node's view of the lab's storage areas; the lab's root
// is the parent of the node's state directory.
func (ag *Agent) storage() storageAreas {
	return storageAreas{ag.conf().Storage(filepath.Dir(ag.dir))}
}

// safeName is a user or group name as a directory name, else the id.
func safeName(name string, id uint32) string {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return strconv.FormatUint(uint64(id), 10)
	}
	return name
}

// scratchDir is a user's $SCRATCH and projectDir a group's $PROJECT.
func (s storageAreas) scratchDir(j *api.Job) string {
	return filepath.Join(s.Scratch, safeName(j.User, j.UID))
}

func (s storageAreas) projectDir(j *api.Job) string {
	return filepath.Join(s.Project, safeName(j.Group, j.GID))
}

// makeArea makes a storage area with its mode (the sticky and setgid bits
// too) unless it is there already.
func makeArea(dir string, mode os.FileMode) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

// makeOwnedDir makes a directory of uid:gid with mode, or checks the one
// that is there: a directory (not a link) and, with mine, uid's. Every
// change is made through a descriptor opened without following links, so
// root never chowns or chmods through a link. In a world-writable area,
// anything else under a user's name (someone else's directory, a link, a
// file: a trap that the user's jobs would write into, or a way to make
// them fail) is moved aside, with the reason in the daemon's log, and the
// user gets a directory of their own: the job does not fail. As another
// user than root, everything is the daemon's own and uid is not checked.
func (ag *Agent) makeOwnedDir(dir string, uid, gid uint32, mode os.FileMode, mine bool) error {
	parent, name := filepath.Split(dir)
	pfd, err := unix.Open(parent, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: parent, Err: err}
	}
	defer unix.Close(pfd)
	root := os.Geteuid() == 0
	for try := 0; ; try++ {
		made := true
		if err := unix.Mkdirat(pfd, name, 0o700); err == unix.EEXIST {
			made = false
		} else if err != nil {
			return &os.PathError{Op: "mkdir", Path: dir, Err: err}
		}
		fd, err := unix.Openat(pfd, name, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		var st unix.Stat_t
		if err == nil {
			if err = unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
			}
		}
		foreign := err == nil && !made && mine && root && st.Uid != uid
		if err == nil && !foreign {
			defer unix.Close(fd)
			if !made {
				return nil
			}
			if root {
				if err := unix.Fchown(fd, int(uid), int(gid)); err != nil {
					return &os.PathError{Op: "chown", Path: dir, Err: err}
				}
			}
			if err := unix.Fchmod(fd, unixMode(mode)); err != nil {
				return &os.PathError{Op: "chmod", Path: dir, Err: err}
			}
			return nil
		}
		if err == nil {
			unix.Close(fd) // someone else's: not ours to use
		}
		if !mine || !root || try > 0 {
			if err == nil {
				err = fmt.Errorf("belongs to uid %d, not to uid %d", st.Uid, uid)
			}
			return &os.PathError{Op: "use", Path: dir, Err: err}
		}
		aside := fmt.Sprintf(".refused-%s-%d", name, time.Now().UnixNano())
		if err := unix.Renameat(pfd, name, pfd, aside); err != nil {
			return &os.PathError{Op: "move aside", Path: dir, Err: err}
		}
		why := "not a directory"
		if foreign {
			why = fmt.Sprintf("a directory of uid %d", st.Uid)
		}
		ag.log.Warn("a user's storage directory was taken: moved aside", "dir", dir, "was", why, "moved_to", filepath.Join(parent, aside), "uid", uid)
	}
}

// unixMode is mode as chmod(2) takes it, setgid and sticky bits included.
func unixMode(mode os.FileMode) uint32 {
	m := uint32(mode.Perm())
	if mode&os.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if mode&os.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}
