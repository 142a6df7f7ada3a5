package sched

import (
	"math/bits"
	"slices"
)

// gresNeed is one GRES a job needs on each of its nodes: perNode plus
// perTask for every task there.
type gresNeed struct {
	name, typ        int32 // typ 0: any type; -1: a type no node has
	perNode, perTask int32
}

// request is a job's resource request in the pass's terms.
type request struct {
	nodes   int32 // exact node count; 0: as few as fit
	tasks   int32
	tpn     int32 // most tasks per node; 0: no bound
	cpt     int32
	memTask int64
	memNode int64
	excl    bool
	gres    []gresNeed
	cons    *constraint
	want    []int32 // -w nodes
	wantBad bool    // -w names a node that does not exist
	avoid   []int32 // -x nodes, sorted
	// overlap is set when two GRES needs share a name, so that per-need
	// counts may promise devices twice and capOn must check its answer.
	overlap bool
	leaves  int32 // --switches
	leavesT int64 // when the --switches wait runs out
}

type jobInfo struct {
	spec     *Job
	in       int32
	user     int32
	qos      int32
	assoc    int32
	parts    []int32 // -1 for an unknown name
	req      request
	factors  Factors
	prio     []uint32
	eligible bool
	reason   string // a reason fixed before the walk
	tres     TRES   // requested, for limits
	// shape names the job's request for the pass's failure cache; -1
	// for requests it does not cache (-w, -x, --switches, many GRES).
	shape int32
	// queue keys
	tier  int
	qprio uint32
	// choices are the partitions the job may run in, in the order tried.
	choices []choice
	// dec is the decision of the last pass that walked the job.
	dec decision
}

// shapeKey identifies requests that any node treats alike.
type shapeKey struct {
	nodes, tasks, tpn, cpt int32
	memTask, memNode       int64
	excl                   bool
	ng                     int8
	g0, g1                 gresNeed
	cons                   string
}

func (p *pass) compileJobs() {
	s := p.s
	p.jobs = make([]jobInfo, len(s.Pending))
	for i := range s.Pending {
		p.compileJob(int32(i))
	}
}

// compileJob compiles Snapshot.Pending[i] into p.jobs[i].
func (p *pass) compileJob(i int32) {
	sj := &p.s.Pending[i]
	j := &p.jobs[i]
	*j = jobInfo{spec: sj, in: i}
	j.user = p.userID(sj.User)
	j.qos = p.qosOf(sj.QOS)
	j.assoc = p.tree.lookup(sj.Account, sj.User)
	if len(sj.Partitions) == 0 {
		j.parts = []int32{p.defPart}
	} else {
		j.parts = make([]int32, len(sj.Partitions))
		for k, name := range sj.Partitions {
			if pi, ok := p.partByName[name]; ok {
				j.parts[k] = pi
			} else {
				j.parts[k] = -1
			}
		}
	}
	p.compileRequest(j)
	j.shape = p.shapeOf(j)
	p.eligibility(j)
}

// eligibility sets the reason a job cannot be considered at all yet.
func (p *pass) eligibility(j *jobInfo) {
	sj := j.spec
	j.reason = ""
	switch {
	case sj.Hold == HoldUser:
		j.reason = ReasonJobHeldUser
	case sj.Hold == HoldAdmin:
		j.reason = ReasonJobHeldAdmin
	case secs(sj.BeginTime) > p.now:
		j.reason = ReasonBeginTime
		p.beginAt = min(p.beginAt, secs(sj.BeginTime))
	case sj.Dependency == DependencyPending:
		j.reason = ReasonDependency
	case sj.Dependency == DependencyNever:
		j.reason = ReasonDependencyNever
	case j.qos == -2:
		j.reason = ReasonInvalidQOS
	}
	j.eligible = j.reason == ""
}

