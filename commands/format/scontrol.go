package format

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

// record builds scontrol's "Key=Value" records: items on one line are joined
// by spaces and lines by "\n   " (or by a space with -o, one-liner).
type record struct {
	b   strings.Builder
	sep string
}

func newRecord(oneLiner bool) *record {
	r := &record{sep: "\n   "}
	if oneLiner {
		r.sep = " "
	}
	return r
}

func (r *record) add(s string) { r.b.WriteString(s) }
func (r *record) nl()          { r.b.WriteString(r.sep) }

// end closes a record: one newline with -o, a blank line otherwise.
func (r *record) end(oneLiner bool) string {
	if oneLiner {
		r.b.WriteString("\n")
	} else {
		r.b.WriteString("\n\n")
	}
	return r.b.String()
}

// jobIDLine is the first line of scontrol show job: the ids (an array's
// too) and the name.
func jobIDLine(j *api.Job) string {
	if j.ArrayJobID == 0 {
		return "JobId=" + jobID(j) + " JobName=" + orNull(j.Spec.Name)
	}
	s := fmt.Sprintf("JobId=%d ArrayJobId=%d ArrayTaskId=%s ", j.ID, j.ArrayJobID, arrayTaskID(j))
	if lim := openapi.ArrayThrottle(j); lim > 0 {
		s += "ArrayTaskThrottle=" + strconv.Itoa(lim) + " "
	}
	return s + "JobName=" + orNull(j.Spec.Name)
}

