package openapi

import (
	"net"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
)

// KV is one key of an ordered object.
type KV struct {
	K string
	V any // nil, bool, int64, float64, string, Unset, Obj, []any
}

// Obj is a JSON object whose keys keep their order.
type Obj []KV

// Unset is a string Slurm leaves NULL: json-c writes it "", libyaml null.
type Unset struct{}

// strOrUnset is s, or Unset when empty.
func strOrUnset(s string) any {
	if s == "" {
		return Unset{}
	}
	return s
}

// shownOrUnset is a value as squeue and scontrol print it, Unset where
// they print an unset one ("N/A", "(null)").
func shownOrUnset(s string) any {
	if s == "N/A" || s == "(null)" {
		return Unset{}
	}
	return strOrUnset(s)
}

// nameOrNull is a name Slurm looks up from an id (uid_to_string_or_null):
// null when unknown.
func nameOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// unixOrZero is a time as Slurm packs it: seconds, 0 when unset.
func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// OpenAPIMeta is the meta object of an openapi plugin's answer.
func OpenAPIMeta(plugin, name string) Obj {
	v := strings.Split(SlurmVersion, ".")
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	return Obj{
		{"plugin", Obj{{"type", plugin}, {"name", name}}},
		{"Slurm", Obj{
			{"version", Obj{{"major", num(v[0])}, {"micro", num(v[2])}, {"minor", num(v[1])}}},
			{"release", SlurmVersion},
		}},
	}
}

// jobEligible is when a job became (or becomes) eligible; zero while a
// dependency or hold keeps it from being so.
func jobEligible(j *api.Job) time.Time {
	if NotEligible(j) {
		return time.Time{}
	}
	if j.Spec.Begin.After(j.SubmitTime) {
		return j.Spec.Begin
	}
	return j.SubmitTime
}

// JobStartEnd are the start and end times scontrol shows: the real ones,
// or a pending job's expected ones.
func JobStartEnd(j *api.Job) (time.Time, time.Time) {
	start, end := time.Time{}, JobEndTime(j)
	switch {
	case JobStarted(j):
		start = j.StartTime
	case !ExpectedStart(j).IsZero():
		start = ExpectedStart(j)
		if j.Spec.TimeLimitMin > 0 {
			end = start.Add(time.Duration(j.Spec.TimeLimitMin) * time.Minute)
		}
	}
	return start, end
}

// jobShared is job_info's shared as the plugin names it: null when the
// job asked for nothing.
func jobShared(j *api.Job) any {
	switch j.Spec.Exclusive {
	case "exclusive":
		return "none"
	case "oversubscribe":
		return "shared"
	case "user", "mcs":
		return j.Spec.Exclusive
	}
	return nil
}

// jobArrayFields are array_job_id .. array_task_string: a task's ids, the
// pending tasks of an array's record ("0-7", "1,3%2"), or a plain job's
// (0, null).
func jobArrayFields(j *api.Job) Obj {
	var task, str any = nil, Unset{}
	var throttle int64
	switch {
	case j.ArrayTasks != "":
		str, throttle = ArrayTaskString(j), int64(ArrayThrottle(j))
	case j.ArrayJobID != 0:
		task = int64(j.ArrayTaskID)
	}
	return Obj{
		{"array_job_id", int64(j.ArrayJobID)}, {"array_task_id", task},
		{"array_max_tasks", throttle}, {"array_task_string", str},
	}
}

// jobResources is the job_resources object of a job holding nodes: each
// node's CPUs as cores of socket 0 (hpc models a node as one socket).
func jobResources(j *api.Job) Obj {
	nodes := []any{}
	cpus := 0
	for _, a := range j.Alloc {
		cpus += a.CPUs
		cores := Obj{}
		for _, id := range a.CPUIDs {
			cores = append(cores, KV{strconv.Itoa(id), "allocated"})
		}
		sockets := Obj{}
		if len(cores) > 0 {
			sockets = Obj{{"0", Obj{{"cores", cores}}}}
		}
		nodes = append(nodes, Obj{
			{"sockets", sockets}, {"nodename", a.Node}, {"cpus_used", int64(0)},
			{"memory_used", int64(0)}, {"memory_allocated", a.MemMB},
		})
	}
	return Obj{
		{"nodes", NodeList(j.NodeNames())}, {"allocated_cpus", int64(cpus)},
		{"allocated_hosts", int64(len(j.Alloc))}, {"allocated_nodes", nodes},
	}
}

