package sched

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// assocTree is the association tree with fair-share and limit state.
type assocTree struct {
	nodes  []assocNode
	byAcct map[string]int32
	byUser map[[2]string]int32
	users  int // user associations, for Fair Tree ranks
}

type assocNode struct {
	account, user string
	parent        int32
	children      []int32
	shares        float64
	limits        *Limits
	usage         float64
	base          float64 // Assoc.Usage
	// grpLimited: the association sets GrpJobs or GrpTRES; maxJobs: it or
	// an account above it sets MaxJobs (counted on the user's association).
	grpLimited, maxJobs bool
	levelFS             float64
	fs                  float64 // users: the final fair-share factor
	used                counter
}

// lookup finds a job's association: the user's under the account, else
// the account's own, else -1.
func (t *assocTree) lookup(account, user string) int32 {
	if i, ok := t.byUser[[2]string{account, user}]; ok {
		return i
	}
	if i, ok := t.byAcct[account]; ok {
		return i
	}
	return -1
}

func (p *pass) compileAssocs() {
	t := &p.tree
	t.byAcct = map[string]int32{}
	t.byUser = map[[2]string]int32{}
	as := p.s.Assocs
	if len(as) == 0 {
		return
	}
	shares := func(s int) float64 {
		switch {
		case s == 0:
			return 1
		case s < 0:
			return 0
		}
		return float64(s)
	}
	t.nodes = append(t.nodes, assocNode{account: "root", parent: -1, shares: 1})
	t.byAcct["root"] = 0
	account := func(name string) int32 {
		if i, ok := t.byAcct[name]; ok {
			return i
		}
		i := int32(len(t.nodes))
		t.nodes = append(t.nodes, assocNode{account: name, parent: -1, shares: 1})
		t.byAcct[name] = i
		return i
	}
	// Accounts first, so parents resolve whatever the order.
	for k := range as {
		a := &as[k]
		if a.User != "" {
			continue
		}
		i := account(a.Account)
		t.nodes[i].shares = shares(a.Shares)
		t.nodes[i].limits = &a.Limits
	}
	for k := range as {
		a := &as[k]
		if a.User != "" || a.Account == "root" {
			continue
		}
		i := t.byAcct[a.Account]
		if t.nodes[i].parent >= 0 {
			continue
		}
		par := "root"
		if a.Parent != "" {
			par = a.Parent
		}
		pi := account(par)
		// Refuse cycles: the parent must not sit under i.
		cyc := false
		for x := pi; x >= 0; x = t.nodes[x].parent {
			if x == i {
				cyc = true
				break
			}
		}
		if cyc {
			pi = 0
		}
		t.nodes[i].parent = pi
		t.nodes[pi].children = append(t.nodes[pi].children, i)
	}
	for k := range as {
		a := &as[k]
		if a.User == "" {
			continue
		}
		key := [2]string{a.Account, a.User}
		if _, dup := t.byUser[key]; dup {
			continue
		}
		pi := account(a.Account)
		i := int32(len(t.nodes))
		t.nodes = append(t.nodes, assocNode{account: a.Account, user: a.User, parent: pi,
			shares: shares(a.Shares), limits: &a.Limits, base: a.Usage})
		t.nodes[pi].children = append(t.nodes[pi].children, i)
		t.byUser[key] = i
		t.users++
	}
	// Which counters matter to limits (a Planner re-checks jobs only
	// where one of them changed).
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.limits != nil {
			n.grpLimited = n.limits.GrpJobs > 0 || n.limits.GrpTRES != (TRES{})
		}
	}
	// Accounts created only as parents hang under root.
	for i := 1; i < len(t.nodes); i++ {
		if t.nodes[i].user == "" && t.nodes[i].parent < 0 {
			t.nodes[i].parent = 0
			t.nodes[0].children = append(t.nodes[0].children, int32(i))
		}
	}
	for i := range t.nodes {
		for a := int32(i); a >= 0; a = t.nodes[a].parent {
			if l := t.nodes[a].limits; l != nil && l.MaxJobsPerUser > 0 {
				t.nodes[i].maxJobs = true
				break
			}
		}
	}
}

// decayed is the usage of c CPUs over [a, b] seen from time at, with
// half-life h seconds (0: no decay).
func decayed(c float64, a, b, at int64, h float64) float64 {
	b = min(b, at)
	if b <= a || c <= 0 {
		return 0
	}
	if h <= 0 {
		return c * float64(b-a)
	}
	k := math.Ln2 / h
	return c / k * (math.Exp(-k*float64(at-b)) - math.Exp(-k*float64(at-a)))
}

