package sched

import (
	"slices"
	"sort"
	"time"
)

// Schedule runs one scheduling pass over the snapshot and returns its
// decisions. It is a pure function of s: the same snapshot always gives the
// same result, and s is not changed.
//
// Jobs are taken in queue order: partition PriorityTier, then priority,
// then job id. A job starts when all the nodes and resources it needs are
// free at once for its whole time limit without touching what is reserved
// for a job before it (gang allocation; it is never partly placed). A job
// that cannot start gets a reservation at the earliest time it could (by the
// time limits of running jobs and the reservations before it), within the
// backfill window and for the first Config.BackfillMaxJobTest such jobs;
// later jobs start early only where they delay no reservation (backfill).
func Schedule(s Snapshot) Result {
	return schedule(&s, options{})
}

// options are knobs for tests.
type options struct {
	// noCache turns off the failure cache, to show it changes nothing.
	noCache bool
}

func schedule(s *Snapshot, o options) Result {
	p := newPass(s)
	p.opt = o
	p.compileJobs()
	p.priorities()
	p.prepare()
	p.walk()
	return p.res
}

// timeLimit is the job's time limit in partition pi in seconds (forever:
// unlimited).
func (p *pass) timeLimit(j *jobInfo, pi int32) int64 {
	for k := range j.choices {
		if j.choices[k].part == pi {
			return j.choices[k].length
		}
	}
	return p.limitIn(j, pi)
}

func (p *pass) limitIn(j *jobInfo, pi int32) int64 {
	if t := dur(j.spec.TimeLimit); t > 0 {
		return t
	}
	part := &p.parts[pi]
	if part.defTime > 0 {
		return part.defTime
	}
	if part.maxTime > 0 {
		return part.maxTime
	}
	return forever
}

func (p *pass) endOf(t int64) int64 {
	if t >= forever {
		return forever
	}
	return p.now + t
}

// partReason is why job j can never start in partition pi as things are
// (partition state and limits, node counts, features, nodes down), or "".
func (p *pass) partReason(j *jobInfo, pi int32) string {
	if pi < 0 {
		return ReasonPartitionConfig
	}
	part := &p.parts[pi]
	sp := part.spec
	r := &j.req
	switch sp.State {
	case PartitionDown:
		return ReasonPartitionDown
	case PartitionInactive:
		return ReasonPartitionInactive
	}
	if part.allowAcc != nil && !part.allowAcc[j.spec.Account] {
		return ReasonAccountNotAllowed
	}
	if part.allowQOS != nil {
		name := j.spec.QOS
		if name == "" {
			name = "normal"
		}
		if !part.allowQOS[name] {
			return ReasonQOSNotAllowed
		}
	}
	if t := dur(j.spec.TimeLimit); t > 0 && part.maxTime > 0 && t > part.maxTime {
		return ReasonPartitionTimeLimit
	}
	need := int64(max(r.nodes, 1))
	if sp.MaxNodes > 0 && need > int64(sp.MaxNodes) {
		return ReasonPartitionNodeLimit
	}
	if need > int64(len(part.nodes)) {
		if need > int64(len(p.nodes)) {
			return ReasonPartitionConfig
		}
		return ReasonPartitionNodeLimit
	}
	if cpus := int64(r.tasks) * int64(r.cpt); cpus > part.cpus {
		if cpus > p.clusterCPU {
			return ReasonPartitionConfig
		}
		return ReasonPartitionNodeLimit
	}
	if r.wantBad {
		return ReasonPartitionConfig
	}
	for _, n := range r.want {
		if !part.has(n) {
			return ReasonPartitionConfig
		}
	}
	if r.cons != nil {
		any := false
		for _, pc := range part.classes {
			if r.cons.match(&p.nodes[pc.rep]) {
				any = true
				break
			}
		}
		if !any {
			return ReasonBadConstraints
		}
	}
	excl := r.excl || part.excl
	ok := func(nodes, tasks int64) bool {
		if r.nodes > 0 {
			return nodes >= int64(r.nodes) && tasks >= int64(r.tasks)
		}
		return tasks >= int64(r.tasks)
	}
	if !ok(p.capacity(j, pi, excl, false)) {
		return ReasonPartitionConfig
	}
	var down []string
	for _, n := range r.want {
		if p.nodes[n].state != NodeUp {
			down = append(down, p.nodes[n].name)
		}
	}
	if len(down) > 0 {
		return ReasonReqNodeNotAvail + ", UnavailableNodes:" + compress(down)
	}
	if !ok(p.capacity(j, pi, excl, true)) {
		return ReasonNodesDown
	}
	return ""
}

