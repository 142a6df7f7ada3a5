package sched

import (
	"slices"
	"strconv"
	"strings"
)

// nodeClass groups nodes that look alike to a request (capacity, GRES
// pools, features), so that questions like "could this partition ever run
// this job" cost one step per class instead of one per node.
type nodeClass struct {
	rep int32 // a node of the class
}

// partClass is how many nodes of a class a partition has, and how many of
// them are up.
type partClass struct {
	class    int32
	count    int32
	up       int32
	rep, upN int32 // a node of the class, one that is up (-1: none)
}

func (p *pass) compileClasses() {
	keys := map[string]int32{}
	var classes []nodeClass
	of := make([]int32, len(p.nodes))
	var b strings.Builder
	for i := range p.nodes {
		n := &p.nodes[i]
		b.Reset()
		b.WriteString(strconv.Itoa(int(n.total.cpu)))
		b.WriteByte('/')
		b.WriteString(strconv.FormatInt(n.total.mem, 10))
		for k := 0; k < n.npool; k++ {
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(int(n.pools[k].name)))
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(int(n.pools[k].typ)))
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(int(n.total.g[k])))
		}
		b.WriteByte('|')
		for _, f := range n.feats {
			b.WriteString(strconv.Itoa(int(f)))
			b.WriteByte(',')
		}
		key := b.String()
		c, ok := keys[key]
		if !ok {
			c = int32(len(classes))
			keys[key] = c
			classes = append(classes, nodeClass{rep: int32(i)})
		}
		of[i] = c
	}
	for pi := range p.parts {
		part := &p.parts[pi]
		at := map[int32]int{}
		for _, n := range part.nodes {
			c := of[n]
			k, ok := at[c]
			if !ok {
				k = len(part.classes)
				at[c] = k
				part.classes = append(part.classes, partClass{class: c, rep: n, upN: -1})
			}
			pc := &part.classes[k]
			pc.count++
			if p.nodes[n].state == NodeUp {
				pc.up++
				if pc.upN < 0 {
					pc.upN = n
				}
			}
		}
	}
	p.classOf = of
}

// capacity is what partition pi could ever give job j: how many nodes
// could take at least one task and how many tasks in all, counting all
// nodes (up == false) or only nodes up.
func (p *pass) capacity(j *jobInfo, pi int32, excl, up bool) (nodes int64, tasks int64) {
	r := &j.req
	part := &p.parts[pi]
	for _, pc := range part.classes {
		cnt := int64(pc.count)
		if up {
			cnt = int64(pc.up)
		}
		if cnt == 0 {
			continue
		}
		n := &p.nodes[pc.rep]
		if !r.cons.match(n) {
			continue
		}
		c := r.capOn(n, &n.total, excl)
		if c == 0 {
			continue
		}
		nodes += cnt
		tasks += cnt * int64(c)
	}
	// -x nodes do not count.
	for _, n := range r.avoid {
		if !part.has(n) || (up && p.nodes[n].state != NodeUp) {
			continue
		}
		node := &p.nodes[n]
		if !r.cons.match(node) {
			continue
		}
		if c := r.capOn(node, &node.total, excl); c > 0 {
			nodes--
			tasks -= int64(c)
		}
	}
	return nodes, tasks
}

// compress writes node names as a Slurm hostlist: node[1-3,5].
func compress(names []string) string {
	type item struct {
		prefix string
		num    int
		width  int
		ok     bool
	}
	items := make([]item, len(names))
	for i, s := range names {
		j := len(s)
		for j > 0 && s[j-1] >= '0' && s[j-1] <= '9' {
			j--
		}
		if j == len(s) {
			items[i] = item{prefix: s}
			continue
		}
		n, err := strconv.Atoi(s[j:])
		if err != nil {
			items[i] = item{prefix: s}
			continue
		}
		items[i] = item{prefix: s[:j], num: n, width: len(s) - j, ok: true}
	}
	var out []string
	for i := 0; i < len(items); {
		it := items[i]
		if !it.ok {
			out = append(out, it.prefix)
			i++
			continue
		}
		k := i
		var nums []int
		for k < len(items) && items[k].ok && items[k].prefix == it.prefix && items[k].width == it.width {
			nums = append(nums, items[k].num)
			k++
		}
		slices.Sort(nums)
		nums = slices.Compact(nums)
		if len(nums) == 1 {
			out = append(out, names[i])
			i = k
			continue
		}
		pad := func(n int) string {
			s := strconv.Itoa(n)
			for len(s) < it.width {
				s = "0" + s
			}
			return s
		}
		var ranges []string
		for a := 0; a < len(nums); {
			b := a
			for b+1 < len(nums) && nums[b+1] == nums[b]+1 {
				b++
			}
			if a == b {
				ranges = append(ranges, pad(nums[a]))
			} else {
				ranges = append(ranges, pad(nums[a])+"-"+pad(nums[b]))
			}
			a = b + 1
		}
		out = append(out, it.prefix+"["+strings.Join(ranges, ",")+"]")
		i = k
	}
	return strings.Join(out, ",")
}
