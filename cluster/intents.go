package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
)

// The leader's launches and kills are intents kept in the replicated state
// (fsm/intents.go): a RUNNING job whose batch host has not acknowledged its
// launch is launched (again), a COMPLETING job is killed (again) until its
// end is committed. This leader remembers only what it has in flight, so a
// new leader, knowing nothing, carries on all of it at once; the node
// starts a run once however often it is asked, and a kill of a run it has
// not got is kept for the run.

// launchTries is how often the leader tries to reach a batch host for one
// launch before it gives the job back to the queue (LaunchFailed), and
// launchBackoff its first wait between two tries (doubled each time).
const (
	launchTries   = 3
	launchBackoff = 500 * time.Millisecond
)

// killRetry is how long after a kill the leader sends it again while the
// job's end has not come.
const killRetry = 10 * time.Second

// intentState is what this leader has in flight.
type intentState struct {
	mu        sync.Mutex
	launching map[uint64]time.Time // job id -> the run being launched
	killed    map[uint64]time.Time // job id -> when its kill was last sent
	// acked are launches the nodes acknowledged, to be committed in one
	// entry by the leader's next pass (still in launching until then).
	acked []api.JobRun
	// warning are the runs whose --signal warning is on its way.
	warning map[uint64]time.Time
}

// claimWarn marks j's warning signal as on its way; false if it already is.
func (s *intentState) claimWarn(j *api.Job) bool { return s.claim(&s.warning, j) }

func (s *intentState) warnDone(j *api.Job) {
	s.release(&s.warning, api.JobRun{JobID: j.ID, Run: j.StartTime})
}

// claim marks j's run in *m; false if it is marked already.
func (s *intentState) claim(m *map[uint64]time.Time, j *api.Job) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *m == nil {
		*m = map[uint64]time.Time{}
	}
	if run, ok := (*m)[j.ID]; ok && run.Equal(j.StartTime) {
		return false
	}
	(*m)[j.ID] = j.StartTime
	return true
}

// release unmarks run in *m.
func (s *intentState) release(m *map[uint64]time.Time, run api.JobRun) {
	s.mu.Lock()
	if r, ok := (*m)[run.JobID]; ok && r.Equal(run.Run) {
		delete(*m, run.JobID)
	}
	s.mu.Unlock()
}

// reset forgets everything: a new term carries on from the state alone.
func (s *intentState) reset() {
	s.mu.Lock()
	s.launching, s.killed, s.acked, s.warning = nil, nil, nil, nil
	s.mu.Unlock()
}

// ack queues the acknowledgement of run.
func (s *intentState) ack(run api.JobRun) {
	s.mu.Lock()
	s.acked = append(s.acked, run)
	s.mu.Unlock()
}

// takeAcks returns the queued acknowledgements.
func (s *intentState) takeAcks() []api.JobRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.acked
	s.acked = nil
	return a
}

// claimLaunch marks j's run as being launched; false if it already is.
func (s *intentState) claimLaunch(j *api.Job) bool { return s.claim(&s.launching, j) }

func (s *intentState) launchDone(run api.JobRun) { s.release(&s.launching, run) }

// killDue tells whether j's kill should be sent now, and if so notes it
// as sent at now.
func (s *intentState) killDue(id uint64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed == nil {
		s.killed = map[uint64]time.Time{}
	}
	if t, ok := s.killed[id]; ok && now.Sub(t) < killRetry {
		return false
	}
	s.killed[id] = now
	return true
}

// forget drops what is noted of jobs that are no longer COMPLETING or
// unacknowledged (keep says which still are).
func (s *intentState) forget(keep map[uint64]bool) {
	s.mu.Lock()
	for id := range s.killed {
		if !keep[id] {
			delete(s.killed, id)
		}
	}
	s.mu.Unlock()
}

