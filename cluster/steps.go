package cluster

import "net/http"

// Steps (srun inside an allocation, JOBID.0, JOBID.1, ...) live here: their
// Raft ops, their API routes and their launch across the allocation.

// applyStepOp applies the step ops. It returns ok=false for ops it does not
// know. Called with f.mu held, like apply.
func (f *FSM) applyStepOp(c *command) (applyResult, []uint64, bool) {
	return applyResult{}, nil, false
}

// registerStepRoutes adds the step routes to the API.
func (d *Daemon) registerStepRoutes(mux *http.ServeMux) {}
