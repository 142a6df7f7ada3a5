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
// unlimited), and whether it was explicitly given.
func (p *pass) timeLimit(j *jobInfo, pi int32) int64 {
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
	part int32
	tier int
	prio uint32
	k    int // position in the job's own list
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
	pass      int64
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
		cs = append(cs, choice{part: pi, tier: p.parts[pi].spec.PriorityTier, prio: j.prio[k], k: k})
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

// prepare builds every job's result skeleton and the queue.
func (p *pass) prepare() {
	p.res = Result{Jobs: make([]JobResult, len(p.jobs))}
	p.queue = p.queue[:0]
	for ji := range p.jobs {
		if p.prepareJob(int32(ji)) {
			p.queue = append(p.queue, int32(ji))
		}
	}
	sort.Slice(p.queue, func(a, b int) bool { return queueLess(&p.jobs[p.queue[a]], &p.jobs[p.queue[b]]) })
}

// walk walks the queue and decides every job in it, then puts the nodes,
// counters and preempted jobs back as they were so that the pass state is
// the snapshot's again (a Planner applies its next changes to it).
func (p *pass) walk() {
	p.passNo++
	p.res.Starts = nil
	p.res.Preempt = nil
	for i := range p.parts {
		p.parts[i].waiter = false
	}
	p.reservations = 0
	p.hadPreemption = false
	p.failed = map[[2]int32]int64{}
	p.undoing = true
	for _, ji := range p.queue {
		if p.rp != nil {
			p.rp.ghostsBefore(&p.jobs[ji])
			if p.rp.replay(ji) {
				continue
			}
			p.rp.recomputing = true
		}
		p.decide(ji)
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
	if p.rp != nil && j.dec.pass == p.passNo-1 {
		old = j.dec
	}
	j.dec = decision{pass: p.passNo}
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
		t := p.timeLimit(j, c.part)
		end := p.endOf(t)
		key := [2]int32{j.shape, c.part}
		if j.shape >= 0 && !p.opt.noCache {
			if e, ok := p.failed[key]; ok && e <= end {
				continue
			}
		}
		pieces, _ := p.placeNow(j, c.part, end)
		if pieces != nil {
			p.start(j, c.part, pieces, t, nil)
			p.recomputed(ji, &old)
			return
		}
		if j.shape >= 0 {
			if e, ok := p.failed[key]; !ok || end < e {
				p.failed[key] = end
			}
		}
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
			at, pieces, st := p.plan(j, c.part, p.timeLimit(j, c.part))
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
