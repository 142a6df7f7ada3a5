package commands

import (
	"io"

	"hpc/cluster/api"
	"hpc/commands/format"
)

// squeue --json and --yaml: the jobs as Slurm 22.05's openapi/v0.0.38
// plugin answers GET /slurm/v0.0.38/jobs (meta, errors, jobs), every job
// the controller shows this user (an array's pending tasks as one record,
// as Slurm keeps them); squeue's other options are ignored, as Slurm's
// man page says.

// openAPIPlugin and openAPIName name the plugin in the answers' meta.
const (
	openAPIPlugin = "openapi/v0.0.38"
	openAPIName   = "Slurm OpenAPI v0.0.38"
)

// squeueData builds the jobs answer; loadErr, when set, is the failure
// to load them, reported as the plugin reports it.
func squeueData(jobs []api.Job, cluster string, loadErr error) jobj {
	errs := []any{}
	list := []any{}
	if loadErr != nil {
		_, msg := errText(loadErr)
		errs = append(errs, jobj{{"description", "Failed while looking for jobs"},
			{"error", msg}, {"source", "slurm_load_jobs"}})
	}
	for _, j := range format.CollapseArrays(jobs) {
		list = append(list, format.JobObject(&j, cluster))
	}
	return jobj{{"meta", format.OpenAPIMeta(openAPIPlugin, openAPIName)}, {"errors", errs}, {"jobs", list}}
}

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
	writeMime(w, mime, squeueData(jobs, cluster, err))
	return 0
}
