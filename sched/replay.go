package sched

import (
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
//     or trying again fails, it still holds;
//   - its reservation, or finding none: planning is first fit by count, so
//     it holds while the most nodes free together before the reserved time
//     (plus delta nodes that became free then) stay short of the count, the
//     nodes free at that time (give or take delta nodes) still make it, and
//     no delta node ahead of the picked ones became free then; other
//     partitions of the job must stay short up to that time. Plans on a
//     switch tree or with -w are kept only if no delta node could start the
//     job by then in either walk;
//   - whether it got a reservation at all: the same when the number of
//     reservations before it is on the same side of the cap.
//
// Everything else (reasons, the cap count, partition waiters) is worked out
// as the walk goes. A job whose decision cannot be kept is decided afresh;
// the nodes where its new decision and its old one differ join delta, and
// leave it when the two walks agree on them again.
type replay struct {
	p           *pass
	pl          *Planner
	inDelta     []bool
	listed      []bool
	delta       []int32 // nodes ever in delta this pass; inDelta says which are now
	old         []nstate
	grow        int64 // bumps when a delta node gets resources back
	memo        map[[2]int32]hostMemo
	ghosts      []ghost
	gi          int
	recomputing bool
	allDirty    bool
	// most is the most any delta node has free now (cpu, memory, GRES by
	// name) and whether one is idle: a quick "no" for hostsNow.
	most      probe
	mostStale bool
}

// hostMemo: as of grow, no node of delta[:upto] could take a task of the
// shape in the partition for a job ending at end or later.
type hostMemo struct {
	grow int64
	upto int
	end  int64
}

// newReplay starts a replay; spare, when given, lends its buffers.
func newReplay(p *pass, pl *Planner, spare *replay) *replay {
	r := &replay{p: p, pl: pl}
	if spare != nil && len(spare.inDelta) == len(p.nodes) {
		r.inDelta, r.listed, r.old, r.delta, r.memo = spare.inDelta, spare.listed, spare.old, spare.delta[:0], spare.memo
		clear(r.memo)
	} else {
		r.inDelta, r.listed, r.old = make([]bool, len(p.nodes)), make([]bool, len(p.nodes)), make([]nstate, len(p.nodes))
		r.memo = map[[2]int32]hostMemo{}
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
		r.inDelta[n], r.listed[n], r.old[n] = false, false, nstate{}
	}
	return &replay{inDelta: r.inDelta, listed: r.listed, old: r.old, delta: r.delta[:0], memo: r.memo}
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
	r.inDelta[n] = true
	if !r.listed[n] {
		r.listed[n] = true
		r.delta = append(r.delta, n)
	}
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
		r.inDelta[n] = false
		r.old[n] = nstate{}
	}
}

