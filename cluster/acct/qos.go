package acct

import (
	"fmt"
	"hpc/cluster/api"
	"slices"
	"strings"
)

func (a *State) setQOS(q *api.QOS, s *api.AcctmgrSet) error {
	var err error
	if s.Description != nil {
		q.Description = *s.Description
	}
	if s.Priority != nil {
		q.Priority = max(*s.Priority, 0)
	}
	setMinutes(&q.MaxWallMin, s.MaxWallMin)
	setCount(&q.MaxJobsPerUser, s.MaxJobsPerUser)
	setCount(&q.MaxSubmitJobsPerUser, s.MaxSubmitJobsPerUser)
	setCount(&q.GrpJobs, s.GrpJobs)
	setCount(&q.GrpSubmitJobs, s.GrpSubmitJobs)
	if q.MaxTRESPerUser, err = mergeTRES(q.MaxTRESPerUser, s.MaxTRESPerUser); err != nil {
		return err
	}
	if q.MaxTRESPerJob, err = mergeTRES(q.MaxTRESPerJob, s.MaxTRESPerJob); err != nil {
		return err
	}
	if q.GrpTRES, err = mergeTRES(q.GrpTRES, s.GrpTRES); err != nil {
		return err
	}
	if s.Preempt != nil {
		p, err := a.editList(q.Preempt, s.Preempt)
		if err != nil {
			return err
		}
		if slices.Contains(p, q.Name) {
			return acctErr("sacctmgr: error: QOS %s can not preempt itself", q.Name)
		}
		q.Preempt = p
		if len(p) == 0 {
			q.Preempt = nil
		}
	}
	if s.PreemptMode != nil {
		m := strings.ToUpper(*s.PreemptMode)
		switch m {
		case "", "CLUSTER":
			m = ""
		case api.PreemptModeOff, api.PreemptModeCancel, api.PreemptModeRequeue:
		default:
			return acctErr(" Bad Preempt Mode given: PreemptMode=%s", *s.PreemptMode)
		}
		q.PreemptMode = m
	}
	return nil
}

func (a *State) addQOS(res *api.AcctmgrResult, names []string, s *api.AcctmgrSet) error {
	if len(names) == 0 {
		return acctErr(" Need name of qos to add.")
	}
	for _, n := range names {
		if a.QOS[n] != nil {
			continue
		}
		q := &api.QOS{ID: a.nextQOSID(), Name: n, Description: n}
		if err := a.setQOS(q, s); err != nil {
			return err
		}
		a.QOS[n] = q
		res.QOS = append(res.QOS, n)
	}
	return nil
}

func (a *State) modifyQOS(res *api.AcctmgrResult, names []string, s *api.AcctmgrSet) error {
	for _, q := range a.qosList() {
		if len(names) > 0 && !slices.Contains(names, q.Name) {
			continue
		}
		if err := a.setQOS(q, s); err != nil {
			return err
		}
		res.QOS = append(res.QOS, q.Name)
	}
	return nil
}

func (a *State) deleteQOS(res *api.AcctmgrResult, names []string, cluster string) error {
	if len(names) == 0 {
		return acctErr(" No conditions given to remove, not executing.")
	}
	var gone []string
	for _, q := range a.qosList() {
		if slices.Contains(names, q.Name) {
			gone = append(gone, q.Name)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	// A QoS that an association uses as its default stays.
	var lines []string
	for _, r := range a.Resolved() {
		own := a.Assocs[assocKey(r.Account, r.User)]
		def := own.DefaultQOS
		if def == "" && own.QOS != nil {
			def = defaultQOS(r)
		}
		if def == "" || !slices.Contains(gone, def) {
			continue
		}
		line := fmt.Sprintf("  DefQOS = %-10.10s C = %-10.10s A = %-20.20s", def, cluster, r.Account)
		if r.User != "" {
			line += fmt.Sprintf(" U = %-9.9s", r.User)
		}
		lines = append(lines, line)
	}
	if len(lines) > 0 {
		return acctErr(" Associations listed below have these as their Default QOS.\n%s\n"+
			" Please either remove the qos' listed above from list and resubmit,\n"+
			" or change the default qos to remove the qos.\n Changes Discarded", strings.Join(lines, "\n"))
	}
	for _, n := range gone {
		delete(a.QOS, n)
	}
	for _, q := range a.QOS {
		q.Preempt = slices.DeleteFunc(q.Preempt, func(n string) bool { return slices.Contains(gone, n) })
		if len(q.Preempt) == 0 {
			q.Preempt = nil
		}
	}
	for _, as := range a.Assocs {
		if as.QOS != nil {
			as.QOS = slices.DeleteFunc(as.QOS, func(n string) bool { return slices.Contains(gone, n) })
		}
	}
	res.QOS = gone
	return nil
}

// defaultQOS is the QoS a job of a (resolved) association gets when it
// names none: its DefaultQOS, else "normal" when allowed, else its only
// QoS; "" when there is no such QoS.
func defaultQOS(r *api.Assoc) string {
	switch {
	case r.DefaultQOS != "":
		return r.DefaultQOS
	case slices.Contains(r.QOS, "normal"):
		return "normal"
	case len(r.QOS) == 1:
		return r.QOS[0]
	}
	return ""
}