func (p *pass) shapeOf(j *jobInfo) int32 {
	r := &j.req
	if len(r.want) > 0 || r.wantBad || len(r.avoid) > 0 || r.leaves > 0 || len(r.gres) > 2 {
		return -1
	}
	k := shapeKey{nodes: r.nodes, tasks: r.tasks, tpn: r.tpn, cpt: r.cpt, memTask: r.memTask, memNode: r.memNode,
		excl: r.excl, ng: int8(len(r.gres)), cons: j.spec.Constraint}
	if len(r.gres) > 0 {
		k.g0 = r.gres[0]
	}
	if len(r.gres) > 1 {
		k.g1 = r.gres[1]
	}
	if p.shapes == nil {
		p.shapes = map[shapeKey]int32{}
	}
	id, ok := p.shapes[k]
	if !ok {
		id = int32(len(p.shapes))
		p.shapes[k] = id
		p.shapeReq = append(p.shapeReq, *r)
	}
	return id
}

func ceilDiv(a, b int32) int32 { return (a + b - 1) / b }

func (p *pass) compileRequest(j *jobInfo) {
	sj := j.spec
	r := &j.req
	r.cpt = int32(max(sj.CPUsPerTask, 1))
	r.tpn = int32(max(sj.NTasksPerNode, 0))
	nodes := int32(max(sj.Nodes, 0))
	switch {
	case sj.NTasks > 0:
		r.tasks = int32(sj.NTasks)
	case r.tpn > 0 && nodes > 0:
		r.tasks = nodes * r.tpn
	case nodes > 0:
		r.tasks = nodes
	default:
		r.tasks = 1
	}
	switch {
	case nodes > 0:
		r.nodes = min(nodes, r.tasks)
	case r.tpn > 0:
		r.nodes = ceilDiv(r.tasks, r.tpn)
	}
	memCPU := sj.MemPerCPUMB
	if memCPU == 0 && sj.MemPerNodeMB == 0 {
		memCPU = p.s.Config.DefMemPerCPU
	}
	r.memTask = memCPU * int64(r.cpt)
	r.memNode = sj.MemPerNodeMB
	r.excl = sj.Exclusive
	var gpuNode, gpuTask int64
	add := func(name, typ string, perNode, perTask int32) {
		if perNode <= 0 && perTask <= 0 {
			return
		}
		if name == "gpu" {
			gpuNode += int64(max(perNode, 0))
			gpuTask += int64(max(perTask, 0))
		}
		nid, ok := p.gresName[name]
		if !ok {
			nid = -1
		}
		tid, ok := p.gresType[typ]
		if !ok {
			tid = -1
		}
		for k := range r.gres {
			if r.gres[k].name == nid && r.gres[k].typ == tid {
				r.gres[k].perNode += max(perNode, 0)
				r.gres[k].perTask += max(perTask, 0)
				return
			}
		}
		r.gres = append(r.gres, gresNeed{name: nid, typ: tid, perNode: max(perNode, 0), perTask: max(perTask, 0)})
	}
	for _, g := range sj.Gres {
		add(g.Name, g.Type, int32(g.Count), 0)
	}
	add("gpu", sj.GPUType, int32(sj.GPUsPerNode), int32(sj.GPUsPerTask))
	if sj.GPUs > 0 {
		per := int32(sj.GPUs)
		if r.nodes > 0 {
			per = ceilDiv(per, r.nodes)
		}
		add("gpu", sj.GPUType, per, 0)
	}
	// Typed needs first, so untyped ones take what is left.
	slices.SortStableFunc(r.gres, func(a, b gresNeed) int {
		if (a.typ != 0) != (b.typ != 0) {
			if a.typ != 0 {
				return -1
			}
			return 1
		}
		return 0
	})
	for a := range r.gres {
		for b := a + 1; b < len(r.gres); b++ {
			if r.gres[a].name == r.gres[b].name {
				r.overlap = true
			}
		}
	}
	r.cons = p.parseConstraint(sj.Constraint)
	for _, name := range sj.NodeList {
		n, ok := p.nodeByName[name]
		if !ok {
			r.wantBad = true
			continue
		}
		if !slices.Contains(r.want, n) {
			r.want = append(r.want, n)
		}
	}
	slices.Sort(r.want)
	for _, name := range sj.Exclude {
		if n, ok := p.nodeByName[name]; ok {
			r.avoid = append(r.avoid, n)
		}
	}
	slices.Sort(r.avoid)
	if len(r.want) > 0 && r.nodes > 0 && int32(len(r.want)) > r.nodes {
		r.nodes = int32(len(r.want))
	}
	r.leaves = int32(max(sj.Switches, 0))
	if r.leaves > 0 {
		wait := dur(sj.SwitchWait)
		if wait == 0 {
			wait = p.switchWait
		}
		elig := secs(sj.EligibleTime)
		if elig == 0 {
			elig = max(secs(sj.SubmitTime), secs(sj.BeginTime))
		}
		r.leavesT = elig + wait
	}
	// Requested TRES, for limits.
	nn := int64(max(r.nodes, 1))
	j.tres.CPU = int64(r.tasks) * int64(r.cpt)
	j.tres.Node = nn
	j.tres.MemMB = r.memNode*nn + r.memTask*int64(r.tasks)
	j.tres.GPU = gpuNode*nn + gpuTask*int64(r.tasks)
}

