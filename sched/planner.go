package sched

import (
	"slices"
	"sort"
	"time"
)

// Planner keeps a snapshot and the compiled state of its last pass, so that
// the pass after a small change (a job ends, starts, is submitted or
// cancelled, time moves on) redoes only what the change can affect. Plan
// always returns exactly what Schedule returns for Snapshot(); the tests
// hold it to that.
//
// The saving needs priorities that stand still between passes: set
// Config.PriorityCalcPeriod (Slurm's PriorityCalcPeriod, 5 minutes there),
// or use priority/basic. A pass in a new period, a change of fair-share,
// or any change made with Reset, compiles everything again.
//
// A Planner is not safe for concurrent use.
type Planner struct {
	s    Snapshot
	p    *pass
	full bool

	runIx map[uint64]int32 // running job id -> index in s.Running and p.run
	jobIx map[uint64]int32 // pending job id -> index in s.Pending and p.jobs

	// Changes since the last pass, for the replay.
	pre    map[int32]nstate // nodes changed: their state after the last pass
	ghosts []ghost          // jobs of the last pass's queue that left
	dirty  dirtyKeys

	spare *replay // buffers for the next replay

	stats plannerStats
	hook  func(p *pass, ji int32) // for tests: see pass.hook
}

// plannerStats count what the planner did, for tests and benchmarks:
// passes (full, incremental), decisions kept and redone, and of the
// reservation searches of redone jobs, those worked out from the last
// walk's (replanned) and those searched over all nodes (searched).
type plannerStats struct {
	full, incremental, kept, redone int
	replanned, searched             int
}

// Delta is a change to a Planner's snapshot.
type Delta struct {
	// Now is the new time; zero leaves it.
	Now time.Time
	// Ended are running jobs that ended (or were requeued: submit them
	// again). Their use moves to Snapshot.Usage, from their start to Now.
	Ended []uint64
	// Started are jobs now running, usually the last Plan's starts as
	// committed. A pending job of the same id leaves the queue.
	Started []RunningJob
	// Submitted are new pending jobs; one with the id of a pending job
	// replaces it.
	Submitted []Job
	// Removed are pending jobs that left (cancelled, or started elsewhere).
	Removed []uint64
}

// ghost is a job that was in the last pass's queue and is gone: its
// decision still shaped the last pass, at its place in the queue.
type ghost struct {
	tier  int
	qprio uint32
	id    uint64
	dec   decision
}

// dirtyKeys are limit counters that may differ from the last pass's walk:
// a QoS, a user (in any QoS), an association.
type dirtyKeys struct {
	any   bool
	qos   []bool
	user  []bool
	assoc []bool
}

func (d *dirtyKeys) reset() { *d = dirtyKeys{} }

func setAt(s []bool, i int32) []bool {
	if int(i) >= len(s) {
		s = append(s, make([]bool, int(i)+1-len(s))...)
	}
	s[i] = true
	return s
}

func at(s []bool, i int32) bool { return i >= 0 && int(i) < len(s) && s[i] }

// mark notes that a job's counters changed, where a limit reads them.
func (d *dirtyKeys) mark(p *pass, qos, user, assoc int32) {
	if qos >= 0 {
		l := &p.qos[qos].spec.Limits
		if l.GrpJobs > 0 || l.GrpTRES != (TRES{}) {
			d.any = true
			d.qos = setAt(d.qos, qos)
		}
		if l.MaxJobsPerUser > 0 || l.MaxTRESPerUser != (TRES{}) {
			d.any = true
			d.user = setAt(d.user, user)
		}
	}
	if assoc >= 0 && p.tree.nodes[assoc].maxJobs {
		d.any = true
		d.assoc = setAt(d.assoc, assoc)
	}
	for a := assoc; a >= 0; a = p.tree.nodes[a].parent {
		if p.tree.nodes[a].grpLimited {
			d.any = true
			d.assoc = setAt(d.assoc, a)
		}
	}
}

func (d *dirtyKeys) hits(p *pass, j *jobInfo) bool {
	return d.any && (at(d.qos, j.qos) || at(d.user, j.user) || d.chain(p, j.assoc))
}

func (d *dirtyKeys) chain(p *pass, assoc int32) bool {
	for a := assoc; a >= 0; a = p.tree.nodes[a].parent {
		if at(d.assoc, a) {
			return true
		}
	}
	return false
}