// choice is one partition a job may run in, in the order it is tried.
type choice struct {
	part   int32
	tier   int
	prio   uint32
	k      int   // position in the job's own list
	length int64 // time limit there, seconds (forever: unlimited)
}

// Decision kinds.
const (
	decNone  uint8 = iota // not walked
	decLimit              // held back by QoS or association limits
	decStart              // started
	decWait               // waits (perhaps with a reservation)
)

// decision is what the walk decided for a job, kept so that the next pass
// of a Planner can replay it when nothing it depends on changed.
type decision struct {
	kind      uint8
	open      uint64 // choices the limits left open (bit per choice)
	part      int32  // start: partition, pieces, devices, end
	pieces    []piece
	devs      [][maxPools]uint64
	end       int64
	length    int64
	preempted bool
	// wait: whether a reservation was searched for, and what was found
	attempt  bool
	resvT    int64
	resvEnd  int64
	resvPart int32
	resvPcs  []piece
	plans    []planStat // what the search saw in each open partition
}

// prepareJob fills job ji's result skeleton and, when it is eligible, the
// partitions it may run in; it reports whether the job goes in the queue.
func (p *pass) prepareJob(ji int32) bool {
	j := &p.jobs[ji]
	jr := &p.res.Jobs[ji]
	cfg := &p.s.Config
	*jr = JobResult{JobID: j.spec.ID, Factors: j.factors, Weighted: weighted(j.factors, cfg)}
	for _, pr := range j.prio {
		jr.Priority = max(jr.Priority, pr)
	}
	if len(j.parts) > 1 {
		jr.PartitionPriorities = make([]PartitionPriority, len(j.parts))
		for k, pi := range j.parts {
			name := ""
			if k < len(j.spec.Partitions) {
				name = j.spec.Partitions[k]
			}
			if pi >= 0 {
				name = p.parts[pi].name
			}
			jr.PartitionPriorities[k] = PartitionPriority{Partition: name, Priority: j.prio[k]}
		}
	}
	j.choices = nil
	if !j.eligible {
		jr.Reason = j.reason
		return false
	}
	var cs []choice
	first := ""
	for k, pi := range j.parts {
		if why := p.partReason(j, pi); why != "" {
			if first == "" {
				first = why
			}
			continue
		}
		cs = append(cs, choice{part: pi, tier: p.parts[pi].spec.PriorityTier, prio: j.prio[k], k: k, length: p.limitIn(j, pi)})
	}
	if len(cs) == 0 {
		jr.Reason = first
		return false
	}
	sort.SliceStable(cs, func(a, b int) bool {
		if cs[a].tier != cs[b].tier {
			return cs[a].tier > cs[b].tier
		}
		return cs[a].prio > cs[b].prio
	})
	j.choices = cs
	j.tier, j.qprio = cs[0].tier, cs[0].prio
	return true
}

// qent is a queued job with what the walk reads of it most, kept in queue
// order so that a walk over a long queue reads memory in order.
type qent struct {
	id    uint64
	qprio uint32
	tier  int32
	ji    int32 // index in pass.jobs; -1 for a job gone from the queue
	shape int32
	// the job's partition choices (at most two on the fast path) and
	// time limits there
	parts   [2]int32
	lengths [2]int64
	nparts  uint8
	open    uint8 // choices the limits left open, last walk
	qos     int32
	user    int32
	assoc   int32
	// the last decision, for the Planner's fast path
	kind    uint8
	attempt bool
	reason  uint8 // 1: Priority, 2: Resources
	special bool  // never on the fast path: many partitions, no shape, --switches, may preempt
}

const (
	reasonPriority  = 1
	reasonResources = 2
)

// queueLess orders the queue: tier, priority, then job id.
func queueLess(x, y *jobInfo) bool {
	if x.tier != y.tier {
		return x.tier > y.tier
	}
	if x.qprio != y.qprio {
		return x.qprio > y.qprio
	}
	return x.spec.ID < y.spec.ID
}

