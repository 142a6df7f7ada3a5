package export

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// sacctmgrScript is sacctmgr.sh: the cluster, then the QoS, the accounts
// (parents first), then the users with their associations, as `sacctmgr
// -i` lines for a new slurmdbd database, which already has the normal QoS,
// the root account and the root user. A limit an association inherits
// from its parent is left to be inherited there too.
func sacctmgrScript(src Source) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	b.WriteString("#!/bin/sh\n")
	b.WriteString(header(src, "sacctmgr records"))
	w("# Run it once, as root, when slurmdbd runs and before the first job (README).")
	w("set -e")
	cluster := src.Config.ClusterName
	w("sacctmgr -n -P list cluster %s format=cluster | grep -qx %s || sacctmgr -i add cluster %s", cluster, cluster, cluster)
	r := src.Records
	if r == nil {
		w("# Exported from a slurm.conf: no QoS, accounts or users beyond a new database's.")
		w("# An export of a running cluster (hpc export slurm DIR) carries its records.")
		return b.String()
	}
	qosLines(w, r.QOS)
	assocLines(w, cluster, r)
	return b.String()
}

// qosLines adds the QoS (normal is modified: a new database has it), then
// sets preemption once all exist.
func qosLines(w func(string, ...any), qos []api.QOS) {
	if len(qos) == 0 {
		return
	}
	w("")
	w("# QoS.")
	var preempt []string
	for _, q := range qos {
		s := qosSettings(&q)
		switch {
		case q.Name == "normal" && len(s) > 0:
			w("sacctmgr -i modify qos normal set %s", strings.Join(s, " "))
		case q.Name != "normal":
			w("sacctmgr -i add qos %s", strings.Join(append([]string{shq(q.Name)}, s...), " "))
		}
		if len(q.Preempt) > 0 || q.PreemptMode != "" {
			p := []string{}
			if len(q.Preempt) > 0 {
				p = append(p, "Preempt="+strings.Join(q.Preempt, ","))
			}
			if q.PreemptMode != "" {
				p = append(p, "PreemptMode="+q.PreemptMode)
			}
			preempt = append(preempt, fmt.Sprintf("sacctmgr -i modify qos %s set %s", shq(q.Name), strings.Join(p, " ")))
		}
	}
	if len(preempt) > 0 {
		w("# Preemption, once every QoS exists.")
		for _, p := range preempt {
			w("%s", p)
		}
	}
}

// qosSettings are a QoS's settings other than preemption, those at a new
// QoS's values left out.
func qosSettings(q *api.QOS) []string {
	var s []string
	if q.Description != "" && q.Description != q.Name && !(q.Name == "normal" && q.Description == "Normal QOS default") {
		s = append(s, "Description="+shq(q.Description))
	}
	if q.Priority != 0 {
		s = append(s, "Priority="+strconv.Itoa(q.Priority))
	}
	s = appendWall(s, "MaxWall", q.MaxWallMin)
	s = appendCount(s, "MaxJobsPerUser", q.MaxJobsPerUser)
	s = appendCount(s, "MaxSubmitJobsPerUser", q.MaxSubmitJobsPerUser)
	s = appendTRES(s, "MaxTRESPerUser", q.MaxTRESPerUser)
	s = appendTRES(s, "MaxTRESPerJob", q.MaxTRESPerJob)
	s = appendTRES(s, "GrpTRES", q.GrpTRES)
	s = appendCount(s, "GrpJobs", q.GrpJobs)
	s = appendCount(s, "GrpSubmitJobs", q.GrpSubmitJobs)
	return s
}

// assocLines adds the accounts in tree order and the users under them.
func assocLines(w func(string, ...any), cluster string, r *api.AcctmgrState) {
	accounts := map[string]api.Account{}
	for _, a := range r.Accounts {
		accounts[a.Name] = a
	}
	users := map[string]api.AcctUser{}
	for _, u := range r.Users {
		users[u.Name] = u
	}
	resolved := map[string]*api.Assoc{} // account -> its own resolved association
	for i := range r.Assocs {
		if r.Assocs[i].User == "" {
			resolved[r.Assocs[i].Account] = &r.Assocs[i]
		}
	}
	var acctLines, userLines []string
	perUser := map[string][]string{} // user -> lines, the default account's first
	var order []string
	for i := range r.Assocs {
		as := &r.Assocs[i]
		if as.User == "" {
			parent := resolved[as.Parent]
			s := assocSettings(as, parent)
			switch {
			case as.Account == "root":
				if root := rootSettings(as); len(root) > 0 {
					acctLines = append(acctLines, "sacctmgr -i modify account root set "+strings.Join(root, " "))
				}
			default:
				a := accounts[as.Account]
				head := []string{shq(as.Account), "Cluster=" + cluster, "Parent=" + shq(orRoot(as.Parent))}
				// sacctmgr's defaults, as hpc's: the name; the parent's
				// name, or the account's own under root.
				defOrg := as.Parent
				if orRoot(as.Parent) == "root" {
					defOrg = as.Account
				}
				if a.Description != "" && a.Description != as.Account {
					head = append(head, "Description="+shq(a.Description))
				}
				if a.Organization != "" && a.Organization != defOrg {
					head = append(head, "Organization="+shq(a.Organization))
				}
				acctLines = append(acctLines, "sacctmgr -i add account "+strings.Join(append(head, s...), " "))
			}
			continue
		}
		if as.User == "root" && as.Account == "root" {
			continue // a new database has it
		}
		line := "sacctmgr -i add user " + strings.Join(append([]string{shq(as.User), "Cluster=" + cluster,
			"Account=" + shq(as.Account)}, assocSettings(as, resolved[as.Account])...), " ")
		if _, ok := perUser[as.User]; !ok {
			order = append(order, as.User)
		}
		if u := users[as.User]; as.Account == u.DefaultAccount {
			perUser[as.User] = append([]string{line + userSettings(u)}, perUser[as.User]...)
		} else {
			perUser[as.User] = append(perUser[as.User], line)
		}
	}
	for _, u := range order {
		userLines = append(userLines, perUser[u]...)
	}
	writeBlock(w, "# Accounts, each after its parent.", acctLines)
	writeBlock(w, "# Users: the first line of each gives the default account, then one per association.", userLines)
}