// carryOnIntents launches the runs no node has acknowledged and kills
// again the COMPLETING jobs whose kill is due: after a failover, what the
// old leader left half done.
func (d *Daemon) carryOnIntents() {
	if acks := d.intents.takeAcks(); len(acks) > 0 {
		if _, err := d.propose(&fsm.Launched{Runs: acks}); err != nil {
			d.log.Warn("launch acknowledgements commit failed; the launches are sent again", "err", err)
		}
		for _, a := range acks {
			d.intents.launchDone(a)
		}
	}
	now := time.Now()
	var launch, kill []*api.Job
	keep := map[uint64]bool{}
	d.fsm.View(func(st *fsm.State) {
		for j := range st.NotPending() {
			switch {
			case j.BatchHost == "":
			case j.State == api.StateRunning && !j.Launched:
				cp := *j
				launch = append(launch, &cp)
			case j.State == api.StateCompleting:
				keep[j.ID] = true
				cp := *j
				kill = append(kill, &cp)
			}
		}
	})
	d.intents.forget(keep)
	for _, j := range launch {
		d.startLaunch(j)
	}
	for _, j := range kill {
		if d.intents.killDue(j.ID, now) {
			go d.signalJob(j, 0)
		}
	}
}

// startLaunch launches j's run unless this leader already is.
func (d *Daemon) startLaunch(j *api.Job) {
	if d.intents.claimLaunch(j) {
		go d.launch(j)
	}
}

// launch asks the batch host's agent to start the job and commits its
// answer: acknowledged (Launched, by the leader's next pass), refused (the job FAILED with the node's
// reason, as slurmctld kills a batch job its node cannot start), or no
// answer after launchTries (LaunchFailed: back to the queue, the node's
// fault).
func (d *Daemon) launch(j *api.Job) {
	run := api.JobRun{JobID: j.ID, Run: j.StartTime}
	if !d.runPrologs(j) { // leaderprolog.go: failed prologs requeue the job
		d.intents.launchDone(run)
		return
	}
	var err error
	wait := launchBackoff
	for try := 1; ; try++ {
		var addr string
		addr, err = d.peers.API(j.BatchHost)
		if err == nil {
			ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
			err = d.peers.CallNode(ctx, addr, "/internal/launch", j, nil)
			cancel()
		}
		var refused *api.Error
		if err == nil || errors.As(err, &refused) || try == launchTries || d.ctx.Err() != nil {
			break
		}
		select {
		case <-d.ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
	if err == nil {
		// Committed with the others by the next pass, which the wake
		// brings at once; the launch stays claimed until then.
		d.intents.ack(run)
		d.wake()
		return
	}
	defer d.intents.launchDone(run)
	var refused *api.Error
	switch {
	case d.ctx.Err() != nil:
		return // this daemon stops: the next leader launches it
	case errors.As(err, &refused):
		d.log.Warn("launch refused", "job", j.ID, "node", j.BatchHost, "err", err)
		now := d.now()
		_, _ = d.propose(&fsm.End{Time: now, End: api.JobEnd{
			JobID: j.ID, Node: j.BatchHost, ExitCode: 1, Error: "launch failed: " + err.Error(), Start: now, End: now, Run: j.StartTime,
		}})
	default:
		// Not responding until it registers again (health.go), committed
		// before the requeue so that the next pass does not pick it again.
		d.log.Warn("launch failed: node not responding; requeueing", "job", j.ID, "node", j.BatchHost, "err", err)
		now := d.now()
		d.health.markUnreachable(j.BatchHost, now)
		if _, err := d.propose(&fsm.NodeResponding{Time: now, Node: j.BatchHost}); err != nil {
			d.log.Warn("node state commit failed", "node", j.BatchHost, "err", err)
		}
		_, _ = d.propose(&fsm.LaunchFailed{Time: now, Run: run, Node: j.BatchHost, Why: err.Error()})
	}
}

// signalJob tells the batch host to signal a running job; signal 0 means
// cancel: SIGTERM, then SIGKILL after KillWait (and the kill is sent again
// until the job's end is committed: carryOnIntents).
func (d *Daemon) signalJob(j *api.Job, sig int) {
	if sig == 0 {
		d.intents.killDue(j.ID, time.Now())
	}
	if err := d.signalJobWait(j, sig); err != nil {
		d.log.Warn("signal failed", "job", j.ID, "node", j.BatchHost, "signal", sig, "err", err)
	}
}