// NewPlanner makes a Planner for s. It keeps its own copies of the lists
// it changes (Running, Pending, Usage); the rest of s must not change.
func NewPlanner(s Snapshot) *Planner {
	pl := &Planner{}
	pl.Reset(s)
	return pl
}

// Reset replaces the whole snapshot; the next Plan compiles everything.
func (pl *Planner) Reset(s Snapshot) {
	s.Running = slices.Clone(s.Running)
	s.Pending = slices.Clone(s.Pending)
	s.Usage = slices.Clone(s.Usage)
	pl.s = s
	pl.p = nil
	pl.full = true
	pl.runIx = make(map[uint64]int32, len(s.Running))
	for i := range s.Running {
		pl.runIx[s.Running[i].ID] = int32(i)
	}
	pl.jobIx = make(map[uint64]int32, len(s.Pending))
	for i := range s.Pending {
		pl.jobIx[s.Pending[i].ID] = int32(i)
	}
	pl.pre = map[int32]nstate{}
	pl.ghosts = nil
	pl.dirty.reset()
}

// Snapshot is the planner's current snapshot. It shares the planner's
// lists: read it, do not change it.
func (pl *Planner) Snapshot() Snapshot { return pl.s }

// SetUsage replaces the snapshot's past usage (Snapshot.Usage), as a
// controller that reads it from its accounting does: jobs that end then
// count there rather than by Delta.Ended. Fair-share is worked out again in
// the next pass; when it moves, that pass is a full one.
func (pl *Planner) SetUsage(u []Usage) {
	pl.s.Usage = slices.Clone(u)
}

// Plan runs a pass and returns what Schedule(pl.Snapshot()) returns. The
// result's lists belong to the planner until the next Plan or Apply.
func (pl *Planner) Plan() Result {
	if pl.p == nil || pl.full || !pl.incremental() {
		pl.fullPass()
		pl.stats.full++
	} else {
		pl.stats.incremental++
	}
	return pl.p.res
}

func (pl *Planner) fullPass() {
	p := newPass(&pl.s)
	p.hook = pl.hook
	p.compileJobs()
	p.priorities()
	p.prepare()
	p.walk()
	pl.p = p
	pl.full = false
	pl.pre = map[int32]nstate{}
	pl.ghosts = nil
	pl.dirty.reset()
}

// Apply changes the snapshot.
func (pl *Planner) Apply(d Delta) {
	if !d.Now.IsZero() {
		pl.s.Now = d.Now
	}
	live := pl.p != nil && !pl.full
	for _, id := range d.Ended {
		ri, ok := pl.runIx[id]
		if !ok {
			continue
		}
		rj := &pl.s.Running[ri]
		cpus := 0
		for _, a := range rj.Alloc {
			cpus += a.CPUs
		}
		pl.s.Usage = append(pl.s.Usage, Usage{Account: rj.Account, User: rj.User, CPUs: cpus, Start: rj.StartTime, End: pl.s.Now})
		if live {
			pl.endRunning(ri)
		}
		pl.removeRunning(ri)
	}
	for _, id := range d.Removed {
		pl.removePending(id)
	}
	for i := range d.Started {
		rj := d.Started[i]
		pl.removePending(rj.ID)
		if old, ok := pl.runIx[rj.ID]; ok {
			if live {
				pl.endRunning(old)
			}
			pl.removeRunning(old)
		}
		pl.s.Running = append(pl.s.Running, rj)
		pl.runIx[rj.ID] = int32(len(pl.s.Running) - 1)
		if live {
			pl.addRunning()
		}
	}
	for i := range d.Submitted {
		j := d.Submitted[i]
		pl.removePending(j.ID)
		pl.s.Pending = append(pl.s.Pending, j)
		pl.jobIx[j.ID] = int32(len(pl.s.Pending) - 1)
		if live {
			pl.addPending()
		}
	}
	if live {
		pl.fixSpecs()
	}
}

// fixSpecs points the pass's jobs at the planner's lists again when an
// append moved them.
func (pl *Planner) fixSpecs() {
	p := pl.p
	if len(p.run) > 0 && len(pl.s.Running) >= len(p.run) && p.run[0].spec != &pl.s.Running[0] {
		for i := range p.run {
			p.run[i].spec = &pl.s.Running[i]
		}
	}
	if len(p.jobs) > 0 && len(pl.s.Pending) >= len(p.jobs) && p.jobs[0].spec != &pl.s.Pending[0] {
		for i := range p.jobs {
			p.jobs[i].spec = &pl.s.Pending[i]
		}
	}
}

