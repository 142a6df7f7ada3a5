package openapi

import (
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// DefMemPerCPU is the memory, in megabytes per CPU, that a job which asked for
// no memory is given. It matches slurm.conf's DefMemPerCPU=1000 used by the
// reference cluster and by hpc's default configuration.
const DefMemPerCPU = 1000

// basicPriorityTop is where Slurm's priority/basic plugin starts counting
// down: the first job gets 0xFFFF0000-1, the next one less, and so on.
const basicPriorityTop = 0xFFFF0000

// BasicPriority is the priority Slurm's priority/basic plugin gives a job:
// 4294901760 minus the job id (job 15 → 4294901745), and 0 for a job held
// by its user or an administrator. When the controller gives the job a
// priority (api.Job.Priority), that is used instead.
func BasicPriority(j *api.Job) uint32 {
	if isHeld(j) {
		return 0
	}
	if j.Priority != 0 {
		return j.Priority // the controller's scheduling pass computed it
	}
	if j.ID == 0 || j.ID >= basicPriorityTop {
		return 1
	}
	return uint32(basicPriorityTop - j.ID)
}

func isHeld(j *api.Job) bool {
	return j.State == api.StatePending && (j.Hold != "" || j.Reason == "JobHeldUser" || j.Reason == "JobHeldAdmin")
}

// ExpectedStart is when a pending job is expected to start, as the
// controller's last scheduling pass saw it (zero when unknown).
func ExpectedStart(j *api.Job) time.Time {
	if j.State == api.StatePending {
		return j.ExpectedStart
	}
	return time.Time{}
}

// NotEligible reports whether a pending job is not yet eligible to run
// (Slurm prints EligibleTime=Unknown and AccrueTime=Unknown for it).
func NotEligible(j *api.Job) bool {
	if j.State != api.StatePending {
		return false
	}
	switch j.Reason {
	case "Dependency", "DependencyNeverSatisfied", "JobHeldUser", "JobHeldAdmin":
		return true
	}
	return false
}

// JobTasks is the task count: -n, else one per requested node, else 1.
func JobTasks(j *api.Job) int {
	if j.Spec.NTasks > 0 {
		return j.Spec.NTasks
	}
	if j.Spec.Nodes > 0 {
		return j.Spec.Nodes
	}
	return 1
}

func JobCPUsPerTask(j *api.Job) int {
	if j.Spec.CPUsPerTask > 0 {
		return j.Spec.CPUsPerTask
	}
	return 1
}

// JobNumCPUs is the allocated CPU count, or the requested one while pending.
func JobNumCPUs(j *api.Job) int {
	if len(j.Alloc) > 0 {
		return j.AllocCPUs()
	}
	return JobTasks(j) * JobCPUsPerTask(j)
}

// JobNumNodes is the allocated node count, or the requested one.
func JobNumNodes(j *api.Job) int {
	if len(j.Alloc) > 0 {
		return len(j.Alloc)
	}
	if j.Spec.Nodes > 0 {
		return j.Spec.Nodes
	}
	return 1
}

// jobMemMB is the job's total memory: the allocation's, else what it asked
// for (per node times nodes, or DefMemPerCPU per CPU).
func jobMemMB(j *api.Job) int64 {
	var sum int64
	for _, a := range j.Alloc {
		sum += a.MemMB
	}
	if sum > 0 {
		return sum
	}
	switch {
	case j.Spec.MemPerNodeMB > 0:
		return j.Spec.MemPerNodeMB * int64(JobNumNodes(j))
	case j.Spec.MemPerCPUMB > 0:
		return int64(JobNumCPUs(j)) * j.Spec.MemPerCPUMB
	}
	return int64(JobNumCPUs(j)) * DefMemPerCPU
}

// JobStarted reports whether the job has a start time and is past pending.
func JobStarted(j *api.Job) bool {
	return j.State != api.StatePending && !j.StartTime.IsZero()
}

// JobEndTime is the recorded end, or for a started job without one the
// start plus its time limit (Slurm's expected end); zero when unknown.
func JobEndTime(j *api.Job) time.Time {
	if !j.EndTime.IsZero() {
		return j.EndTime
	}
	if JobStarted(j) && j.Spec.TimeLimitMin > 0 {
		return j.StartTime.Add(time.Duration(j.Spec.TimeLimitMin) * time.Minute)
	}
	return time.Time{}
}

// JobReason is the job's reason, "None" when it has none.
func JobReason(j *api.Job) string {
	if j.Reason == "" {
		return api.ReasonNone
	}
	return j.Reason
}

// JobStdOut is the expanded output path, or Slurm's default
// <workdir>/slurm-<id>.out.
func JobStdOut(j *api.Job) string {
	if j.StdOut != "" {
		return j.StdOut
	}
	def := "slurm-%j.out"
	if j.ArrayJobID != 0 {
		def = "slurm-%A_%a.out"
	}
	if j.Spec.WorkDir == "" {
		def = "./" + def
	}
	return jobspec.ExpandPath(j.Spec.Output, j, def)
}

// JobStdErr is the expanded error path; without one it goes where output goes.
func JobStdErr(j *api.Job) string {
	if j.StdErr != "" {
		return j.StdErr
	}
	if j.StdOut == "" && j.Spec.Error != "" {
		return jobspec.ExpandPath(j.Spec.Error, j, "")
	}
	return JobStdOut(j)
}

// JobAccount is the job's account: the controller's, else the one asked for.
func JobAccount(j *api.Job) string {
	if j.Account != "" {
		return j.Account
	}
	return j.Spec.Account
}

// JobQOS is the QOS asked for, "normal" by default.
func JobQOS(j *api.Job) string {
	if j.Spec.QOS != "" {
		return j.Spec.QOS
	}
	return "normal"
}

// DependencyString is a job's dependency as scontrol and squeue show it:
// "(null)" once there is none left to wait for, and for a job pending on
// one, each job it waits on with the state of that wait, as Slurm lists
// the dependencies still outstanding: "afterok:15(unfulfilled)",
// "afterany:12(unfulfilled)?afterok:13(unfulfilled)"; "(failed)" when it
// can never be satisfied.
func DependencyString(j *api.Job) string {
	if j.Spec.Dependency == "" || j.State != api.StatePending {
		return "(null)"
	}
	status := ""
	switch j.Reason {
	case "Dependency":
		status = "(unfulfilled)"
	case "DependencyNeverSatisfied":
		status = "(failed)"
	default:
		return j.Spec.Dependency
	}
	sep := ","
	if strings.Contains(j.Spec.Dependency, "?") {
		sep = "?"
	}
	var items []string
	for _, item := range strings.FieldsFunc(j.Spec.Dependency, func(r rune) bool { return r == ',' || r == '?' }) {
		kind, ids, ok := strings.Cut(item, ":")
		if !ok {
			items = append(items, item+status) // singleton
			continue
		}
		for _, id := range strings.Split(ids, ":") {
			items = append(items, kind+":"+id+status)
		}
	}
	return strings.Join(items, sep)
}
