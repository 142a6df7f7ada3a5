package format

import (
	"strconv"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

func jobID(j *api.Job) string {
	if j.ArrayTasks != "" {
		return strconv.FormatUint(j.ArrayJobID, 10) + "_[" + openapi.ArrayTaskString(j) + "]"
	}
	if j.ArrayJobID != 0 {
		return strconv.FormatUint(j.ArrayJobID, 10) + "_" + strconv.Itoa(j.ArrayTaskID)
	}
	return strconv.FormatUint(j.ID, 10)
}

// jobRunTime is how long the job has run: 0 while pending, now-start while
// running, end-start once it ended (now-start if the end is not yet known).
func jobRunTime(j *api.Job, now time.Time) time.Duration {
	if !openapi.JobStarted(j) {
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

// exitPair prints an exit status and a signal the way Slurm does: "3:0".
func exitPair(code, sig int) string {
	return strconv.Itoa(code) + ":" + strconv.Itoa(sig)
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
		return openapi.ArrayTaskString(j)
	case j.ArrayJobID != 0:
		return strconv.Itoa(j.ArrayTaskID)
	}
	return "N/A"
}
