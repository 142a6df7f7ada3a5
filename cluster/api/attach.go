package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// sattach: attaching to a running srun step's I/O. The request goes to
// any node's daemon, which passes it on to the step's launcher (the node
// its srun talks to); the answer is a stream of StepEvents: the step
// first (its layout), then its tasks' output from then on, and Done when
// the step is over. An attached reader that does not keep up loses
// output (Dropped counts it) rather than holding the step back.

// AttachRequest asks for a step's I/O (POST /api/step/sattach).
type AttachRequest struct {
	JobID  uint64 `json:"job_id"`
	StepID uint32 `json:"step_id"`
	// OutTask and ErrTask keep one task's stdout or stderr only
	// (--output-filter, --error-filter); -1: every task's.
	OutTask int `json:"out_task"`
	ErrTask int `json:"err_task"`
	// Layout asks for the step alone (sattach --layout): the stream ends
	// after it.
	Layout bool `json:"layout,omitempty"`
}

// AttachInput is a piece of sattach's input for a step's tasks (POST
// /api/step/sattach/input): every task that reads input, or Task alone
// (--input-filter; -1: all).
type AttachInput struct {
	StepInput
	Task int `json:"task"`
}

// AttachEvent is one event of a sattach stream; Dropped, on an event of
// its own, says how many pieces of output the reader lost since the last
// such event, not keeping up.
type AttachEvent struct {
	StepEvent
	Dropped int64 `json:"dropped,omitempty"`
}

// AttachStep attaches to a running step's I/O; fn gets each event until
// the step is over (an event with Done) or fn fails.
func (c *Client) AttachStep(ctx context.Context, req AttachRequest, fn func(*AttachEvent) error) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://hpc/api/step/sattach", bytes.NewReader(b))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	// No overall timeout: the stream lasts as long as the step.
	resp, err := (&http.Client{Transport: c.hc.Transport}).Do(hr)
	if err != nil {
		return &Error{Message: ErrNoLeader, Detail: fmt.Sprintf("cannot reach the node at %s: %v", c.Socket, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e Error
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Message == "" {
			return fmt.Errorf("sattach: %s", resp.Status)
		}
		return &e
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev AttachEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return errors.New("the node ended the step's stream early")
			}
			return err
		}
		if err := fn(&ev); err != nil {
			return err
		}
		if ev.Done != nil || (req.Layout && ev.Step != nil) {
			return nil
		}
	}
}

// AttachInput sends a piece of sattach's input to a step's tasks.
func (c *Client) AttachInput(ctx context.Context, in AttachInput) error {
	return c.do(ctx, http.MethodPost, "/api/step/sattach/input", in, nil)
}
