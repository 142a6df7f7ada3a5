package cluster

import (
	"context"
	"slices"
	"sort"
	"time"

	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/jobspec"
	"hpc/sched"
)

// leaderLoop does the controller's work while this node leads: it wakes on
// events (a commit, a gossip change) and on a slow timer, marks nodes up or
// down from gossip, and runs the scheduler. Nothing here sleeps waiting for
// work: a submit wakes it at once.
func (d *Daemon) leaderLoop() {
	defer d.wg.Done()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	leading := false
	var notBefore time.Time
	for {
		select {
		case <-d.ctx.Done():
			return
		case l := <-d.raft.LeaderCh():
			notBefore = time.Time{}
			leading = l
			d.caughtUp.Store(false)
			// A new term may follow changes this node did not plan for:
			// its first pass plans afresh.
			d.view.planner.reset()
			d.intents.reset() // intents.go: what a term had in flight is its own
			if l {
				// A new leader applies everything committed before it acts
				// (or answers: leaderRoute waits for caughtUp).
				if err := d.await(d.raft.Barrier(applyTimeout)); err != nil {
					d.log.Warn("barrier failed", "err", err)
					leading = false
				} else {
					d.caughtUp.Store(true)
				}
			}
		case <-d.kick:
		case <-tick.C:
		}
		if !leading || !d.isLeader() {
			continue
		}
		// Every commit wakes the loop: under a storm of submits, a pass
		// that took long holds off the next for as long (at most
		// maxPassGap), so that passes over a long queue do not take all
		// of the leader's time and the FSM's lock from the commits.
		if wait := time.Until(notBefore); wait > 0 {
			select {
			case <-d.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		t0 := time.Now()
		d.reconcileControllers() // controllers.go
		d.sendWarnSignals()      // warnsig.go
		d.enforceTimeLimits()
		d.schedule()
		d.carryOnIntents() // intents.go
		d.purgeOldJobs()
		d.runTriggers() // triggers.go
		notBefore = time.Now().Add(min(time.Since(t0), maxPassGap))
	}
}

// maxPassGap bounds the wait between two passes of the leader's loop.
const maxPassGap = 50 * time.Millisecond

// schedule runs one scheduling pass and commits its decisions: starts,
// and preemptions of the running jobs those starts need. Priorities,
// reasons and expected starts stay in the leader's view (schedView). The
// pass is the leader's planner's (planner.go): what sched.Schedule would
// decide, worked out from the last pass where little changed.
func (d *Daemon) schedule() {
	now := d.now()
	snap, jobs, throttled := d.snapshot(now)
	var res sched.Result
	if len(snap.Pending) > 0 {
		t0 := time.Now()
		res = d.view.planner.plan(snap)
		took := time.Since(t0)
		d.metrics.schedulerPass(took, d.diag.pass(took, now, &res, len(snap.Pending)))
		// The planner owns its lists: extend a copy.
		res.Jobs = slices.Clip(res.Jobs)
	}
	for id := range throttled {
		res.Jobs = append(res.Jobs, sched.JobResult{JobID: id, Reason: "JobArrayTaskLimit"})
	}
	d.view.store(res)

	if len(res.Preempt) > 0 {
		d.preempt(res.Preempt)
	}
	var starts []fsm.JobStart
	for _, s := range res.Starts {
		if len(s.Preempts) > 0 {
			continue // it starts once the jobs it preempts have ended
		}
		j := jobs[s.JobID]
		js := fsm.JobStart{JobID: s.JobID, Alloc: apiAlloc(s.Alloc), Partition: s.Partition, TimeLimitMin: -1}
		if s.TimeLimit > 0 {
			js.TimeLimitMin = int64(s.TimeLimit / time.Minute)
		}
		j.Alloc = js.Alloc
		def := "slurm-%j.out"
		if j.ArrayJobID != 0 {
			def = "slurm-%A_%a.out" // sbatch's default for array tasks
		}
		js.StdOut = jobspec.ExpandPath(j.Spec.Output, j, def)
		js.StdErr = jobspec.ExpandPath(j.Spec.Error, j, js.StdOut)
		starts = append(starts, js)
	}
	if len(starts) == 0 {
		return
	}
	if _, err := d.propose(&fsm.Start{Time: now, Starts: starts}); err != nil {
		d.log.Warn("allocation commit failed", "err", err)
		return
	}
	d.diag.add(&d.diag.started, len(starts))
	if d.o.afterStart != nil {
		d.o.afterStart(starts)
	}
	for _, s := range starts {
		j, _ := d.fsm.Job(s.JobID)
		switch {
		case j == nil || !j.StartTime.Equal(now):
		case j.State == api.StateRunning:
			d.startLaunch(j) // intents.go
		case j.State == api.StateCompleting:
			// Cancelled (or requeued) between its start and its launch:
			// nothing runs yet, so it ends here. Left alone it would stay
			// COMPLETING for ever, its batch host never knowing of it.
			e := api.JobEnd{JobID: j.ID, Node: j.BatchHost, Start: now, End: now}
			if _, err := d.propose(&fsm.End{Time: d.now(), End: e}); err != nil {
				d.log.Warn("ending a job cancelled before its launch failed", "job", j.ID, "err", err)
			}
		}
	}
}

// snapshot builds sched's view of the replicated state: nodes, partitions,
// QoS and associations, running jobs and the pending requests (without the
// array tasks held back by their %N limit, which it returns apart).
func (d *Daemon) snapshot(now time.Time) (sched.Snapshot, map[uint64]*api.Job, map[uint64]bool) {
	cfg := d.conf() // the live partitions and configuration (partitions.go)
	snap := sched.Snapshot{
		Now: now, Config: schedConfig(cfg),
		Partitions: schedPartitions(cfg), Topology: schedTopology(cfg),
	}
	jobs := map[uint64]*api.Job{}
	var throttled map[uint64]bool
	fairshare := snap.Config.PriorityWeightFairshare > 0
	var ended []sched.Usage // for fair-share: schedview.go's usageFor
	d.fsm.View(func(st *fsm.State) {
		throttled = st.ArrayThrottled()
		snap.Nodes = schedNodes(cfg, st)
		snap.QOS, snap.Assocs = st.Acct.SchedInputs()
		// The state's index (fsm/index.go) hands over the jobs not
		// pending and the pending ones without a hold: a held job waits
		// for scontrol release whatever the cluster does (its reason is
		// the hold's, schedView's overlay), so thousands held cost a pass
		// nothing.
		for j := range st.NotPending() {
			if j.State == api.StateRunning || j.State == api.StateCompleting {
				snap.Running = append(snap.Running, runningJob(j))
			} else if fairshare {
				if u, ok := endedUsage(j); ok {
					ended = append(ended, u)
				}
			}
		}
		for j := range st.Unheld() {
			if throttled[j.ID] {
				continue // its array's %N limit is reached
			}
			cp := *j
			jobs[j.ID] = &cp
			r := d.view.request(j)
			r.Dependency = dependencyState(j, st)
			snap.Pending = append(snap.Pending, r)
		}
	})
	if fairshare {
		snap.Usage = d.view.usageFor(d.acct, now, snap.Config.PriorityDecayHalfLife, ended)
	}
	sort.Slice(snap.Running, func(a, b int) bool { return snap.Running[a].ID < snap.Running[b].ID })
	sort.Slice(snap.Pending, func(a, b int) bool { return snap.Pending[a].ID < snap.Pending[b].ID })
	return snap, jobs, throttled
}

// testOnly answers sbatch --test-only: when and where the job would start
// if it were submitted now, from a scheduling pass over the current state
// with the job added. Nothing is committed.
func (d *Daemon) testOnly(j *api.Job) (sched.JobResult, error) {
	now := d.now()
	snap, _, _ := d.snapshot(now)
	var next uint64
	d.fsm.View(func(st *fsm.State) { next = st.NextJobID })
	j.ID, j.SubmitTime = next, now
	snap.Pending = append(snap.Pending, parseRequest(j))
	res := sched.Schedule(snap)
	for _, r := range res.Jobs {
		if r.JobID == next {
			return r, nil
		}
	}
	return sched.JobResult{}, &api.Error{Message: api.ErrConfigUnavailable}
}

// preempt commits the preemption of running jobs and has them killed;
// their resources free up when they end, and the job that needs them
// starts in a later pass.
func (d *Daemon) preempt(ps []sched.Preemption) {
	var marks []fsm.PreemptMark
	d.fsm.View(func(st *fsm.State) {
		for _, p := range ps {
			// A job already preempted is ending: marking and signalling it
			// again would only wake the loop for another pass.
			if j := st.Jobs[p.JobID]; j != nil && j.State == api.StateRunning && j.Preempted == "" {
				marks = append(marks, fsm.PreemptMark{JobID: p.JobID, Mode: string(p.Mode)})
			}
		}
	})
	if len(marks) == 0 {
		return
	}
	if _, err := d.propose(&fsm.Preempt{Preempts: marks}); err != nil {
		d.log.Warn("preemption commit failed", "err", err)
		return
	}
	for _, m := range marks {
		if j, _ := d.fsm.Job(m.JobID); j != nil && j.State == api.StateCompleting {
			d.log.Info("preempting", "job", j.ID, "mode", m.Mode)
			go d.signalJob(j, 0)
		}
	}
}

// enforceTimeLimits has jobs past their time limit killed: SIGTERM, then
// SIGKILL after KillWait; they end TIMEOUT.
func (d *Daemon) enforceTimeLimits() {
	now := d.now()
	var over []*api.Job
	d.fsm.View(func(st *fsm.State) {
		for j := range st.NotPending() {
			lim := j.Spec.TimeLimitMin
			if j.State != api.StateRunning || j.TimedOut || lim <= 0 {
				continue
			}
			if now.After(j.StartTime.Add(time.Duration(lim) * time.Minute)) {
				cp := *j
				over = append(over, &cp)
			}
		}
	})
	if len(over) == 0 {
		return
	}
	ids := make([]uint64, len(over))
	for i, j := range over {
		ids[i] = j.ID
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	if _, err := d.propose(&fsm.Timeout{JobIDs: ids}); err != nil {
		d.log.Warn("timeout commit failed", "err", err)
		return
	}
	for _, j := range over {
		d.log.Info("time limit reached", "job", j.ID)
		go d.signalJob(j, 0)
	}
}

// purgeOldJobs drops finished jobs older than MinJobAge from the state, so
// the controller's memory and squeue's cost follow the live queue.
func (d *Daemon) purgeOldJobs() {
	cutoff := d.now().Add(-time.Duration(d.conf().MinJobAge) * time.Second)
	var ids []uint64
	d.fsm.View(func(st *fsm.State) {
		for j := range st.NotPending() {
			if j.State.Final() && j.EndTime.Before(cutoff) {
				ids = append(ids, j.ID)
			}
		}
	})
	if len(ids) == 0 {
		return
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	if _, err := d.propose(&fsm.Purge{JobIDs: ids}); err != nil {
		d.log.Warn("purge commit failed", "err", err)
	}
}

func (d *Daemon) defMemPerCPU() int64 {
	if def := d.conf().DefMemPerCPU; def > 0 {
		return def
	}
	return 0
}

// signalJobWait is signalJob that returns the node's answer.
func (d *Daemon) signalJobWait(j *api.Job, sig int) error {
	addr, err := d.peers.API(j.BatchHost)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	return d.peers.CallNode(ctx, addr, "/internal/signal", agent.SignalRequest{JobID: j.ID, Signal: sig, KillWait: d.conf().KillWaitTime(), Start: j.StartTime}, nil)
}
