package sched

import "sort"

// topology is the switch tree of topology.conf, compiled.
type topology struct {
	sw []switchInfo
	// leaves lists the leaf switches in topology.conf order.
	leaves []int32
	// order lists all switches bottom-up (level ascending, then file
	// order): the order in which the lowest switch that can hold a job
	// is found.
	order []int32
}

type switchInfo struct {
	name     string
	parent   int32
	level    int32
	children []int32
	leaf     bool
	// leafIdx is the switch's position in topology.leaves (leaves only).
	leafIdx int32
	// under lists the leaves (positions in topology.leaves) below.
	under []int32
}

func (p *pass) compileTopology() {
	t := &p.topo
	sp := p.s.Topology
	if len(sp) == 0 {
		return
	}
	byName := make(map[string]int32, len(sp))
	t.sw = make([]switchInfo, len(sp))
	for i := range sp {
		t.sw[i] = switchInfo{name: sp[i].Name, parent: -1, level: -1, leafIdx: -1}
		if _, dup := byName[sp[i].Name]; !dup {
			byName[sp[i].Name] = int32(i)
		}
	}
	for i := range sp {
		for _, c := range sp[i].Switches {
			if j, ok := byName[c]; ok && j != int32(i) && t.sw[j].parent < 0 {
				t.sw[j].parent = int32(i)
				t.sw[i].children = append(t.sw[i].children, j)
			}
		}
		if len(sp[i].Nodes) > 0 || len(sp[i].Switches) == 0 {
			t.sw[i].leaf = true
			t.sw[i].leafIdx = int32(len(t.leaves))
			t.leaves = append(t.leaves, int32(i))
			for _, name := range sp[i].Nodes {
				if n, ok := p.nodeByName[name]; ok && p.nodes[n].leaf < 0 {
					p.nodes[n].leaf = int32(i)
				}
			}
		}
	}
	// Levels: a leaf is 0, a switch one above its highest child. Cycles
	// (a bad file) stop at the depth of the switch count.
	var level func(i int32, depth int) int32
	level = func(i int32, depth int) int32 {
		s := &t.sw[i]
		if s.level >= 0 {
			return s.level
		}
		if s.leaf || depth > len(t.sw) {
			s.level = 0
			return 0
		}
		l := int32(0)
		for _, c := range s.children {
			l = max(l, level(c, depth+1)+1)
		}
		s.level = l
		return l
	}
	for i := range t.sw {
		level(int32(i), 0)
	}
	// Leaves under each switch, in leaf order.
	for _, l := range t.leaves {
		seen := 0
		for a := l; a >= 0 && seen <= len(t.sw); a = t.sw[a].parent {
			t.sw[a].under = append(t.sw[a].under, t.sw[l].leafIdx)
			seen++
		}
	}
	t.order = make([]int32, len(t.sw))
	for i := range t.order {
		t.order[i] = int32(i)
	}
	sort.SliceStable(t.order, func(a, b int) bool { return t.sw[t.order[a]].level < t.sw[t.order[b]].level })
}

// cand is a node that could take some of a job's tasks, and how many.
type cand struct {
	n   int32
	cap int32
}

// pick chooses nodes for a multi-node job from cands (in node order) with
// the tree: the lowest switch that can hold the job, best fit among the
// switches of that level (fewest usable nodes, or tasks, left over), and
// inside it the fullest leaves first with a best-fit last leaf, which also
// spans the fewest leaves. With need > 0 the job takes need nodes and every
// candidate must be able to take its share; with need == 0 it takes nodes
// until their room adds up to tasks. maxLeaves is the --switches bound (0:
// none). It returns nil when no switch can hold the job, and whether only
// the leaf bound stood in the way. It is complete: it fails only when no
// switch holds enough candidates.
func (t *topology) pick(nodes []nodeInfo, cands []cand, need, tasks int32, maxLeaves int32) ([]cand, bool) {
	nl := len(t.leaves)
	byLeaf := make([][]cand, nl)
	for _, c := range cands {
		l := nodes[c.n].leaf
		if l < 0 {
			continue
		}
		li := t.sw[l].leafIdx
		byLeaf[li] = append(byLeaf[li], c)
	}
	// weight is what a leaf offers: nodes, or tasks.
	weight := make([]int64, nl)
	for i, cs := range byLeaf {
		if need > 0 {
			weight[i] = int64(len(cs))
			continue
		}
		for _, c := range cs {
			weight[i] += int64(c.cap)
		}
	}
	goal := int64(tasks)
	if need > 0 {
		goal = int64(need)
	}
	best := int32(-1)
	var bestLeft int64
	for _, si := range t.order {
		s := &t.sw[si]
		if best >= 0 && s.level > t.sw[best].level {
			break
		}
		var have int64
		for _, li := range s.under {
			have += weight[li]
		}
		if have < goal {
			continue
		}
		if best < 0 || have-goal < bestLeft {
			best, bestLeft = si, have-goal
		}
	}
	if best < 0 {
		return nil, false
	}
	under := append([]int32(nil), t.sw[best].under...)
	sort.SliceStable(under, func(a, b int) bool { return weight[under[a]] > weight[under[b]] })
	var out []cand
	var got int64
	used := make([]bool, len(under))
	leaves := int32(0)
	for got < goal {
		// The smallest leaf that completes the job, else the fullest.
		pick := -1
		for i := len(under) - 1; i >= 0; i-- {
			if !used[i] && got+weight[under[i]] >= goal {
				pick = i
				break
			}
		}
		if pick < 0 {
			for i := range under {
				if !used[i] && weight[under[i]] > 0 {
					pick = i
					break
				}
			}
		}
		if pick < 0 {
			return nil, false // cannot happen: the switch holds enough
		}
		used[pick] = true
		leaves++
		for _, c := range byLeaf[under[pick]] {
			if got >= goal {
				break
			}
			out = append(out, c)
			if need > 0 {
				got++
			} else {
				got += int64(c.cap)
			}
		}
	}
	if maxLeaves > 0 && leaves > maxLeaves {
		return nil, true
	}
	sort.Slice(out, func(a, b int) bool { return out[a].n < out[b].n })
	return out, false
}
