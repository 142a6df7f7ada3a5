package commands

import (
	"io"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

// squeue --json and --yaml: the jobs as Slurm 22.05's openapi/v0.0.38
// plugin answers GET /slurm/v0.0.38/jobs (meta, errors, jobs;
// openapi.JobsAnswer), every job the controller shows this user (an
// array's pending tasks as one record, as Slurm keeps them); squeue's
// other options are ignored, as Slurm's man page says.

// squeueMime prints the jobs answer as mime ("json" or "yaml") says. As
// Slurm's squeue, it exits 0 whether or not the jobs could be loaded (the
// answer's errors say so).
func squeueMime(e *Env, w io.Writer, mime string) int {
	cl, ctx, cancel, err := connect(e)
	var jobs []api.Job
	if err == nil {
		defer cancel()
		jobs, err = cl.Jobs(ctx)
	}
	cluster := ""
	if err == nil {
		cluster, _ = clusterName(e)
	}
	writeMime(w, mime, openapi.JobsAnswer(jobs, cluster, err))
	return 0
}
