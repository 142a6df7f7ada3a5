package sched

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// nodeInfo is a node as a pass sees it, in allocation order.
type nodeInfo struct {
	name  string
	state NodeState
	total vec
	npool int
	pools [maxPools]poolInfo
	feats []int32 // sorted feature ids
	fmask uint64  // feature ids below 64
	leaf  int32   // leaf switch, -1 for none
}

type poolInfo struct {
	name, typ int32
	idx       []int // device indices, at most 64
}

// matches reports whether pool p can serve a request for name/typ (typ 0:
// any type).
func (p *poolInfo) matches(name, typ int32) bool {
	return p.name == name && (typ == 0 || p.typ == typ)
}

type partInfo struct {
	name     string
	spec     *Partition
	nodes    []int32 // node positions, ascending
	member   []uint64
	bit      uint64 // 1<<index for the first 64 partitions, for pruning
	maxTime  int64  // seconds, 0 = UNLIMITED
	defTime  int64  // seconds, 0 = NONE
	cpus     int64
	factor   float64
	excl     bool
	allowAcc map[string]bool
	allowQOS map[string]bool
	classes  []partClass
	// waiter is set in a pass once a job waits for resources here.
	waiter bool
}

func (p *partInfo) has(n int32) bool { return p.member[n>>6]&(1<<(n&63)) != 0 }

type qosInfo struct {
	spec    *QOS
	factor  float64
	mode    PreemptMode
	preempt []bool // by qos index: may preempt
	used    counter
	users   map[int32]*counter
}

// counter is what running jobs hold against a limit.
type counter struct {
	jobs int64
	tres TRES
}

func (c *counter) add(t *TRES, sign int64) {
	c.jobs += sign
	c.tres.CPU += sign * t.CPU
	c.tres.MemMB += sign * t.MemMB
	c.tres.Node += sign * t.Node
	c.tres.GPU += sign * t.GPU
}

type runInfo struct {
	spec   *RunningJob
	start  int64
	end    int64 // forever when unlimited
	qos    int32
	user   int32
	assoc  int32
	nodes  []int32
	amount []vec
	devs   [][maxPools]uint64
	tres   TRES
	gone   bool
	// usage is the job's decayed usage as of usageAt, for fair-share.
	usage   float64
	usageAt int64
	usageOK bool
}

// nstate is what changes on a node during a pass.
type nstate struct {
	free vec              // free now
	dev  [maxPools]uint64 // free devices per pool
	ev   []event          // future changes, in time order
	dl   int64            // earliest reservation start (forever: none)
	cons vec              // least availability from now on
}

// pass is the working state of one scheduling pass.
type pass struct {
	s   *Snapshot
	opt options
	now int64

	ageMax     float64
	halfLife   float64
	calcAt     int64
	bfMax      int
	bfWindow   int64
	switchWait int64
	preempt    bool
	basic      bool

	nodes      []nodeInfo
	nodeByName map[string]int32
	nodeIn     []int32 // node position -> index in Snapshot.Nodes
	classOf    []int32
	featID     map[string]int32
	gresName   map[string]int32
	gresType   map[string]int32
	clusterCPU int64

	gresNameList, gresTypeList []string

	parts      []partInfo
	partByName map[string]int32
	defPart    int32

	topo topology

	qos      []qosInfo
	qosByNam map[string]int32
	normal   int32

	users map[string]int32
	tree  assocTree

	run      []runInfo
	nodeRuns [][]int32
	// runDue is each running job's end time (0: none), by p.run index.
	runDue []int64
	// runSum is the running jobs' usage by association as of runSumAt;
	// runStale marks the sums to work out again.
	runSum      []float64
	runSumAt    int64
	runStale    []bool
	runAnyStale bool
	// beginAt is the earliest --begin of the jobs waiting for it.
	beginAt int64

	// ns is the nodes' changing state, idx its index.
	ns  []nstate
	idx index

	jobs  []jobInfo
	queue []qent
	// queueDirty: entries were marked gone or added (added), to be
	// folded in before the next walk.
	queueDirty bool
	added      []qent
	queueBuf   []qent
	res        Result

	passNo int64
	// walkHorizon is the planning horizon of the last walk.
	walkHorizon   int64
	reservations  int
	hadPreemption bool
	rp            *replay
	// hook, when set (by tests), is called before each queued job is
	// decided.
	hook func(p *pass, ji int32)

	// Undo log of a walk: node states before their first change, charges
	// made, jobs preempted.
	undoing  bool
	saved    []nstate
	isSaved  []bool
	savedIDs []int32
	charges  []chargeRec
	preempts []int32

	// shapes interns request shapes; failed maps a shape in a partition
	// to the earliest end at which it could not start in this pass: with
	// resources only shrinking as the pass goes on, a job of the same
	// shape that would run as long or longer cannot start either.
	shapes map[shapeKey]int32
	failed []int64 // by shape*len(parts)+partition; 0: no entry
	// shapeReq is the request of each shape (any of its jobs').
	shapeReq []request

	// multi caches multiPool by GRES name and type.
	multi map[[2]int32]bool
}