// excluded reports whether -x names node n.
func (r *request) excluded(n int32) bool {
	if len(r.avoid) == 0 {
		return false
	}
	_, found := slices.BinarySearch(r.avoid, n)
	return found
}

// capOn is how many of the job's tasks node n could take with a available
// (0: none). excl asks for the whole node.
func (r *request) capOn(n *nodeInfo, a *vec, excl bool) int32 {
	if excl && a.cpu < n.total.cpu {
		return 0
	}
	c := a.cpu / r.cpt
	if a.mem < r.memNode {
		return 0
	}
	if r.memTask > 0 {
		c = int32(min(int64(c), (a.mem-r.memNode)/r.memTask))
	}
	for k := range r.gres {
		g := &r.gres[k]
		var have int32
		for pi := 0; pi < n.npool; pi++ {
			if n.pools[pi].matches(g.name, g.typ) {
				have += a.g[pi]
			}
		}
		if have < g.perNode {
			return 0
		}
		if g.perTask > 0 {
			c = min(c, (have-g.perNode)/g.perTask)
		}
	}
	if r.tpn > 0 {
		c = min(c, r.tpn)
	}
	if r.overlap {
		for c > 0 {
			if _, ok := r.demand(n, a, c, excl); ok {
				break
			}
			c--
		}
	}
	return max(c, 0)
}

// demand is what t tasks of the job take on node n, drawn from a (GRES
// from the node's matching pools in order); false when a cannot give it.
func (r *request) demand(n *nodeInfo, a *vec, t int32, excl bool) (vec, bool) {
	var d vec
	d.cpu = t * r.cpt
	if excl {
		if a.cpu < n.total.cpu {
			return d, false
		}
		d.cpu = n.total.cpu
	}
	d.mem = r.memNode + int64(t)*r.memTask
	if d.cpu > a.cpu || d.mem > a.mem {
		return d, false
	}
	for k := range r.gres {
		g := &r.gres[k]
		want := g.perNode + t*g.perTask
		for pi := 0; pi < n.npool && want > 0; pi++ {
			if !n.pools[pi].matches(g.name, g.typ) {
				continue
			}
			take := min(want, a.g[pi]-d.g[pi])
			if take > 0 {
				d.g[pi] += take
				want -= take
			}
		}
		if want > 0 {
			return d, false
		}
	}
	return d, true
}

// pickDevices takes cnt devices from the free mask (lowest positions).
func pickDevices(free uint64, cnt int32) uint64 {
	var m uint64
	for ; cnt > 0 && free != 0; cnt-- {
		b := free & -free
		m |= b
		free &^= b
	}
	return m
}

func devIndices(pl *poolInfo, mask uint64) []int {
	out := make([]int, 0, bits.OnesCount64(mask))
	for mask != 0 {
		i := bits.TrailingZeros64(mask)
		out = append(out, pl.idx[i])
		mask &^= 1 << i
	}
	return out
}
