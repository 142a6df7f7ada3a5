package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// RunStep attaches again to a step whose stream broke, and gives up once
// its node's daemon has not come back within StepAttachWait.
func TestRunStepGivesUpAttaching(t *testing.T) {
	defer func(w time.Duration) { StepAttachWait = w }(StepAttachWait)
	StepAttachWait = 300 * time.Millisecond
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		// The step starts, then the daemon goes away for good.
		json.NewEncoder(w).Encode(StepEvent{Step: &Step{ID: 4}})
		l.Close()
	})}
	srv.SetKeepAlivesEnabled(false) // a daemon that went away keeps no connection
	go srv.Serve(l)
	defer srv.Close()
	var lost, steps int
	done := make(chan error, 1)
	go func() {
		done <- NewClient(sock).RunStep(context.Background(), StepRequest{JobID: 1, Argv: []string{"true"}},
			func(ev *StepEvent) error {
				if ev.Step != nil {
					steps++
				}
				return nil
			}, func(error) { lost++ })
	}()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunStep went on trying to attach past StepAttachWait")
	}
	var se *streamError
	if !errors.As(err, &se) || lost != 1 || steps != 1 || requests.Load() != 1 {
		t.Errorf("RunStep: %v (lost %d, step events %d, requests %d)", err, lost, steps, requests.Load())
	}
}
