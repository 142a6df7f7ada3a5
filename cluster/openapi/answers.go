package openapi

import (
	"errors"

	"hpc/cluster/api"
)

// The answers of slurmrestd's openapi/v0.0.38 plugin: meta, errors and
// the data. squeue --json and sinfo --json print the same answers.

// Plugin and PluginName name the v0.0.38 plugin in the answers' meta;
// DBPlugin and DBPluginName the dbv0.0.38 one.
const (
	Plugin       = "openapi/v0.0.38"
	PluginName   = "Slurm OpenAPI v0.0.38"
	DBPlugin     = "openapi/dbv0.0.38"
	DBPluginName = "Slurm OpenAPI DB v0.0.38"
)

// errMessage is the text of a failure as Slurm reports it: an api.Error's
// message (Slurm's text for its error number), else the error's own.
func errMessage(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

// JobsAnswer builds the jobs answer; loadErr, when set, is the failure
// to load them, reported as the plugin reports it.
func JobsAnswer(jobs []api.Job, cluster string, loadErr error) Obj {
	errs := []any{}
	list := []any{}
	if loadErr != nil {
		errs = append(errs, Obj{{"description", "Failed while looking for jobs"},
			{"error", errMessage(loadErr)}, {"source", "slurm_load_jobs"}})
	}
	for _, j := range CollapseArrays(jobs) {
		list = append(list, JobObject(&j, cluster))
	}
	return Obj{{"meta", OpenAPIMeta(Plugin, PluginName)}, {"errors", errs}, {"jobs", list}}
}

// ErrInvalidNodeName is ESLURM_INVALID_NODE_NAME, the plugin's error
// when there are no nodes to dump.
const (
	ErrInvalidNodeName    = 2018
	ErrInvalidNodeNameMsg = "Invalid node name specified"
)

// NodesAnswer builds the nodes answer; loadErr, when set, is the failure to
// load them.
func NodesAnswer(nodes []api.Node, loadErr error) Obj {
	errs := []any{}
	list := []any{}
	for _, n := range nodes {
		list = append(list, NodeObject(n))
	}
	switch {
	case loadErr != nil:
		errs = append(errs, Obj{{"error", errMessage(loadErr)}})
	case len(nodes) == 0:
		errs = append(errs, Obj{{"error", ErrInvalidNodeNameMsg}, {"errno", int64(ErrInvalidNodeName)}})
	}
	return Obj{{"meta", OpenAPIMeta(Plugin, PluginName)}, {"errors", errs}, {"nodes", list}}
}
