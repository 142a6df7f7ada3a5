package acct

import (
	"hpc/cluster/api"
	"hpc/sched"
	"slices"
	"time"
)

// HasSubmitLimits reports whether any QoS or association sets a submit
// limit (MaxSubmitJobsPerUser, MaxSubmitJobs, GrpSubmitJobs), so that a
// cluster without them checks nothing at submit.
func (a *State) HasSubmitLimits() bool {
	for _, q := range a.QOS {
		if q.MaxSubmitJobsPerUser != nil || q.GrpSubmitJobs != nil {
			return true
		}
	}
	for _, as := range a.Assocs {
		if as.MaxSubmitJobs != nil || as.GrpSubmitJobs != nil {
			return true
		}
	}
	return false
}

// SchedInputs converts the records into the scheduler's QoS list (creation
// order) and association tree (tree order). Association Max limits are
// given as resolved (inherited from the nearest account that sets them).
// A limit that is not set (nil, or a TRES not listed) is sched's 0; a limit
// of 0, which in Slurm allows nothing, is sched.LimitZero. Fairshare=0 is
// passed as a negative share (no share).
func (a *State) SchedInputs() (qos []sched.QOS, assocs []sched.Assoc) {
	for _, r := range a.Resolved() {
		assocs = append(assocs, schedAssoc(r))
	}
	return a.schedQOS(), assocs
}

// SubmitInputs is what sched.SubmitLimitOf reads of SchedInputs for a
// submit of user under account: the QoS, every account's association, and
// the user's association under account alone (a site's thousand users are
// not each resolved and converted for every submit). The associations are
// in no particular order.
func (a *State) SubmitInputs(user, account string) (qos []sched.QOS, assocs []sched.Assoc) {
	for _, as := range a.Assocs {
		if as.User != "" && (as.User != user || as.Account != account) {
			continue
		}
		if r := a.resolve(as.Account, as.User); r != nil {
			assocs = append(assocs, schedAssoc(r))
		}
	}
	return a.schedQOS(), assocs
}

// schedQOS is the QoS list for sched, in creation order.
func (a *State) schedQOS() []sched.QOS {
	var qos []sched.QOS
	for _, q := range a.qosList() {
		sq := sched.QOS{
			Name:     q.Name,
			Priority: q.Priority,
			Preempt:  slices.Clone(q.Preempt),
			Limits: sched.Limits{
				MaxWall:              minutes(q.MaxWallMin),
				MaxJobsPerUser:       count(q.MaxJobsPerUser),
				MaxSubmitJobsPerUser: count(q.MaxSubmitJobsPerUser),
				MaxTRESPerUser:       schedTRES(q.MaxTRESPerUser),
				MaxTRESPerJob:        schedTRES(q.MaxTRESPerJob),
				GrpTRES:              schedTRES(q.GrpTRES),
				GrpJobs:              count(q.GrpJobs),
				GrpSubmitJobs:        count(q.GrpSubmitJobs),
			},
		}
		if q.PreemptMode != "" {
			sq.PreemptMode = sched.PreemptMode(q.PreemptMode)
		}
		qos = append(qos, sq)
	}
	return qos
}

// schedAssoc is a resolved association for sched.
func schedAssoc(r *api.Assoc) sched.Assoc {
	sa := sched.Assoc{
		Account: r.Account,
		User:    r.User,
		Shares:  r.Shares,
		Limits: sched.Limits{
			MaxWall:              minutes(r.MaxWallMin),
			MaxJobsPerUser:       count(r.MaxJobs),
			MaxSubmitJobsPerUser: count(r.MaxSubmitJobs),
			MaxTRESPerJob:        schedTRES(r.MaxTRESPerJob),
			GrpTRES:              schedTRES(r.GrpTRES),
			GrpJobs:              count(r.GrpJobs),
			GrpSubmitJobs:        count(r.GrpSubmitJobs),
		},
	}
	if r.User == "" {
		sa.Parent = r.Parent
	}
	if r.Shares == 0 {
		sa.Shares = -1 // Fairshare=0: no share (sched reads 0 as 1)
	}
	return sa
}

// minutes is a MaxWall limit for sched: 0 when unset, negative when 0.
func minutes(m *int64) time.Duration {
	switch {
	case m == nil:
		return 0
	case *m == 0:
		return sched.LimitZero
	}
	return time.Duration(*m) * time.Minute
}

// count is a count limit for sched: 0 when unset, sched.LimitZero when 0.
func count(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return sched.LimitZero
	}
	return *n
}

// schedTRES is a TRES limit for sched: a TRES not listed is no limit, one
// listed as 0 is sched.LimitZero.
func schedTRES(t api.TRES) sched.TRES {
	one := func(key string) int64 {
		v, ok := t[key]
		if ok && v == 0 {
			return sched.LimitZero
		}
		return v
	}
	return sched.TRES{CPU: one("cpu"), MemMB: one("mem"), Node: one("node"), GPU: one("gres/gpu")}
}
