package openapi

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
)

// The answers of slurmrestd's v0.0.38 paths that only the REST API gives:
// ping, diag, partitions, job/submit, and the errors of any answer.

// Slurm's error numbers (slurm_errno.h) for the texts the daemon answers
// with; an error whose text is not here is written without a number.
var errorNumbers = map[string]int64{
	api.ErrUnexpectedMessage:   1000, // SLURM_UNEXPECTED_MSG_ERROR
	api.ErrNoLeader:            1800, // SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
	api.ErrInvalidPartition:    2000, // ESLURM_INVALID_PARTITION_NAME
	api.ErrAccessDenied:        2002, // ESLURM_ACCESS_DENIED
	api.ErrTooManyProcessors:   2005, // ESLURM_TOO_MANY_REQUESTED_CPUS
	api.ErrNodeCountInvalid:    2006, // ESLURM_INVALID_NODE_COUNT
	api.ErrJobScriptMissing:    2009, // ESLURM_JOB_SCRIPT_MISSING
	api.ErrUserIDMissing:       2010, // ESLURM_USER_ID_MISSING
	api.ErrTooLong:             2012, // ESLURM_PATHNAME_TOO_LONG
	api.ErrConfigUnavailable:   2014, // ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE
	api.ErrNodesBusy:           2016, // ESLURM_NODES_BUSY
	api.ErrInvalidJobID:        2017, // ESLURM_INVALID_JOB_ID
	api.ErrInvalidNodeName:     2018, // ESLURM_INVALID_NODE_NAME
	api.ErrTransitionState:     2020, // ESLURM_TRANSITION_STATE_NO_UPDATE
	api.ErrAlreadyDone:         2021, // ESLURM_ALREADY_DONE
	api.ErrJobDependency:       2038, // ESLURM_DEPENDENCY
	api.ErrMemoryUnsatisfied:   2044, // ESLURM_INVALID_TASK_MEMORY
	api.ErrInvalidAccount:      2045, // ESLURM_INVALID_ACCOUNT
	api.ErrInvalidTimeLimit:    2051, // ESLURM_INVALID_TIME_LIMIT
	api.ErrInvalidQOS:          2066, // ESLURM_INVALID_QOS
	ErrNotSupported:            2036, // ESLURM_NOT_SUPPORTED
	ErrAuthCredInvalid:         6000, // ESLURM_AUTH_CRED_INVALID
	ErrRESTFailParsing:         9001, // ESLURM_REST_FAIL_PARSING
	ErrRESTInvalidJobsDesc:     9002, // ESLURM_REST_INVALID_JOBS_DESC
	ErrRESTEmptyResult:         9003, // ESLURM_REST_EMPTY_RESULT
	"Invalid signal specified": 22,   // EINVAL
}

// Slurm's texts for the errors only the REST API gives.
const (
	ErrNotSupported        = "Requested operation not supported on this system"
	ErrAuthCredInvalid     = "Invalid authentication credential"
	ErrRESTFailParsing     = "Failure during parsing"
	ErrRESTInvalidJobsDesc = "Jobs description entry not found, empty or not dictionary or list"
	ErrRESTEmptyResult     = "Nothing found with query"
)

// ErrorObject is one entry of an answer's errors: Slurm's text and
// number, what went wrong (description) and where (source).
func ErrorObject(err error, source string) Obj {
	msg, detail := err.Error(), ""
	var ae *api.Error
	if errors.As(err, &ae) {
		msg, detail = ae.Message, ae.Detail
	}
	o := Obj{}
	if detail != "" {
		o = append(o, KV{"description", detail})
	}
	if n, ok := errorNumbers[msg]; ok {
		o = append(o, KV{"error_number", n})
	}
	o = append(o, KV{"error", msg})
	if source != "" {
		o = append(o, KV{"source", source})
	}
	return o
}

// ErrorsAnswer is an answer that holds only its meta and errors, as the
// plugin (Plugin or DBPlugin) writes a failed request.
func ErrorsAnswer(db bool, errs ...Obj) Obj {
	list := []any{}
	for _, e := range errs {
		list = append(list, e)
	}
	if db {
		return Obj{{"meta", OpenAPIMeta(DBPlugin, DBPluginName)}, {"errors", list}}
	}
	return Obj{{"meta", OpenAPIMeta(Plugin, PluginName)}, {"errors", list}}
}

