//go:build linux

package exec

import (
	"fmt"
	"sync"
)

// Steps of a launch that plain mode (plain.go) and container mode
// (container.go) share.

// startTaskIO makes the pipes (and terminals) of a step's tasks when it
// was launched with Tasks; nil otherwise.
func startTaskIO(spec *StepSpec) (*taskIO, error) {
	if len(spec.Tasks) == 0 {
		return nil, nil
	}
	tio, err := newTaskIO(spec.Tasks, spec.UID)
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", spec.ID, err)
	}
	return tio, nil
}

// closeHandedIO closes this process's copies of the step's files once its
// processes have started: the tasks have their own copies.
func closeHandedIO(io *stepIO, tio *taskIO) {
	io.close()
	if tio != nil {
		tio.closeWriters()
	}
}

// reportEnd hands task i's end to StepSpec.OnTaskEnd once its output has
// been copied.
func (t *taskIO) reportEnd(spec *StepSpec, i int, r TaskResult) {
	t.wait(i)
	if spec.OnTaskEnd != nil {
		spec.OnTaskEnd(i, r)
	}
}

// settleTasks, once the step's processes are gone, waits for its tasks'
// output (at most outputGrace) and for their ends to be reported (ended),
// then closes their inputs; tio is nil for a step without Tasks.
func settleTasks(tio *taskIO, ended *sync.WaitGroup) {
	if tio != nil {
		tio.drain(outputGrace)
	}
	ended.Wait()
	if tio != nil {
		tio.closeInputs()
	}
}

// sumTasks sets a step's exit from its tasks' ends: the sum of all
// (taskResults) for a step launched with Tasks, else its one process's.
func sumTasks(res *Result, tasks []TaskResult, multi bool) {
	if multi {
		taskResults(res, tasks)
	} else if len(tasks) > 0 {
		res.ExitCode, res.Signal = tasks[0].ExitCode, tasks[0].Signal
	}
}
