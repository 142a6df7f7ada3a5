package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
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
	return storageAreas{ag.cfg.Storage(filepath.Dir(ag.dir))}
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
// that is there: a directory (not a link) and, with mine, uid's. In a
// world-writable area someone else's directory under a user's name is
// refused, so that nobody can set a trap that a user's jobs would write
// into. As another user than root, everything is the daemon's own and uid
// is not checked.
func makeOwnedDir(dir string, uid, gid uint32, mode os.FileMode, mine bool) error {
	err := os.Mkdir(dir, 0o700)
	switch {
	case errors.Is(err, os.ErrExist):
		fi, err := os.Lstat(dir)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && mine && os.Geteuid() == 0 && st.Uid != uid {
			return fmt.Errorf("%s belongs to uid %d, not to uid %d", dir, st.Uid, uid)
		}
		return nil
	case err != nil:
		return err
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(dir, int(uid), int(gid)); err != nil {
			return err
		}
	}
	return os.Chmod(dir, mode)
}
