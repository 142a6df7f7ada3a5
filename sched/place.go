package sched

import (
	"cmp"
	"slices"
	"sort"
)

// availOver is the least a node has available at any time in [from, to):
// free now, plus running jobs that end, less reservations.
func (p *pass) availOver(n int32, from, to int64) vec {
	return p.ns[n].availOver(p.now, from, to)
}

func (st *nstate) availOver(now, from, to int64) vec {
	a := st.free
	ev := st.ev
	if st.dl >= to && from <= now {
		return a // only releases come before to: now is the least
	}
	i := 0
	for i < len(ev) && ev[i].t <= from {
		a.add(&ev[i].d)
		i++
	}
	m := a
	for i < len(ev) && ev[i].t < to {
		t := ev[i].t
		for i < len(ev) && ev[i].t == t {
			a.add(&ev[i].d)
			i++
		}
		m.lower(&a)
	}
	return m
}

// addEvent inserts an event in time order (after events of the same time).
func (p *pass) addEvent(n int32, e event) { p.ns[n].addEvent(e) }

func (st *nstate) addEvent(e event) {
	ev := st.ev
	i := sort.Search(len(ev), func(k int) bool { return eventCmp(&ev[k], &e) > 0 })
	ev = append(ev, event{})
	copy(ev[i+1:], ev[i:])
	ev[i] = e
	st.ev = ev
}

// eventCmp orders events by time, then by amount, so that a node's events
// are the same list however they were added.
func eventCmp(a, b *event) int {
	switch {
	case a.t != b.t:
		return cmp.Compare(a.t, b.t)
	case a.d.cpu != b.d.cpu:
		return cmp.Compare(a.d.cpu, b.d.cpu)
	case a.d.mem != b.d.mem:
		return cmp.Compare(a.d.mem, b.d.mem)
	}
	for k := range a.d.g {
		if a.d.g[k] != b.d.g[k] {
			return cmp.Compare(a.d.g[k], b.d.g[k])
		}
	}
	return 0
}

// refresh recomputes a node's least future availability and its index
// entry after its free resources or events changed.
func (p *pass) refresh(n int32) {
	p.ns[n].refresh(p.now)
	p.idx.update(p, n)
}

func (st *nstate) refresh(now int64) {
	if st.dl == forever {
		st.cons = st.free
	} else {
		st.cons = st.availOver(now, now, forever)
	}
}

// takeOn starts d on the node now until end, with the given devices.
func (st *nstate) takeOn(d *vec, devs *[maxPools]uint64, end int64) {
	st.free.sub(d)
	for k := range devs {
		st.dev[k] &^= devs[k]
	}
	if end < forever {
		st.addEvent(event{t: end, d: *d})
	}
}

// reserveOn holds d on the node from t until end.
func (st *nstate) reserveOn(d *vec, t, end int64) {
	st.addEvent(event{t: t, d: d.neg()})
	if end < forever {
		st.addEvent(event{t: end, d: *d})
	}
	st.dl = min(st.dl, t)
}

// equal compares two states of a node (cons follows from the rest and the
// time, so it is left out).
func (st *nstate) equal(o *nstate) bool {
	return st.free == o.free && st.dev == o.dev && st.dl == o.dl && slices.Equal(st.ev, o.ev)
}

// piece is one node's share of a placement.
type piece struct {
	n     int32
	tasks int32
	d     vec
}

// eligibleNode reports whether node n may ever serve the job in partition
// pi: in the partition, up, matching -C, not excluded.
func (p *pass) eligibleNode(r *request, pi int32, n int32) bool {
	return p.parts[pi].has(n) && p.nodes[n].state == NodeUp && r.cons.match(&p.nodes[n]) && !r.excluded(n)
}

// probeFor is the least one node must have for one task of the job.
func (p *pass) probeFor(r *request, pi int32, excl bool, end int64) probe {
	q := probe{cpu: r.cpt, mem: r.memNode + r.memTask, excl: excl, part: p.parts[pi].bit, end: end}
	if r.cons != nil {
		q.feats = r.cons.all
	}
	for _, g := range r.gres {
		if g.name >= 0 && g.name < idxGres {
			q.g[g.name] += g.perNode + g.perTask
		}
	}
	return q
}

