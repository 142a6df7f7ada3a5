package openapi

import (
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
)

// Jobs as Slurm 22.05's openapi/dbv0.0.38 plugin dumps them (the slurmdbd
// "jobs" answer of slurmrestd's GET /slurmdb/v0.0.38/jobs, which sacct
// --json prints: meta, errors, jobs), keys in the order its parser writes
// them. What hpc's accounting does not hold is written as Slurm writes an
// unset value: null for unset numbers and strings, [] for empty lists.

// AcctJobsAnswer builds the answer for rows (jobs, each followed by its
// steps).
func AcctJobsAnswer(rows []api.AcctRow, cluster string) Obj {
	jobs := []any{}
	for i := 0; i < len(rows); i++ {
		if rows[i].Step != "" {
			continue
		}
		k := i + 1
		for k < len(rows) && rows[k].JobID == rows[i].JobID && rows[k].Step != "" {
			k++
		}
		jobs = append(jobs, jobData(rows[i], rows[i+1:k], cluster))
	}
	return Obj{{"meta", OpenAPIMeta(DBPlugin, DBPluginName)}, {"errors", []any{}}, {"jobs", jobs}}
}

// acctOrNull is s, or null when empty.
func acctOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// acctEpoch is a time as Slurm's records hold it: seconds, 0 when unset.
func acctEpoch(t interface{ Unix() int64 }, zero bool) int64 {
	if zero {
		return 0
	}
	return t.Unix()
}

// cpuTimes are the time/system, time/total and time/user objects.
func cpuTimes(u *api.StepUsage) (sys, total, usr Obj) {
	split := func(us int64) Obj {
		return Obj{{"seconds", us / 1e6}, {"microseconds", us % 1e6}}
	}
	var s, t int64
	if u != nil {
		s, t = u.SystemCPU.Microseconds(), u.UserCPU.Microseconds()
	}
	return split(s), split(s + t), split(t)
}

// exitData is _dump_job_exit_code's object. As Slurm 22.05 writes it, a
// process that exited is SUCCESS with return code 0, whatever its status.
func exitData(code, sig int) Obj {
	if sig != 0 {
		return Obj{{"status", "SIGNALED"}, {"return_code", nil},
			{"signal", Obj{{"signal_id", int64(sig)}, {"name", acctSignalName(sig)}}}}
	}
	return Obj{{"status", "SUCCESS"}, {"return_code", int64(0)}}
}

