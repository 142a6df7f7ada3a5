package sched

import (
	"cmp"
	"slices"
	"sort"
)

// replay is a Planner's memory of the last pass while it walks the next.
//
// The new walk starts from the last walk's start plus the changes. Nodes
// whose state differs between the two walks at the current point are in
// delta; for them old holds the state the last walk had there, kept up to
// date by applying the last walk's decisions to it. A job's last decision
// is kept when nothing it depends on differs:
//
//   - its limits: no counter it is checked against changed (else they are
//     checked again and must leave the same partitions open);
//   - "cannot start now": nodes outside delta are as they were (a node
//     with no change in between cannot take at a later now what it could
//     not take before), so if no delta node could take a task of the job,
//     or trying again fails, it still holds. That needs placing to fail for
//     good once nodes only lose room, which first fit by a fixed count
//     among the first nodes that add up does not (pass.placeMonotone):
//     such jobs are tried again;
//   - its reservation, or finding none: the search in each partition comes
//     out the same (quickPlan). A search keeps the spans (stretches in
//     which a node could start the job) that start by a bound a little
//     past its outcome; those of nodes outside delta are the same now
//     (clipped to the new now), those of delta nodes are taken afresh, and
//     the search over them gives what a search over all nodes gives, when
//     it places the job by the bound. A partition that did not win must not
//     win now. Searches whose outcome the spans do not decide (GRES that
//     two pools of a node can serve: pass.spansDecide) are kept only when
//     no delta node could serve them;
//   - whether it got a reservation at all: the same when the number of
//     reservations before it is on the same side of the cap.
//
// Everything else (reasons, the cap count, partition waiters) is worked out
// as the walk goes. A job whose decision cannot be kept is decided afresh,
// its searches again from their kept spans where they can be (replan); the
// nodes where its new decision and its old one differ join delta, and
// leave it when the two walks agree on them again.
type replay struct {
	p           *pass
	pl          *Planner
	inDelta     []bool
	listed      []bool
	delta       []int32 // nodes ever in delta this pass; inDelta says which are now
	cur         []int32 // nodes in delta now, in no particular order
	at          []int32 // position in cur plus one (0: not in delta)
	old         []nstate
	ghosts      []ghost
	gi          int
	recomputing bool
	allDirty    bool
	// farther: the planning horizon is later than in the last walk, so
	// that searches that found nothing may find something now.
	farther bool
	// most is the most any delta node has free now (cpu, memory, GRES by
	// name) and whether one is idle: a quick "no" for hostsNow.
	most      probe
	mostStale bool
	// prof caches the availability profile of delta nodes (see profile);
	// profIDs lists the nodes that have one.
	prof    []nodeProf
	profIDs []int32
	// qp are the quickPlan outcomes of job qpFor's plans (in order) that
	// plansHold worked out, for decide to use.
	qpFor int32
	qp    []quick
	// buffers
	nodeBuf []int32
	stats   []planStat
	oldD    []span
	newD    []span
}

// quick is a quickPlan outcome.
type quick struct {
	t        int64
	pieces   []piece
	st       planStat
	late, ok bool
}

// sameSpans reports whether a and b hold the same spans, in any order; it
// may reorder them.
func sameSpans(a, b []span) bool {
	if len(a) != len(b) {
		return false
	}
	byNode := func(x, y span) int {
		if x.n != y.n {
			return cmp.Compare(x.n, y.n)
		}
		return cmp.Compare(x.s, y.s)
	}
	slices.SortFunc(a, byNode)
	slices.SortFunc(b, byNode)
	return slices.Equal(a, b)
}

// nodeProf is a node's least availability from now to each time: m holds
// until the next step's t, for jobs that end after t.
type nodeProf struct {
	ok    bool
	steps []profStep
}

type profStep struct {
	t int64
	m vec
}

