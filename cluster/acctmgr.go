package cluster

import "net/http"

// What sacctmgr manages (QoS, accounts, users, associations) lives here:
// the replicated records, their Raft ops and API routes.

// acctState is the replicated sacctmgr data.
type acctState struct{}

// newAcctState is the state of a new cluster: Slurm starts with a "normal"
// QoS and a root account.
func newAcctState() acctState { return acctState{} }

// fillDefaults adds what a state restored from an older snapshot lacks.
func (a *acctState) fillDefaults() {}

// applyAcctOp applies the sacctmgr ops; ok=false for ops it does not know.
// Called with f.mu held.
func (f *FSM) applyAcctOp(c *command) (applyResult, bool) {
	return applyResult{}, false
}

// registerAcctRoutes adds the sacctmgr routes to the API.
func (d *Daemon) registerAcctRoutes(mux *http.ServeMux) {}
