package sched

// idxGres is how many GRES names the index tracks for pruning.
const idxGres = 4

// index is a segment tree over the nodes (in allocation order) that keeps,
// per subtree, the most of each resource free on any one node: now, and
// for all time (cons: what is left under every reservation). A search for
// nodes that can take a job walks only into subtrees where some node might;
// so a full cluster answers "no room" at the root instead of node by node.
type index struct {
	size int // leaves, a power of two
	t    []inode
}

type inode struct {
	cpu, cpuC int32
	idle      bool // some node is wholly free now
	idleC     bool // some node is wholly free for all time
	mem, memC int64
	g, gC     [idxGres]int32
	dl        int64  // latest "earliest reservation start" of any node
	parts     uint64 // partitions (first 64) of some node
	feats     uint64 // features (first 64) of some node
}

// probe is what a node must at least have for a job to consider it.
type probe struct {
	cpu   int32
	mem   int64
	g     [idxGres]int32
	excl  bool
	part  uint64
	feats uint64
	end   int64 // when the job would end if started now
}

func (x *index) build(p *pass) {
	n := len(p.nodes)
	x.size = 1
	for x.size < n {
		x.size *= 2
	}
	x.t = make([]inode, 2*x.size)
	for i := 0; i < n; i++ {
		x.setLeaf(p, int32(i))
	}
	for i := x.size - 1; i >= 1; i-- {
		x.pull(i)
	}
}

func (x *index) setLeaf(p *pass, n int32) {
	l := &x.t[x.size+int(n)]
	*l = inode{}
	node := &p.nodes[n]
	var parts uint64
	for i := range p.parts {
		if i >= 64 {
			break
		}
		if p.parts[i].has(n) {
			parts |= 1 << i
		}
	}
	l.parts = parts
	l.feats = node.fmask
	if node.state != NodeUp {
		return
	}
	f, c := &p.ns[n].free, &p.ns[n].cons
	l.cpu, l.mem = f.cpu, f.mem
	l.cpuC, l.memC = c.cpu, c.mem
	l.idle = f.cpu == node.total.cpu
	l.idleC = c.cpu == node.total.cpu
	for k := 0; k < node.npool; k++ {
		if id := node.pools[k].name; id < idxGres {
			l.g[id] += f.g[k]
			l.gC[id] += c.g[k]
		}
	}
	l.dl = p.ns[n].dl
}

func (x *index) pull(i int) {
	a, b := &x.t[2*i], &x.t[2*i+1]
	t := &x.t[i]
	t.cpu, t.cpuC = max(a.cpu, b.cpu), max(a.cpuC, b.cpuC)
	t.mem, t.memC = max(a.mem, b.mem), max(a.memC, b.memC)
	for k := range t.g {
		t.g[k], t.gC[k] = max(a.g[k], b.g[k]), max(a.gC[k], b.gC[k])
	}
	t.idle, t.idleC = a.idle || b.idle, a.idleC || b.idleC
	t.dl = max(a.dl, b.dl)
	t.parts = a.parts | b.parts
	t.feats = a.feats | b.feats
}

// update refreshes node n after its free, cons or dl changed.
func (x *index) update(p *pass, n int32) {
	x.setLeaf(p, n)
	for i := (x.size + int(n)) / 2; i >= 1; i /= 2 {
		x.pull(i)
	}
}

func (t *inode) admits(q *probe) bool {
	if t.parts&q.part != q.part || t.feats&q.feats != q.feats {
		return false
	}
	if t.cpu < q.cpu || t.mem < q.mem || (q.excl && !t.idle) {
		return false
	}
	for k := range q.g {
		if t.g[k] < q.g[k] {
			return false
		}
	}
	if t.dl >= q.end {
		return true
	}
	if t.cpuC < q.cpu || t.memC < q.mem || (q.excl && !t.idleC) {
		return false
	}
	for k := range q.g {
		if t.gC[k] < q.g[k] {
			return false
		}
	}
	return true
}

// each calls visit, in node order, for every node the probe admits (and
// perhaps some it does not), until visit returns true.
func (x *index) each(q *probe, visit func(n int32) bool) {
	if len(x.t) == 0 {
		return
	}
	x.walk(1, q, visit)
}

func (x *index) walk(i int, q *probe, visit func(n int32) bool) bool {
	if !x.t[i].admits(q) {
		return false
	}
	if i >= x.size {
		return visit(int32(i - x.size))
	}
	return x.walk(2*i, q, visit) || x.walk(2*i+1, q, visit)
}