func qentLess(x, y *qent) bool {
	if x.tier != y.tier {
		return x.tier > y.tier
	}
	if x.qprio != y.qprio {
		return x.qprio > y.qprio
	}
	return x.id < y.id
}

// entry makes job ji's queue entry.
func (p *pass) entry(ji int32) qent {
	j := &p.jobs[ji]
	e := qent{id: j.spec.ID, qprio: j.qprio, tier: int32(j.tier), ji: ji, shape: j.shape,
		qos: j.qos, user: j.user, assoc: j.assoc}
	for k := 0; k < len(j.choices) && k < 2; k++ {
		e.parts[k], e.lengths[k] = j.choices[k].part, j.choices[k].length
	}
	e.nparts = uint8(min(len(j.choices), 2))
	e.special = len(j.choices) > 2 || j.shape < 0 || j.req.leaves > 0 || p.canPreempt(j)
	return e
}

// prepare builds every job's result skeleton and the queue.
func (p *pass) prepare() {
	p.res = Result{Jobs: make([]JobResult, len(p.jobs))}
	p.queue = p.queue[:0]
	for ji := range p.jobs {
		if p.prepareJob(int32(ji)) {
			p.queue = append(p.queue, p.entry(int32(ji)))
		}
	}
	sort.Slice(p.queue, func(a, b int) bool { return qentLess(&p.queue[a], &p.queue[b]) })
}

// failedEnd and setFailed are the pass's failure cache: a job of a shape
// that could not start in a partition by an end cannot start there either
// with that end or a later one, as resources only shrink during a walk.
func (p *pass) failedEnd(shape, part int32) int64 {
	if i := int(shape)*len(p.parts) + int(part); shape >= 0 && i < len(p.failed) {
		return p.failed[i]
	}
	return 0
}

func (p *pass) setFailed(shape, part int32, end int64) {
	if shape < 0 {
		return
	}
	i := int(shape)*len(p.parts) + int(part)
	if i >= len(p.failed) {
		p.failed = append(p.failed, make([]int64, (len(p.shapes)+1)*len(p.parts)-len(p.failed))...)
	}
	if e := p.failed[i]; e == 0 || end < e {
		p.failed[i] = end
	}
}

// failedFor reports whether the cache says job j cannot start by end.
func (p *pass) failedFor(j *jobInfo, part int32, end int64) bool {
	if p.opt.noCache {
		return false
	}
	e := p.failedEnd(j.shape, part)
	return e != 0 && e <= end
}

// walk walks the queue and decides every job in it, then puts the nodes,
// counters and preempted jobs back as they were so that the pass state is
// the snapshot's again (a Planner applies its next changes to it).
func (p *pass) walk() {
	p.passNo++
	p.walkHorizon = p.horizon()
	p.res.Starts = nil
	p.res.Preempt = nil
	for i := range p.parts {
		p.parts[i].waiter = false
	}
	p.reservations = 0
	p.hadPreemption = false
	if n := len(p.shapes) * len(p.parts); cap(p.failed) >= n {
		p.failed = p.failed[:n]
		clear(p.failed)
	} else {
		p.failed = make([]int64, n)
	}
	p.undoing = true
	for qi := range p.queue {
		e := &p.queue[qi]
		ji := e.ji
		if p.rp != nil {
			p.rp.ghostsBefore(e)
		}
		if p.hook != nil {
			p.hook(p, ji)
		}
		if p.rp != nil {
			if p.rp.fast(e) {
				continue
			}
			if !p.rp.replay(ji) {
				p.rp.recomputing = true
				p.decide(ji)
			}
		} else {
			p.decide(ji)
		}
		j := &p.jobs[ji]
		e.kind, e.attempt, e.reason, e.open = j.dec.kind, j.dec.attempt, 0, uint8(j.dec.open&3)
		switch p.res.Jobs[ji].Reason {
		case ReasonPriority:
			e.reason = reasonPriority
		case ReasonResources:
			e.reason = reasonResources
		}
	}
	if p.rp != nil {
		p.rp.ghostsBefore(nil)
	}
	p.undo()
}