// touch is told before the walk changes node n (grows: gives resources
// back).
func (r *replay) touch(n int32, grows bool) {
	if !r.recomputing {
		return
	}
	r.ensure(n)
	r.mostStale = true
	if grows {
		r.grow++
	}
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
// reading more than its queue entry: one partition, waiting with no
// reservation searched (past the cap) or held by limits, no limit counter
// of its changed, and the pass's failure cache already saying it cannot
// start. It reports whether it did.
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
		if e.open&(1<<k) == 0 {
			continue
		}
		if fe := p.failedEnd(e.shape, e.parts[k]); fe == 0 || fe > p.endOf(e.lengths[k]) {
			return false
		}
		waits = waits || p.parts[e.parts[k]].waiter
	}
	if !waits {
		return false
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

// stillWaits reports whether job j still cannot start now in any of its
// open partitions: the pass's failure cache says so, or no delta node could
// take a task of it (so its last "cannot start" holds), or trying again
// fails. Each answer is a fact about this walk, so it goes in the cache.
func (r *replay) stillWaits(j *jobInfo, open uint64) bool {
	p := r.p
	for k, c := range j.choices {
		if open&(1<<min(k, 63)) == 0 {
			continue
		}
		end := p.endOf(c.length)
		if p.failedFor(j, c.part, end) {
			continue
		}
		if r.hostsNow(j, c.part) {
			if pieces, _ := p.placeNow(j, c.part, end); pieces != nil {
				return false
			}
		}
		p.setFailed(j.shape, c.part, end)
	}
	return true
}

// hostsNow reports whether some delta node could now take a task of job j
// in partition pi for the job's time limit.
func (r *replay) hostsNow(j *jobInfo, pi int32) bool {
	p := r.p
	req := &j.req
	excl := req.excl || p.parts[pi].excl
	end := p.endOf(p.timeLimit(j, pi))
	can := func(n int32, end int64) bool {
		if !r.inDelta[n] || !p.eligibleNode(req, pi, n) {
			return false
		}
		a := p.ns[n].availOver(p.now, p.now, end)
		return req.capOn(&p.nodes[n], &a, excl) > 0
	}
	if r.mostStale {
		r.most = probe{}
		for _, n := range r.delta {
			if !r.inDelta[n] {
				continue
			}
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
	if q := p.probeFor(req, pi, excl, end); r.most.cpu < q.cpu || r.most.mem < q.mem || (excl && !r.most.excl) {
		return false
	} else {
		for k := range q.g {
			if r.most.g[k] < q.g[k] {
				return false
			}
		}
	}
	key := [2]int32{j.shape, pi}
	if j.shape >= 0 {
		if m, ok := r.memo[key]; ok && m.grow == r.grow && m.end <= end {
			fresh := true
			for _, n := range r.delta[m.upto:] {
				if can(n, m.end) {
					fresh = false
					break
				}
			}
			if fresh {
				m.upto = len(r.delta)
				r.memo[key] = m
				return false
			}
		}
	}
	for _, n := range r.delta {
		if can(n, end) {
			return true
		}
	}
	if j.shape >= 0 {
		r.memo[key] = hostMemo{grow: r.grow, upto: len(r.delta), end: end}
	}
	return false
}

// plansHold reports whether job j's last reservation search would come out
// the same now (see replay).
func (r *replay) plansHold(j *jobInfo, o *decision) bool {
	p := r.p
	req := &j.req
	horizon := p.horizon()
	var picked []int32 // reserved nodes in delta: they must still do
	if o.resvPcs != nil {
		if o.resvT < p.now {
			return false
		}
		for i := range o.resvPcs {
			pc := &o.resvPcs[i]
			if !r.inDelta[pc.n] {
				continue
			}
			a := p.ns[pc.n].availOver(p.now, o.resvT, o.resvEnd)
			if d, ok := req.demand(&p.nodes[pc.n], &a, pc.tasks, req.excl || p.parts[o.resvPart].excl); !ok || d != pc.d {
				return false
			}
			picked = append(picked, pc.n)
		}
	}
	var sNew, sOld []span
	for _, st := range o.plans {
		pi := st.part
		excl := req.excl || p.parts[pi].excl
		_, q, ok := p.shape(j, pi, excl)
		if !ok {
			continue
		}
		chosen := o.resvPcs != nil && pi == o.resvPart
		cut := horizon
		if o.resvPcs != nil {
			cut = o.resvT
		}
		length := p.timeLimit(j, pi)
		var gain, atDiff int32
		for _, n := range r.delta {
			if !r.inDelta[n] || !p.eligibleNode(req, pi, n) {
				continue
			}
			node := &p.nodes[n]
			if req.capOn(node, &node.total, excl) < q {
				continue
			}
			fits := func(a *vec) bool { return req.capOn(node, a, excl) >= q }
			sNew = collectSpans(&p.ns[n], sNew[:0], p.now, horizon, length, fits)
			sOld = collectSpans(&r.old[n], sOld[:0], p.now, horizon, length, fits)
			if slices.Equal(sNew, sOld) {
				continue
			}
			if !st.exact {
				if (len(sNew) > 0 && sNew[0].s <= cut) || (len(sOld) > 0 && sOld[0].s <= cut) {
					return false
				}
				continue
			}
			if chosen {
				if len(sNew) > 0 && sNew[0].s < o.resvT {
					gain++
				}
				fNew, fOld := covers(sNew, o.resvT), covers(sOld, o.resvT)
				switch {
				case fNew && !fOld:
					if n < st.last {
						return false
					}
					atDiff++
				case !fNew && fOld:
					atDiff--
				}
			} else if len(sNew) > 0 && sNew[0].s <= cut {
				gain++
			}
		}
		if !st.exact {
			if chosen && len(picked) > 0 {
				return false
			}
			continue
		}
		if st.mBefore+gain >= st.k {
			return false
		}
		if chosen && st.cAt+atDiff < st.k {
			return false
		}
	}
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
