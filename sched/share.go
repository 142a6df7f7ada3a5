package sched

import (
	"math"
	"sort"
)

// AssocShare is one association's fair-share numbers as sshare prints them
// under Fair Tree.
type AssocShare struct {
	Account string
	User    string // "" for an account
	// Depth is the level in the tree: root 0, its users and accounts 1.
	Depth int
	// RawShares is Fairshare= (1 when unset); negative: no share.
	RawShares int
	// NormShares is RawShares over the siblings' total (root: 1).
	NormShares float64
	// RawUsage is decayed CPU-seconds at the pass's calculation time
	// (accounts: the sum of their subtree).
	RawUsage float64
	// NormUsage is RawUsage over root's; EffectvUsage over the parent's.
	NormUsage    float64
	EffectvUsage float64
	// LevelFS is NormShares over EffectvUsage (+Inf without usage).
	LevelFS float64
	// FairShare is the Fair Tree factor; only user associations have one.
	FairShare float64
}

// Shares computes every association's fair-share numbers from s the way
// Schedule does for priorities (past usage from s.Usage and Assoc.Usage,
// running jobs from s.Running, decayed with PriorityDecayHalfLife), in tree
// order: an account, its users by name, then its sub-accounts by name.
// Empty s.Assocs gives nil.
func Shares(s Snapshot) []AssocShare {
	if len(s.Assocs) == 0 {
		return nil
	}
	p := newPass(&s)
	p.fairTree()
	t := &p.tree
	raw := map[[2]string]int{}
	for _, a := range s.Assocs {
		sh := a.Shares
		if sh == 0 {
			sh = 1
		}
		raw[[2]string{a.Account, a.User}] = sh
	}
	rootUsage := t.nodes[0].usage
	var out []AssocShare
	var walk func(i int32, depth int)
	walk = func(i int32, depth int) {
		n := &t.nodes[i]
		r := AssocShare{Account: n.account, User: n.user, Depth: depth, RawUsage: n.usage,
			NormShares: 1, EffectvUsage: 1, LevelFS: math.Inf(1)}
		if sh, ok := raw[[2]string{n.account, n.user}]; ok {
			r.RawShares = sh
		} else {
			r.RawShares = 1
		}
		if rootUsage > 0 {
			r.NormUsage = n.usage / rootUsage
		}
		if n.parent >= 0 {
			par := &t.nodes[n.parent]
			tot := 0.0
			for _, c := range par.children {
				tot += t.nodes[c].shares
			}
			r.NormShares = 0
			if tot > 0 {
				r.NormShares = n.shares / tot
			}
			r.EffectvUsage = 0
			if par.usage > 0 {
				r.EffectvUsage = n.usage / par.usage
			}
			switch {
			case r.NormShares == 0:
				r.LevelFS = 0
			case r.EffectvUsage > 0:
				r.LevelFS = r.NormShares / r.EffectvUsage
			}
		}
		if n.user != "" {
			r.FairShare = n.fs
		}
		out = append(out, r)
		var users, accts []int32
		for _, c := range n.children {
			if t.nodes[c].user != "" {
				users = append(users, c)
			} else {
				accts = append(accts, c)
			}
		}
		sort.Slice(users, func(a, b int) bool { return t.nodes[users[a]].user < t.nodes[users[b]].user })
		sort.Slice(accts, func(a, b int) bool { return t.nodes[accts[a]].account < t.nodes[accts[b]].account })
		for _, c := range users {
			walk(c, depth+1)
		}
		for _, c := range accts {
			walk(c, depth+1)
		}
	}
	walk(0, 0)
	return out
}