// profile is node n's availability profile, worked out on first use after
// the node last changed.
func (r *replay) profile(n int32) []profStep {
	pr := &r.prof[n]
	if pr.ok {
		return pr.steps
	}
	st, now := &r.p.ns[n], r.p.now
	steps := pr.steps[:0]
	a, ev, i := st.free, st.ev, 0
	for i < len(ev) && ev[i].t <= now {
		a.add(&ev[i].d)
		i++
	}
	m := a
	steps = append(steps, profStep{t: now, m: m})
	for i < len(ev) {
		t := ev[i].t
		for i < len(ev) && ev[i].t == t {
			a.add(&ev[i].d)
			i++
		}
		next := m
		if next.lower(&a); next != m {
			m = next
			steps = append(steps, profStep{t: t, m: m})
		}
	}
	pr.steps, pr.ok = steps, true
	r.profIDs = append(r.profIDs, n)
	return steps
}

// availUntil is availOver(now, now, end) on a node, from its profile.
func availUntil(steps []profStep, end int64) *vec {
	m := &steps[0].m
	for i := 1; i < len(steps) && steps[i].t < end; i++ {
		m = &steps[i].m
	}
	return m
}

// newReplay starts a replay; spare, when given, lends its buffers.
func newReplay(p *pass, pl *Planner, spare *replay) *replay {
	r := &replay{p: p, pl: pl, farther: p.horizon() != p.walkHorizon, qpFor: -1}
	if spare != nil && len(spare.inDelta) == len(p.nodes) {
		r.inDelta, r.listed, r.old, r.at = spare.inDelta, spare.listed, spare.old, spare.at
		r.delta, r.cur = spare.delta[:0], spare.cur[:0]
		r.prof, r.profIDs = spare.prof, spare.profIDs[:0]
	} else {
		n := len(p.nodes)
		r.inDelta, r.listed, r.old, r.at = make([]bool, n), make([]bool, n), make([]nstate, n), make([]int32, n)
		r.prof = make([]nodeProf, n)
	}
	ids := make([]int32, 0, len(pl.pre))
	for n := range pl.pre {
		ids = append(ids, n)
	}
	slices.Sort(ids)
	for _, n := range ids {
		st := pl.pre[n]
		st.refresh(p.now)
		if !st.equal(&p.ns[n]) {
			r.old[n] = st
			r.add(n)
		}
	}
	r.ghosts = pl.ghosts
	sort.SliceStable(r.ghosts, func(a, b int) bool {
		return ghostLess(&r.ghosts[a], r.ghosts[b].tier, r.ghosts[b].qprio, r.ghosts[b].id)
	})
	return r
}

// release clears what the replay marked and hands its buffers back.
func (r *replay) release() *replay {
	for _, n := range r.delta {
		r.inDelta[n], r.listed[n], r.old[n], r.at[n] = false, false, nstate{}, 0
	}
	for _, n := range r.profIDs {
		r.prof[n].ok = false
	}
	return &replay{inDelta: r.inDelta, listed: r.listed, old: r.old, at: r.at, delta: r.delta[:0], cur: r.cur[:0],
		prof: r.prof, profIDs: r.profIDs[:0]}
}

func ghostLess(g *ghost, tier int, qprio uint32, id uint64) bool {
	if g.tier != tier {
		return g.tier > tier
	}
	if g.qprio != qprio {
		return g.qprio > qprio
	}
	return g.id < id
}

func (r *replay) add(n int32) {
	r.mostStale = true
	if !r.inDelta[n] {
		r.inDelta[n] = true
		r.cur = append(r.cur, n)
		r.at[n] = int32(len(r.cur))
	}
	if !r.listed[n] {
		r.listed[n] = true
		r.delta = append(r.delta, n)
	}
}

// drop takes node n out of delta.
func (r *replay) drop(n int32) {
	r.inDelta[n] = false
	r.old[n] = nstate{}
	i := r.at[n] - 1
	last := r.cur[len(r.cur)-1]
	r.cur[i] = last
	r.at[last] = i + 1
	r.cur = r.cur[:len(r.cur)-1]
	r.at[n] = 0
}