// ShowJob renders a job as scontrol show job (oneLiner: scontrol -o) does.
// Fields hpc does not model print Slurm's defaults for a plain batch job
// (Nice=0, QOS=normal, Requeue=1, OverSubscribe=OK, ...); Priority is
// BasicPriority; a pending job's eligibility and accrue times are Unknown
// while it waits on a dependency or a hold.
func ShowJob(j *api.Job, now time.Time, oneLiner, details bool) string {
	r := newRecord(oneLiner)
	r.add(jobIDLine(j))
	r.nl()
	r.add("UserId=" + jobUser(j) + "(" + strconv.FormatUint(uint64(j.UID), 10) + ") ")
	r.add("GroupId=" + jobGroup(j) + "(" + strconv.FormatUint(uint64(j.GID), 10) + ") MCS_label=N/A")
	r.nl()
	r.add("Priority=" + strconv.FormatUint(uint64(openapi.BasicPriority(j)), 10) + " Nice=0 Account=" + orNull(openapi.JobAccount(j)) + " QOS=" + openapi.JobQOS(j))
	r.nl()
	r.add("JobState=" + string(j.State) + " Reason=" + underscoreSpaces(openapi.JobReason(j)) + " Dependency=" + openapi.DependencyString(j))
	r.nl()
	batch := 0
	if j.HasScript() {
		batch = 1
	}
	requeue := "1"
	if j.Spec.Requeue != nil && !*j.Spec.Requeue {
		requeue = "0"
	}
	r.add("Requeue=" + requeue + " Restarts=" + strconv.Itoa(j.Restarts) + " BatchFlag=" + strconv.Itoa(batch) + " Reboot=0 ExitCode=" + exitPair(j.ExitCode, j.Signal))
	r.nl()
	limit := "Partition_Limit"
	if j.Spec.TimeLimitMin != 0 {
		limit = mins2time(j.Spec.TimeLimitMin)
	}
	timeMin := "N/A"
	if j.Spec.TimeMinMin != 0 {
		timeMin = mins2time(j.Spec.TimeMinMin)
	}
	r.add("RunTime=" + ElapsedHMS(jobRunTime(j, now)) + " TimeLimit=" + limit + " TimeMin=" + timeMin)
	r.nl()
	// Eligible once submitted, or at its begin time (--begin, a
	// preempted job's requeue delay) if later.
	eligible := ISOTime(j.SubmitTime)
	if j.Spec.Begin.After(j.SubmitTime) {
		eligible = ISOTime(j.Spec.Begin)
	}
	if openapi.NotEligible(j) {
		eligible = "Unknown"
	}
	r.add("SubmitTime=" + ISOTime(j.SubmitTime) + " EligibleTime=" + eligible)
	r.nl()
	r.add("AccrueTime=" + eligible)
	r.nl()
	start, end := openapi.JobStartEnd(j) // a pending job's: when the scheduler expects it
	r.add("StartTime=" + ISOTime(start) + " EndTime=" + ISOTime(end) + " Deadline=N/A")
	r.nl()
	lastEval := j.SubmitTime
	if openapi.JobStarted(j) {
		lastEval = j.StartTime
	}
	r.add("SuspendTime=None SecsPreSuspend=0 LastSchedEval=" + ISOTime(lastEval) + " Scheduler=Main")
	r.nl()
	host := j.Spec.SubmitHost
	if host == "" {
		host = "(null)"
	}
	r.add("Partition=" + orNull(j.Spec.Partition) + " AllocNode:Sid=" + host + ":0")
	r.nl()
	r.add("ReqNodeList=" + orNull(j.Spec.NodeList) + " ExcNodeList=" + orNull(j.Spec.Exclude))
	r.nl()
	r.add("NodeList=" + openapi.NodeList(j.NodeNames()))
	r.nl()
	if j.BatchHost != "" {
		r.add("BatchHost=" + j.BatchHost)
		r.nl()
	}
	cpus := openapi.JobNumCPUs(j)
	r.add("NumNodes=" + strconv.Itoa(openapi.JobNumNodes(j)) + " NumCPUs=" + strconv.Itoa(cpus) +
		" NumTasks=" + strconv.Itoa(openapi.JobTasks(j)) + " CPUs/Task=" + strconv.Itoa(openapi.JobCPUsPerTask(j)) +
		" ReqB:S:C:T=0:0:*:*")
	r.nl()
	r.add("TRES=" + orNull(openapi.JobTRES(j)))
	r.nl()
	r.add("Socks/Node=* NtasksPerN:B:S:C=" + strconv.Itoa(j.Spec.NTasksPerNode) + ":0:*:* CoreSpec=*")
	r.nl()
	if details && openapi.JobStarted(j) && len(j.Alloc) > 0 {
		// What each node gives the job, as scontrol show job -d lists it.
		r.add("JOB_GRES=" + orNull(jobGresAlloc(j)))
		r.nl()
		for _, a := range j.Alloc {
			r.add("  Nodes=" + a.Node + " CPU_IDs=" + openapi.IDList(a.CPUIDs) + " Mem=" + strconv.FormatInt(a.MemMB, 10) + " GRES=" + openapi.GresOfAlloc(a))
			r.nl()
		}
	}
	mem := "MinMemoryCPU=" + openapi.ConvertMB(openapi.DefMemPerCPU)
	switch {
	case j.Spec.MemPerNodeMB > 0:
		mem = "MinMemoryNode=" + openapi.ConvertMB(j.Spec.MemPerNodeMB)
	case j.Spec.MemPerCPUMB > 0:
		mem = "MinMemoryCPU=" + openapi.ConvertMB(j.Spec.MemPerCPUMB)
	}
	r.add("MinCPUsNode=" + strconv.Itoa(openapi.JobCPUsPerTask(j)) + " " + mem + " MinTmpDiskNode=0")
	r.nl()
	r.add("Features=" + orNull(j.Spec.Constraint) + " DelayBoot=00:00:00")
	r.nl()
	r.add("OverSubscribe=" + overSubscribe(j) + " Contiguous=0 Licenses=(null) Network=(null)")
	r.nl()
	r.add("Command=(null)")
	r.nl()
	r.add("WorkDir=" + orNull(j.Spec.WorkDir))
	if batch == 1 {
		r.nl()
		r.add("StdErr=" + openapi.JobStdErr(j))
		r.nl()
		r.add("StdIn=" + openapi.JobStdIn(j))
		r.nl()
		r.add("StdOut=" + openapi.JobStdOut(j))
	}
	if j.Spec.Switches > 0 {
		r.nl()
		r.add("Switches=" + strconv.Itoa(j.Spec.Switches) + "@" + secs2time(j.Spec.SwitchesWaitSec))
	}
	r.nl()
	r.add("Power=")
	for _, t := range []struct{ key, val string }{
		{"TresPerJob", openapi.TRESPerJob(j)}, {"TresPerNode", openapi.TRESPerNode(j)}, {"TresPerTask", openapi.TRESPerTask(j)},
	} {
		if t.val != "N/A" {
			r.nl()
			r.add(t.key + "=" + t.val)
		}
	}
	if j.Spec.MailType != "" {
		user := j.Spec.MailUser
		if user == "" {
			user = jobUser(j)
		}
		r.nl()
		r.add("MailUser=" + user + " MailType=" + strings.ToUpper(j.Spec.MailType))
	}
	r.nl()
	return r.end(oneLiner)
}

// underscoreSpaces is what scontrol does to a free-text reason so the record
// stays parsable: "Nodes required for job" → "Nodes_required_for_job".
func underscoreSpaces(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, s)
}