// placeNow looks for room to start job j in partition pi now, running
// until end. It returns the pieces (nil: no room) and, when only the leaf
// switch bound stood in the way, true.
func (p *pass) placeNow(j *jobInfo, pi int32, end int64) ([]piece, bool) {
	r := &j.req
	excl := r.excl || p.parts[pi].excl
	topo := len(p.topo.sw) > 0
	var cands []cand
	var sum int64
	capOf := func(n int32) int32 {
		if !p.eligibleNode(r, pi, n) {
			return 0
		}
		a := p.availOver(n, p.now, end)
		return r.capOn(&p.nodes[n], &a, excl)
	}
	// -w nodes come first and must all be used.
	for _, n := range r.want {
		c := capOf(n)
		if c == 0 {
			return nil, false
		}
		cands = append(cands, cand{n, c})
		sum += int64(c)
	}
	need := r.nodes
	enough := func() bool {
		if need > 0 {
			return int32(len(cands)) >= need && sum >= int64(r.tasks)
		}
		return sum >= int64(r.tasks)
	}
	multi := need > 1 || (need == 0 && r.tasks > 1)
	full := topo && multi
	if full && need == 0 && len(r.want) == 0 {
		// A job free to use one node needs no tree when one node holds
		// it all: look for such a node first.
		one := *r
		one.nodes = 1
		q := p.probeFor(&one, pi, excl, end)
		q.cpu = r.cpt * r.tasks
		q.mem = r.memNode + r.memTask*int64(r.tasks)
		for k := range q.g {
			q.g[k] = 0
		}
		for _, g := range r.gres {
			if g.name >= 0 && g.name < idxGres {
				q.g[g.name] += g.perNode + g.perTask*r.tasks
			}
		}
		var single []cand
		p.idx.each(&q, func(n int32) bool {
			if c := capOf(n); c >= r.tasks {
				single = []cand{{n, c}}
				return true
			}
			return false
		})
		if single != nil {
			return p.split(r, single, 0, excl, p.now, end)
		}
	}
	if !enough() || full {
		q := p.probeFor(r, pi, excl, end)
		p.idx.each(&q, func(n int32) bool {
			if len(r.want) > 0 && slices.Contains(r.want, n) {
				return false
			}
			c := capOf(n)
			if c == 0 {
				return false
			}
			cands = append(cands, cand{n, c})
			sum += int64(c)
			return !full && enough()
		})
	}
	if !enough() {
		return nil, false
	}
	var chosen []cand
	switch {
	case full && len(r.want) == 0:
		{
			maxLeaves := int32(0)
			if r.leaves > 0 && p.now < r.leavesT {
				maxLeaves = r.leaves
			}
			if need > 0 {
				// Every node takes an even share on the tree.
				q := ceilDiv(r.tasks, need)
				kept := cands[:0:0]
				for _, c := range cands {
					if c.cap >= q {
						kept = append(kept, c)
					}
				}
				cands = kept
			}
			var leafBound bool
			chosen, leafBound = p.topo.pick(p.nodes, cands, need, r.tasks, maxLeaves)
			if chosen == nil {
				return nil, leafBound
			}
		}
	case need > 0:
		chosen = pickCount(cands, len(r.want), need, r.tasks)
		if chosen == nil {
			return nil, false
		}
	default:
		chosen = cands
	}
	return p.split(r, chosen, need, excl, p.now, end)
}

// placeMonotone reports whether placeNow for job j, having failed, fails
// again after nodes only lost room (or time moved on): it fails just when
// the nodes together cannot hold the job. That is not so where it picks a
// fixed count of nodes by first fit among the first that add up to the
// job (pickCount) and a node must take more than one task: nodes that lose
// room early in the order let it reach roomier ones.
func (p *pass) placeMonotone(r *request) bool {
	if r.nodes == 0 || r.tasks <= r.nodes {
		return true
	}
	return len(p.topo.sw) > 0 && r.nodes > 1 && len(r.want) == 0
}