// ensure puts node n in delta with its (still common) state as the old one.
func (r *replay) ensure(n int32) {
	if !r.inDelta[n] {
		r.old[n] = r.p.ns[n].clone()
		r.add(n)
	}
}

// settle takes node n out of delta when both walks agree on it again.
func (r *replay) settle(n int32) {
	if r.inDelta[n] && r.old[n].equal(&r.p.ns[n]) {
		r.drop(n)
	}
}

// touch is told before the walk changes node n.
func (r *replay) touch(n int32) {
	r.prof[n].ok = false
	if !r.recomputing {
		return
	}
	r.ensure(n)
	r.mostStale = true
}

// applyOld applies a decision of the last walk to the old states.
func (r *replay) applyOld(d *decision) {
	p := r.p
	switch {
	case d.kind == decStart:
		for i := range d.pieces {
			pc := &d.pieces[i]
			r.ensure(pc.n)
			r.old[pc.n].takeOn(&pc.d, &d.devs[i], d.end)
			r.old[pc.n].refresh(p.now)
			r.settle(pc.n)
		}
	case d.kind == decWait && d.resvPcs != nil:
		for i := range d.resvPcs {
			pc := &d.resvPcs[i]
			r.ensure(pc.n)
			r.old[pc.n].reserveOn(&pc.d, d.resvT, d.resvEnd)
			r.old[pc.n].refresh(p.now)
			r.settle(pc.n)
		}
	}
}

// ghostsBefore applies the decisions of departed jobs queued before e (all
// that are left when e is nil).
func (r *replay) ghostsBefore(e *qent) {
	for r.gi < len(r.ghosts) {
		g := &r.ghosts[r.gi]
		if e != nil && !ghostLess(g, int(e.tier), e.qprio, e.id) {
			return
		}
		r.gi++
		r.applyOld(&g.dec)
	}
}

// recomputed is told that job ji was decided afresh, its last decision
// being old.
func (r *replay) recomputed(ji int32, old *decision) {
	p := r.p
	j := &p.jobs[ji]
	d := &j.dec
	r.recomputing = false
	r.pl.stats.redone++
	r.applyOld(old)
	for _, pcs := range [][]piece{d.pieces, d.resvPcs} {
		for i := range pcs {
			r.settle(pcs[i].n)
		}
	}
	if old.kind == decStart || d.kind == decStart {
		r.pl.dirty.mark(p, j.qos, j.user, j.assoc)
	}
	if d.preempted {
		r.allDirty = true
	}
}

// fast keeps the last decision of the commonest kind of queued job without
// reading more than its queue entry and its shape's request: at most two
// partitions, waiting with no reservation searched (past the cap) or held
// by limits, no limit counter of its changed, and, as stillWaits has it,
// the pass's failure cache or the delta nodes saying it cannot start. It
// reports whether it did.
func (r *replay) fast(e *qent) bool {
	p := r.p
	if e.special || (e.kind != decWait && e.kind != decLimit) {
		return false
	}
	if d := &r.pl.dirty; r.allDirty || (d.any && (at(d.qos, e.qos) || at(d.user, e.user) || d.chain(p, e.assoc))) {
		return false
	}
	if e.kind == decLimit {
		r.pl.stats.kept++
		return true
	}
	if e.attempt || p.bfMax < 0 || p.reservations < p.bfMax {
		return false
	}
	waits := false
	for k := uint8(0); k < e.nparts; k++ {
		if e.open&(1<<k) != 0 {
			waits = waits || p.parts[e.parts[k]].waiter
		}
	}
	if !waits {
		return false
	}
	// As stillWaits does, with the shape's request.
	for k := uint8(0); k < e.nparts; k++ {
		if e.open&(1<<k) == 0 {
			continue
		}
		end := p.endOf(e.lengths[k])
		if fe := p.failedEnd(e.shape, e.parts[k]); fe != 0 && fe <= end {
			continue
		}
		req := &p.shapeReq[e.shape]
		if !p.placeMonotone(req) || r.hostsNow(req, e.parts[k], end) {
			return false
		}
		p.setFailed(e.shape, e.parts[k], end)
	}
	for k := uint8(0); k < e.nparts; k++ {
		if e.open&(1<<k) != 0 {
			p.parts[e.parts[k]].waiter = true
		}
	}
	if e.reason != reasonPriority {
		p.res.Jobs[e.ji].Reason = ReasonPriority
		e.reason = reasonPriority
	}
	r.pl.stats.kept++
	return true
}

