package sched

import (
	"slices"
	"sort"
)

// release gives back a running job's resources as if it ended now (sign
// 1), or takes them again (sign -1), keeping the time line right.
func (p *pass) release(ri int32, sign int) {
	r := &p.run[ri]
	for i, n := range r.nodes {
		p.touch(n)
		amt := &r.amount[i]
		if sign > 0 {
			p.ns[n].free.add(amt)
			for k := range r.devs[i] {
				p.ns[n].dev[k] |= r.devs[i][k]
			}
			if r.end < forever {
				ev := p.ns[n].ev
				for e := range ev {
					if ev[e].t == r.end && ev[e].d == *amt {
						p.ns[n].ev = slices.Delete(ev, e, e+1)
						break
					}
				}
			}
		} else {
			p.ns[n].free.sub(amt)
			for k := range r.devs[i] {
				p.ns[n].dev[k] &^= r.devs[i][k]
			}
			if r.end < forever {
				p.addEvent(n, event{t: r.end, d: *amt})
			}
		}
		p.refresh(n)
	}
}

// preemptFor tries to make room for job j in partition pi by preempting
// running jobs of QoS that j's QoS may preempt. Each node is costed by how
// many of its preemptable jobs (youngest first) must go for it to take its
// share of the job; the cheapest nodes are taken (fewest victims, then the
// youngest), and victims the job turns out not to need are kept (the
// oldest tried first). It returns the pieces and the victims, or nil.
func (p *pass) preemptFor(j *jobInfo, pi int32, end int64) ([]piece, []int32) {
	q := &p.qos[j.qos]
	r := &j.req
	excl := r.excl || p.parts[pi].excl
	k, per, ok := p.shape(j, pi, excl)
	if !ok {
		return nil, nil
	}
	preemptable := func(ri int32) bool {
		rr := &p.run[ri]
		return !rr.gone && rr.qos >= 0 && rr.qos != j.qos && q.preempt[rr.qos] && p.qos[rr.qos].mode != PreemptOff
	}
	type option struct {
		n       int32
		victims []int32
		oldest  int64
	}
	var opts []option
	for _, n := range p.parts[pi].nodes {
		if !p.eligibleNode(r, pi, n) {
			continue
		}
		node := &p.nodes[n]
		a := p.availOver(n, p.now, end)
		if r.capOn(node, &a, excl) >= per {
			opts = append(opts, option{n: n, oldest: forever})
			continue
		}
		var vs []int32
		for _, ri := range p.nodeRuns[n] {
			if preemptable(ri) {
				vs = append(vs, ri)
			}
		}
		if len(vs) == 0 {
			continue
		}
		sort.SliceStable(vs, func(a, b int) bool {
			x, y := &p.run[vs[a]], &p.run[vs[b]]
			if x.start != y.start {
				return x.start > y.start
			}
			return x.spec.ID > y.spec.ID
		})
		var take []int32
		fits := false
		for _, ri := range vs {
			rr := &p.run[ri]
			for i, rn := range rr.nodes {
				if rn == n {
					a.add(&rr.amount[i])
				}
			}
			take = append(take, ri)
			if r.capOn(node, &a, excl) >= per {
				fits = true
				break
			}
		}
		if fits {
			opts = append(opts, option{n: n, victims: take, oldest: p.run[take[len(take)-1]].start})
		}
	}
	if int32(len(opts)) < k {
		return nil, nil
	}
	sort.SliceStable(opts, func(a, b int) bool {
		if len(opts[a].victims) != len(opts[b].victims) {
			return len(opts[a].victims) < len(opts[b].victims)
		}
		return opts[a].oldest > opts[b].oldest
	})
	var victims []int32
	for i := 0; i < len(opts) && i < int(k); i++ {
		for _, v := range opts[i].victims {
			if !slices.Contains(victims, v) {
				victims = append(victims, v)
			}
		}
	}
	if len(victims) == 0 {
		return nil, nil
	}
	for _, v := range victims {
		p.release(v, 1)
	}
	pieces, _ := p.placeNow(j, pi, end)
	if pieces == nil {
		for i := len(victims) - 1; i >= 0; i-- {
			p.release(victims[i], -1)
		}
		return nil, nil
	}
	// Keep the victims the job does not need, oldest first.
	sort.SliceStable(victims, func(a, b int) bool { return p.run[victims[a]].start < p.run[victims[b]].start })
	for i := 0; i < len(victims); {
		p.release(victims[i], -1)
		if pc, _ := p.placeNow(j, pi, end); pc != nil {
			victims = slices.Delete(victims, i, i+1)
			continue
		}
		p.release(victims[i], 1)
		i++
	}
	pieces, _ = p.placeNow(j, pi, end)
	for _, v := range victims {
		rr := &p.run[v]
		rr.gone = true
		p.preempts = append(p.preempts, v)
		p.charge(rr.qos, rr.user, rr.assoc, &rr.tres, -1)
	}
	sort.Slice(victims, func(a, b int) bool { return p.run[victims[a]].spec.ID < p.run[victims[b]].spec.ID })
	return pieces, victims
}
