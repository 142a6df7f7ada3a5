package cluster

import (
	"sync/atomic"
	"time"

	"hpc/cluster/api"
	"hpc/exec"
)

// Running steps, in three roles: the launcher (steplauncher.go, the node
// srun talks to), the leader (stepleader.go: creating and ending steps,
// allocations for salloc and srun) and the agents (stepagent.go: tasks,
// their output, signals, the end of a job on every node of its
// allocation). This file holds what they share: the step's records on a
// node and the signed calls between nodes. See steps.go for the way a
// step travels.

// taskStep is a step's share running on this node. It is listed before
// its tasks start, so that a signal for it is never lost: step is set, or
// the launch failed, when ready is closed.
type taskStep struct {
	ready chan struct{}
	step  *exec.Step
	start time.Time // the start of the job run it belongs to
	// relay carries the step's output to its launcher (steprelay.go).
	relay *stepRelay
	// cancelled: killed on purpose (srun's second Ctrl-C, the job's end),
	// so the step ends CANCELLED.
	cancelled atomic.Bool
}

// launch is a step this node's daemon runs for its srun.
type launch struct {
	uid       uint32
	nodes     []string
	tasks     []int  // per node
	input     string // api.StepRequest.Input
	pty       bool
	cancelled atomic.Bool
}

// Wire types between nodes.
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
	stepLaunchRequest struct {
		Job        api.Job  `json:"job"`
		Step       api.Step `json:"step"`
		Node       int      `json:"node"` // the index of the receiving node in Step.Nodes
		Argv       []string `json:"argv"`
		Env        []string `json:"env,omitempty"`
		Export     string   `json:"export,omitempty"`
		WorkDir    string   `json:"work_dir,omitempty"`
		MasterPort int      `json:"master_port"`
		// srun's input and terminal (stepinput.go).
		Input string `json:"input,omitempty"`
		Pty   bool   `json:"pty,omitempty"`
		Rows  uint16 `json:"rows,omitempty"`
		Cols  uint16 `json:"cols,omitempty"`
	}
	// taskFrame is one line of an agent's answer to a step launch.
	taskFrame struct {
		Task   int           `json:"t,omitempty"`
		Stream int           `json:"s,omitempty"`
		Data   []byte        `json:"d,omitempty"`
		Exit   *api.TaskExit `json:"x,omitempty"`
		End    *nodeEnd      `json:"e,omitempty"`
	}
	nodeEnd struct {
		OOM       bool           `json:"oom,omitempty"`
		Cancelled bool           `json:"cancelled,omitempty"`
		Error     string         `json:"error,omitempty"`
		Usage     *api.StepUsage `json:"usage,omitempty"` // what the node's tasks used
	}
	jobRef struct {
		JobID  uint64    `json:"job_id"`
		Start  time.Time `json:"start"`
		Signal int       `json:"signal,omitempty"` // for /internal/job/signal
	}
	portReply struct {
		Port int `json:"port"`
	}
	stepEndReport struct {
		JobID uint64   `json:"job_id"`
		Step  api.Step `json:"step"`
	}
)
