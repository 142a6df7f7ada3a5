package commands

import (
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"hpc/cluster/api"
	"hpc/commands/format"
)

// sacct --json and --yaml: the jobs as Slurm 22.05's openapi/dbv0.0.38
// plugin dumps them (the slurmdbd "jobs" answer of slurmrestd: meta,
// errors, jobs), keys in the order its parser writes them. What hpc's
// accounting does not hold is written as Slurm writes an unset value:
// null for unset numbers and strings, [] for empty lists.

// sacctData builds the answer for rows (jobs, each followed by its steps).
func sacctData(rows []api.AcctRow, cluster string) jobj {
	version := strings.Split(format.SlurmVersion, ".")
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	meta := jobj{
		{"plugin", jobj{{"type", "openapi/dbv0.0.38"}, {"name", "Slurm OpenAPI DB v0.0.38"}}},
		{"Slurm", jobj{
			{"version", jobj{{"major", num(version[0])}, {"micro", num(version[2])}, {"minor", num(version[1])}}},
			{"release", format.SlurmVersion},
		}},
	}
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
	return jobj{{"meta", meta}, {"errors", []any{}}, {"jobs", jobs}}
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
func cpuTimes(u *api.StepUsage) (sys, total, usr jobj) {
	split := func(us int64) jobj {
		return jobj{{"seconds", us / 1e6}, {"microseconds", us % 1e6}}
	}
	var s, t int64
	if u != nil {
		s, t = u.SystemCPU.Microseconds(), u.UserCPU.Microseconds()
	}
	return split(s), split(s + t), split(t)
}

// exitData is _dump_job_exit_code's object. As Slurm 22.05 writes it, a
// process that exited is SUCCESS with return code 0, whatever its status.
func exitData(code, sig int) jobj {
	if sig != 0 {
		return jobj{{"status", "SIGNALED"}, {"return_code", nil},
			{"signal", jobj{{"signal_id", int64(sig)}, {"name", acctSignalName(sig)}}}}
	}
	return jobj{{"status", "SUCCESS"}, {"return_code", int64(0)}}
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
			out = append(out, jobj{{"type", typ}, {"name", ""}, {"id", id}, {"count", n}})
		}
	}
	add("cpu", 1, int64(cpus))
	add("mem", 2, memMB)
	add("node", 4, int64(nodes))
	add("billing", 5, int64(cpus))
	return out
}

func jobData(r api.AcctRow, steps []api.AcctRow, cluster string) jobj {
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
	return jobj{
		{"account", r.Account},
		{"comment", jobj{{"administrator", nil}, {"job", nil}, {"system", nil}}},
		{"allocation_nodes", int64(len(nodes))},
		{"array", jobj{{"job_id", int64(0)}, {"limits", jobj{{"max", jobj{{"running", jobj{{"tasks", int64(0)}}}}}}},
			{"task", nil}, {"task_id", nil}}},
		{"association", jobj{{"account", r.Account}, {"cluster", acctOrNull(cluster)}, {"partition", nil}, {"user", r.User}}},
		{"cluster", acctOrNull(cluster)},
		{"constraints", r.Constraints},
		{"container", nil},
		{"derived_exit_code", exitData(0, 0)},
		{"time", jobj{
			{"elapsed", int64(rowElapsedSecs(r))}, {"eligible", acctEpoch(r.Submit, r.Submit.IsZero())},
			{"end", acctEpoch(r.End, r.End.IsZero())}, {"start", acctEpoch(r.Start, r.Start.IsZero())},
			{"submission", acctEpoch(r.Submit, r.Submit.IsZero())}, {"suspended", int64(0)},
			{"system", sys}, {"limit", limit}, {"total", total}, {"user", usr},
		}},
		{"exit_code", exitData(r.ExitCode, r.Signal)},
		{"flags", []any{}},
		{"group", acctOrNull(r.Group)},
		{"het", jobj{{"job_id", int64(0)}, {"job_offset", nil}}},
		{"job_id", int64(r.JobID)},
		{"name", r.JobName},
		{"mcs", jobj{{"label", nil}}},
		{"nodes", nodeList},
		{"partition", r.Partition},
		{"priority", nil},
		{"qos", acctOrNull(r.QOS)},
		{"required", jobj{{"CPUs", int64(r.ReqCPUs)}, {"memory", int64(r.ReqMemMB)}}},
		{"kill_request_user", acctUserName(r.CancelledBy)},
		{"reservation", jobj{{"id", int64(0)}, {"name", int64(0)}}},
		{"state", jobj{{"current", strings.Fields(r.State + " x")[0]}, {"reason", reason}}},
		{"steps", stepList},
		{"tres", jobj{{"allocated", allocated}, {"requested", tresData(r.ReqCPUs, r.ReqMemMB, max(len(nodes), 1))}}},
		{"user", r.User},
		{"wckey", jobj{{"wckey", ""}, {"flags", []any{}}}},
		{"working_directory", r.WorkDir},
	}
}

func stepData(s api.AcctRow) jobj {
	nodes := acctRowNodes(s)
	hosts := []any{}
	for _, n := range nodes {
		hosts = append(hosts, n)
	}
	sys, total, usr := cpuTimes(s.Usage)
	reqMax := []any{}
	if s.Usage != nil && s.Usage.MaxRSSKB > 0 {
		reqMax = append(reqMax, jobj{{"type", "mem"}, {"name", ""}, {"id", int64(2)}, {"count", s.Usage.MaxRSSKB * 1024},
			{"task", int64(0)}, {"node", acctOrNull(s.Usage.MaxRSSNode)}})
	}
	var id any = s.Step
	dist := "Unknown"
	if n, err := strconv.ParseInt(s.Step, 10, 64); err == nil {
		id, dist = n, "Block"
	}
	return jobj{
		{"nodes", jobj{{"list", hosts}, {"count", int64(len(nodes))}, {"range", s.NodeList}}},
		{"tres", jobj{
			{"requested", jobj{{"max", reqMax}, {"min", []any{}}, {"average", []any{}}, {"total", []any{}}}},
			{"consumed", jobj{{"max", []any{}}, {"min", []any{}}, {"average", []any{}}, {"total", []any{}}}},
			{"allocated", tresData(s.AllocCPUs, 0, len(nodes))},
		}},
		{"time", jobj{{"elapsed", int64(rowElapsedSecs(s))}, {"end", acctEpoch(s.End, s.End.IsZero())},
			{"start", acctEpoch(s.Start, s.Start.IsZero())}, {"suspended", int64(0)},
			{"system", sys}, {"total", total}, {"user", usr}}},
		{"exit_code", exitData(s.ExitCode, s.Signal)},
		{"tasks", jobj{{"count", int64(max(len(nodes), 1))}}},
		{"pid", nil},
		{"CPU", jobj{{"requested_frequency", jobj{{"min", nil}, {"max", nil}}}, {"governor", []any{}}}},
		{"kill_request_user", nil},
		{"state", strings.Fields(s.State + " x")[0]},
		{"statistics", jobj{{"CPU", jobj{{"actual_frequency", int64(0)}}}, {"energy", jobj{{"consumed", int64(0)}}}}},
		{"step", jobj{{"job_id", int64(s.JobID)}, {"het", jobj{{"component", nil}}}, {"id", id}, {"name", s.JobName}}},
		{"task", jobj{{"distribution", dist}}},
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