// jobMemFields are memory_per_node and memory_per_cpu: what the job asked
// for, else DefMemPerCPU per CPU, as slurmctld fills it in.
func jobMemFields(j *api.Job) Obj {
	var node, cpu any = nil, int64(DefMemPerCPU)
	switch {
	case j.Spec.MemPerNodeMB > 0:
		node, cpu = j.Spec.MemPerNodeMB, nil
	case j.Spec.MemPerCPUMB > 0:
		cpu = j.Spec.MemPerCPUMB
	}
	return Obj{{"memory_per_node", node}, {"memory_per_cpu", cpu}}
}

// jobStd are standard_error, _input and _output: a batch job's paths.
func jobStd(j *api.Job) Obj {
	if !j.HasScript() {
		return Obj{{"standard_error", Unset{}}, {"standard_input", Unset{}}, {"standard_output", Unset{}}}
	}
	return Obj{{"standard_error", JobStdErr(j)}, {"standard_input", JobStdIn(j)}, {"standard_output", JobStdOut(j)}}
}

// JobObject is one job of openapi/v0.0.38's jobs answer (dump_job_info),
// cluster the cluster's name. Scripts and environments are not part of
// it.
func JobObject(j *api.Job, cluster string) Obj {
	started := JobStarted(j)
	cpus := JobNumCPUs(j)
	start, end := JobStartEnd(j)
	lastEval := j.SubmitTime
	var billable, allocTRES any = nil, Unset{}
	var nodes any = Unset{}
	if started {
		lastEval, billable, allocTRES = j.StartTime, float64(cpus), JobTRES(j)
	}
	if len(j.Alloc) > 0 {
		nodes = NodeList(j.NodeNames())
	}
	flags := []any{}
	if j.Spec.MemPerNodeMB > 0 || j.Spec.MemPerCPUMB > 0 {
		flags = append(flags, "JOB_MEM_SET")
	}
	gresDetail := []any{}
	if started {
		for _, a := range j.Alloc {
			if len(a.Gres) > 0 {
				gresDetail = append(gresDetail, GresOfAlloc(a))
			}
		}
	}
	var timeLimit any
	if j.Spec.TimeLimitMin > 0 {
		timeLimit = j.Spec.TimeLimitMin
	}
	memPerTRES := any(Unset{})
	if j.Spec.MemPerGPUMB > 0 {
		memPerTRES = "gres:gpu:" + strconv.FormatInt(j.Spec.MemPerGPUMB, 10)
	}
	minCPUs := JobCPUsPerTask(j)
	if j.Spec.MinCPUs > 0 {
		minCPUs = j.Spec.MinCPUs
	}
	o := Obj{{"account", strOrUnset(JobAccount(j))}, {"accrue_time", unixOrZero(jobEligible(j))}, {"admin_comment", Unset{}}}
	o = append(o, jobArrayFields(j)...)
	o = append(o, Obj{
		{"association_id", int64(0)}, {"batch_features", Unset{}}, {"batch_flag", j.HasScript()},
		{"batch_host", strOrUnset(j.BatchHost)}, {"flags", flags},
		{"burst_buffer", Unset{}}, {"burst_buffer_state", Unset{}}, {"cluster", strOrUnset(cluster)},
		{"cluster_features", Unset{}}, {"command", Unset{}}, {"comment", Unset{}}, {"container", Unset{}},
		{"contiguous", false}, {"core_spec", nil}, {"thread_spec", nil}, {"cores_per_socket", nil},
		{"billable_tres", billable},
		// Slurm 22.05 tests the CPU frequency here: unset, it writes null.
		{"cpus_per_task", nil},
		{"cpu_frequency_minimum", nil}, {"cpu_frequency_maximum", nil}, {"cpu_frequency_governor", nil},
		{"cpus_per_tres", Unset{}}, {"deadline", int64(0)}, {"delay_boot", int64(0)},
		{"dependency", shownOrUnset(DependencyString(j))},
		{"derived_exit_code", int64(0)}, {"eligible_time", unixOrZero(jobEligible(j))},
		{"end_time", unixOrZero(end)}, {"excluded_nodes", strOrUnset(j.Spec.Exclude)},
		{"exit_code", int64(j.ExitCode<<8 | j.Signal&0x7f)}, {"features", strOrUnset(j.Spec.Constraint)},
		{"federation_origin", Unset{}}, {"federation_siblings_active", Unset{}},
		{"federation_siblings_viable", Unset{}}, {"gres_detail", gresDetail},
		{"group_id", int64(j.GID)}, {"group_name", nameOrNull(j.Group)}, {"job_id", int64(j.ID)},
	}...)
	if started && len(j.Alloc) > 0 {
		o = append(o, KV{"job_resources", jobResources(j)})
	}
	o = append(o, Obj{
		{"job_state", string(j.State)}, {"last_sched_evaluation", unixOrZero(lastEval)},
		{"licenses", Unset{}}, {"max_cpus", int64(0)}, {"max_nodes", int64(j.Spec.MaxNodes)},
		{"mcs_label", Unset{}}, {"memory_per_tres", memPerTRES}, {"name", j.Spec.Name},
		{"nodes", nodes}, {"nice", nil}, {"tasks_per_core", nil},
		{"tasks_per_node", int64(j.Spec.NTasksPerNode)}, {"tasks_per_socket", nil},
		{"tasks_per_board", int64(0)}, {"cpus", int64(cpus)}, {"node_count", int64(JobNumNodes(j))},
		{"tasks", int64(JobTasks(j))}, {"het_job_id", int64(0)}, {"het_job_id_set", Unset{}},
		{"het_job_offset", int64(0)}, {"partition", strOrUnset(j.Spec.Partition)}, {"prefer", Unset{}},
	}...)
	o = append(o, jobMemFields(j)...)
	o = append(o, Obj{
		{"minimum_cpus_per_node", int64(minCPUs)}, {"minimum_tmp_disk_per_node", int64(0)},
		{"preempt_time", int64(0)}, {"pre_sus_time", int64(0)},
		{"priority", int64(BasicPriority(j))}, {"profile", nil}, {"qos", JobQOS(j)}, {"reboot", false},
		{"required_nodes", strOrUnset(j.Spec.NodeList)},
		{"requeue", j.Spec.Requeue == nil || *j.Spec.Requeue}, {"resize_time", int64(0)},
		{"restart_cnt", int64(j.Restarts)}, {"resv_name", Unset{}}, {"shared", jobShared(j)},
		{"show_flags", []any{"SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"}},
		{"sockets_per_board", int64(0)}, {"sockets_per_node", nil}, {"start_time", unixOrZero(start)},
		{"state_description", Unset{}}, {"state_reason", JobReason(j)},
	}...)
	o = append(o, jobStd(j)...)
	return append(o, Obj{
		{"submit_time", unixOrZero(j.SubmitTime)}, {"suspend_time", int64(0)},
		{"system_comment", Unset{}}, {"time_limit", timeLimit}, {"time_minimum", j.Spec.TimeMinMin},
		{"threads_per_core", nil}, {"tres_bind", Unset{}}, {"tres_freq", Unset{}},
		{"tres_per_job", shownOrUnset(TRESPerJob(j))}, {"tres_per_node", shownOrUnset(TRESPerNode(j))},
		{"tres_per_socket", Unset{}}, {"tres_per_task", shownOrUnset(TRESPerTask(j))},
		{"tres_req_str", strOrUnset(JobTRES(j))}, {"tres_alloc_str", allocTRES},
		{"user_id", int64(j.UID)}, {"user_name", nameOrNull(j.User)}, {"wckey", Unset{}},
		{"current_working_directory", strOrUnset(j.Spec.WorkDir)},
	}...)
}