// ShowNode renders a node as scontrol show node (oneLiner: scontrol -o) does.
// The node is modelled as one socket of CPUs cores, one thread each. Values
// hpc does not track print as Slurm prints them when unknown (CPULoad=N/A,
// FreeMem=N/A, BootTime=None, LastBusyTime=Unknown); the OS line is left out,
// as Slurm does before the node has registered. Port is printed when Addr
// carries one ("10.0.0.5:7946").
func ShowNode(n api.Node, oneLiner bool) string {
	r := newRecord(oneLiner)
	st := openapi.EffectiveNodeState(n, false)
	cpus := strconv.Itoa(n.CPUs)
	r.add("NodeName=" + n.Name + " Arch=" + openapi.NodeArch() + " CoresPerSocket=" + cpus + " ")
	r.nl()
	r.add("CPUAlloc=" + strconv.Itoa(n.AllocCPUs) + " CPUEfctv=" + cpus + " CPUTot=" + cpus + " CPULoad=N/A")
	r.nl()
	r.add("AvailableFeatures=(null)")
	r.nl()
	r.add("ActiveFeatures=(null)")
	r.nl()
	r.add("Gres=" + orNull(n.Gres))
	r.nl()
	addr, port := n.Addr, ""
	if h, p, err := net.SplitHostPort(n.Addr); err == nil {
		addr, port = h, p
	}
	if addr == "" {
		addr = n.Name
	}
	r.add("NodeAddr=" + addr + " NodeHostName=" + n.Name + " ")
	if port != "" {
		r.add("Port=" + port + " ")
	}
	r.add("Version=" + openapi.SlurmVersion)
	r.nl()
	r.add("RealMemory=" + strconv.FormatInt(n.MemMB, 10) + " AllocMem=" + strconv.FormatInt(n.AllocMemMB, 10) +
		" FreeMem=N/A Sockets=1 Boards=1")
	r.nl()
	r.add("State=" + st.Complete() + " ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A")
	r.nl()
	if len(n.Partitions) > 0 {
		r.add("Partitions=" + strings.Join(n.Partitions, ",") + " ")
		r.nl()
	}
	r.add("BootTime=None SlurmdStartTime=None")
	r.nl()
	r.add("LastBusyTime=Unknown")
	r.nl()
	gres := openapi.ParseGres(n.Gres)
	r.add("CfgTRES=" + orNull(openapi.TRESString(int64(n.CPUs), n.MemMB, 0, int64(n.CPUs), gres)))
	r.nl()
	r.add("AllocTRES=" + openapi.TRESString(int64(n.AllocCPUs), n.AllocMemMB, 0, 0, nil))
	r.nl()
	r.add("CapWatts=n/a")
	r.nl()
	r.add("CurrentWatts=0 AveWatts=0")
	r.nl()
	r.add("ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s")
	if n.Reason != "" {
		for i, line := range strings.Split(n.Reason, "\n") {
			r.nl()
			if i == 0 {
				r.add("Reason=" + line)
			} else {
				r.add("       " + line)
			}
		}
	}
	return r.end(oneLiner)
}

