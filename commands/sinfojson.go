package commands

import (
	"io"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

// sinfo --json and --yaml: the nodes as Slurm 22.05's openapi/v0.0.38
// plugin answers GET /slurm/v0.0.38/nodes (meta, errors, nodes;
// openapi.NodesAnswer), every node with the partitions it is in; sinfo's
// other options are ignored.

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
	writeMime(w, mime, openapi.NodesAnswer(nodes, err))
	return 0
}
