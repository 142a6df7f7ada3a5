package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// srun's standard input reaches its tasks as Slurm's does: by default
// every task gets it (--input=all), or one task (--input=N), or none; with
// --pty task 0 runs on a pseudo-terminal and gets it alone. srun sends it
// in pieces (api.StepInput) to the node it talks to, which passes each
// piece on to the nodes of the tasks that read it, each writing it to
// their tasks' stdin: one request at a time, so a task that does not read
// holds srun back rather than filling memory. The pieces are signed
// requests like every node-to-node call; a resize goes to task 0's node.

// inputNodes are the nodes of a step whose tasks read srun's input.
func (l *launch) inputNodes(resize bool) []string {
	if l.pty || resize {
		return l.nodes[:1] // task 0 runs on the step's first node
	}
	if l.input == "all" {
		return l.nodes
	}
	n, err := strconv.Atoi(l.input)
	if err != nil {
		return nil
	}
	for i, c := range l.tasks {
		if n < c {
			return l.nodes[i : i+1]
		}
		n -= c
	}
	return nil
}

// handleStepInput passes a piece of srun's input on to its step's nodes.
func (d *Daemon) handleStepInput(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var in api.StepInput
	if err := json.Unmarshal(body, &in); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	l := d.ownLaunch(w, id, in.JobID, in.StepID)
	if l == nil {
		return
	}
	d.sendInput(w, r.Context(), l.inputNodes(in.Resize), in)
}

// sendInput hands a piece of input to the agents of nodes, side by side,
// and answers the caller.
func (d *Daemon) sendInput(w http.ResponseWriter, ctx context.Context, nodes []string, in any) {
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Go(func() {
			addr, err := d.peers.API(n)
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				err = d.peers.CallNode(cctx, addr, "/internal/step/input", in, nil)
				cancel()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		peer.WriteErr(w, http.StatusBadGateway, err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}