// replay keeps job ji's last decision if it still holds, and reports
// whether it did.
func (r *replay) replay(ji int32) bool {
	p := r.p
	r.qpFor = -1
	j := &p.jobs[ji]
	o := &j.dec
	if o.kind != decLimit && o.kind != decWait {
		return false
	}
	if j.req.leaves > 0 || p.canPreempt(j) {
		return false
	}
	open := o.open
	limitWhy := ""
	if r.allDirty || r.pl.dirty.hits(p, j) {
		var now uint64
		for k, c := range j.choices {
			if why := p.limitFor(j, c.part); why != "" {
				if limitWhy == "" {
					limitWhy = why
				}
				continue
			}
			now |= 1 << min(k, 63)
		}
		if now != open {
			return false
		}
	}
	jr := &p.res.Jobs[ji]
	if o.kind == decLimit {
		if limitWhy != "" {
			jr.Reason = limitWhy
		}
		r.keep(o)
		return true
	}
	if attempt := p.bfMax < 0 || p.reservations < p.bfMax; attempt != o.attempt {
		return false
	}
	if !r.stillWaits(j, open) {
		return false
	}
	if o.attempt && !r.plansHold(j, o) {
		return false
	}
	r.keep(o)
	jr.Reason = p.waitReason(j, open)
	if o.attempt {
		p.reservations++
	}
	if o.resvPcs != nil {
		p.reserve(o.resvPcs, o.resvT, o.resvEnd)
		// The old walk made the same reservation: delta nodes among
		// the picked ones get it in their old state too.
		for i := range o.resvPcs {
			if n := o.resvPcs[i].n; r.inDelta[n] {
				r.old[n].reserveOn(&o.resvPcs[i].d, o.resvT, o.resvEnd)
				r.old[n].refresh(p.now)
				r.settle(n)
			}
		}
	}
	p.markWaiting(j, open)
	return true
}

func (r *replay) keep(o *decision) {
	r.pl.stats.kept++
}

// searched counts a reservation search of a redone job: replanned, or
// over all nodes.
func (r *replay) searched(replanned bool) {
	if replanned {
		r.pl.stats.replanned++
	} else {
		r.pl.stats.searched++
	}
}

// stillWaits reports whether job j still cannot start now in any of its
// open partitions: the pass's failure cache says so, or no delta node could
// take a task of it (so its last "cannot start" holds, when placing fails
// for good once nodes lose room: see pass.placeMonotone), or trying again
// fails. Each answer is a fact about this walk, so it goes in the cache.
func (r *replay) stillWaits(j *jobInfo, open uint64) bool {
	p := r.p
	mono := p.placeMonotone(&j.req)
	for k, c := range j.choices {
		if open&(1<<min(k, 63)) == 0 {
			continue
		}
		end := p.endOf(c.length)
		if p.failedFor(j, c.part, end) {
			continue
		}
		if !mono || r.hostsNow(&j.req, c.part, end) {
			if pieces, _ := p.placeNow(j, c.part, end); pieces != nil {
				return false
			}
		}
		p.setFailed(j.shape, c.part, end)
	}
	return true
}