// pickCount chooses need nodes from cands (the first fixed ones always)
// whose room adds up to tasks: the first in order when they suffice, else
// the roomiest.
func pickCount(cands []cand, fixed int, need, tasks int32) []cand {
	if int32(len(cands)) < need {
		return nil
	}
	first := cands[:need:need]
	var s int64
	for _, c := range first {
		s += int64(c.cap)
	}
	if s >= int64(tasks) {
		return first
	}
	rest := append([]cand(nil), cands[fixed:]...)
	sort.SliceStable(rest, func(a, b int) bool { return rest[a].cap > rest[b].cap })
	out := append(append([]cand(nil), cands[:fixed]...), rest[:int(need)-fixed]...)
	s = 0
	for _, c := range out {
		s += int64(c.cap)
	}
	if s < int64(tasks) {
		return nil
	}
	sort.Slice(out, func(a, b int) bool { return out[a].n < out[b].n })
	return out
}

// split spreads the tasks over the chosen nodes (block: fill in order,
// leaving one task for each node still to come when the count is fixed)
// and works out what each node gives, available over [from, to).
func (p *pass) split(r *request, chosen []cand, need int32, excl bool, from, to int64) ([]piece, bool) {
	left := r.tasks
	var out []piece
	for i, c := range chosen {
		if left == 0 {
			break
		}
		take := min(c.cap, left)
		if need > 0 {
			take = min(c.cap, left-int32(len(chosen)-i-1))
		}
		if take <= 0 {
			return nil, false
		}
		a := p.availOver(c.n, from, to)
		d, ok := r.demand(&p.nodes[c.n], &a, take, excl)
		if !ok {
			return nil, false
		}
		out = append(out, piece{n: c.n, tasks: take, d: d})
		left -= take
	}
	if left > 0 {
		return nil, false
	}
	return out, false
}

// take starts pieces now until end: the resources leave the free pool
// (devices chosen, lowest first) and come back at end.
func (p *pass) take(pieces []piece, end int64) [][maxPools]uint64 {
	devs := make([][maxPools]uint64, len(pieces))
	for i := range pieces {
		pc := &pieces[i]
		n := pc.n
		p.touch(n)
		for k := 0; k < p.nodes[n].npool; k++ {
			if pc.d.g[k] > 0 {
				devs[i][k] = pickDevices(p.ns[n].dev[k], pc.d.g[k])
			}
		}
		p.ns[n].takeOn(&pc.d, &devs[i], end)
		p.refresh(n)
	}
	return devs
}

// reserve holds pieces for a job planned to start at t and end at end.
func (p *pass) reserve(pieces []piece, t, end int64) {
	for i := range pieces {
		pc := &pieces[i]
		p.touch(pc.n)
		p.ns[pc.n].reserveOn(&pc.d, t, end)
		p.refresh(pc.n)
	}
}

// horizon is how far ahead reservations are planned: BackfillWindow past
// the start of the priority period (or now, without one), so that it stays
// put between passes of a period.
func (p *pass) horizon() int64 {
	if p.s.Config.PriorityCalcPeriod > 0 {
		return p.calcAt + p.bfWindow
	}
	return p.now + p.bfWindow
}

// spans appends to out the stretches of time, starting by horizon, in
// which the node could start a job of dur seconds that fits when fits says
// so (starts in [s, f]), each tagged with n and want; with first it stops
// after one.
func (st *nstate) spans(out []span, n int32, want bool, now, horizon, dur int64, fits func(*vec) bool, first bool) []span {
	a := st.free
	ev := st.ev
	i := 0
	for i < len(ev) && ev[i].t <= now {
		a.add(&ev[i].d)
		i++
	}
	good := fits(&a)
	start := now
	for {
		end := int64(forever)
		if i < len(ev) {
			end = ev[i].t
		}
		if good {
			// Find where the good stretch ends.
			for i < len(ev) {
				t := ev[i].t
				for i < len(ev) && ev[i].t == t {
					a.add(&ev[i].d)
					i++
				}
				if !fits(&a) {
					end = t
					good = false
					break
				}
			}
			if good {
				end = forever
			}
			if start > horizon {
				return out
			}
			if end >= forever {
				return append(out, span{n: n, s: start, f: forever, want: want})
			}
			if dur < forever && end-dur >= start {
				out = append(out, span{n: n, s: start, f: end - dur, want: want})
				if first {
					return out
				}
			}
			continue
		}
		// Find where the next good stretch starts.
		if i >= len(ev) || end > horizon {
			return out
		}
		for i < len(ev) {
			t := ev[i].t
			for i < len(ev) && ev[i].t == t {
				a.add(&ev[i].d)
				i++
			}
			if fits(&a) {
				good, start = true, t
				break
			}
			if t > horizon {
				return out
			}
		}
		if !good {
			return out
		}
	}
}

