package cluster

import (
	"context"
	"sort"
	"time"

	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/jobspec"
)

// signalJobScope tells the batch host to deliver a signal to a running
// job's steps, its batch shell or both (scope: api.SignalSteps,
// SignalBatch or SignalFull).
func (d *Daemon) signalJobScope(j *api.Job, sig int, scope string) error {
	addr, err := d.peers.API(j.BatchHost)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	return d.peers.CallNode(ctx, addr, "/internal/signal", agent.SignalRequest{JobID: j.ID, Signal: sig, KillWait: d.conf().KillWaitTime(), Scope: scope, Start: j.StartTime}, nil)
}

// sendWarnSignals delivers --signal=[B:]SIG@secs: once a running job is
// within secs of its time limit, SIG goes to its steps (or with B: to its
// batch shell alone, not the shell's children), once per run, as slurmctld
// sends it (again only if no answer of the node's was committed: intents.go). The leader's timer
// makes this accurate to its tick (Slurm's own resolution is a minute).
func (d *Daemon) sendWarnSignals() {
	now := d.now()
	type warn struct {
		job   *api.Job
		sig   int
		scope string
	}
	var due []warn
	d.fsm.View(func(st *fsm.State) {
		for j := range st.NotPending() {
			lim := j.Spec.TimeLimitMin
			if j.State != api.StateRunning || j.Warned || j.Spec.Signal == "" || lim <= 0 {
				continue
			}
			spec, err := jobspec.ParseSignalSpec(j.Spec.Signal)
			if err != nil || spec.Signal == 0 {
				continue
			}
			at := j.StartTime.Add(time.Duration(lim)*time.Minute - time.Duration(spec.Seconds)*time.Second)
			if now.Before(at) {
				continue
			}
			scope := api.SignalSteps
			if spec.Batch {
				scope = api.SignalShell
			}
			cp := *j
			due = append(due, warn{&cp, spec.Signal, scope})
		}
	})
	sort.Slice(due, func(a, b int) bool { return due[a].job.ID < due[b].job.ID })
	// The signal goes first and Warned is committed once the node took it:
	// a leader that dies in between leaves the job unwarned, and the next
	// one sends it (at least once, never lost).
	for _, w := range due {
		if !d.intents.claimWarn(w.job) {
			continue // on its way
		}
		d.log.Info("sending the job's warning signal", "job", w.job.ID, "signal", w.sig)
		go func() {
			defer d.intents.warnDone(w.job)
			if err := d.signalJobScope(w.job, w.sig, w.scope); err != nil {
				d.log.Warn("warning signal failed; it is sent again", "job", w.job.ID, "err", err)
				return
			}
			if _, err := d.propose(&fsm.Warned{JobIDs: []uint64{w.job.ID}}); err != nil {
				d.log.Warn("warning signal commit failed", "job", w.job.ID, "err", err)
			}
		}()
	}
}