// keep remembers node n's state as the last pass left it, before a change.
func (pl *Planner) keep(n int32) {
	if _, ok := pl.pre[n]; !ok {
		pl.pre[n] = pl.p.ns[n].clone()
	}
}

// endRunning gives back running job ri's resources now.
func (pl *Planner) endRunning(ri int32) {
	p := pl.p
	r := &p.run[ri]
	for _, n := range r.nodes {
		pl.keep(n)
	}
	p.release(ri, 1)
	p.chargeNoLog(r.qos, r.user, r.assoc, &r.tres, -1)
	p.staleRunning(r.assoc)
	pl.dirty.mark(p, r.qos, r.user, r.assoc)
}

// removeRunning drops s.Running[ri] (and p.run[ri]), moving the last one
// into its place.
func (pl *Planner) removeRunning(ri int32) {
	last := int32(len(pl.s.Running) - 1)
	delete(pl.runIx, pl.s.Running[ri].ID)
	if pl.p != nil && !pl.full {
		p := pl.p
		for _, n := range p.run[ri].nodes {
			p.nodeRuns[n] = slices.DeleteFunc(p.nodeRuns[n], func(x int32) bool { return x == ri })
		}
		if ri != last {
			for _, n := range p.run[last].nodes {
				for k, x := range p.nodeRuns[n] {
					if x == last {
						p.nodeRuns[n][k] = ri
					}
				}
			}
			p.run[ri] = p.run[last]
			p.runDue[ri] = p.runDue[last]
		}
		p.run = p.run[:last]
		p.runDue = p.runDue[:last]
	}
	if ri != last {
		pl.s.Running[ri] = pl.s.Running[last]
		pl.runIx[pl.s.Running[ri].ID] = ri
	}
	pl.s.Running = pl.s.Running[:last]
	if pl.p != nil && !pl.full && ri != last {
		pl.p.run[ri].spec = &pl.s.Running[ri]
	}
}

// addRunning charges the last job of s.Running, as applyRunning does.
func (pl *Planner) addRunning() {
	p := pl.p
	ri := int32(len(pl.s.Running) - 1)
	p.run = append(p.run, runInfo{})
	p.runDue = append(p.runDue, 0)
	pl.fixSpecs()
	p.addRun(ri, func(n int32) { pl.keep(n) })
	r := &p.run[ri]
	p.staleRunning(r.assoc)
	pl.dirty.mark(p, r.qos, r.user, r.assoc)
	for _, n := range r.nodes {
		p.refresh(n)
	}
}

// removePending drops a pending job; if it was in the last pass's queue,
// its decision stays behind as a ghost.
func (pl *Planner) removePending(id uint64) {
	ji, ok := pl.jobIx[id]
	if !ok {
		return
	}
	delete(pl.jobIx, id)
	last := int32(len(pl.s.Pending) - 1)
	if pl.p != nil && !pl.full {
		p := pl.p
		j := &p.jobs[ji]
		if qi := p.queuePos(ji); qi >= 0 {
			if d := &j.dec; d.kind != decNone {
				pl.ghosts = append(pl.ghosts, ghost{tier: j.tier, qprio: j.qprio, id: j.spec.ID, dec: *d})
				if d.kind == decStart {
					pl.dirty.mark(p, j.qos, j.user, j.assoc)
				}
			}
			p.queue[qi].ji = -1
			p.queueDirty = true
		}
		for k := range p.added {
			if p.added[k].ji == ji {
				p.added[k].ji = -1
			}
		}
		if ji != last {
			if qi := p.queuePos(last); qi >= 0 {
				p.queue[qi].ji = ji
			}
			for k := range p.added {
				if p.added[k].ji == last {
					p.added[k].ji = ji
				}
			}
			p.jobs[ji] = p.jobs[last]
			p.jobs[ji].in = ji
			p.res.Jobs[ji] = p.res.Jobs[last]
		}
		p.jobs = p.jobs[:last]
		p.res.Jobs = p.res.Jobs[:last]
	}
	if ri := ji; ri != last {
		pl.s.Pending[ri] = pl.s.Pending[last]
		pl.jobIx[pl.s.Pending[ri].ID] = ri
	}
	pl.s.Pending = pl.s.Pending[:last]
	if pl.p != nil && !pl.full && ji != last {
		pl.p.jobs[ji].spec = &pl.s.Pending[ji]
	}
}

