package sched

import "time"

// tresReasons names the reasons of one kind of TRES limit: cpu, mem, node,
// gres/gpu.
type tresReasons [4]string

var (
	qosGrpReasons     = tresReasons{ReasonQOSGrpCpuLimit, ReasonQOSGrpMemLimit, ReasonQOSGrpNodeLimit, ReasonQOSGrpGRES}
	qosPerJobReasons  = tresReasons{ReasonQOSMaxCpuPerJobLimit, ReasonQOSMaxMemoryPerJob, ReasonQOSMaxNodePerJobLimit, ReasonQOSMaxGRESPerJob}
	qosPerUserReasons = tresReasons{ReasonQOSMaxCpuPerUserLimit, ReasonQOSMaxMemoryPerUser, ReasonQOSMaxNodePerUserLimit, ReasonQOSMaxGRESPerUser}
	assocGrpReasons   = tresReasons{ReasonAssocGrpCpuLimit, ReasonAssocGrpMemLimit, ReasonAssocGrpNodeLimit, ReasonAssocGrpGRES}
	assocJobReasons   = tresReasons{ReasonAssocMaxCpuPerJobLimit, ReasonAssocMaxMemPerJob, ReasonAssocMaxNodePerJobLimit, ReasonAssocMaxGRESPerJob}
)

func tresVals(t *TRES) [4]int64 { return [4]int64{t.CPU, t.MemMB, t.Node, t.GPU} }

// limitAllows is how much a limit that is set (not 0) allows: a negative
// limit (LimitZero) allows nothing.
func limitAllows(limit int64) int64 { return max(limit, 0) }

// overCount says whether n jobs, plus one more, break a count limit (0: none).
func overCount(limit int, n int64) bool { return limit != 0 && n+1 > limitAllows(int64(limit)) }

// overWall says whether a job running for length seconds (0: unlimited)
// breaks a MaxWall limit (0: none; negative: a MaxWall of zero).
func overWall(limit time.Duration, length int64) bool {
	switch {
	case limit == 0:
		return false
	case limit < 0:
		return true // every job is longer than a MaxWall of zero
	}
	return length == 0 || length > dur(limit)
}

// overTRES returns the reason of the first TRES where used plus job exceeds
// limit (0 = none, negative = zero), or "". skip masks TRES already
// limited elsewhere. A limit of zero holds back only jobs that use that
// TRES: GrpTRES=gres/gpu=0 lets jobs without GPUs run.
func overTRES(limit, used, job *TRES, names *tresReasons, skip *TRES) string {
	l, u, j := tresVals(limit), tresVals(used), tresVals(job)
	var s [4]int64
	if skip != nil {
		s = tresVals(skip)
	}
	for k := range l {
		if l[k] != 0 && s[k] == 0 && u[k]+j[k] > limitAllows(l[k]) {
			return names[k]
		}
	}
	return ""
}

// limitReason checks job j, running for length seconds (0: unlimited),
// against its QoS and association limits with what runs now. It returns
// Slurm's reason for the first limit it would break, or "".
func (p *pass) limitReason(j *jobInfo, length int64) string {
	var zero TRES
	var ql *Limits
	if j.qos >= 0 {
		q := &p.qos[j.qos]
		ql = &q.spec.Limits
		if overWall(ql.MaxWall, length) {
			return ReasonQOSMaxWallDurationPerJob
		}
		if r := overTRES(&ql.MaxTRESPerJob, &zero, &j.tres, &qosPerJobReasons, nil); r != "" {
			return r
		}
		if overCount(ql.GrpJobs, q.used.jobs) {
			return ReasonQOSGrpJobsLimit
		}
		if r := overTRES(&ql.GrpTRES, &q.used.tres, &j.tres, &qosGrpReasons, nil); r != "" {
			return r
		}
		u := q.users[j.user]
		if u == nil {
			u = &counter{}
		}
		if overCount(ql.MaxJobsPerUser, u.jobs) {
			return ReasonQOSMaxJobsPerUserLimit
		}
		if r := overTRES(&ql.MaxTRESPerUser, &u.tres, &j.tres, &qosPerUserReasons, nil); r != "" {
			return r
		}
	}
	if j.assoc < 0 {
		return ""
	}
	if ql == nil {
		ql = &Limits{}
	}
	t := &p.tree
	// Max limits come from the nearest association that sets them.
	var maxWall time.Duration
	var maxJobs int
	var perJob TRES
	for a := j.assoc; a >= 0; a = t.nodes[a].parent {
		l := t.nodes[a].limits
		if l == nil {
			continue
		}
		if maxWall == 0 {
			maxWall = l.MaxWall
		}
		if maxJobs == 0 {
			maxJobs = l.MaxJobsPerUser
		}
		if perJob.CPU == 0 {
			perJob.CPU = l.MaxTRESPerJob.CPU
		}
		if perJob.MemMB == 0 {
			perJob.MemMB = l.MaxTRESPerJob.MemMB
		}
		if perJob.Node == 0 {
			perJob.Node = l.MaxTRESPerJob.Node
		}
		if perJob.GPU == 0 {
			perJob.GPU = l.MaxTRESPerJob.GPU
		}
	}
	if ql.MaxWall == 0 && overWall(maxWall, length) {
		return ReasonAssocMaxWallDurationPerJob
	}
	if r := overTRES(&perJob, &zero, &j.tres, &assocJobReasons, &ql.MaxTRESPerJob); r != "" {
		return r
	}
	for a := j.assoc; a >= 0; a = t.nodes[a].parent {
		n := &t.nodes[a]
		if n.limits == nil {
			continue
		}
		if ql.GrpJobs == 0 && overCount(n.limits.GrpJobs, n.used.jobs) {
			return ReasonAssocGrpJobsLimit
		}
		if r := overTRES(&n.limits.GrpTRES, &n.used.tres, &j.tres, &assocGrpReasons, &ql.GrpTRES); r != "" {
			return r
		}
	}
	if ql.MaxJobsPerUser == 0 && overCount(maxJobs, t.nodes[j.assoc].used.jobs) {
		return ReasonAssocMaxJobsLimit
	}
	return ""
}
