package format

import (
	"strconv"
	"time"

	"hpc/cluster/api"
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
// by its user or an administrator. It stands in until api.Job carries the
// scheduler's priority.
func BasicPriority(j api.Job) uint32 {
	if isHeld(j) {
		return 0
	}
	if j.ID == 0 || j.ID >= basicPriorityTop {
		return 1
	}
	return uint32(basicPriorityTop - j.ID)
}

func isHeld(j api.Job) bool {
	return j.State == api.StatePending && (j.Reason == "JobHeldUser" || j.Reason == "JobHeldAdmin")
}

// notEligible reports whether a pending job is not yet eligible to run
// (Slurm prints EligibleTime=Unknown and AccrueTime=Unknown for it).
func notEligible(j api.Job) bool {
	if j.State != api.StatePending {
		return false
	}
	switch j.Reason {
	case "Dependency", "DependencyNeverSatisfied", "JobHeldUser", "JobHeldAdmin":
		return true
	}
	return false
}

func jobID(j api.Job) string { return strconv.FormatUint(j.ID, 10) }

// jobTasks is the task count: -n, else one per requested node, else 1.
func jobTasks(j api.Job) int {
	if j.Spec.NTasks > 0 {
		return j.Spec.NTasks
	}
	if j.Spec.Nodes > 0 {
		return j.Spec.Nodes
	}
	return 1
}

func jobCPUsPerTask(j api.Job) int {
	if j.Spec.CPUsPerTask > 0 {
		return j.Spec.CPUsPerTask
	}
	return 1
}

// jobNumCPUs is the allocated CPU count, or the requested one while pending.
func jobNumCPUs(j api.Job) int {
	if len(j.Alloc) > 0 {
		return j.AllocCPUs()
	}
	return jobTasks(j) * jobCPUsPerTask(j)
}

// jobNumNodes is the allocated node count, or the requested one.
func jobNumNodes(j api.Job) int {
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
func jobMemMB(j api.Job) int64 {
	var sum int64
	for _, a := range j.Alloc {
		sum += a.MemMB
	}
	if sum > 0 {
		return sum
	}
	if j.Spec.MemPerNodeMB > 0 {
		return j.Spec.MemPerNodeMB * int64(jobNumNodes(j))
	}
	return int64(jobNumCPUs(j)) * DefMemPerCPU
}

// jobStarted reports whether the job has a start time and is past pending.
func jobStarted(j api.Job) bool {
	return j.State != api.StatePending && !j.StartTime.IsZero()
}

// jobRunTime is how long the job has run: 0 while pending, now-start while
// running, end-start once it ended (now-start if the end is not yet known).
func jobRunTime(j api.Job, now time.Time) time.Duration {
	if !jobStarted(j) {
		return 0
	}
	end := j.EndTime
	if j.State == api.StateRunning || end.IsZero() {
		end = now
	}
	d := end.Sub(j.StartTime)
	if d < 0 {
		return 0
	}
	return d
}

// jobEndTime is the recorded end, or for a started job without one the
// start plus its time limit (Slurm's expected end); zero when unknown.
func jobEndTime(j api.Job) time.Time {
	if !j.EndTime.IsZero() {
		return j.EndTime
	}
	if jobStarted(j) && j.Spec.TimeLimitMin > 0 {
		return j.StartTime.Add(time.Duration(j.Spec.TimeLimitMin) * time.Minute)
	}
	return time.Time{}
}

// jobReason is the job's reason, "None" when it has none.
func jobReason(j api.Job) string {
	if j.Reason == "" {
		return api.ReasonNone
	}
	return j.Reason
}

func jobUser(j api.Job) string {
	if j.User != "" {
		return j.User
	}
	return strconv.FormatUint(uint64(j.UID), 10)
}

func jobGroup(j api.Job) string {
	if j.Group != "" {
		return j.Group
	}
	return strconv.FormatUint(uint64(j.GID), 10)
}

// jobStdOut is the expanded output path, or Slurm's default
// <workdir>/slurm-<id>.out.
func jobStdOut(j api.Job) string {
	if j.StdOut != "" {
		return j.StdOut
	}
	dir := j.Spec.WorkDir
	if dir == "" {
		dir = "."
	}
	return dir + "/slurm-" + jobID(j) + ".out"
}

// jobStdErr is the expanded error path; without one it goes where output goes.
func jobStdErr(j api.Job) string {
	if j.StdErr != "" {
		return j.StdErr
	}
	return jobStdOut(j)
}

// exitPair prints an exit status and a signal the way Slurm does: "3:0".
func exitPair(code, sig int) string {
	return strconv.Itoa(code) + ":" + strconv.Itoa(sig)
}
