package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to the local node's API over its unix socket. The node
// learns who the caller is from the socket's peer credentials.
type Client struct {
	Socket string
	hc     *http.Client
}

// NewClient returns a client for the node listening on socket.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	return &Client{Socket: socket, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://hpc"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		var ne *net.OpError
		if errors.As(err, &ne) {
			return &Error{Message: ErrNoLeader, Detail: fmt.Sprintf("cannot reach the node at %s: %v", c.Socket, ne.Err)}
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e Error
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Message == "" {
			return fmt.Errorf("%s %s: %s", method, path, resp.Status)
		}
		return &e
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Submit queues a job and returns its id once the submission is committed.
func (c *Client) Submit(ctx context.Context, spec JobSpec) (uint64, error) {
	var out SubmitResponse
	err := c.do(ctx, http.MethodPost, "/api/submit", SubmitRequest{Spec: spec}, &out)
	return out.JobID, err
}

// Jobs lists the jobs the controller holds.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var out JobsResponse
	err := c.do(ctx, http.MethodGet, "/api/jobs", nil, &out)
	return out.Jobs, err
}

// Nodes lists nodes and partitions.
func (c *Client) Nodes(ctx context.Context) (*NodesResponse, error) {
	var out NodesResponse
	err := c.do(ctx, http.MethodGet, "/api/nodes", nil, &out)
	return &out, err
}

// Cancel cancels jobs; each id gets its own result.
func (c *Client) Cancel(ctx context.Context, req CancelRequest) ([]CancelResult, error) {
	var out CancelResponse
	err := c.do(ctx, http.MethodPost, "/api/cancel", req, &out)
	return out.Results, err
}

// AcctQuery selects accounting rows.
type AcctQuery struct {
	JobIDs   []uint64
	AllUsers bool
	JobsOnly bool
}

// Acct reads accounting rows.
func (c *Client) Acct(ctx context.Context, q AcctQuery) ([]AcctRow, error) {
	v := url.Values{}
	if len(q.JobIDs) > 0 {
		ids := make([]string, len(q.JobIDs))
		for i, id := range q.JobIDs {
			ids[i] = strconv.FormatUint(id, 10)
		}
		v.Set("jobs", strings.Join(ids, ","))
	}
	if q.AllUsers {
		v.Set("all", "1")
	}
	if q.JobsOnly {
		v.Set("jobs_only", "1")
	}
	var out AcctResponse
	err := c.do(ctx, http.MethodGet, "/api/acct?"+v.Encode(), nil, &out)
	return out.Rows, err
}

// Status is the local node's view of the cluster.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var out Status
	err := c.do(ctx, http.MethodGet, "/api/status", nil, &out)
	return &out, err
}

// Wait blocks until the job has ended and returns its final record.
func (c *Client) Wait(ctx context.Context, id uint64) (*Job, error) {
	for {
		var j Job
		err := c.do(ctx, http.MethodGet, fmt.Sprintf("/api/wait?job=%d&timeout=20s", id), nil, &j)
		if err != nil {
			var ae *Error
			if errors.As(err, &ae) && ae.Message != ErrNoLeader {
				return nil, err
			}
			// The leader may be changing: try again shortly.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		if j.State.Final() {
			return &j, nil
		}
	}
}

// Config fetches the cluster's config as JSON, decoded into out (a
// *config.Config: the api package does not import config).
func (c *Client) Config(ctx context.Context, out any) error {
	return c.do(ctx, http.MethodGet, "/api/config", nil, out)
}
