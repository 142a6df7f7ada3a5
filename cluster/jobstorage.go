package cluster

import (
	"sync"
	"time"

	"hpc/cluster/api"
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
func (d *Daemon) jobRunStorage(j *api.Job) (tmp, scratch string, err error) {
	s := &d.runStore
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared == nil {
		s.prepared = map[uint64]time.Time{}
	}
	at, ok := s.prepared[j.ID]
	fresh := !ok || !at.Equal(j.StartTime)
	tmp, scratch, err = d.jobStorage(j, fresh)
	if err == nil {
		s.prepared[j.ID] = j.StartTime
	}
	return tmp, scratch, err
}

// keepRunStorage records a run whose storage is in use already (a step a
// new daemon re-attached to): the run's next steps share it.
func (d *Daemon) keepRunStorage(jobID uint64, start time.Time) {
	s := &d.runStore
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared == nil {
		s.prepared = map[uint64]time.Time{}
	}
	s.prepared[jobID] = start
}

// forgetRunStorage drops a run once its $TMPDIR is gone.
func (d *Daemon) forgetRunStorage(jobID uint64, start time.Time) {
	s := &d.runStore
	s.mu.Lock()
	if at, ok := s.prepared[jobID]; ok && at.Equal(start) {
		delete(s.prepared, jobID)
	}
	s.mu.Unlock()
}
