package agent

import (
	"time"

	"hpc/cluster/api"
)

// Wire types between a step's launcher (cluster) and the agents.
type (
	StepLaunchRequest struct {
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
	// TaskFrame is one line of an agent's answer to a step launch.
	TaskFrame struct {
		Task   int           `json:"t,omitempty"`
		Stream int           `json:"s,omitempty"`
		Data   []byte        `json:"d,omitempty"`
		Exit   *api.TaskExit `json:"x,omitempty"`
		End    *NodeEnd      `json:"e,omitempty"`
	}
	NodeEnd struct {
		OOM       bool           `json:"oom,omitempty"`
		Cancelled bool           `json:"cancelled,omitempty"`
		Error     string         `json:"error,omitempty"`
		Usage     *api.StepUsage `json:"usage,omitempty"` // what the node's tasks used
	}
	JobRef struct {
		JobID  uint64    `json:"job_id"`
		Start  time.Time `json:"start"`
		Signal int       `json:"signal,omitempty"` // for /internal/job/signal
	}
	PortReply struct {
		Port int `json:"port"`
	}
)