// Values slurmctld packs for what a node has not reported (NO_VAL,
// NO_VAL64): the plugin writes them as they are.
const (
	noVal   int64 = 0xfffffffe
	noVal64 int64 = -2 // 0xfffffffffffffffe as int64
)

// nodeStateFields are state and state_flags: the base state in lower
// case and its flags, as node_state_flag_string_single lists them.
func nodeStateFields(n api.Node) Obj {
	st := EffectiveNodeState(n, false)
	base := "invalid"
	for _, b := range nodeBaseNames {
		if b.v == st.Base() {
			base = strings.ToLower(b.name)
		}
	}
	flags := []any{}
	for _, f := range nodeFlagNames {
		if st.Has(f.v) {
			flags = append(flags, f.name)
		}
	}
	return Obj{{"state", base}, {"state_flags", flags}}
}

// NodeObject is one node of openapi/v0.0.38's nodes answer (_dump_node).
// The node is modelled as scontrol show node models it: one board and
// socket of CPUs cores, one thread each, not yet registered (no boot
// time, load, free memory, OS).
func NodeObject(n api.Node) Obj {
	addr, port := n.Addr, int64(0)
	if h, p, err := net.SplitHostPort(n.Addr); err == nil {
		addr = h
		port, _ = strconv.ParseInt(p, 10, 64)
	}
	if addr == "" {
		addr = n.Name
	}
	parts := []any{}
	for _, p := range n.Partitions {
		parts = append(parts, p)
	}
	var reasonBy any
	if n.Reason != "" {
		reasonBy = nameOrNull(n.ReasonUser)
	}
	var used any
	if s := TRESString(int64(n.AllocCPUs), n.AllocMemMB, 0, 0, nil); s != "" {
		used = s
	}
	o := Obj{
		{"architecture", NodeArch()}, {"burstbuffer_network_address", Unset{}}, {"boards", int64(1)},
		{"boot_time", int64(0)}, {"comment", Unset{}}, {"cores", int64(n.CPUs)}, {"cpu_binding", int64(0)},
		{"cpu_load", noVal}, {"extra", Unset{}}, {"free_memory", noVal64}, {"cpus", int64(n.CPUs)},
		{"last_busy", int64(0)}, {"features", Unset{}}, {"active_features", Unset{}},
		{"gres", strOrUnset(n.Gres)}, {"gres_drained", Unset{}}, {"gres_used", Unset{}},
		{"mcs_label", Unset{}}, {"name", n.Name}, {"next_state_after_reboot", "invalid"},
		{"address", addr}, {"hostname", n.Name},
	}
	o = append(o, nodeStateFields(n)...)
	return append(o, Obj{
		{"next_state_after_reboot_flags", []any{}}, {"operating_system", Unset{}}, {"owner", nil},
		{"partitions", parts}, {"port", port}, {"real_memory", n.MemMB},
		{"reason", strOrUnset(n.Reason)}, {"reason_changed_at", unixOrZero(n.ReasonTime)},
		{"reason_set_by_user", reasonBy}, {"slurmd_start_time", int64(0)}, {"sockets", int64(1)},
		{"threads", int64(1)}, {"temporary_disk", int64(0)}, {"weight", int64(1)},
		{"tres", strOrUnset(TRESString(int64(n.CPUs), n.MemMB, 0, int64(n.CPUs), ParseGres(n.Gres)))},
		{"slurmd_version", SlurmVersion}, {"alloc_memory", n.AllocMemMB}, {"alloc_cpus", int64(n.AllocCPUs)},
		{"idle_cpus", int64(n.CPUs - n.AllocCPUs)}, {"tres_used", used},
		{"tres_weighted", float64(n.AllocCPUs)},
	}...)
}