// span is a stretch of time in which a node could start a job's share:
// starts in [s, f].
type span struct {
	n    int32
	s, f int64
	want bool
}

// shape is how job j is planned in partition pi: k nodes of q tasks each.
// A fixed node count splits the tasks evenly; a free one uses as few nodes
// as the roomiest node allows.
func (p *pass) shape(j *jobInfo, pi int32, excl bool) (k, q int32, ok bool) {
	r := &j.req
	k = r.nodes
	if k > 0 {
		q = ceilDiv(r.tasks, k)
	} else {
		var qmax int32
		for _, pc := range p.parts[pi].classes {
			n := &p.nodes[pc.rep]
			if pc.up > 0 && r.cons.match(n) {
				qmax = max(qmax, r.capOn(n, &n.total, excl))
			}
		}
		if qmax == 0 {
			return 0, 0, false
		}
		if qmax >= r.tasks {
			k, q = 1, r.tasks
		} else {
			k = ceilDiv(r.tasks, qmax)
			q = ceilDiv(r.tasks, k)
		}
	}
	if r.tpn > 0 && q > r.tpn {
		return 0, 0, false
	}
	return k, q, true
}

// planStat is what a plan saw, so that a Planner can work out later what
// the same search would give after a change (see replay.quickPlan).
type planStat struct {
	part  int32
	found bool
	t     int64
	// k is the job's node count there (0: the job cannot be planned
	// there at all).
	k int32
	// capped: the search gave up after too many failed picks; clean:
	// no pick failed before the outcome.
	capped, clean bool
	// spans: the nodes' spans decide the plan (see pass.spansDecide).
	spans bool
	// early holds every span the search saw that starts by bound (a
	// search for one node: every node's first span), when there are at
	// most maxEarly; else nil. The outcome follows from them when it is
	// found by bound, or when bound is the horizon.
	early []span
	bound int64
	// late: a Planner knows only that the search does not place the job
	// by bound (what it does after is not known).
	late bool
}

// Sizes of planStat.early: it reaches earlySpare starts past the outcome,
// so that a Planner can follow a plan that moves later, and holds at most
// maxEarly spans.
const (
	earlySpare = 16
	maxEarly   = 2048
)

// spansDecide reports whether job j's fit on a node over a stretch of time
// is decided by whether it fits at every moment of it. That holds unless a
// GRES need can be served by two pools of one node: the least of each pool
// over a stretch may then serve it less than every moment does (and which
// pools a piece draws from depends on more than the fit).
func (p *pass) spansDecide(j *jobInfo) bool {
	r := &j.req
	if r.overlap {
		return false
	}
	for k := range r.gres {
		if p.multiPool(r.gres[k].name, r.gres[k].typ) {
			return false
		}
	}
	return true
}

// multiPool reports whether some node has two pools that can serve a GRES
// need of name and typ.
func (p *pass) multiPool(name, typ int32) bool {
	key := [2]int32{name, typ}
	if v, ok := p.multi[key]; ok {
		return v
	}
	if p.multi == nil {
		p.multi = map[[2]int32]bool{}
	}
	v := false
	for n := range p.nodes {
		node := &p.nodes[n]
		c := 0
		for k := 0; k < node.npool; k++ {
			if node.pools[k].matches(name, typ) {
				c++
			}
		}
		if c > 1 {
			v = true
			break
		}
	}
	p.multi[key] = v
	return v
}

