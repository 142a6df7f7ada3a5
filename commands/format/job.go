package format

import (
	"strconv"
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

// expectedStart is when a pending job is expected to start, as the
// controller's last scheduling pass saw it (zero when unknown).
func expectedStart(j *api.Job) time.Time {
	if j.State == api.StatePending {
		return j.ExpectedStart
	}
	return time.Time{}
}

// notEligible reports whether a pending job is not yet eligible to run
// (Slurm prints EligibleTime=Unknown and AccrueTime=Unknown for it).
func notEligible(j *api.Job) bool {
	if j.State != api.StatePending {
		return false
	}
	switch j.Reason {
	case "Dependency", "DependencyNeverSatisfied", "JobHeldUser", "JobHeldAdmin":
		return true
	}
	return false
}

func jobID(j *api.Job) string {
	if j.ArrayTasks != "" {
		return strconv.FormatUint(j.ArrayJobID, 10) + "_[" + arrayTaskString(j) + "]"
	}
	if j.ArrayJobID != 0 {
		return strconv.FormatUint(j.ArrayJobID, 10) + "_" + strconv.Itoa(j.ArrayTaskID)
	}
	return strconv.FormatUint(j.ID, 10)
}

// jobTasks is the task count: -n, else one per requested node, else 1.
func jobTasks(j *api.Job) int {
	if j.Spec.NTasks > 0 {
		return j.Spec.NTasks
	}
	if j.Spec.Nodes > 0 {
		return j.Spec.Nodes
	}
	return 1
}

func jobCPUsPerTask(j *api.Job) int {
	if j.Spec.CPUsPerTask > 0 {
		return j.Spec.CPUsPerTask
	}
	return 1
}

// jobNumCPUs is the allocated CPU count, or the requested one while pending.
func jobNumCPUs(j *api.Job) int {
	if len(j.Alloc) > 0 {
		return j.AllocCPUs()
	}
	return jobTasks(j) * jobCPUsPerTask(j)
}

// jobNumNodes is the allocated node count, or the requested one.
func jobNumNodes(j *api.Job) int {
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
		return j.Spec.MemPerNodeMB * int64(jobNumNodes(j))
	case j.Spec.MemPerCPUMB > 0:
		return int64(jobNumCPUs(j)) * j.Spec.MemPerCPUMB
	}
	return int64(jobNumCPUs(j)) * DefMemPerCPU
}

// jobStarted reports whether the job has a start time and is past pending.
func jobStarted(j *api.Job) bool {
	return j.State != api.StatePending && !j.StartTime.IsZero()
}

// jobRunTime is how long the job has run: 0 while pending, now-start while
// running, end-start once it ended (now-start if the end is not yet known).
func jobRunTime(j *api.Job, now time.Time) time.Duration {
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
func jobEndTime(j *api.Job) time.Time {
	if !j.EndTime.IsZero() {
		return j.EndTime
	}
	if jobStarted(j) && j.Spec.TimeLimitMin > 0 {
		return j.StartTime.Add(time.Duration(j.Spec.TimeLimitMin) * time.Minute)
	}
	return time.Time{}
}

// jobReason is the job's reason, "None" when it has none.
func jobReason(j *api.Job) string {
	if j.Reason == "" {
		return api.ReasonNone
	}
	return j.Reason
}

func jobUser(j *api.Job) string {
	if j.User != "" {
		return j.User
	}
	return strconv.FormatUint(uint64(j.UID), 10)
}

func jobGroup(j *api.Job) string {
	if j.Group != "" {
		return j.Group
	}
	return strconv.FormatUint(uint64(j.GID), 10)
}

// jobStdOut is the expanded output path, or Slurm's default
// <workdir>/slurm-<id>.out.
func jobStdOut(j *api.Job) string {
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

// jobStdErr is the expanded error path; without one it goes where output goes.
func jobStdErr(j *api.Job) string {
	if j.StdErr != "" {
		return j.StdErr
	}
	if j.StdOut == "" && j.Spec.Error != "" {
		return jobspec.ExpandPath(j.Spec.Error, j, "")
	}
	return jobStdOut(j)
}

// exitPair prints an exit status and a signal the way Slurm does: "3:0".
func exitPair(code, sig int) string {
	return strconv.Itoa(code) + ":" + strconv.Itoa(sig)
}

// jobAccount is the job's account: the controller's, else the one asked for.
func jobAccount(j *api.Job) string {
	if j.Account != "" {
		return j.Account
	}
	return j.Spec.Account
}

// jobQOS is the QOS asked for, "normal" by default.
func jobQOS(j *api.Job) string {
	if j.Spec.QOS != "" {
		return j.Spec.QOS
	}
	return "normal"
}

// overSubscribe is squeue's OVER_SUBSCRIBE and scontrol's OverSubscribe
// for a job: OK by default, NO for --exclusive, USER or MCS for those
// kinds of --exclusive, YES for --exclusive=oversubscribe.
func overSubscribe(j *api.Job) string {
	switch j.Spec.Exclusive {
	case "exclusive":
		return "NO"
	case "user":
		return "USER"
	case "mcs":
		return "MCS"
	case "oversubscribe":
		return "YES"
	}
	return "OK"
}

// dependencyString is a job's dependency as scontrol and squeue show it:
// "(null)" once there is none left to wait for, and for a job pending on
// one, each job it waits on with the state of that wait, as Slurm lists
// the dependencies still outstanding: "afterok:15(unfulfilled)",
// "afterany:12(unfulfilled)?afterok:13(unfulfilled)"; "(failed)" when it
// can never be satisfied.
func dependencyString(j *api.Job) string {
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

// arrayJobID is squeue's ARRAY_JOB_ID: the array's id, or a plain job's.
func arrayJobID(j *api.Job) string {
	if j.ArrayJobID != 0 {
		return strconv.FormatUint(j.ArrayJobID, 10)
	}
	return strconv.FormatUint(j.ID, 10)
}

// arrayTaskID is squeue's ARRAY_TASK_ID: the task, the tasks of an
// array's record, or N/A.
func arrayTaskID(j *api.Job) string {
	switch {
	case j.ArrayTasks != "":
		return arrayTaskString(j)
	case j.ArrayJobID != 0:
		return strconv.Itoa(j.ArrayTaskID)
	}
	return "N/A"
}