// decide runs one job through the walk: limits, start now, preemption,
// else wait with a reason and perhaps a reservation.
func (p *pass) decide(ji int32) {
	j := &p.jobs[ji]
	jr := &p.res.Jobs[ji]
	var old decision
	if p.rp != nil {
		old = j.dec
	}
	j.dec = decision{}
	d := &j.dec
	limitWhy := ""
	for k, c := range j.choices {
		if why := p.limitFor(j, c.part); why != "" {
			if limitWhy == "" {
				limitWhy = why
			}
			continue
		}
		d.open |= 1 << min(k, 63)
	}
	if d.open == 0 {
		d.kind = decLimit
		jr.Reason = limitWhy
		p.clearExpected(jr)
		p.recomputed(ji, &old)
		return
	}
	for k, c := range j.choices {
		if d.open&(1<<min(k, 63)) == 0 {
			continue
		}
		t := c.length
		end := p.endOf(t)
		if p.failedFor(j, c.part, end) {
			continue
		}
		pieces, _ := p.placeNow(j, c.part, end)
		if pieces != nil {
			p.start(j, c.part, pieces, t, nil)
			p.recomputed(ji, &old)
			return
		}
		p.setFailed(j.shape, c.part, end)
	}
	if p.canPreempt(j) {
		for k, c := range j.choices {
			if d.open&(1<<min(k, 63)) == 0 {
				continue
			}
			t := p.timeLimit(j, c.part)
			if pieces, victims := p.preemptFor(j, c.part, p.endOf(t)); pieces != nil {
				// Preemption frees resources: failures seen so far may
				// not hold any more.
				clear(p.failed)
				p.start(j, c.part, pieces, t, victims)
				p.recomputed(ji, &old)
				return
			}
		}
	}
	d.kind = decWait
	jr.Reason = p.waitReason(j, d.open)
	p.clearExpected(jr)
	if p.bfMax < 0 || p.reservations < p.bfMax {
		p.reservations++
		d.attempt = true
		bestT := int64(forever)
		for k, c := range j.choices {
			if d.open&(1<<min(k, 63)) == 0 {
				continue
			}
			at, pieces, st, ok := p.replan(j, c.part, &old)
			if !ok {
				at, pieces, st = p.plan(j, c.part, p.timeLimit(j, c.part))
			}
			if p.rp != nil {
				p.rp.searched(ok)
			}
			d.plans = append(d.plans, st)
			if st.found && at < bestT {
				bestT, d.resvPcs, d.resvPart = at, pieces, c.part
			}
		}
		if d.resvPcs != nil {
			d.resvT = bestT
			p.applyReservation(j, d)
		}
	}
	p.markWaiting(j, d.open)
	p.recomputed(ji, &old)
}

// replan is plan worked out from the job's plan in the partition in its
// last decision (old), when a replaying Planner can show what it gives now.
func (p *pass) replan(j *jobInfo, pi int32, old *decision) (int64, []piece, planStat, bool) {
	if p.rp == nil {
		return 0, nil, planStat{}, false
	}
	r := p.rp
	for i := range old.plans {
		if old.plans[i].part != pi {
			continue
		}
		// plansHold may have worked it out just before (without the
		// pieces of an outcome it found unchanged).
		var q quick
		cached := r.qpFor == j.in && i < len(r.qp)
		if cached {
			q = r.qp[i]
		}
		if !cached || q.ok && !q.late && q.st.found && q.pieces == nil {
			q.t, q.pieces, q.st, q.late, q.ok = r.quickPlan(j, &old.plans[i], true)
		}
		if !q.ok || q.late || q.st.found && q.pieces == nil {
			return 0, nil, planStat{}, false
		}
		return q.t, q.pieces, q.st, true
	}
	return 0, nil, planStat{}, false
}

func (p *pass) canPreempt(j *jobInfo) bool {
	return p.preempt && j.qos >= 0 && slices.Contains(p.qos[j.qos].preempt, true)
}

// limitFor is the limit reason for job j in partition pi ("" when none).
func (p *pass) limitFor(j *jobInfo, pi int32) string {
	t := p.timeLimit(j, pi)
	if t >= forever {
		t = 0
	}
	return p.limitReason(j, t)
}

// waitReason is Resources for the first job waiting in its partitions when
// free resources do not hold it, Priority when a job before it waits there
// or reservations hold the room it would take.
func (p *pass) waitReason(j *jobInfo, open uint64) string {
	for k, c := range j.choices {
		if open&(1<<min(k, 63)) != 0 && p.parts[c.part].waiter {
			return ReasonPriority
		}
	}
	for k, c := range j.choices {
		if open&(1<<min(k, 63)) == 0 {
			continue
		}
		if pieces, _ := p.placeNow(j, c.part, p.now+1); pieces != nil {
			return ReasonPriority
		}
	}
	return ReasonResources
}