// hostsNow reports whether some delta node could now take a task of a
// job of request req in partition pi running until end.
func (r *replay) hostsNow(req *request, pi int32, end int64) bool {
	p := r.p
	if len(r.cur) == 0 {
		return false
	}
	excl := req.excl || p.parts[pi].excl
	if r.mostStale {
		r.most = probe{}
		for _, n := range r.cur {
			f, node := &p.ns[n].free, &p.nodes[n]
			r.most.cpu = max(r.most.cpu, f.cpu)
			r.most.mem = max(r.most.mem, f.mem)
			r.most.excl = r.most.excl || (node.state == NodeUp && f.cpu == node.total.cpu)
			var g [idxGres]int32
			for k := 0; k < node.npool; k++ {
				if id := node.pools[k].name; id < idxGres {
					g[id] += f.g[k]
				}
			}
			for k := range g {
				r.most.g[k] = max(r.most.g[k], g[k])
			}
		}
		r.mostStale = false
	}
	q := p.probeFor(req, pi, excl, end)
	if r.most.cpu < q.cpu || r.most.mem < q.mem || (excl && !r.most.excl) {
		return false
	}
	for k := range q.g {
		if r.most.g[k] < q.g[k] {
			return false
		}
	}
	for _, n := range r.cur {
		steps := r.profile(n)
		// What the node has now is the most it has over any stretch.
		if now := &steps[0].m; now.cpu < q.cpu || now.mem < q.mem || !p.eligibleNode(req, pi, n) {
			continue
		}
		if req.capOn(&p.nodes[n], availUntil(steps, end), excl) > 0 {
			return true
		}
	}
	return false
}

// quickPlan works out what plan gives now for job j in the partition of
// st, its plan there in the last walk, without searching all the nodes
// where it can: the spans that start by st.bound are the last walk's
// (clipped to now) but for those of delta nodes, which are taken afresh,
// and the search over them comes out as over all when it places the job by
// bound (or finds nothing with bound the horizon). With no early spans
// kept, a plan that no delta node can serve comes out as before. The
// outcome is: known (t, pieces when found, nst), or known only to be past
// nst.bound (late), or not known (ok false).
func (r *replay) quickPlan(j *jobInfo, st *planStat, need bool) (t int64, pieces []piece, nst planStat, late, ok bool) {
	p := r.p
	if st.k == 0 {
		return 0, nil, *st, false, true
	}
	pi := st.part
	req := &j.req
	excl := req.excl || p.parts[pi].excl
	k, q, _ := p.shape(j, pi, excl)
	horizon := p.horizon()
	length := p.timeLimit(j, pi)
	// The delta nodes that could serve the job.
	nodes := r.nodeBuf[:0]
	for _, n := range r.cur {
		if !p.eligibleNode(req, pi, n) {
			continue
		}
		node := &p.nodes[n]
		if req.capOn(node, &node.total, excl) >= q {
			nodes = append(nodes, n)
		}
	}
	r.nodeBuf = nodes
	// With no delta node to serve it, a search that went cleanly comes
	// out as before (time only moved on).
	if len(nodes) == 0 && st.clean && (st.found && st.t >= p.now && !need || !st.found && !r.farther) {
		return st.t, nil, *st, st.late, true
	}
	if st.early == nil || !st.spans {
		return 0, nil, nst, false, false
	}
	one := k == 1 && len(req.want) == 0
	// The last walk's spans of delta nodes, and whether clipping to now
	// changes others.
	oldD, clipped := r.oldD[:0], false
	for _, sp := range st.early {
		switch {
		case r.inDelta[sp.n]:
			oldD = append(oldD, sp)
		case sp.s < p.now:
			if one && sp.f < p.now && p.now <= st.bound {
				return 0, nil, nst, false, false // its next span is not known
			}
			clipped = true
		}
	}
	// Spans that only start later because time moved on do not change a
	// clean search with its outcome still ahead: it had fewer nodes than
	// it needs free together at every moment before its outcome.
	changed := clipped && !(st.clean && (!st.found || st.t >= p.now))
	r.oldD = oldD
	var node *nodeInfo
	fits := func(a *vec) bool { return req.capOn(node, a, excl) >= q }
	newD := r.newD[:0]
	for _, n := range nodes {
		node = &p.nodes[n]
		want := len(req.want) > 0 && slices.Contains(req.want, n)
		newD = p.ns[n].spans(newD, n, want, p.now, st.bound, length, fits, one)
	}
	r.newD = newD
	complete := st.bound >= horizon && !r.farther
	if !changed && !(need && st.found) && !(st.found && st.t > st.bound) && sameSpans(oldD, newD) {
		// The spans by bound are the last walk's: so is the outcome.
		nst = *st
		nst.late = !st.found && !st.capped && !complete
		return st.t, nil, nst, nst.late, true
	}
	early := make([]span, 0, len(st.early)-len(oldD)+len(newD))
	for _, sp := range st.early {
		if r.inDelta[sp.n] {
			continue
		}
		// Clipped to now; past the bound it is not ours to know.
		if sp.s < p.now {
			if sp.s = p.now; sp.f < sp.s || sp.s > st.bound {
				continue
			}
		}
		early = append(early, sp)
	}
	early = append(early, newD...)
	nst = *st
	if one {
		slices.SortFunc(early, func(a, b span) int {
			if a.s != b.s {
				return cmp.Compare(a.s, b.s)
			}
			return cmp.Compare(a.n, b.n)
		})
		t, pieces, nst = p.pickOne(j, pi, length, excl, early, nst)
		if nst.early == nil {
			return 0, nil, nst, false, false
		}
	} else {
		slices.SortFunc(early, func(a, b span) int {
			if a.n != b.n {
				return cmp.Compare(a.n, b.n)
			}
			return cmp.Compare(a.s, b.s)
		})
		t, pieces, nst = p.sweep(j, early, k, q, length, excl, nst, false)
		nst.early = early
	}
	nst.late = !nst.found && !nst.capped && !complete
	return t, pieces, nst, nst.late, true
}