// userSettings are what the line of a user's default account adds: the
// default account and the admin level. sacctmgr takes DefaultAccount= on a
// line that makes that association.
func userSettings(u api.AcctUser) string {
	s := " DefaultAccount=" + shq(u.DefaultAccount)
	if u.AdminLevel != "" && u.AdminLevel != api.AdminNone {
		s += " AdminLevel=" + u.AdminLevel
	}
	return s
}

// writeBlock writes a titled block of lines, nothing when there are none.
func writeBlock(w func(string, ...any), title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	w("")
	w("%s", title)
	for _, l := range lines {
		w("%s", l)
	}
}

func orRoot(s string) string {
	if s == "" {
		return "root"
	}
	return s
}

// rootSettings are the root account's settings that differ from a new
// database's (one share, the normal QoS).
func rootSettings(as *api.Assoc) []string {
	s := assocSettings(as, nil)
	var out []string
	for _, x := range s {
		if x == "Fairshare=1" || x == "QOS=normal" {
			continue
		}
		out = append(out, x)
	}
	return out
}

// assocSettings are an association's settings. What it inherits (Max
// limits, the QoS list and default QoS: the same as its parent's resolved
// values) is left out; shares and Grp limits are never inherited.
func assocSettings(as, parent *api.Assoc) []string {
	var s []string
	if as.Shares != 1 {
		s = append(s, "Fairshare="+strconv.Itoa(as.Shares))
	}
	s = appendCount(s, "GrpJobs", as.GrpJobs)
	s = appendCount(s, "GrpSubmitJobs", as.GrpSubmitJobs)
	s = appendTRES(s, "GrpTRES", as.GrpTRES)
	if parent == nil || !eqPtr(as.MaxJobs, parent.MaxJobs) {
		s = appendCount(s, "MaxJobs", as.MaxJobs)
	}
	if parent == nil || !eqPtr(as.MaxSubmitJobs, parent.MaxSubmitJobs) {
		s = appendCount(s, "MaxSubmitJobs", as.MaxSubmitJobs)
	}
	own := as.MaxTRESPerJob
	if parent != nil {
		own = api.TRES{}
		for k, v := range as.MaxTRESPerJob {
			if pv, ok := parent.MaxTRESPerJob[k]; !ok || pv != v {
				own[k] = v
			}
		}
	}
	s = appendTRES(s, "MaxTRES", own)
	if parent == nil || !eqPtr(as.MaxWallMin, parent.MaxWallMin) {
		s = appendWall(s, "MaxWall", as.MaxWallMin)
	}
	if len(as.QOS) > 0 && (parent == nil || !slices.Equal(as.QOS, parent.QOS)) {
		s = append(s, "QOS="+strings.Join(as.QOS, ","))
	}
	if as.DefaultQOS != "" && (parent == nil || as.DefaultQOS != parent.DefaultQOS) {
		s = append(s, "DefaultQOS="+as.DefaultQOS)
	}
	return s
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func appendCount(s []string, key string, n *int) []string {
	if n == nil || *n < 0 {
		return s
	}
	return append(s, key+"="+strconv.Itoa(*n))
}

func appendWall(s []string, key string, m *int64) []string {
	if m == nil || *m < 0 {
		return s
	}
	return append(s, key+"="+config.FormatTimeLong(*m))
}

// appendTRES writes a TRES limit as sacctmgr takes it: cpu=4,mem=8192
// (mem in MB), in sacctmgr's order of TRES.
func appendTRES(s []string, key string, t api.TRES) []string {
	var parts []string
	for _, name := range api.TRESNames {
		if v, ok := t[name]; ok && v >= 0 {
			parts = append(parts, name+"="+strconv.FormatInt(v, 10))
		}
	}
	if len(parts) == 0 {
		return s
	}
	return append(s, key+"="+strings.Join(parts, ","))
}

// shq quotes a word for sh when it needs it.
func shq(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/+:=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
