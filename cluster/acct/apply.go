package acct

import (
	"hpc/cluster/api"
	"slices"
	"sort"
	"strings"
)

// apply runs one op on a (a copy: on error the caller drops it) and says
// what it changed. Empty result: nothing matched, nothing changed.
func (a *State) Apply(op *Op, cluster string) (api.AcctmgrResult, error) {
	req := &op.Req
	res := api.AcctmgrResult{Cluster: cluster}
	names, err := cleanNames(req.Names)
	if err != nil {
		return res, err
	}
	accounts, err := cleanNames(req.Accounts)
	if err != nil {
		return res, err
	}
	if err := checkFields(req); err != nil {
		return res, err
	}
	lvl := a.level(op.UID, op.User)
	need := levelOperator
	if req.Entity == "qos" || req.Set.AdminLevel != nil {
		need = levelAdmin
	}
	if lvl < need {
		why := WhyNoPrivilege
		if req.Set.AdminLevel != nil && req.Entity == "user" && lvl == levelOperator {
			why = "You must be a super user to modify a users admin level"
		}
		return res, errDenied(why)
	}
	switch req.Action + " " + req.Entity {
	case "add qos":
		err = a.addQOS(&res, names, &req.Set)
	case "modify qos":
		err = a.modifyQOS(&res, names, &req.Set)
	case "delete qos":
		err = a.deleteQOS(&res, names, cluster)
	case "add account":
		err = a.addAccounts(&res, names, &req.Set, cluster)
	case "modify account":
		err = a.modifyAccounts(&res, names, &req.Set)
	case "delete account":
		err = a.deleteAccounts(&res, names, cluster)
	case "add user":
		err = a.addUsers(&res, names, accounts, &req.Set)
	case "modify user":
		err = a.modifyUsers(&res, names, accounts, &req.Set)
	case "delete user":
		err = a.deleteUsers(&res, names, accounts)
	default:
		err = acctErr("sacctmgr: error: unknown request %q on %q", req.Action, req.Entity)
	}
	return res, err
}

// cleanNames lowercases names (Slurm keeps QoS, account and user names in
// lower case) and refuses ones that cannot be names.
func cleanNames(in []string) ([]string, error) {
	var out []string
	for _, n := range in {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		if strings.ContainsAny(n, "/,= \t\n'\"") {
			return nil, acctErr(" Invalid name: %q", n)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// checkFields refuses settings that do not belong to the entity.
func checkFields(req *api.AcctmgrRequest) error {
	s := &req.Set
	type field struct {
		name string
		set  bool
		ok   []string // entities it belongs to
	}
	assoc := []string{"account", "user"}
	fields := []field{
		{"Description", s.Description != nil, []string{"qos", "account"}},
		{"Organization", s.Organization != nil, []string{"account"}},
		{"Priority", s.Priority != nil, []string{"qos"}},
		{"MaxWall", s.MaxWallMin != nil, []string{"qos", "account", "user"}},
		{"MaxJobsPerUser", s.MaxJobsPerUser != nil, []string{"qos"}},
		{"MaxSubmitJobsPerUser", s.MaxSubmitJobsPerUser != nil, []string{"qos"}},
		{"MaxTRESPerUser", s.MaxTRESPerUser != nil, []string{"qos"}},
		{"MaxTRESPerJob", s.MaxTRESPerJob != nil, []string{"qos", "account", "user"}},
		{"GrpTRES", s.GrpTRES != nil, []string{"qos", "account", "user"}},
		{"GrpJobs", s.GrpJobs != nil, []string{"qos", "account", "user"}},
		{"GrpSubmitJobs", s.GrpSubmitJobs != nil, []string{"qos", "account", "user"}},
		{"Preempt", s.Preempt != nil, []string{"qos"}},
		{"PreemptMode", s.PreemptMode != nil, []string{"qos"}},
		{"Fairshare", s.Fairshare != nil, assoc},
		{"MaxJobs", s.MaxJobs != nil, assoc},
		{"MaxSubmitJobs", s.MaxSubmitJobs != nil, assoc},
		{"QOS", s.QOS != nil, assoc},
		{"DefaultQOS", s.DefaultQOS != nil, assoc},
		{"Parent", s.Parent != nil, []string{"account"}},
		{"DefaultAccount", s.DefaultAccount != nil, []string{"user"}},
		{"AdminLevel", s.AdminLevel != nil, []string{"user"}},
	}
	given := false
	for _, f := range fields {
		if !f.set {
			continue
		}
		given = true
		if !slices.Contains(f.ok, req.Entity) || req.Action == "delete" {
			return acctErr(" Unknown option: %s\n Use keyword 'where' to modify condition", f.name)
		}
	}
	if req.Action == "modify" && !given {
		return acctErr(" You didn't give me anything to set")
	}
	return nil
}

// setCount applies a count setting: negative clears the limit.
func setCount(dst **int, v *int) {
	if v == nil {
		return
	}
	if *v < 0 {
		*dst = nil
		return
	}
	n := *v
	*dst = &n
}

func setMinutes(dst **int64, v *int64) {
	if v == nil {
		return
	}
	if *v < 0 {
		*dst = nil
		return
	}
	n := *v
	*dst = &n
}

// mergeTRES applies a TRES setting: keys merge in, -1 removes one.
func mergeTRES(dst api.TRES, v api.TRES) (api.TRES, error) {
	if v == nil {
		return dst, nil
	}
	out := api.TRES{}
	for k, n := range dst {
		out[k] = n
	}
	for k, n := range v {
		if !slices.Contains(api.TRESNames, k) {
			return nil, acctErr("sacctmgr: error: slurmdb_format_tres_str: no TRES known by type %s", k)
		}
		if n < 0 {
			delete(out, k)
		} else {
			out[k] = n
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// editList applies a ListEdit to a list of QoS names, checking they exist.
func (a *State) editList(cur []string, e *api.ListEdit) ([]string, error) {
	var names []string
	for _, n := range e.Names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		if a.QOS[n] == nil {
			return nil, a.badQOS(n)
		}
		names = append(names, n)
	}
	var out []string
	switch e.Op {
	case "=":
		out = []string{}
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	case "+=":
		out = append([]string{}, cur...)
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	case "-=":
		out = []string{}
		for _, n := range cur {
			if !slices.Contains(names, n) {
				out = append(out, n)
			}
		}
	default:
		return nil, acctErr("sacctmgr: error: bad list operator %q", e.Op)
	}
	sort.Strings(out)
	return out, nil
}