// plan finds the earliest time within the backfill window at which job j
// could start in partition pi for dur seconds, by the end times of running
// jobs and the reservations made so far, and the nodes it would use.
func (p *pass) plan(j *jobInfo, pi int32, dur int64) (int64, []piece, planStat) {
	r := &j.req
	excl := r.excl || p.parts[pi].excl
	part := &p.parts[pi]
	st := planStat{part: pi, spans: true, clean: true, bound: p.horizon(), early: []span{}}
	k, q, ok := p.shape(j, pi, excl)
	if !ok {
		return 0, nil, st
	}
	st.k = k
	st.spans = p.spansDecide(j)
	horizon := p.horizon()
	if k == 1 && len(r.want) == 0 {
		return p.planOne(j, pi, dur, q, excl, st)
	}
	spans := make([]span, 0, len(part.nodes))
	var cur *nodeInfo
	fits := func(a *vec) bool { return r.capOn(cur, a, excl) >= q }
	for _, n := range part.nodes {
		if !p.eligibleNode(r, pi, n) {
			continue
		}
		node := &p.nodes[n]
		if r.capOn(node, &node.total, excl) < q {
			continue
		}
		cur = node
		want := len(r.want) > 0 && slices.Contains(r.want, n)
		spans = p.ns[n].spans(spans, n, want, p.now, horizon, dur, fits, false)
	}
	return p.sweep(j, spans, k, q, dur, excl, st, true)
}

// sweep goes through spans (in node order) in time order and places job j
// the first moment enough nodes (and all -w nodes) are free together and
// a pick among them works. With keep it also fills st.early and st.bound.
func (p *pass) sweep(j *jobInfo, spans []span, k, q int32, dur int64, excl bool, st planStat, keep bool) (int64, []piece, planStat) {
	r := &j.req
	pi := st.part
	horizon := p.horizon()
	keys := make([]int64, 0, 2*len(spans))
	for si, sp := range spans {
		keys = append(keys, (sp.s-p.now)<<22|int64(si))
		if sp.f < horizon {
			keys = append(keys, (sp.f-p.now)<<22|1<<21|int64(si))
		}
	}
	slices.Sort(keys)
	var count, wants int32
	wantLeft := int32(len(r.want))
	others := k - wantLeft
	tries := 0
	st.found, st.capped, st.clean, st.t = false, false, true, 0
	for x, key := range keys {
		sp := &spans[key&(1<<21-1)]
		if key&(1<<21) != 0 {
			if sp.want {
				wants--
			} else {
				count--
			}
			continue
		}
		if sp.want {
			wants++
		} else {
			count++
		}
		if wants < wantLeft || count < others {
			continue
		}
		t := sp.s
		if pieces, ok := p.planAt(j, pi, spans, t, k, q, dur, excl); ok {
			st.found, st.t = true, t
			if keep {
				st.bound = horizon
				more := 0
				for _, key := range keys[x+1:] {
					if key&(1<<21) != 0 {
						continue
					}
					if s := spans[key&(1<<21-1)].s; s > t {
						if more++; more == earlySpare {
							st.bound = s - 1
							break
						}
					}
				}
				st.early = earlySpans(spans, st.bound)
			}
			return t, pieces, st
		}
		st.clean = false
		if tries++; tries >= 32 {
			st.capped = true
			st.early = nil
			return 0, nil, st
		}
	}
	if keep {
		st.bound = horizon
		st.early = earlySpans(spans, horizon)
	}
	return 0, nil, st
}

// earlySpans copies the spans that start by bound (nil: too many).
func earlySpans(spans []span, bound int64) []span {
	c := 0
	for i := range spans {
		if spans[i].s <= bound {
			c++
		}
	}
	if c > maxEarly {
		return nil
	}
	out := make([]span, 0, c)
	for _, sp := range spans {
		if sp.s <= bound {
			out = append(out, sp)
		}
	}
	return out
}