// runningUsage is the decayed usage of the running jobs by user
// association, as of at. Each association's sum adds its jobs' usage from
// the smallest up, so that it does not depend on the order of
// Snapshot.Running. Sums are kept between calls of a Planner's passes and
// worked out again for the associations it marks (runStale).
func (p *pass) runningUsage(at int64) []float64 {
	t := &p.tree
	all := p.runSum == nil || p.runSumAt != at
	if all {
		p.runSum = make([]float64, len(t.nodes))
		p.runStale = make([]bool, len(t.nodes))
		p.runSumAt = at
	} else if !p.runAnyStale {
		return p.runSum
	}
	type use struct {
		assoc int32
		v     float64
	}
	var uses []use
	for ri := range p.run {
		r := &p.run[ri]
		if r.assoc < 0 || t.nodes[r.assoc].user == "" || !all && !p.runStale[r.assoc] {
			continue
		}
		if !r.usageOK || r.usageAt != at {
			r.usage, r.usageAt, r.usageOK = decayed(float64(r.tres.CPU), r.start, at, at, p.halfLife), at, true
		}
		uses = append(uses, use{r.assoc, r.usage})
	}
	slices.SortFunc(uses, func(x, y use) int {
		if x.assoc != y.assoc {
			return cmp.Compare(x.assoc, y.assoc)
		}
		return cmp.Compare(x.v, y.v)
	})
	for i := range p.runSum {
		if all || p.runStale[i] {
			p.runSum[i] = 0
			p.runStale[i] = false
		}
	}
	for _, u := range uses {
		p.runSum[u.assoc] += u.v
	}
	p.runAnyStale = false
	return p.runSum
}

// staleRunning marks an association's running usage to be summed again.
func (p *pass) staleRunning(assoc int32) {
	if assoc >= 0 && p.runStale != nil {
		p.runStale[assoc] = true
		p.runAnyStale = true
	}
}

// fairTree computes every user association's fair-share factor with the
// Fair Tree algorithm: siblings are ranked by Level Fairshare (shares
// normalized among siblings over usage normalized among siblings), the tree
// is walked depth first in that order, and users get factors by their rank
// in the walk (rank / user associations), ties sharing a rank.
func (p *pass) fairTree() {
	t := &p.tree
	if len(t.nodes) == 0 {
		return
	}
	at := p.calcAt
	for i := range t.nodes {
		t.nodes[i].usage = t.nodes[i].base
	}
	for _, u := range p.s.Usage {
		if i, ok := t.byUser[[2]string{u.Account, u.User}]; ok {
			t.nodes[i].usage += decayed(float64(u.CPUs), secs(u.Start), secs(u.End), at, p.halfLife)
		}
	}
	for i, u := range p.runningUsage(at) {
		if u != 0 {
			t.nodes[i].usage += u
		}
	}
	// Accounts sum their subtree (children come after parents only for
	// users, so sum recursively).
	var sum func(i int32) float64
	sum = func(i int32) float64 {
		n := &t.nodes[i]
		if n.user != "" {
			return n.usage
		}
		s := 0.0
		for _, c := range n.children {
			s += sum(c)
		}
		n.usage = s
		return s
	}
	sum(0)
	levelFS := func(i int32) float64 {
		n := &t.nodes[i]
		par := &t.nodes[n.parent]
		tot := 0.0
		for _, c := range par.children {
			tot += t.nodes[c].shares
		}
		if tot == 0 || n.shares == 0 {
			return 0
		}
		s := n.shares / tot
		if par.usage == 0 || n.usage == 0 {
			return math.Inf(1)
		}
		return s / (n.usage / par.usage)
	}
	count := float64(t.users)
	rank, next := t.users, t.users
	var walk func(sib []int32, accountTied bool)
	walk = func(sib []int32, accountTied bool) {
		for _, c := range sib {
			t.nodes[c].levelFS = levelFS(c)
		}
		sort.SliceStable(sib, func(a, b int) bool {
			x, y := &t.nodes[sib[a]], &t.nodes[sib[b]]
			if x.levelFS != y.levelFS {
				return x.levelFS > y.levelFS
			}
			return x.user != "" && y.user == ""
		})
		prev := math.NaN()
		for k := 0; k < len(sib); k++ {
			n := &t.nodes[sib[k]]
			tied := n.levelFS == prev
			if accountTied {
				tied, accountTied = true, false
			}
			if n.user != "" {
				if !tied {
					rank = next
				}
				n.fs = float64(rank) / count
				next--
			} else {
				// Accounts tied with the next siblings walk their
				// children as one merged list.
				kids := append([]int32(nil), n.children...)
				for k+1 < len(sib) {
					m := &t.nodes[sib[k+1]]
					if m.user != "" || m.levelFS != n.levelFS {
						break
					}
					kids = append(kids, m.children...)
					k++
				}
				walk(kids, tied)
			}
			prev = n.levelFS
		}
	}
	walk(append([]int32(nil), t.nodes[0].children...), false)
}