// acctSignalName is strsignal's text ("Killed", "Terminated").
func acctSignalName(sig int) string {
	s := syscall.Signal(sig).String()
	if s == "" {
		return "Unknown signal " + strconv.Itoa(sig)
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// acctUserName is uid_to_string_or_null.
func acctUserName(uid *uint32) any {
	if uid == nil {
		return nil
	}
	if u, err := user.LookupId(strconv.FormatUint(uint64(*uid), 10)); err == nil {
		return u.Username
	}
	return nil
}

// tresData is a TRES list as slurmdbd's id=count strings give it: cpu
// (id 1), mem (2, MiB), node (4), billing (5); zero counts left out.
func tresData(cpus int, memMB int64, nodes int) []any {
	out := []any{}
	add := func(typ string, id, n int64) {
		if n > 0 {
			out = append(out, Obj{{"type", typ}, {"name", ""}, {"id", id}, {"count", n}})
		}
	}
	add("cpu", 1, int64(cpus))
	add("mem", 2, memMB)
	add("node", 4, int64(nodes))
	add("billing", 5, int64(cpus))
	return out
}

func jobData(r api.AcctRow, steps []api.AcctRow, cluster string) Obj {
	nodes := acctRowNodes(r)
	sys, total, usr := cpuTimes(r.Usage)
	var limit any = r.TimeLimitMin
	if r.TimeLimitMin <= 0 {
		limit = nil // UNLIMITED (INFINITE) or the partition's (NO_VAL)
	}
	nodeList := r.NodeList
	if nodeList == "" {
		nodeList = "None assigned"
	}
	stepList := []any{}
	for _, s := range steps {
		stepList = append(stepList, stepData(s))
	}
	allocated := []any{}
	if !r.Start.IsZero() {
		allocated = tresData(r.AllocCPUs, 0, len(nodes))
	}
	reason := r.Reason
	if reason == "" {
		reason = "None"
	}
	return Obj{
		{"account", r.Account},
		{"comment", Obj{{"administrator", nil}, {"job", nil}, {"system", nil}}},
		{"allocation_nodes", int64(len(nodes))},
		{"array", Obj{{"job_id", int64(0)}, {"limits", Obj{{"max", Obj{{"running", Obj{{"tasks", int64(0)}}}}}}},
			{"task", nil}, {"task_id", nil}}},
		{"association", Obj{{"account", r.Account}, {"cluster", acctOrNull(cluster)}, {"partition", nil}, {"user", r.User}}},
		{"cluster", acctOrNull(cluster)},
		{"constraints", r.Constraints},
		{"container", nil},
		{"derived_exit_code", exitData(0, 0)},
		{"time", Obj{
			{"elapsed", int64(rowElapsedSecs(r))}, {"eligible", acctEpoch(r.Submit, r.Submit.IsZero())},
			{"end", acctEpoch(r.End, r.End.IsZero())}, {"start", acctEpoch(r.Start, r.Start.IsZero())},
			{"submission", acctEpoch(r.Submit, r.Submit.IsZero())}, {"suspended", int64(0)},
			{"system", sys}, {"limit", limit}, {"total", total}, {"user", usr},
		}},
		{"exit_code", exitData(r.ExitCode, r.Signal)},
		{"flags", []any{}},
		{"group", acctOrNull(r.Group)},
		{"het", Obj{{"job_id", int64(0)}, {"job_offset", nil}}},
		{"job_id", int64(r.JobID)},
		{"name", r.JobName},
		{"mcs", Obj{{"label", nil}}},
		{"nodes", nodeList},
		{"partition", r.Partition},
		{"priority", nil},
		{"qos", acctOrNull(r.QOS)},
		{"required", Obj{{"CPUs", int64(r.ReqCPUs)}, {"memory", int64(r.ReqMemMB)}}},
		{"kill_request_user", acctUserName(r.CancelledBy)},
		{"reservation", Obj{{"id", int64(0)}, {"name", int64(0)}}},
		{"state", Obj{{"current", strings.Fields(r.State + " x")[0]}, {"reason", reason}}},
		{"steps", stepList},
		{"tres", Obj{{"allocated", allocated}, {"requested", tresData(r.ReqCPUs, r.ReqMemMB, max(len(nodes), 1))}}},
		{"user", r.User},
		{"wckey", Obj{{"wckey", ""}, {"flags", []any{}}}},
		{"working_directory", r.WorkDir},
	}
}

func stepData(s api.AcctRow) Obj {
	nodes := acctRowNodes(s)
	hosts := []any{}
	for _, n := range nodes {
		hosts = append(hosts, n)
	}
	sys, total, usr := cpuTimes(s.Usage)
	reqMax := []any{}
	if s.Usage != nil && s.Usage.MaxRSSKB > 0 {
		reqMax = append(reqMax, Obj{{"type", "mem"}, {"name", ""}, {"id", int64(2)}, {"count", s.Usage.MaxRSSKB * 1024},
			{"task", int64(0)}, {"node", acctOrNull(s.Usage.MaxRSSNode)}})
	}
	var id any = s.Step
	dist := "Unknown"
	if n, err := strconv.ParseInt(s.Step, 10, 64); err == nil {
		id, dist = n, "Block"
	}
	return Obj{
		{"nodes", Obj{{"list", hosts}, {"count", int64(len(nodes))}, {"range", s.NodeList}}},
		{"tres", Obj{
			{"requested", Obj{{"max", reqMax}, {"min", []any{}}, {"average", []any{}}, {"total", []any{}}}},
			{"consumed", Obj{{"max", []any{}}, {"min", []any{}}, {"average", []any{}}, {"total", []any{}}}},
			{"allocated", tresData(s.AllocCPUs, 0, len(nodes))},
		}},
		{"time", Obj{{"elapsed", int64(rowElapsedSecs(s))}, {"end", acctEpoch(s.End, s.End.IsZero())},
			{"start", acctEpoch(s.Start, s.Start.IsZero())}, {"suspended", int64(0)},
			{"system", sys}, {"total", total}, {"user", usr}}},
		{"exit_code", exitData(s.ExitCode, s.Signal)},
		{"tasks", Obj{{"count", int64(max(len(nodes), 1))}}},
		{"pid", nil},
		{"CPU", Obj{{"requested_frequency", Obj{{"min", nil}, {"max", nil}}}, {"governor", []any{}}}},
		{"kill_request_user", nil},
		{"state", strings.Fields(s.State + " x")[0]},
		{"statistics", Obj{{"CPU", Obj{{"actual_frequency", int64(0)}}}, {"energy", Obj{{"consumed", int64(0)}}}}},
		{"step", Obj{{"job_id", int64(s.JobID)}, {"het", Obj{{"component", nil}}}, {"id", id}, {"name", s.JobName}}},
		{"task", Obj{{"distribution", dist}}},
	}
}

func acctRowNodes(r api.AcctRow) []string {
	if r.NodeList == "" || r.NodeList == "None assigned" {
		return nil
	}
	return expandOrNone(r.NodeList)
}

// rowElapsedSecs is a row's run time so far, in seconds.
func rowElapsedSecs(r api.AcctRow) int64 {
	if r.Start.IsZero() || r.End.IsZero() {
		return 0
	}
	return int64(r.End.Sub(r.Start).Seconds())
}

// expandOrNone is a row's node list as names; none when it is not one.
func expandOrNone(list string) []string {
	names, err := hostlist.Expand(list)
	if err != nil {
		return nil
	}
	return names
}