// PingController is one controller as scontrol ping and the ping answer
// list it.
type PingController struct {
	Name string
	Up   bool
}

// PingControllers are the controllers Slurm pings, from what they answered
// for themselves: the voters in slurm.conf's order (the first is Slurm's
// "primary" whichever one leads now), then those added at run time; a node
// still being added (no vote yet) is left out. A controller is UP when its
// daemon answers with Raft running, whatever its Raft role.
func PingControllers(states []api.ControllerState) []PingController {
	voters := false
	for _, c := range states {
		voters = voters || c.Voter
	}
	var out []PingController
	for _, c := range states {
		if voters && !c.Voter {
			continue
		}
		out = append(out, PingController{Name: c.Name, Up: c.Role != api.RoleDown})
	}
	return out
}

// PingAnswer is GET /slurm/v0.0.38/ping's answer: each controller's host,
// UP or DOWN, its mode (primary, backup, backup2, ...) and the ping's
// status (0 when it answered).
func PingAnswer(ctls []PingController) Obj {
	pings := []any{}
	for i, c := range ctls {
		mode := "primary"
		switch {
		case i == 1:
			mode = "backup"
		case i > 1:
			mode = "backup" + strconv.Itoa(i)
		}
		ping, status := "DOWN", int64(-1)
		if c.Up {
			ping, status = "UP", 0
		}
		pings = append(pings, Obj{{"hostname", c.Name}, {"ping", ping}, {"mode", mode}, {"status", status}})
	}
	return Obj{{"meta", OpenAPIMeta(Plugin, PluginName)}, {"errors", []any{}}, {"pings", pings}}
}

// DiagAnswer is GET /slurm/v0.0.38/diag's answer: sdiag's figures as the
// plugin names them; what hpc does not count is 0.
func DiagAnswer(d api.Diag) Obj {
	div := func(a, b uint64) int64 {
		if b == 0 {
			return 0
		}
		return int64(a / b)
	}
	perMinute := int64(0)
	if mins := d.Time.Sub(d.Since) / time.Minute; mins > 0 {
		perMinute = int64(d.Cycles) / int64(mins)
	}
	st := Obj{
		{"parts_packed", int64(0)}, {"req_time", unixOrZero(d.Time)}, {"req_time_start", unixOrZero(d.Since)},
		{"server_thread_count", int64(1)}, {"agent_queue_size", int64(0)}, {"agent_count", int64(0)},
		{"agent_thread_count", int64(0)}, {"dbd_agent_queue_size", int64(0)}, {"gettimeofday_latency", int64(0)},
		{"schedule_cycle_max", int64(d.CycleMax)}, {"schedule_cycle_last", int64(d.CycleLast)},
		{"schedule_cycle_total", int64(d.Cycles)}, {"schedule_cycle_mean", div(d.CycleSum, d.Cycles)},
		{"schedule_cycle_mean_depth", int64(0)}, {"schedule_cycle_per_minute", perMinute},
		{"schedule_queue_length", int64(d.QueueLen)},
		{"jobs_submitted", int64(d.JobsSubmitted)}, {"jobs_started", int64(d.JobsStarted)},
		{"jobs_completed", int64(d.JobsCompleted)}, {"jobs_canceled", int64(d.JobsCanceled)},
		{"jobs_failed", int64(d.JobsFailed)}, {"jobs_pending", int64(d.JobsPending)},
		{"jobs_running", int64(d.JobsRunning)}, {"job_states_ts", unixOrZero(d.Time)},
		{"bf_backfilled_jobs", int64(d.BackfilledJobs)}, {"bf_last_backfilled_jobs", int64(0)},
		{"bf_backfilled_het_jobs", int64(0)}, {"bf_cycle_counter", int64(d.BackfillCycles)},
		{"bf_cycle_mean", div(d.BackfillSum, d.BackfillCycles)}, {"bf_cycle_max", int64(d.BackfillMax)},
		{"bf_last_depth", int64(0)}, {"bf_last_depth_try", int64(0)}, {"bf_depth_mean", int64(0)},
		{"bf_depth_mean_try", int64(0)}, {"bf_cycle_last", int64(d.BackfillLast)},
		{"bf_queue_len", int64(0)}, {"bf_queue_len_mean", int64(0)}, {"bf_table_size", int64(0)},
		{"bf_table_size_mean", int64(0)}, {"bf_when_last_cycle", unixOrZero(d.BackfillWhen)},
		{"bf_active", false},
	}
	byType, byUser := []any{}, []any{}
	for _, r := range d.ByType {
		byType = append(byType, Obj{{"message_type", r.Name}, {"type_id", int64(r.ID)}, {"count", int64(r.Count)},
			{"average_time", div(r.TotalMicros, r.Count)}, {"total_time", int64(r.TotalMicros)}})
	}
	for _, r := range d.ByUser {
		byUser = append(byUser, Obj{{"user", r.Name}, {"user_id", int64(r.ID)}, {"count", int64(r.Count)},
			{"average_time", div(r.TotalMicros, r.Count)}, {"total_time", int64(r.TotalMicros)}})
	}
	st = append(st, KV{"rpcs_by_message_type", byType}, KV{"rpcs_by_user", byUser})
	return Obj{{"meta", OpenAPIMeta(Plugin, PluginName)}, {"errors", []any{}}, {"statistics", st}}
}