// basePrio is priority/basic's first priority; job N gets basePrio-N.
const basePrio = 4294901760

// priorities computes every pending job's factors and its priority in
// each of its partitions.
func (p *pass) priorities() {
	if !p.basic {
		p.fairTree()
	}
	for ji := range p.jobs {
		p.jobPriority(&p.jobs[ji])
	}
}

// jobPriority computes one job's factors and priorities (fair-share from
// the last fairTree).
func (p *pass) jobPriority(j *jobInfo) {
	c := &p.s.Config
	nodes := float64(len(p.nodes))
	cpus := float64(p.clusterCPU)
	sj := j.spec
	var f Factors
	if p.basic {
		// priority/basic has no factors: submit order, or what an
		// administrator set.
		pr := uint32(max(int64(basePrio)-int64(sj.ID), 1))
		if sj.Priority != 0 {
			pr = sj.Priority
		}
		if sj.Hold != HoldNone {
			pr = 0
		}
		j.factors = Factors{Nice: sj.Nice}
		j.prio = make([]uint32, len(j.parts))
		for k := range j.prio {
			j.prio[k] = pr
		}
		return
	}
	elig := secs(sj.EligibleTime)
	if elig == 0 {
		elig = max(secs(sj.SubmitTime), secs(sj.BeginTime))
	}
	if j.eligible && p.calcAt > elig {
		f.Age = min(float64(p.calcAt-elig)/p.ageMax, 1)
	}
	if j.assoc >= 0 && p.tree.nodes[j.assoc].user != "" {
		f.Fairshare = p.tree.nodes[j.assoc].fs
	}
	if nodes > 0 && cpus > 0 {
		mn := float64(max(j.req.nodes, 1))
		cp := float64(j.req.tasks) * float64(j.req.cpt)
		if c.PriorityFavorSmall {
			f.JobSize = ((nodes-mn)/nodes + (cpus-cp)/cpus) / 2
		} else {
			f.JobSize = (mn/nodes + cp/cpus) / 2
		}
		f.JobSize = min(max(f.JobSize, 0), 1)
	}
	if j.qos >= 0 {
		f.QOS = p.qos[j.qos].factor
	}
	f.Nice = sj.Nice
	j.factors = f
	j.prio = make([]uint32, len(j.parts))
	for k, pi := range j.parts {
		pf := 0.0
		if pi >= 0 {
			pf = p.parts[pi].factor
		}
		if k == 0 {
			j.factors.Partition = pf
		}
		var pr uint32
		switch {
		case sj.Priority != 0:
			pr = sj.Priority
		default:
			v := float64(c.PriorityWeightAge)*f.Age + float64(c.PriorityWeightFairshare)*f.Fairshare +
				float64(c.PriorityWeightJobSize)*f.JobSize + float64(c.PriorityWeightPartition)*pf +
				float64(c.PriorityWeightQOS)*f.QOS - float64(sj.Nice)
			pr = uint32(min(max(v, 1), math.MaxUint32))
		}
		if sj.Hold != HoldNone {
			pr = 0
		}
		j.prio[k] = pr
	}
}

// weighted returns the factors times their weights, as sprio prints them.
func weighted(f Factors, c *Config) Factors {
	return Factors{
		Age:       f.Age * float64(c.PriorityWeightAge),
		Fairshare: f.Fairshare * float64(c.PriorityWeightFairshare),
		JobSize:   f.JobSize * float64(c.PriorityWeightJobSize),
		Partition: f.Partition * float64(c.PriorityWeightPartition),
		QOS:       f.QOS * float64(c.PriorityWeightQOS),
		Nice:      f.Nice,
	}
}
