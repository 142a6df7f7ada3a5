package acct

import (
	"hpc/cluster/api"
	"slices"
	"sort"
	"strings"
)

// setAssoc applies association settings to as (checkDefaults then checks
// the default QoS against the QoS lists).
func (a *State) setAssoc(as *api.Assoc, s *api.AcctmgrSet) error {
	var err error
	if s.Fairshare != nil {
		as.Shares = *s.Fairshare
		if as.Shares < 0 {
			as.Shares = 1
		}
	}
	setCount(&as.GrpJobs, s.GrpJobs)
	setCount(&as.GrpSubmitJobs, s.GrpSubmitJobs)
	setCount(&as.MaxJobs, s.MaxJobs)
	setCount(&as.MaxSubmitJobs, s.MaxSubmitJobs)
	setMinutes(&as.MaxWallMin, s.MaxWallMin)
	if as.GrpTRES, err = mergeTRES(as.GrpTRES, s.GrpTRES); err != nil {
		return err
	}
	if as.MaxTRESPerJob, err = mergeTRES(as.MaxTRESPerJob, s.MaxTRESPerJob); err != nil {
		return err
	}
	if s.QOS != nil {
		cur := as.QOS
		if cur == nil { // += and -= start from what it inherits
			cur = a.inheritedQOS(as)
		}
		if as.QOS, err = a.editList(cur, s.QOS); err != nil {
			return err
		}
	}
	if s.DefaultQOS != nil {
		d := strings.ToLower(*s.DefaultQOS)
		if d != "" && a.QOS[d] == nil {
			return a.badQOS(d)
		}
		as.DefaultQOS = d
	}
	return nil
}

// maxAssocDepth is the depth of the deepest account Resolved lists (root
// is 0; its users one deeper).
const maxAssocDepth = 64

// inheritedQOS is the QoS list an association gets from its parents.
func (a *State) inheritedQOS(as *api.Assoc) []string {
	parent := as.Account
	if as.User == "" {
		parent = as.Parent
	}
	for i := 0; parent != "" && i < 64; i++ {
		p := a.Assocs[assocKey(parent, "")]
		if p == nil {
			break
		}
		if p.QOS != nil {
			return p.QOS
		}
		parent = p.Parent
	}
	return nil
}

// checkDefaults refuses associations whose default QoS they may not use.
func (a *State) checkDefaults() error {
	for _, r := range a.Resolved() {
		if r.DefaultQOS != "" && !slices.Contains(r.QOS, r.DefaultQOS) {
			who := "account " + r.Account
			if r.User != "" {
				who = "user " + r.User + " of account " + r.Account
			}
			return acctErr("sacctmgr: error: Default QOS '%s' of %s is not in its QOS list (%s)", r.DefaultQOS, who, strings.Join(r.QOS, ","))
		}
	}
	return nil
}

// resolve is the one association Resolved would list for account and
// user (a user's, or the account's own for ""), nil where it lists none:
// only it and the accounts above it are resolved (every submit asks for
// one; resolving the whole tree was a copy of every association each).
func (a *State) resolve(account, user string) *api.Assoc {
	var chain []*api.Assoc // account's own, then its parents' up to root
	for acct := account; ; {
		own := a.Assocs[assocKey(acct, "")]
		if own == nil || len(chain) > maxAssocDepth {
			return nil // not under root, or deeper than Resolved goes
		}
		chain = append(chain, own)
		if acct == rootAccount {
			break
		}
		acct = own.Parent
	}
	var r *api.Assoc
	for i := len(chain) - 1; i >= 0; i-- {
		r = inherit(chain[i], r, len(chain)-1-i)
	}
	if user == "" {
		return r
	}
	own := a.Assocs[assocKey(account, user)]
	if own == nil {
		return nil
	}
	return inherit(own, r, len(chain))
}

// resolved lists copies of the associations in tree order (an account,
// its users by name, then its sub-accounts by name) with what they
// inherit filled in and Depth set.
func (a *State) Resolved() []*api.Assoc {
	kids := map[string][]string{}  // account -> sub-accounts
	users := map[string][]string{} // account -> users
	for _, as := range a.Assocs {
		if as.User != "" {
			users[as.Account] = append(users[as.Account], as.User)
		} else if as.Account != rootAccount {
			kids[as.Parent] = append(kids[as.Parent], as.Account)
		}
	}
	var out []*api.Assoc
	var walk func(acct string, parent *api.Assoc, depth int)
	walk = func(acct string, parent *api.Assoc, depth int) {
		own := a.Assocs[assocKey(acct, "")]
		if own == nil || depth > maxAssocDepth {
			return
		}
		r := inherit(own, parent, depth)
		out = append(out, r)
		us := users[acct]
		sort.Strings(us)
		for _, u := range us {
			out = append(out, inherit(a.Assocs[assocKey(acct, u)], r, depth+1))
		}
		ks := kids[acct]
		sort.Strings(ks)
		for _, k := range ks {
			walk(k, r, depth+1)
		}
	}
	walk(rootAccount, nil, 0)
	return out
}

// inherit copies own and fills in what it inherits from its (resolved)
// parent: Max limits (MaxTRES per TRES), QoS list and default QoS.
func inherit(own, parent *api.Assoc, depth int) *api.Assoc {
	r := *own
	r.Depth = depth
	r.QOS = slices.Clone(own.QOS)
	if parent == nil {
		return &r
	}
	if r.MaxJobs == nil {
		r.MaxJobs = parent.MaxJobs
	}
	if r.MaxSubmitJobs == nil {
		r.MaxSubmitJobs = parent.MaxSubmitJobs
	}
	if r.MaxWallMin == nil {
		r.MaxWallMin = parent.MaxWallMin
	}
	if len(parent.MaxTRESPerJob) > 0 {
		m := api.TRES{}
		for k, v := range parent.MaxTRESPerJob {
			m[k] = v
		}
		for k, v := range own.MaxTRESPerJob {
			m[k] = v
		}
		r.MaxTRESPerJob = m
	}
	if own.QOS == nil {
		r.QOS = slices.Clone(parent.QOS)
	}
	if r.DefaultQOS == "" {
		r.DefaultQOS = parent.DefaultQOS
	}
	return &r
}
