package api

import (
	"context"
	"net/http"
	"time"
)

// ControllerChange is `hpc controller add|remove NODE`: the leader adds the
// node to the Raft voters or removes it, one change at a time.
type ControllerChange struct {
	Action string `json:"action"` // "add" or "remove"
	Node   string `json:"node"`
}

// ControllerChangeResult is the voter set after a change, and what the
// administrator should know about it (a node that did not hear it yet).
type ControllerChangeResult struct {
	Voters []string `json:"voters"`
	Note   string   `json:"note,omitempty"`
}

// Controller roles as hpc status shows them: Raft's states, and down for a
// controller that does not answer.
const (
	RoleLeader    = "leader"
	RoleFollower  = "follower"
	RoleCandidate = "candidate"
	RoleDown      = "down"
)

// ControllerState is one controller as it answers for itself: its Raft
// role, term and indexes, and when it last heard from a leader.
type ControllerState struct {
	Name string `json:"name"`
	Role string `json:"role"` // leader, follower, candidate or down
	// Voter: a Raft voter; false for a node being added, which receives
	// the log before it may vote.
	Voter        bool   `json:"voter"`
	Term         uint64 `json:"term,omitempty"`
	CommitIndex  uint64 `json:"commit_index,omitempty"`
	AppliedIndex uint64 `json:"applied_index,omitempty"`
	// LastContact is when a follower last heard from its leader (zero for
	// the leader itself, and for a controller that never heard one).
	LastContact time.Time `json:"last_contact,omitzero"`
	// Dedicated: a SlurmctldHost with no NodeName line (runs no jobs).
	Dedicated bool   `json:"dedicated,omitempty"`
	Error     string `json:"error,omitempty"` // why it is down
}

// ControllerChange asks the leader to add or remove a controller.
func (c *Client) ControllerChange(ctx context.Context, req ControllerChange) (*ControllerChangeResult, error) {
	var out ControllerChangeResult
	err := c.do(ctx, http.MethodPost, "/api/controller", req, &out)
	return &out, err
}
