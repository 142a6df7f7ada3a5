package acct

import (
	"fmt"
	"hpc/cluster/api"
	"slices"
	"sort"
	"strings"
)

func (a *State) addAccounts(res *api.AcctmgrResult, names []string, s *api.AcctmgrSet, cluster string) error {
	if len(names) == 0 {
		return acctErr(" Need name of account to add.")
	}
	parent := rootAccount
	if s.Parent != nil && *s.Parent != "" {
		parent = strings.ToLower(*s.Parent)
	}
	if a.Assocs[assocKey(parent, "")] == nil {
		return acctErr(" Parent account '%s' doesn't exist on cluster %s\n        Contact your admin to add this account.\n No associations created.", parent, cluster)
	}
	for _, n := range names {
		if a.Accounts[n] != nil {
			continue
		}
		acct := &api.Account{Name: n, Description: n, Organization: n}
		if parent != rootAccount {
			acct.Organization = parent
		}
		if s.Description != nil {
			acct.Description = *s.Description
		}
		if s.Organization != nil {
			acct.Organization = *s.Organization
		}
		a.Accounts[n] = acct
		as := &api.Assoc{Account: n, Parent: parent, Shares: 1}
		a.Assocs[assocKey(n, "")] = as
		if err := a.setAssoc(as, s); err != nil {
			return err
		}
		res.Accounts = append(res.Accounts, n)
		res.Assocs = append(res.Assocs, api.AssocRef{Account: n, Parent: parent})
	}
	return a.checkDefaults()
}

// inheritable reports whether the settings change anything sub-associations
// inherit.
func inheritable(s *api.AcctmgrSet) bool {
	return s.MaxJobs != nil || s.MaxSubmitJobs != nil || s.MaxTRESPerJob != nil ||
		s.MaxWallMin != nil || s.QOS != nil || s.DefaultQOS != nil
}

func assocSettings(s *api.AcctmgrSet) bool {
	return inheritable(s) || s.Fairshare != nil || s.GrpJobs != nil || s.GrpSubmitJobs != nil || s.GrpTRES != nil
}

func (a *State) modifyAccounts(res *api.AcctmgrResult, names []string, s *api.AcctmgrSet) error {
	var matched []string
	for n := range a.Accounts {
		if len(names) == 0 || slices.Contains(names, n) {
			matched = append(matched, n)
		}
	}
	sort.Strings(matched)
	if len(matched) == 0 {
		return nil
	}
	if s.Description != nil || s.Organization != nil {
		for _, n := range matched {
			acct := a.Accounts[n]
			if s.Description != nil {
				acct.Description = *s.Description
			}
			if s.Organization != nil {
				acct.Organization = *s.Organization
			}
		}
		res.Accounts = matched
	}
	if !assocSettings(s) && s.Parent == nil {
		return nil
	}
	before := a.Resolved()
	for _, n := range matched {
		as := a.Assocs[assocKey(n, "")]
		res.Assocs = append(res.Assocs, api.AssocRef{Account: n, Parent: as.Parent})
		if err := a.setAssoc(as, s); err != nil {
			return err
		}
		if s.Parent != nil {
			if err := a.reparent(as, strings.ToLower(*s.Parent)); err != nil {
				return err
			}
		}
	}
	if inheritable(s) {
		// User associations below that inherit what changed are modified
		// too (listed, as sacctmgr lists them, last first).
		var below []api.AssocRef
		for _, r := range before {
			if r.User == "" || !a.under(r.Account, matched) {
				continue
			}
			if inheritsAny(a.Assocs[assocKey(r.Account, r.User)], s) {
				below = append(below, api.AssocRef{Account: r.Account, User: r.User})
			}
		}
		slices.Reverse(below)
		res.Assocs = append(res.Assocs, below...)
	}
	return a.checkDefaults()
}

// under reports whether account acct is one of accts or below one.
func (a *State) under(acct string, accts []string) bool {
	for i := 0; acct != "" && i < 64; i++ {
		if slices.Contains(accts, acct) {
			return true
		}
		p := a.Assocs[assocKey(acct, "")]
		if p == nil {
			return false
		}
		acct = p.Parent
	}
	return false
}

func inheritsAny(own *api.Assoc, s *api.AcctmgrSet) bool {
	return (s.MaxJobs != nil && own.MaxJobs == nil) || (s.MaxSubmitJobs != nil && own.MaxSubmitJobs == nil) ||
		(s.MaxWallMin != nil && own.MaxWallMin == nil) || s.MaxTRESPerJob != nil ||
		(s.QOS != nil && own.QOS == nil) || (s.DefaultQOS != nil && own.DefaultQOS == "")
}

func (a *State) reparent(as *api.Assoc, parent string) error {
	if as.Account == rootAccount || a.Assocs[assocKey(parent, "")] == nil || a.under(parent, []string{as.Account}) {
		return acctErr("sacctmgr: error: Invalid parent account '%s' for account %s", parent, as.Account)
	}
	as.Parent = parent
	return nil
}

func (a *State) deleteAccounts(res *api.AcctmgrResult, names []string, cluster string) error {
	if len(names) == 0 {
		return acctErr(" No conditions given to remove, not executing.")
	}
	if slices.Contains(names, rootAccount) {
		return acctErr(" You are not allowed to remove the root account.\n Use remove cluster instead.")
	}
	var gone []string
	for _, n := range names {
		if a.Accounts[n] != nil {
			gone = append(gone, n)
		}
	}
	sort.Strings(gone)
	if len(gone) == 0 {
		return nil
	}
	// Users and sub-accounts must go first (hpc is stricter than Slurm
	// here, which removes them along with the account).
	var lines []string
	for _, r := range a.Resolved() {
		switch {
		case r.User != "" && slices.Contains(gone, r.Account):
			lines = append(lines, fmt.Sprintf("  C = %-10.10s A = %-20.20s U = %-9.9s", cluster, r.Account, r.User))
		case r.User == "" && slices.Contains(gone, r.Parent) && !slices.Contains(gone, r.Account):
			lines = append(lines, fmt.Sprintf("  C = %-10.10s A = %s of %s", cluster, r.Account, r.Parent))
		}
	}
	if len(lines) > 0 {
		return acctErr(" Associations listed below are under the accounts to remove.\n%s\n"+
			" Please remove them first (sacctmgr delete user ... account=...).\n Changes Discarded", strings.Join(lines, "\n"))
	}
	for _, n := range gone {
		delete(a.Accounts, n)
		delete(a.Assocs, assocKey(n, ""))
	}
	res.Accounts = gone
	return nil
}