// addPending compiles the last job of s.Pending and queues it.
func (pl *Planner) addPending() {
	p := pl.p
	ji := int32(len(pl.s.Pending) - 1)
	p.jobs = append(p.jobs, jobInfo{})
	p.res.Jobs = append(p.res.Jobs, JobResult{})
	pl.fixSpecs()
	p.compileJob(ji)
	p.jobPriority(&p.jobs[ji])
	if p.prepareJob(ji) {
		p.enqueue(ji)
	}
}

// queuePos finds job ji's entry in the queue (-1: not there).
func (p *pass) queuePos(ji int32) int {
	j := &p.jobs[ji]
	if j.choices == nil {
		return -1
	}
	key := qent{tier: int32(j.tier), qprio: j.qprio, id: j.spec.ID}
	i := sort.Search(len(p.queue), func(k int) bool { return !qentLess(&p.queue[k], &key) })
	if i < len(p.queue) && p.queue[i].id == key.id && p.queue[i].ji >= 0 {
		return i
	}
	return -1
}

// enqueue adds job ji to the queue before the next walk.
func (p *pass) enqueue(ji int32) {
	p.added = append(p.added, p.entry(ji))
	p.queueDirty = true
}

// foldQueue drops the entries of departed jobs and merges the added ones.
func (p *pass) foldQueue() {
	if !p.queueDirty {
		return
	}
	p.queueDirty = false
	add := p.added[:0]
	for _, e := range p.added {
		if e.ji >= 0 {
			e.id = p.jobs[e.ji].spec.ID
			add = append(add, e)
		}
	}
	sort.Slice(add, func(a, b int) bool { return qentLess(&add[a], &add[b]) })
	out := p.queueBuf[:0]
	if cap(out) < len(p.queue)+len(add) {
		out = make([]qent, 0, len(p.queue)+len(add)+1024)
	}
	i := 0
	for _, e := range p.queue {
		if e.ji < 0 {
			continue
		}
		for i < len(add) && qentLess(&add[i], &e) {
			out = append(out, add[i])
			i++
		}
		out = append(out, e)
	}
	out = append(out, add[i:]...)
	p.queue, p.queueBuf = out, p.queue
	p.added = p.added[:0]
}

// incremental runs a pass reusing the last one; false when it cannot.
func (pl *Planner) incremental() bool {
	p := pl.p
	now := pl.s.Now.Unix()
	calcAt := now
	if per := dur(pl.s.Config.PriorityCalcPeriod); per > 0 {
		calcAt = now - ((now%per)+per)%per
	}
	if calcAt != p.calcAt && !p.basic {
		return false
	}
	for _, r := range p.run {
		if r.gone {
			return false
		}
	}
	if p.hadPreemption {
		return false
	}
	p.now, p.calcAt = now, calcAt
	// Fair-share must come out the same, or every priority may move.
	if !p.basic {
		before := make([]float64, len(p.tree.nodes))
		for i := range p.tree.nodes {
			before[i] = p.tree.nodes[i].fs
		}
		p.fairTree()
		for i := range p.tree.nodes {
			if p.tree.nodes[i].fs != before[i] {
				return false
			}
		}
	}
	// Running jobs past their end time are now expected to end now+1.
	for ri, due := range p.runDue {
		if due == 0 || due > p.now {
			continue
		}
		r := &p.run[ri]
		end := max(due, p.now+1)
		if end == r.end {
			continue
		}
		for i, n := range r.nodes {
			pl.keep(n)
			st := &p.ns[n]
			for e := range st.ev {
				if st.ev[e].t == r.end && st.ev[e].d == r.amount[i] {
					st.ev = slices.Delete(st.ev, e, e+1)
					break
				}
			}
			st.addEvent(event{t: end, d: r.amount[i]})
			p.refresh(n)
		}
		r.end = end
	}
	// Jobs whose begin time came join the queue.
	if p.beginAt <= p.now {
		p.beginAt = forever
		for ji := range p.jobs {
			j := &p.jobs[ji]
			if j.reason != ReasonBeginTime {
				continue
			}
			if secs(j.spec.BeginTime) > p.now {
				p.beginAt = min(p.beginAt, secs(j.spec.BeginTime))
				continue
			}
			p.eligibility(j)
			p.jobPriority(j)
			if p.prepareJob(int32(ji)) {
				p.enqueue(int32(ji))
			}
		}
	}
	p.foldQueue()
	rp := newReplay(p, pl, pl.spare)
	p.rp = rp
	p.walk()
	p.rp = nil
	pl.spare = rp.release()
	pl.pre = map[int32]nstate{}
	pl.ghosts = nil
	pl.dirty.reset()
	return true
}
