package sched

// SubmitLimit reports whether job j may be queued under the submit limits
// of its QoS (MaxSubmitJobsPerUser, GrpSubmitJobs) and its associations
// (MaxSubmitJobs, inherited from the nearest account that sets it;
// GrpSubmitJobs at every level), counting the running and pending jobs of
// s. It returns Slurm's reason name for the first limit j would break
// (QOSMaxSubmitJobPerUserLimit, QOSGrpSubmitJobsLimit,
// AssocMaxSubmitJobLimit, AssocGrpSubmitJobsLimit), or "". Slurm refuses
// such a submission ("Job violates accounting/QOS policy"); Schedule itself
// does not look at submit limits.
func SubmitLimit(s *Snapshot, j *Job) string {
	return SubmitLimitOf(s, submitUsage(s, j.ID), j)
}

// UsageKey is what a submit limit counts a job under: the QoS it names
// ("" for the default), its account and its user.
type UsageKey struct{ QOS, Account, User string }

// submitUsage counts the snapshot's running and pending jobs, all but the
// one whose id is skip, by UsageKey.
func submitUsage(s *Snapshot, skip uint64) map[UsageKey]int {
	u := map[UsageKey]int{}
	for i := range s.Running {
		r := &s.Running[i]
		u[UsageKey{r.QOS, r.Account, r.User}]++
	}
	for i := range s.Pending {
		if p := &s.Pending[i]; p.ID != skip {
			u[UsageKey{p.QOS, p.Account, p.User}]++
		}
	}
	return u
}

// SubmitLimitOf is SubmitLimit with the jobs already counted (usage, as
// submitUsage counts them): it reads s's QoS and associations only, so a
// controller that keeps the counts checks a submit without reading every
// job.
func SubmitLimitOf(s *Snapshot, usage map[UsageKey]int, j *Job) string {
	qosName := j.QOS
	if qosName == "" {
		qosName = "normal"
	}
	var ql *Limits
	for i := range s.QOS {
		if s.QOS[i].Name == qosName {
			ql = &s.QOS[i].Limits
			break
		}
	}
	// The association chain: the user's, then accounts up to root.
	type assocRef struct {
		account, user string
		limits        *Limits
	}
	var chain []assocRef
	parent := map[string]string{}
	accts := map[string]*Limits{}
	for i := range s.Assocs {
		a := &s.Assocs[i]
		if a.User == "" {
			accts[a.Account] = &a.Limits
			if a.Account != "root" {
				p := a.Parent
				if p == "" {
					p = "root"
				}
				parent[a.Account] = p
			}
		} else if a.Account == j.Account && a.User == j.User {
			chain = append(chain, assocRef{a.Account, a.User, &a.Limits})
		}
	}
	seen := map[string]bool{}
	for acct := j.Account; acct != "" && !seen[acct]; acct = parent[acct] {
		seen[acct] = true
		if l, ok := accts[acct]; ok {
			chain = append(chain, assocRef{account: acct, limits: l})
		}
	}
	under := func(account, user, top string, isUser bool) bool {
		if isUser {
			return account == top && user == j.User
		}
		seen := map[string]bool{}
		for a := account; a != "" && !seen[a]; a = parent[a] {
			seen[a] = true
			if a == top {
				return true
			}
		}
		return false
	}
	count := func(match func(qos, account, user string) bool) int {
		n := 0
		for k, c := range usage {
			if match(k.QOS, k.Account, k.User) {
				n += c
			}
		}
		return n
	}
	sameQOS := func(q string) bool { return q == j.QOS || (q == "" && qosName == "normal") || q == qosName }
	if ql != nil {
		if m := ql.MaxSubmitJobsPerUser; m != 0 && overCount(m, int64(count(func(q, _, u string) bool { return sameQOS(q) && u == j.User }))) {
			return ReasonQOSMaxSubmitJobPerUserLimit
		}
		if g := ql.GrpSubmitJobs; g != 0 && overCount(g, int64(count(func(q, _, _ string) bool { return sameQOS(q) }))) {
			return ReasonQOSGrpSubmitJobsLimit
		}
	} else {
		ql = &Limits{}
	}
	if ql.MaxSubmitJobsPerUser == 0 {
		for _, a := range chain {
			if m := a.limits.MaxSubmitJobsPerUser; m != 0 {
				if overCount(m, int64(count(func(_, acct, u string) bool { return acct == j.Account && u == j.User }))) {
					return ReasonAssocMaxSubmitJobLimit
				}
				break
			}
		}
	}
	if ql.GrpSubmitJobs == 0 {
		for _, a := range chain {
			if g := a.limits.GrpSubmitJobs; g != 0 {
				isUser := a.user != ""
				if overCount(g, int64(count(func(_, acct, u string) bool { return under(acct, u, a.account, isUser) }))) {
					return ReasonAssocGrpSubmitJobsLimit
				}
			}
		}
	}
	return ""
}
