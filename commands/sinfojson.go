package commands

import (
	"io"

	"hpc/cluster/api"
	"hpc/commands/format"
)

// sinfo --json and --yaml: the nodes as Slurm 22.05's openapi/v0.0.38
// plugin answers GET /slurm/v0.0.38/nodes (meta, errors, nodes), every
// node with the partitions it is in; sinfo's other options are ignored.

// errInvalidNodeName is ESLURM_INVALID_NODE_NAME, the plugin's error
// when there are no nodes to dump.
const (
	errInvalidNodeName    = 2018
	errInvalidNodeNameMsg = "Invalid node name specified"
)

// sinfoData builds the nodes answer; loadErr, when set, is the failure to
// load them.
func sinfoData(nodes []api.Node, loadErr error) jobj {
	errs := []any{}
	list := []any{}
	for _, n := range nodes {
		list = append(list, format.NodeObject(n))
	}
	switch {
	case loadErr != nil:
		_, msg := errText(loadErr)
		errs = append(errs, jobj{{"error", msg}})
	case len(nodes) == 0:
		errs = append(errs, jobj{{"error", errInvalidNodeNameMsg}, {"errno", int64(errInvalidNodeName)}})
	}
	return jobj{{"meta", format.OpenAPIMeta(openAPIPlugin, openAPIName)}, {"errors", errs}, {"nodes", list}}
}

// sinfoMime prints the nodes answer as mime ("json" or "yaml") says; it
// exits 0, as Slurm's sinfo does, whatever the answer's errors.
func sinfoMime(e *Env, w io.Writer, mime string) int {
	cl, ctx, cancel, err := connect(e)
	var resp *api.NodesResponse
	if err == nil {
		defer cancel()
		resp, err = cl.Nodes(ctx)
	}
	var nodes []api.Node
	if err == nil && resp != nil {
		nodes = resp.Nodes
	}
	writeMime(w, mime, sinfoData(nodes, err))
	return 0
}