// PartitionObject is one partition of the partitions answer (_dump_part):
// nodes is every node, for the partition's CPU total.
func PartitionObject(p api.Partition, nodes []api.Node) Obj {
	cpus := int64(0)
	for _, n := range nodes {
		for _, name := range p.Nodes {
			if n.Name == name {
				cpus += int64(n.CPUs)
			}
		}
	}
	flags := []any{}
	if p.Default {
		flags = append(flags, "default")
	}
	l := api.PartitionLimits{DefaultTimeMin: -1, MaxNodes: -1, PriorityTier: 1, PriorityJobFactor: 1}
	if p.Limits != nil {
		l = *p.Limits
	}
	limit := func(v int64) any { // INFINITE and NO_VAL are written as they are packed
		if v < 0 {
			return int64(0xffffffff)
		}
		return v
	}
	return Obj{
		{"flags", flags}, {"preemption_mode", []any{"disabled"}},
		{"allowed_allocation_nodes", ""}, {"allowed_accounts", orAll(l.AllowAccounts)},
		{"allowed_groups", ""}, {"allowed_qos", orAll(l.AllowQos)}, {"alternative", ""},
		{"billing_weights", ""}, {"default_memory_per_cpu", int64(DefMemPerCPU)},
		{"default_time_limit", limit(l.DefaultTimeMin)}, {"denied_accounts", ""}, {"denied_qos", ""},
		{"preemption_grace_time", int64(0)}, {"maximum_cpus_per_node", int64(0xffffffff)},
		{"maximum_memory_per_node", int64(0)}, {"maximum_nodes_per_job", limit(int64(l.MaxNodes))},
		{"max_time_limit", limit(p.MaxTimeMin)}, {"min_nodes_per_job", int64(0)}, {"name", p.Name},
		{"nodes", NodeList(p.Nodes)}, {"over_time_limit", nil},
		{"priority_job_factor", int64(l.PriorityJobFactor)}, {"priority_tier", int64(l.PriorityTier)},
		{"qos", ""}, {"state", p.State}, {"total_cpus", cpus}, {"total_nodes", int64(len(p.Nodes))},
		{"tres", "cpu=" + strconv.FormatInt(cpus, 10) + ",node=" + strconv.Itoa(len(p.Nodes)) + ",billing=" + strconv.FormatInt(cpus, 10)},
	}
}

// orAll is a partition's allow list: "ALL" when it has none.
func orAll(list []string) string {
	if len(list) == 0 {
		return "ALL"
	}
	return strings.Join(list, ",")
}

// PartitionsAnswer is the partitions answer (GET /partitions and
// /partition/{name}).
func PartitionsAnswer(parts []api.Partition, nodes []api.Node) Obj {
	list := []any{}
	for _, p := range parts {
		list = append(list, PartitionObject(p, nodes))
	}
	return Obj{{"meta", OpenAPIMeta(Plugin, PluginName)}, {"errors", []any{}}, {"partitions", list}}
}

// SubmitAnswer is POST /slurm/v0.0.38/job/submit's answer: the job's id,
// its batch step, and the submission's message to the user when it has
// one.
func SubmitAnswer(jobID uint64, userMsg string) Obj {
	o := Obj{{"meta", OpenAPIMeta(Plugin, PluginName)}, {"errors", []any{}},
		{"job_id", int64(jobID)}, {"step_id", "BATCH"}}
	if userMsg != "" {
		o = append(o, KV{"job_submit_user_msg", userMsg})
	}
	return o
}