// plansHold reports whether job j's last reservation search would come out
// the same now (quickPlan in each partition), bringing the plans' stats up
// to this walk when it does. A partition whose outcome is known only to be
// past its bound must not win by then.
func (r *replay) plansHold(j *jobInfo, o *decision) bool {
	p := r.p
	if o.resvPcs != nil && o.resvT < p.now {
		return false
	}
	stats := append(r.stats[:0], o.plans...)
	r.stats = stats
	r.qpFor, r.qp = j.in, r.qp[:0]
	chosen := -1
	for si := range o.plans {
		if o.resvPcs != nil && o.plans[si].part == o.resvPart {
			chosen = si
			break
		}
	}
	if o.resvPcs != nil && chosen < 0 {
		return false
	}
	for si := range o.plans {
		t, pcs, nst, late, ok := r.quickPlan(j, &o.plans[si], false)
		r.qp = append(r.qp, quick{t: t, pieces: pcs, st: nst, late: late, ok: ok})
		if !ok {
			return false
		}
		switch {
		case si == chosen:
			if late || !nst.found || t != o.resvT || pcs != nil && !slices.Equal(pcs, o.resvPcs) {
				return false
			}
		case chosen < 0:
			if late || nst.found {
				return false
			}
		case late:
			// Done after bound at the soonest: it must not beat the
			// reservation (ties go to the partition tried first).
			if nst.bound+1 < o.resvT || nst.bound+1 == o.resvT && si < chosen {
				return false
			}
		case nst.found && (t < o.resvT || t == o.resvT && si < chosen):
			return false
		}
		stats[si] = nst
	}
	copy(o.plans, stats)
	return true
}

func collectSpans(st *nstate, out []span, now, horizon, length int64, fits func(*vec) bool) []span {
	return st.spans(out, 0, false, now, horizon, length, fits, false)
}

func covers(spans []span, t int64) bool {
	for _, sp := range spans {
		if sp.s <= t && t <= sp.f {
			return true
		}
	}
	return false
}