// ShowPartition renders a partition as scontrol show partition (oneLiner:
// scontrol -o) does. nodes supplies the members' CPUs, memory and gres for
// the totals; a member missing from nodes counts as a node with nothing in
// it.
func ShowPartition(p api.Partition, nodes []api.Node, oneLiner bool) string {
	r := newRecord(oneLiner)
	members := partitionMembers(p, nodes)
	// Members in configuration order: the partition's list, else node order.
	var names []string
	seen := map[string]bool{}
	for _, name := range expandNames(p.Nodes) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if len(p.Nodes) == 0 {
		for _, n := range nodes {
			if members[n.Name] && !seen[n.Name] {
				seen[n.Name] = true
				names = append(names, n.Name)
			}
		}
	}
	byName := map[string]api.Node{}
	for _, n := range nodes {
		if _, dup := byName[n.Name]; !dup {
			byName[n.Name] = n
		}
	}
	var cpus, mem int64
	var gres []openapi.GresCount
	for _, name := range names {
		n := byName[name]
		cpus += int64(n.CPUs)
		mem += n.MemMB
		gres = addGres(gres, openapi.ParseGres(n.Gres))
	}

	r.add("PartitionName=" + p.Name)
	r.nl()
	lim := partitionLimits(p)
	r.add("AllowGroups=ALL AllowAccounts=" + allOr(lim.AllowAccounts) + " AllowQos=" + allOr(lim.AllowQos))
	r.nl()
	def := "NO"
	if p.Default {
		def = "YES"
	}
	r.add("AllocNodes=ALL Default=" + def + " QoS=N/A")
	r.nl()
	defTime := "NONE"
	if lim.DefaultTimeMin >= 0 {
		defTime = secs2time(lim.DefaultTimeMin * 60)
	}
	r.add("DefaultTime=" + defTime + " DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO")
	r.nl()
	maxTime := "UNLIMITED"
	if p.MaxTimeMin >= 0 {
		maxTime = secs2time(p.MaxTimeMin * 60)
	}
	maxNodes := "UNLIMITED"
	if lim.MaxNodes >= 0 {
		maxNodes = strconv.Itoa(lim.MaxNodes)
	}
	r.add("MaxNodes=" + maxNodes + " MaxTime=" + maxTime + " MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED")
	r.nl()
	nodesStr := "(null)"
	if len(names) > 0 {
		nodesStr = openapi.NodeList(names)
	}
	r.add("Nodes=" + nodesStr)
	r.nl()
	over := strings.ToUpper(lim.OverSubscribe)
	if over == "" {
		over = "NO"
	}
	r.add("PriorityJobFactor=" + strconv.Itoa(lim.PriorityJobFactor) + " PriorityTier=" + strconv.Itoa(lim.PriorityTier) +
		" RootOnly=NO ReqResv=NO OverSubscribe=" + over)
	r.nl()
	r.add("OverTimeLimit=NONE PreemptMode=OFF")
	r.nl()
	state := strings.ToUpper(p.State)
	switch state {
	case "":
		state = "UP"
	case "UP", "DOWN", "DRAIN", "INACTIVE":
	default:
		state = "UNKNOWN"
	}
	r.add("State=" + state + " TotalCPUs=" + strconv.FormatInt(cpus, 10) + " TotalNodes=" + strconv.Itoa(len(names)) +
		" SelectTypeParameters=NONE")
	r.nl()
	r.add("JobDefaults=(null)")
	r.nl()
	r.add("DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED")
	r.nl()
	r.add("TRES=" + orNull(openapi.TRESString(cpus, mem, int64(len(names)), cpus, gres)))
	return r.end(oneLiner)
}

// addGres adds counts into a running total, keeping first-seen order.
func addGres(total, more []openapi.GresCount) []openapi.GresCount {
	for _, g := range more {
		found := false
		for i := range total {
			if total[i].Name == g.Name {
				total[i].Count += g.Count
				found = true
			}
		}
		if !found {
			total = append(total, g)
		}
	}
	return total
}

// Controller is one SlurmctldHost and whether it answers.
type Controller struct {
	Name string
	Up   bool
}

// PingLines is what scontrol ping prints: "Slurmctld(primary) at node1 is
// UP", then backup, or backup1, backup2, ... when there are more than two,
// in configuration order. asRoot adds Slurm's banner when one is down.
func PingLines(ctls []Controller, asRoot bool) string {
	var b strings.Builder
	down := false
	for i, c := range ctls {
		mode := PingMode(i, len(ctls))
		state := "UP"
		if !c.Up {
			state, down = "DOWN", true
		}
		b.WriteString("Slurmctld(" + mode + ") at " + c.Name + " is " + state + "\n")
	}
	if down && asRoot {
		b.WriteString("*****************************************\n")
		b.WriteString("** RESTORE SLURMCTLD DAEMON TO SERVICE **\n")
		b.WriteString("*****************************************\n")
	}
	return b.String()
}

// PingMode is scontrol ping's name for the i-th of n controllers:
// primary, then backup, or backup1, backup2, ... when there are more than
// two.
func PingMode(i, n int) string {
	switch {
	case i == 0:
		return "primary"
	case n == 2:
		return "backup"
	}
	return "backup" + strconv.Itoa(i)
}

// jobGresAlloc is the job's JOB_GRES: the GRES of all its nodes summed.
func jobGresAlloc(j *api.Job) string {
	count := map[string]int{}
	var names []string
	for _, a := range j.Alloc {
		for _, g := range a.Gres {
			name := g.Name
			if g.Type != "" {
				name += ":" + g.Type
			}
			if _, ok := count[name]; !ok {
				names = append(names, name)
			}
			count[name] += len(g.Indices)
		}
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s:%d", n, count[n]))
	}
	return strings.Join(parts, ",")
}

// partitionLimits are p's limits, or Slurm's defaults where none came.
func partitionLimits(p api.Partition) api.PartitionLimits {
	if p.Limits != nil {
		return *p.Limits
	}
	return api.PartitionLimits{DefaultTimeMin: -1, MaxNodes: -1, PriorityTier: 1, PriorityJobFactor: 1}
}

// allOr is a list as scontrol prints it: ALL when there is none.
func allOr(list []string) string {
	if len(list) == 0 {
		return "ALL"
	}
	return strings.Join(list, ",")
}
