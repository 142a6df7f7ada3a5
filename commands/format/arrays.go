package format

import (
	"slices"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// Job arrays as Slurm shows them. The controller keeps one record per task;
// Slurm keeps one record for all the tasks that have not started yet (its
// "meta" record, JobId=the array's id, ArrayTaskId=0-7) and splits a task
// off as it starts. openapi.CollapseArrays (cluster/openapi) gives the
// commands Slurm's view.

// ArrayTaskMatch reports whether record j (possibly an array's record)
// stands for task task of its array.
func ArrayTaskMatch(j *api.Job, task int) bool {
	if j.ArrayTasks == "" {
		return j.ArrayJobID != 0 && j.ArrayTaskID == task
	}
	ids, _, _ := jobspec.ParseArray(j.ArrayTasks)
	return slices.Contains(ids, task)
}
