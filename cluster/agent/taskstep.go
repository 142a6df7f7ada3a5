package agent

import (
	"sync/atomic"
	"time"

	"hpc/exec"
)

// taskStep is a step's share running on this node. It is listed before
// its tasks start, so that a signal for it is never lost: step is set, or
// the launch failed, when ready is closed.
type taskStep struct {
	ready chan struct{}
	step  *exec.Step
	start time.Time // the start of the job run it belongs to
	first int       // the global rank of its first task here
	// relay carries the step's output to its launcher (steprelay.go).
	relay *stepRelay
	// cancelled: killed on purpose (srun's second Ctrl-C, the job's end),
	// so the step ends CANCELLED.
	cancelled atomic.Bool
}