func secs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// dur converts a duration to whole seconds, rounding up.
func dur(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func newPass(s *Snapshot) *pass {
	p := &pass{s: s, now: s.Now.Unix(), beginAt: forever}
	c := &s.Config
	p.ageMax = float64(dur(c.PriorityMaxAge))
	if p.ageMax == 0 {
		p.ageMax = 7 * 24 * 3600
	}
	p.halfLife = float64(dur(c.PriorityDecayHalfLife))
	p.calcAt = p.now
	if per := dur(c.PriorityCalcPeriod); per > 0 {
		p.calcAt = p.now - ((p.now%per)+per)%per
	}
	p.bfMax = c.BackfillMaxJobTest
	if p.bfMax == 0 {
		p.bfMax = 500
	}
	p.bfWindow = dur(c.BackfillWindow)
	if p.bfWindow == 0 {
		p.bfWindow = 24 * 3600
	}
	p.switchWait = dur(c.MaxSwitchWait)
	if p.switchWait == 0 {
		p.switchWait = 300
	}
	p.preempt = c.PreemptType == "preempt/qos"
	p.basic = c.PriorityWeightAge == 0 && c.PriorityWeightFairshare == 0 && c.PriorityWeightJobSize == 0 &&
		c.PriorityWeightPartition == 0 && c.PriorityWeightQOS == 0

	p.compileNodes()
	p.compileParts()
	p.compileClasses()
	p.compileTopology()
	p.compileQOS()
	p.users = map[string]int32{}
	p.compileAssocs()
	p.applyRunning()
	p.idx.build(p)
	return p
}

func (p *pass) userID(name string) int32 {
	if id, ok := p.users[name]; ok {
		return id
	}
	id := int32(len(p.users))
	p.users[name] = id
	return id
}

func (p *pass) compileNodes() {
	s := p.s
	order := make([]int32, len(s.Nodes))
	for i := range order {
		order[i] = int32(i)
	}
	weight := func(i int32) int {
		if w := s.Nodes[i].Weight; w != 0 {
			return w
		}
		return 1
	}
	sort.SliceStable(order, func(a, b int) bool { return weight(order[a]) < weight(order[b]) })
	p.nodes = make([]nodeInfo, len(order))
	p.nodeIn = order
	p.nodeByName = make(map[string]int32, len(order))
	p.featID = map[string]int32{}
	p.gresName = map[string]int32{}
	p.gresType = map[string]int32{"": 0}
	for pos, in := range order {
		sn := &s.Nodes[in]
		n := &p.nodes[pos]
		n.name = sn.Name
		n.state = sn.State
		n.leaf = -1
		n.total.cpu = int32(sn.CPUs)
		n.total.mem = sn.MemMB
		p.clusterCPU += int64(sn.CPUs)
		if _, dup := p.nodeByName[sn.Name]; !dup {
			p.nodeByName[sn.Name] = int32(pos)
		}
		for _, f := range sn.Features {
			id, ok := p.featID[f]
			if !ok {
				id = int32(len(p.featID))
				p.featID[f] = id
			}
			n.feats = append(n.feats, id)
			if id < 64 {
				n.fmask |= 1 << id
			}
		}
		slices.Sort(n.feats)
		next := map[int32]int{}
		for _, g := range sn.Gres {
			if n.npool == maxPools || g.Count <= 0 {
				continue
			}
			name := p.gresNameID(g.Name)
			typ, ok := p.gresType[g.Type]
			if !ok {
				typ = int32(len(p.gresType))
				p.gresType[g.Type] = typ
			}
			idx := g.Indices
			if len(idx) != g.Count {
				idx = make([]int, g.Count)
				for i := range idx {
					idx[i] = next[name] + i
				}
			}
			if len(idx) > 64 {
				idx = idx[:64]
			}
			for _, d := range idx {
				next[name] = max(next[name], d+1)
			}
			n.pools[n.npool] = poolInfo{name: name, typ: typ, idx: idx}
			n.total.g[n.npool] = int32(len(idx))
			n.npool++
		}
	}
}

func (p *pass) gresNameID(name string) int32 {
	id, ok := p.gresName[name]
	if !ok {
		id = int32(len(p.gresName))
		p.gresName[name] = id
	}
	return id
}

func (p *pass) compileParts() {
	s := p.s
	p.parts = make([]partInfo, len(s.Partitions))
	p.partByName = make(map[string]int32, len(s.Partitions))
	p.defPart = -1
	maxFactor := 0
	for i := range s.Partitions {
		maxFactor = max(maxFactor, s.Partitions[i].PriorityJobFactor)
	}
	words := (len(p.nodes) + 63) / 64
	for i := range s.Partitions {
		sp := &s.Partitions[i]
		pi := &p.parts[i]
		pi.name = sp.Name
		pi.spec = sp
		pi.member = make([]uint64, words)
		if i < 64 {
			pi.bit = 1 << i
		}
		pi.maxTime = dur(sp.MaxTime)
		pi.defTime = dur(sp.DefaultTime)
		if maxFactor > 0 {
			pi.factor = float64(sp.PriorityJobFactor) / float64(maxFactor)
		}
		pi.excl = sp.OverSubscribe == OverSubscribeExclusive
		if sp.AllowAccounts != nil {
			pi.allowAcc = map[string]bool{}
			for _, a := range sp.AllowAccounts {
				pi.allowAcc[a] = true
			}
		}
		if sp.AllowQOS != nil {
			pi.allowQOS = map[string]bool{}
			for _, q := range sp.AllowQOS {
				pi.allowQOS[q] = true
			}
		}
		for _, name := range sp.Nodes {
			n, ok := p.nodeByName[name]
			if !ok || pi.has(n) {
				continue
			}
			pi.member[n>>6] |= 1 << (n & 63)
			pi.nodes = append(pi.nodes, n)
			pi.cpus += int64(p.nodes[n].total.cpu)
		}
		slices.Sort(pi.nodes)
		if _, dup := p.partByName[sp.Name]; !dup {
			p.partByName[sp.Name] = int32(i)
		}
		if sp.Default && p.defPart < 0 {
			p.defPart = int32(i)
		}
	}
	if p.defPart < 0 && len(p.parts) > 0 {
		p.defPart = 0
	}
}

// touch saves node n's state before a walk first changes it.
func (p *pass) touch(n int32) {
	if p.rp != nil {
		p.rp.touch(n)
	}
	if !p.undoing {
		return
	}
	if p.isSaved == nil {
		p.isSaved = make([]bool, len(p.nodes))
		p.saved = make([]nstate, len(p.nodes))
	}
	if p.isSaved[n] {
		return
	}
	p.isSaved[n] = true
	p.saved[n] = p.ns[n].clone()
	p.savedIDs = append(p.savedIDs, n)
}

func (st *nstate) clone() nstate {
	c := *st
	c.ev = slices.Clone(st.ev)
	return c
}

// undo puts back what the walk changed.
func (p *pass) undo() {
	for _, n := range p.savedIDs {
		p.ns[n] = p.saved[n]
		p.saved[n] = nstate{}
		p.isSaved[n] = false
		p.idx.update(p, n)
	}
	p.savedIDs = p.savedIDs[:0]
	for i := len(p.charges) - 1; i >= 0; i-- {
		c := &p.charges[i]
		p.chargeNoLog(c.qos, c.user, c.assoc, &c.t, -c.sign)
	}
	p.charges = p.charges[:0]
	for _, v := range p.preempts {
		p.run[v].gone = false
	}
	p.preempts = p.preempts[:0]
	p.undoing = false
}

func (p *pass) compileQOS() {
	s := p.s
	p.qos = make([]qosInfo, len(s.QOS))
	p.qosByNam = make(map[string]int32, len(s.QOS))
	maxPrio := 0
	for i := range s.QOS {
		maxPrio = max(maxPrio, s.QOS[i].Priority)
		if _, dup := p.qosByNam[s.QOS[i].Name]; !dup {
			p.qosByNam[s.QOS[i].Name] = int32(i)
		}
	}
	for i := range s.QOS {
		q := &p.qos[i]
		q.spec = &s.QOS[i]
		if maxPrio > 0 {
			q.factor = float64(max(q.spec.Priority, 0)) / float64(maxPrio)
		}
		q.mode = q.spec.PreemptMode
		if q.mode == "" {
			q.mode = s.Config.PreemptMode
		}
		if q.mode == "" {
			q.mode = PreemptOff
		}
		q.preempt = make([]bool, len(s.QOS))
		for _, name := range q.spec.Preempt {
			if j, ok := p.qosByNam[name]; ok && int(j) != i {
				q.preempt[j] = true
			}
		}
		q.users = map[int32]*counter{}
	}
	p.normal = -1
	if j, ok := p.qosByNam["normal"]; ok {
		p.normal = j
	}
}

// qosOf resolves a job's QoS name: -1 for none (no QoS defined, or "" with
// no "normal"), -2 for an unknown name.
func (p *pass) qosOf(name string) int32 {
	if name == "" {
		return p.normal
	}
	if j, ok := p.qosByNam[name]; ok {
		return j
	}
	if len(p.qos) == 0 {
		return -1
	}
	return -2
}

func (q *qosInfo) user(u int32) *counter {
	c := q.users[u]
	if c == nil {
		c = &counter{}
		q.users[u] = c
	}
	return c
}

// applyRunning charges the running jobs' allocations to the nodes, the
// limits and the time line.
func (p *pass) applyRunning() {
	n := len(p.nodes)
	p.ns = make([]nstate, n)
	p.nodeRuns = make([][]int32, n)
	for i := range p.nodes {
		p.ns[i].free = p.nodes[i].total
		for k := 0; k < p.nodes[i].npool; k++ {
			c := len(p.nodes[i].pools[k].idx)
			if c == 64 {
				p.ns[i].dev[k] = ^uint64(0)
			} else {
				p.ns[i].dev[k] = 1<<c - 1
			}
		}
		p.ns[i].dl = forever
	}
	p.run = make([]runInfo, len(p.s.Running))
	p.runDue = make([]int64, len(p.s.Running))
	for ri := range p.s.Running {
		p.addRun(int32(ri), nil)
	}
	for i := range p.ns {
		if len(p.ns[i].ev) > 1 {
			slices.SortFunc(p.ns[i].ev, func(a, b event) int { return eventCmp(&a, &b) })
		}
		p.ns[i].cons = p.ns[i].free
	}
}

// addRun charges Snapshot.Running[ri] (into p.run[ri]) to its nodes, the
// time line and the limits. keep, when set, is told of every node before it
// changes, and events go in time order (else they are sorted afterwards).
func (p *pass) addRun(ri int32, keep func(n int32)) {
	rj := &p.s.Running[ri]
	r := &p.run[ri]
	*r = runInfo{spec: rj, start: secs(rj.StartTime), end: forever}
	p.runDue[ri] = secs(rj.EndTime)
	if !rj.EndTime.IsZero() {
		r.end = max(rj.EndTime.Unix(), p.now+1)
	}
	r.user = p.userID(rj.User)
	r.qos = p.qosOf(rj.QOS)
	r.assoc = p.tree.lookup(rj.Account, rj.User)
	for _, a := range rj.Alloc {
		ni, ok := p.nodeByName[a.Node]
		if !ok {
			continue
		}
		node := &p.nodes[ni]
		var v vec
		var devs [maxPools]uint64
		v.cpu = int32(a.CPUs)
		v.mem = a.MemMB
		for _, g := range a.Gres {
			name, ok := p.gresName[g.Name]
			if !ok {
				continue
			}
			for _, d := range g.Indices {
				for k := 0; k < node.npool; k++ {
					pl := &node.pools[k]
					if pl.name != name {
						continue
					}
					if pos := slices.Index(pl.idx, d); pos >= 0 {
						if devs[k]&(1<<pos) == 0 {
							devs[k] |= 1 << pos
							v.g[k]++
						}
						break
					}
				}
			}
			if g.Name == "gpu" {
				r.tres.GPU += int64(len(g.Indices))
			}
		}
		if keep != nil {
			keep(ni)
		}
		p.ns[ni].free.sub(&v)
		for k := range devs {
			p.ns[ni].dev[k] &^= devs[k]
		}
		r.nodes = append(r.nodes, ni)
		r.amount = append(r.amount, v)
		r.devs = append(r.devs, devs)
		r.tres.CPU += int64(a.CPUs)
		r.tres.MemMB += a.MemMB
		r.tres.Node++
		p.nodeRuns[ni] = append(p.nodeRuns[ni], ri)
		if r.end < forever {
			if keep != nil {
				p.ns[ni].addEvent(event{t: r.end, d: v})
			} else {
				p.ns[ni].ev = append(p.ns[ni].ev, event{t: r.end, d: v})
			}
		}
	}
	p.chargeNoLog(r.qos, r.user, r.assoc, &r.tres, 1)
}

type chargeRec struct {
	qos, user, assoc int32
	t                TRES
	sign             int64
}

// charge adds (sign 1) or removes (sign -1) a running job's TRES to the
// counters of its QoS, its user in that QoS and its association tree.
func (p *pass) charge(qos, user, assoc int32, t *TRES, sign int64) {
	if p.undoing {
		p.charges = append(p.charges, chargeRec{qos, user, assoc, *t, sign})
	}
	p.chargeNoLog(qos, user, assoc, t, sign)
}

func (p *pass) chargeNoLog(qos, user, assoc int32, t *TRES, sign int64) {
	if qos >= 0 {
		q := &p.qos[qos]
		q.used.add(t, sign)
		q.user(user).add(t, sign)
	}
	for a := assoc; a >= 0; a = p.tree.nodes[a].parent {
		p.tree.nodes[a].used.add(t, sign)
	}
}

// constraint is a parsed -C expression in disjunctive normal form: a node
// matches when it has every feature of one of the terms.
type constraint struct {
	terms [][]int32 // feature ids; -1 for an unknown feature
	all   uint64    // features (ids below 64) every term needs, for pruning
}

func (p *pass) parseConstraint(expr string) *constraint {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil
	}
	c := &constraint{}
	repl := strings.NewReplacer("[", "", "]", "", "(", "", ")", "", " ", "")
	for _, or := range strings.Split(repl.Replace(expr), "|") {
		var term []int32
		for _, f := range strings.FieldsFunc(or, func(r rune) bool { return r == '&' || r == ',' }) {
			if i := strings.IndexByte(f, '*'); i >= 0 {
				f = f[:i]
			}
			id, ok := p.featID[f]
			if !ok {
				id = -1
			}
			term = append(term, id)
		}
		c.terms = append(c.terms, term)
	}
	for i, t := range c.terms {
		var m uint64
		for _, id := range t {
			if id >= 0 && id < 64 {
				m |= 1 << id
			}
		}
		if i == 0 {
			c.all = m
		} else {
			c.all &= m
		}
	}
	return c
}

func (c *constraint) match(n *nodeInfo) bool {
	if c == nil {
		return true
	}
	for _, t := range c.terms {
		ok := true
		for _, id := range t {
			if id < 0 {
				ok = false
				break
			}
			if id < 64 {
				if n.fmask&(1<<id) == 0 {
					ok = false
					break
				}
			} else if _, found := slices.BinarySearch(n.feats, id); !found {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
