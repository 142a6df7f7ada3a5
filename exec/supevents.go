//go:build linux

package exec

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The supervisor's reports (supEvent lines on the events pipe) come from a
// process that runs as the step's user, in the user's image, beside the
// user's tasks, which can write into the same pipe (/proc/1/fd/5): the
// executor trusts none of them. Each line is bounded, decoded and checked
// against the step's plan before anything is taken from it; a line that
// fails is a malformed report, and the step fails with it instead of the
// executor (an index out of range would take the node's daemon down).

// maxSupLine bounds one report line: a start report of thousands of pids,
// or an error naming a long path, fits many times over.
const maxSupLine = 1 << 20

// maxSignal is the highest signal number (SIGRTMAX).
const maxSignal = 64

// errMalformedReport is wrapped by every error about a report that is not
// one the supervisor makes.
var errMalformedReport = errors.New("malformed report from the step's supervisor")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformedReport, fmt.Sprintf(format, args...))
}

// supReader reads the supervisor's reports.
type supReader struct{ sc *bufio.Scanner }

func newSupReader(r io.Reader) *supReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxSupLine)
	return &supReader{sc: sc}
}

// next returns the next report: io.EOF once the supervisor has closed the
// pipe (it ended), an error wrapping errMalformedReport for a line that is
// not a report.
func (s *supReader) next() (supEvent, error) {
	if !s.sc.Scan() {
		err := s.sc.Err()
		switch {
		case errors.Is(err, bufio.ErrTooLong):
			return supEvent{}, malformed("a line longer than %d bytes", maxSupLine)
		case err == nil:
			err = io.EOF
		}
		return supEvent{}, err
	}
	var ev supEvent
	if err := json.Unmarshal(s.sc.Bytes(), &ev); err != nil {
		return supEvent{}, malformed("%v", err)
	}
	return ev, nil
}

// started reads the start report of a step of ntasks tasks: the tasks'
// pids (each > 0, one per task), or the supervisor's reason why they did
// not start.
func (s *supReader) started(ntasks int) (supEvent, error) {
	ev, err := s.next()
	switch {
	case errors.Is(err, errMalformedReport):
		return supEvent{}, err
	case err != nil:
		return supEvent{}, fmt.Errorf("the step's supervisor ended before its tasks started (%v)", err)
	case !ev.Started && ev.Err != "":
		return supEvent{}, errors.New(clip(ev.Err))
	case !ev.Started || ev.Err != "" || ev.End || ev.Done:
		return supEvent{}, malformed("expected the start report, got %s", s.line())
	case len(ev.Pids) != ntasks || ntasks == 0:
		return supEvent{}, malformed("a start report of %d pids for %d tasks", len(ev.Pids), ntasks)
	}
	seen := make(map[int]bool, ntasks)
	for _, p := range ev.Pids {
		if p <= 0 || seen[p] {
			return supEvent{}, malformed("a start report with pids %v", ev.Pids)
		}
		seen[p] = true
	}
	return ev, nil
}

// taskEnd reads the next end of one of ntasks tasks, got marking those
// already reported (it marks this one); done is true once the supervisor
// has reported that every task has ended, or has gone (io.EOF). A task
// out of range, one reported twice, an exit status or signal no process
// can have, or any other report is malformed.
func (s *supReader) taskEnd(got []bool) (ev supEvent, done bool, err error) {
	ev, err = s.next()
	switch {
	case err == io.EOF || (err == nil && ev.Done && !ev.End):
		return supEvent{}, true, nil
	case err != nil:
		return supEvent{}, false, err
	case !ev.End || ev.Started || len(ev.Pids) > 0 || ev.Err != "":
		return supEvent{}, false, malformed("expected a task's end, got %s", s.line())
	case ev.Task < 0 || ev.Task >= len(got):
		return supEvent{}, false, malformed("the end of task %d of %d", ev.Task, len(got))
	case got[ev.Task]:
		return supEvent{}, false, malformed("task %d ended twice", ev.Task)
	case ev.Exit < 0 || ev.Exit > 255 || ev.Signal < 0 || ev.Signal > maxSignal || (ev.Exit != 0 && ev.Signal != 0):
		return supEvent{}, false, malformed("task %d ended with exit status %d and signal %d", ev.Task, ev.Exit, ev.Signal)
	}
	got[ev.Task] = true
	return ev, false, nil
}

// maxQuoted bounds what an error quotes of a report.
const maxQuoted = 1024

// line is the current line, quoted and clipped for an error.
func (s *supReader) line() string {
	return fmt.Sprintf("%q", clip(string(s.sc.Bytes())))
}

// clip cuts s to maxQuoted bytes.
func clip(s string) string {
	if len(s) > maxQuoted {
		return s[:maxQuoted] + "..."
	}
	return s
}
