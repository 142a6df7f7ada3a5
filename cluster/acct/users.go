package acct

import (
	"hpc/cluster/api"
	"slices"
	"sort"
	"strings"
)

func adminLevel(s string) (string, error) {
	switch strings.ToLower(s) {
	case "none":
		return api.AdminNone, nil
	case "operator", "oper":
		return api.AdminOperator, nil
	case "administrator", "admin":
		return api.AdminAdministrator, nil
	}
	return "", acctErr("sacctmgr: error: Invalid AdminLevel '%s' (None, Operator or Administrator)", s)
}

func (a *State) addUsers(res *api.AcctmgrResult, names, accounts []string, s *api.AcctmgrSet) error {
	if len(names) == 0 {
		return acctErr(" Need name of user to add.")
	}
	if len(accounts) == 0 {
		return acctErr(" Need name of account to add user to.")
	}
	for _, acct := range accounts {
		if a.Accounts[acct] == nil {
			return acctErr(" This account '%s' doesn't exist.\n        Contact your admin to add this account.\n No associations or wckeys created.", acct)
		}
	}
	level := api.AdminNone
	if s.AdminLevel != nil {
		var err error
		if level, err = adminLevel(*s.AdminLevel); err != nil {
			return err
		}
	}
	def := accounts[0]
	if s.DefaultAccount != nil && *s.DefaultAccount != "" {
		def = strings.ToLower(*s.DefaultAccount)
		if !slices.Contains(accounts, def) {
			return acctErr(" Default account '%s' is not among the accounts given (%s).", def, strings.Join(accounts, ","))
		}
	}
	for _, n := range names {
		if a.Users[n] == nil {
			a.Users[n] = &api.AcctUser{Name: n, DefaultAccount: def, AdminLevel: level}
			res.Users = append(res.Users, n)
		}
		for _, acct := range accounts {
			key := assocKey(acct, n)
			if a.Assocs[key] != nil {
				continue
			}
			as := &api.Assoc{Account: acct, User: n, Shares: 1}
			a.Assocs[key] = as
			if err := a.setAssoc(as, s); err != nil {
				return err
			}
			res.Assocs = append(res.Assocs, api.AssocRef{Account: acct, User: n})
		}
	}
	return a.checkDefaults()
}

// userAccounts lists the accounts a user has associations under.
func (a *State) userAccounts(user string) []string {
	var out []string
	for _, as := range a.Assocs {
		if as.User == user {
			out = append(out, as.Account)
		}
	}
	sort.Strings(out)
	return out
}

func (a *State) modifyUsers(res *api.AcctmgrResult, names, accounts []string, s *api.AcctmgrSet) error {
	var matched []string
	for n := range a.Users {
		if len(names) == 0 || slices.Contains(names, n) {
			matched = append(matched, n)
		}
	}
	sort.Strings(matched)
	if len(matched) == 0 {
		return nil
	}
	if s.DefaultAccount != nil || s.AdminLevel != nil {
		if s.DefaultAccount != nil {
			def := strings.ToLower(*s.DefaultAccount)
			var bad []string
			for _, n := range matched {
				if a.Assocs[assocKey(def, n)] == nil {
					bad = append(bad, "  U = "+n+" C = "+res.Cluster)
				}
			}
			if len(bad) > 0 {
				return acctErr(" Can't modify because these users aren't associated with new default account '%s'...\n%s", def, strings.Join(bad, "\n"))
			}
			for _, n := range matched {
				a.Users[n].DefaultAccount = def
			}
		}
		if s.AdminLevel != nil {
			level, err := adminLevel(*s.AdminLevel)
			if err != nil {
				return err
			}
			for _, n := range matched {
				a.Users[n].AdminLevel = level
			}
		}
		res.Users = matched
	}
	if !assocSettings(s) {
		return nil
	}
	for _, r := range a.Resolved() {
		if r.User == "" || !slices.Contains(matched, r.User) || (len(accounts) > 0 && !slices.Contains(accounts, r.Account)) {
			continue
		}
		if err := a.setAssoc(a.Assocs[assocKey(r.Account, r.User)], s); err != nil {
			return err
		}
		res.Assocs = append(res.Assocs, api.AssocRef{Account: r.Account, User: r.User})
	}
	if len(res.Assocs) == 0 && len(res.Users) == 0 {
		return nil
	}
	return a.checkDefaults()
}

func (a *State) deleteUsers(res *api.AcctmgrResult, names, accounts []string) error {
	if len(names) == 0 {
		return acctErr(" No conditions given to remove, not executing.")
	}
	sorted := slices.Clone(names)
	sort.Strings(sorted)
	for _, n := range sorted {
		if a.Users[n] == nil {
			continue
		}
		if len(accounts) == 0 {
			for _, acct := range a.userAccounts(n) {
				delete(a.Assocs, assocKey(acct, n))
			}
			delete(a.Users, n)
			res.Users = append(res.Users, n)
			continue
		}
		for _, acct := range accounts {
			if a.Assocs[assocKey(acct, n)] != nil {
				delete(a.Assocs, assocKey(acct, n))
				res.Assocs = append(res.Assocs, api.AssocRef{Account: acct, User: n})
			}
		}
		left := a.userAccounts(n)
		switch {
		case len(left) == 0:
			delete(a.Users, n)
			res.UsersNoAssoc = append(res.UsersNoAssoc, n)
		case !slices.Contains(left, a.Users[n].DefaultAccount):
			// As Slurm: no default until one is set again.
			a.Users[n].DefaultAccount = ""
		}
	}
	return nil
}