func (p *pass) markWaiting(j *jobInfo, open uint64) {
	for k, c := range j.choices {
		if open&(1<<min(k, 63)) != 0 {
			p.parts[c.part].waiter = true
		}
	}
}

func (p *pass) clearExpected(jr *JobResult) {
	jr.ExpectedStart = time.Time{}
	jr.ExpectedNodes = nil
	jr.Partition = ""
}

// applyReservation holds a wait decision's reservation and reports it.
func (p *pass) applyReservation(j *jobInfo, d *decision) {
	d.resvEnd = p.endAt(d.resvT, p.timeLimit(j, d.resvPart))
	p.reserve(d.resvPcs, d.resvT, d.resvEnd)
	jr := &p.res.Jobs[j.in]
	jr.ExpectedStart = time.Unix(d.resvT, 0).UTC()
	jr.Partition = p.parts[d.resvPart].name
	jr.ExpectedNodes = p.names(d.resvPcs)
}

// recomputed tells a replaying Planner that job ji was decided afresh.
func (p *pass) recomputed(ji int32, old *decision) {
	if p.rp != nil {
		p.rp.recomputed(ji, old)
	}
}

func (p *pass) endAt(t, length int64) int64 {
	if length >= forever {
		return forever
	}
	return t + length
}

func (p *pass) names(pieces []piece) []string {
	out := make([]string, len(pieces))
	for i, pc := range pieces {
		out[i] = p.nodes[pc.n].name
	}
	return out
}

// start commits a start: resources taken, limits charged, result written.
func (p *pass) start(j *jobInfo, pi int32, pieces []piece, length int64, victims []int32) {
	end := p.endOf(length)
	devs := p.take(pieces, end)
	d := &j.dec
	d.kind, d.part, d.pieces, d.devs, d.end, d.length, d.preempted = decStart, pi, pieces, devs, end, length, victims != nil
	if victims != nil {
		p.hadPreemption = true
	}
	st := Start{JobID: j.spec.ID, Partition: p.parts[pi].name}
	if length < forever {
		st.TimeLimit = time.Duration(length) * time.Second
	}
	var used TRES
	for i, pc := range pieces {
		node := &p.nodes[pc.n]
		a := Alloc{Node: node.name, CPUs: int(pc.d.cpu), Tasks: int(pc.tasks), MemMB: pc.d.mem}
		for k := 0; k < node.npool; k++ {
			if devs[i][k] == 0 {
				continue
			}
			pl := &node.pools[k]
			ga := GresAlloc{Name: p.gresNames()[pl.name], Type: p.gresTypes()[pl.typ], Indices: devIndices(pl, devs[i][k])}
			a.Gres = append(a.Gres, ga)
			if ga.Name == "gpu" {
				used.GPU += int64(len(ga.Indices))
			}
		}
		used.CPU += int64(pc.d.cpu)
		used.MemMB += pc.d.mem
		used.Node++
		st.Alloc = append(st.Alloc, a)
	}
	p.charge(j.qos, j.user, j.assoc, &used, 1)
	res := &p.res
	for _, v := range victims {
		r := &p.run[v]
		st.Preempts = append(st.Preempts, r.spec.ID)
		res.Preempt = append(res.Preempt, Preemption{JobID: r.spec.ID, Mode: p.qos[r.qos].mode, For: j.spec.ID})
	}
	res.Starts = append(res.Starts, st)
	jr := &res.Jobs[j.in]
	jr.Reason = ""
	jr.ExpectedStart = time.Unix(p.now, 0).UTC()
	jr.Partition = st.Partition
	jr.ExpectedNodes = p.names(pieces)
}

// gresNames and gresTypes invert the pass's GRES name and type ids.
func (p *pass) gresNames() []string {
	if p.gresNameList == nil {
		p.gresNameList = make([]string, len(p.gresName))
		for k, v := range p.gresName {
			p.gresNameList[v] = k
		}
	}
	return p.gresNameList
}

func (p *pass) gresTypes() []string {
	if p.gresTypeList == nil {
		p.gresTypeList = make([]string, len(p.gresType))
		for k, v := range p.gresType {
			p.gresTypeList[v] = k
		}
	}
	return p.gresTypeList
}