// planOne is plan for a job on one node: the earliest start of any node,
// the first node in order at that time. No sweep is needed: the nodes free
// for it at that time are the ones whose first stretch starts then. It
// keeps the earlySpare earliest first stretches in st.early.
func (p *pass) planOne(j *jobInfo, pi int32, dur int64, q int32, excl bool, st planStat) (int64, []piece, planStat) {
	r := &j.req
	horizon := p.horizon()
	var buf [1]span
	var node *nodeInfo
	fits := func(a *vec) bool { return r.capOn(node, a, excl) >= q }
	top := make([]span, 0, earlySpare+1) // earliest first spans, by start then node
	cut := horizon
	for _, n := range p.parts[pi].nodes {
		if !p.eligibleNode(r, pi, n) {
			continue
		}
		node = &p.nodes[n]
		if r.capOn(node, &node.total, excl) < q {
			continue
		}
		sp := p.ns[n].spans(buf[:0], n, false, p.now, cut, dur, fits, true)
		if len(sp) == 0 || len(top) == earlySpare && sp[0].s >= cut {
			continue
		}
		i := sort.Search(len(top), func(x int) bool { return top[x].s > sp[0].s })
		top = slices.Insert(top, i, sp[0])
		if len(top) > earlySpare {
			top = top[:earlySpare]
		}
		if len(top) == earlySpare {
			cut = top[earlySpare-1].s
		}
	}
	st.bound = horizon
	if len(top) == earlySpare {
		st.bound = top[earlySpare-1].s - 1
	}
	return p.pickOne(j, pi, dur, excl, top, st)
}

// pickOne finishes planOne from the earliest first spans (by start, then
// node), all those that start by st.bound.
func (p *pass) pickOne(j *jobInfo, pi int32, dur int64, excl bool, top []span, st planStat) (int64, []piece, planStat) {
	r := &j.req
	st.early = top
	for len(st.early) > 0 && st.early[len(st.early)-1].s > st.bound {
		st.early = st.early[:len(st.early)-1]
	}
	st.found, st.t, st.clean = false, 0, true
	if len(top) == 0 {
		return 0, nil, st
	}
	best, bestN := top[0].s, top[0].n
	end := p.endAt(best, dur)
	a := p.ns[bestN].availOver(p.now, best, end)
	d, ok := r.demand(&p.nodes[bestN], &a, r.tasks, excl)
	if !ok {
		st.early, st.clean = nil, false
		return 0, nil, st
	}
	st.found, st.t = true, best
	return best, []piece{{n: bestN, tasks: r.tasks, d: d}}, st
}

// planAt picks nodes among the spans open at t and works out the pieces.
func (p *pass) planAt(j *jobInfo, pi int32, spans []span, t int64, k, q int32, dur int64, excl bool) ([]piece, bool) {
	r := &j.req
	var fixed, cands []cand
	for _, sp := range spans {
		if sp.s <= t && t <= sp.f {
			if sp.want {
				fixed = append(fixed, cand{sp.n, q})
			} else {
				cands = append(cands, cand{sp.n, q})
			}
		}
	}
	// A node can have several spans; keep one entry each.
	cands = slices.CompactFunc(cands, func(a, b cand) bool { return a.n == b.n })
	slices.SortFunc(cands, func(a, b cand) int { return int(a.n) - int(b.n) })
	cands = slices.CompactFunc(cands, func(a, b cand) bool { return a.n == b.n })
	rest := k - int32(len(fixed))
	var chosen []cand
	if len(p.topo.sw) > 0 && k > 1 && len(fixed) == 0 {
		maxLeaves := int32(0)
		if r.leaves > 0 && t < r.leavesT {
			maxLeaves = r.leaves
		}
		chosen, _ = p.topo.pick(p.nodes, cands, k, k*q, maxLeaves)
		if chosen == nil {
			return nil, false
		}
	} else {
		if int32(len(cands)) < rest {
			return nil, false
		}
		chosen = append(fixed, cands[:rest]...)
		slices.SortFunc(chosen, func(a, b cand) int { return int(a.n) - int(b.n) })
	}
	end := int64(forever)
	if dur < forever {
		end = t + dur
	}
	var out []piece
	left := r.tasks
	for i, c := range chosen {
		take := min(q, left-int32(len(chosen)-i-1))
		if take <= 0 {
			take = 1
		}
		a := p.availOver(c.n, t, end)
		d, ok := r.demand(&p.nodes[c.n], &a, take, excl)
		if !ok {
			return nil, false
		}
		out = append(out, piece{n: c.n, tasks: take, d: d})
		left -= take
	}
	return out, true
}
