package sched

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

// overTRES returns the reason of the first TRES where used plus job exceeds
// limit (0 = none), or "". skip masks TRES already limited elsewhere.
func overTRES(limit, used, job *TRES, names *tresReasons, skip *TRES) string {
	l, u, j := tresVals(limit), tresVals(used), tresVals(job)
	var s [4]int64
	if skip != nil {
		s = tresVals(skip)
	}
	for k := range l {
		if l[k] > 0 && s[k] == 0 && u[k]+j[k] > l[k] {
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
		if w := dur(ql.MaxWall); w > 0 && (length == 0 || length > w) {
			return ReasonQOSMaxWallDurationPerJob
		}
		if r := overTRES(&ql.MaxTRESPerJob, &zero, &j.tres, &qosPerJobReasons, nil); r != "" {
			return r
		}
		if ql.GrpJobs > 0 && q.used.jobs+1 > int64(ql.GrpJobs) {
			return ReasonQOSGrpJobsLimit
		}
		if r := overTRES(&ql.GrpTRES, &q.used.tres, &j.tres, &qosGrpReasons, nil); r != "" {
			return r
		}
		u := q.users[j.user]
		if u == nil {
			u = &counter{}
		}
		if ql.MaxJobsPerUser > 0 && u.jobs+1 > int64(ql.MaxJobsPerUser) {
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
	var maxWall int64
	var maxJobs int
	var perJob TRES
	for a := j.assoc; a >= 0; a = t.nodes[a].parent {
		l := t.nodes[a].limits
		if l == nil {
			continue
		}
		if maxWall == 0 {
			maxWall = dur(l.MaxWall)
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
	if ql.MaxWall == 0 && maxWall > 0 && (length == 0 || length > maxWall) {
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
		if ql.GrpJobs == 0 && n.limits.GrpJobs > 0 && n.used.jobs+1 > int64(n.limits.GrpJobs) {
			return ReasonAssocGrpJobsLimit
		}
		if r := overTRES(&n.limits.GrpTRES, &n.used.tres, &j.tres, &assocGrpReasons, &ql.GrpTRES); r != "" {
			return r
		}
	}
	if ql.MaxJobsPerUser == 0 && maxJobs > 0 && t.nodes[j.assoc].used.jobs+1 > int64(maxJobs) {
		return ReasonAssocMaxJobsLimit
	}
	return ""
}
