package cluster

import (
	"sync/atomic"

	"hpc/cluster/api"
)

// Running steps, in three roles: the launcher (steplauncher.go, the node
// srun talks to), the leader (stepleader.go: creating and ending steps,
// allocations for salloc and srun) and the agents (cluster/agent: tasks,
// their output, signals, the end of a job on every node of its
// allocation). This file holds the launcher's and the leader's records
// and wire types. See steps.go for the way a step travels.

// Wire types between srun's node (the launcher) and the leader.
type (
	stepCreateRequest struct {
		api.StepRequest
		Launcher string `json:"launcher"`
	}
	stepCreated struct {
		Job     api.Job  `json:"job"`
		Step    api.Step `json:"step"`
		Warning string   `json:"warning,omitempty"`
	}
)

// stepKey names a step of a job.
type stepKey struct {
	job  uint64
	step uint32
}

// launch is a step this node's daemon runs for its srun.
type launch struct {
	uid       uint32
	nodes     []string
	tasks     []int  // per node
	input     string // api.StepRequest.Input
	pty       bool
	cancelled atomic.Bool
	// step is the step as created; hub its sattach readers (sattach.go).
	step api.Step
	hub  attachHub
}
