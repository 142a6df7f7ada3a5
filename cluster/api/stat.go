package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Wire types and client calls of sstat (live usage of running steps) and
// of sbcast and sgather (files copied into and out of a job's nodes).

// StatRequest asks for the live usage of a job's running steps (POST
// /api/stat). Step is "" (the job's first srun step, or with All every
// running step, the batch step included), "batch" or a step number.
type StatRequest struct {
	JobID uint64 `json:"job_id"`
	Step  string `json:"step,omitempty"`
	All   bool   `json:"all,omitempty"`
}

// StatResponse answers a StatRequest: the steps asked for that run, in
// order. No steps: none of them runs (or the job has ended).
type StatResponse struct {
	Steps []StepStat `json:"steps,omitempty"`
}

// StepStat is one running step's usage, task by task, as its nodes read
// it now; Error is set when it could not be read (Slurm's reason, as
// "Invalid user id" for a caller who may not see it).
type StepStat struct {
	JobID uint64     `json:"job_id"`
	Step  string     `json:"step"` // "batch" or the step's number
	Nodes []string   `json:"nodes,omitempty"`
	Tasks []TaskStat `json:"tasks,omitempty"`
	Error string     `json:"error,omitempty"`
}

// TaskStat is what one task of a step uses now.
type TaskStat struct {
	Node       string        `json:"node"`
	Task       int           `json:"task"`
	Pids       []int         `json:"pids,omitempty"`
	RSSKB      int64         `json:"rss_kb"`
	VMSizeKB   int64         `json:"vmsize_kb"`
	Pages      int64         `json:"pages"`
	CPU        time.Duration `json:"cpu"`
	ReadBytes  int64         `json:"read_bytes"`
	WriteBytes int64         `json:"write_bytes"`
}

// Stat is sstat: the live usage of a job's running steps.
func (c *Client) Stat(ctx context.Context, req StatRequest) (*StatResponse, error) {
	var out StatResponse
	err := c.do(ctx, http.MethodPost, "/api/stat", req, &out)
	return &out, err
}

// FileJobRequest asks the leader where a running job of the caller's is,
// to copy files to or from its nodes (POST /api/file/job).
type FileJobRequest struct {
	JobID uint64 `json:"job_id"`
}

// FileJob answers FileJobRequest.
type FileJob struct {
	JobID uint64    `json:"job_id"`
	UID   uint32    `json:"uid"`
	GID   uint32    `json:"gid"`
	Start time.Time `json:"start"`
	Nodes []string  `json:"nodes"`
}

// FileInfo is a file's size, mode and times, as sgather's answers carry
// them in headers.
type FileInfo struct {
	Size  int64     `json:"size"`
	Mode  uint32    `json:"mode"` // permission bits
	Atime time.Time `json:"atime"`
	Mtime time.Time `json:"mtime"`
}

// PutFile is what sbcast sends with a file to one node of a job.
type PutFile struct {
	JobID    uint64
	Node     string
	Path     string // absolute, on the node
	Force    bool   // replace a file that is there
	Preserve bool   // keep Info's mode and times
	Info     FileInfo
}

// FileJob asks where a running job of the caller's runs (sbcast and
// sgather's first question).
func (c *Client) FileJob(ctx context.Context, jobID uint64) (*FileJob, error) {
	var out FileJob
	err := c.do(ctx, http.MethodPost, "/api/file/job", FileJobRequest{JobID: jobID}, &out)
	return &out, err
}

// streaming is a client without a time limit, for bodies as long as files.
func (c *Client) streaming() *http.Client {
	return &http.Client{Transport: c.hc.Transport}
}

// PutFile streams body into p.Path on node p.Node of job p.JobID, written
// as the job's owner.
func (c *Client) PutFile(ctx context.Context, p PutFile, body io.Reader) error {
	q := url.Values{}
	q.Set("job", strconv.FormatUint(p.JobID, 10))
	q.Set("node", p.Node)
	q.Set("path", p.Path)
	q.Set("force", strconv.FormatBool(p.Force))
	q.Set("preserve", strconv.FormatBool(p.Preserve))
	q.Set("mode", strconv.FormatUint(uint64(p.Info.Mode), 8))
	q.Set("size", strconv.FormatInt(p.Info.Size, 10))
	q.Set("atime", strconv.FormatInt(p.Info.Atime.UnixNano(), 10))
	q.Set("mtime", strconv.FormatInt(p.Info.Mtime.UnixNano(), 10))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://hpc/api/file/put?"+q.Encode(), body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.streaming().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return answerErr(resp)
}

// GetFile streams path on node of job jobID: the caller reads the body
// (Info.Size bytes) and closes it. With remove set, it removes the file
// there instead and answers an empty body.
func (c *Client) GetFile(ctx context.Context, jobID uint64, node, path string, remove bool) (io.ReadCloser, FileInfo, error) {
	q := url.Values{}
	q.Set("job", strconv.FormatUint(jobID, 10))
	q.Set("node", node)
	q.Set("path", path)
	if remove {
		q.Set("remove", "true")
	}
	var info FileInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://hpc/api/file/get?"+q.Encode(), nil)
	if err != nil {
		return nil, info, err
	}
	resp, err := c.streaming().Do(req)
	if err != nil {
		return nil, info, err
	}
	if err := answerErr(resp); err != nil {
		resp.Body.Close()
		return nil, info, err
	}
	if h := resp.Header.Get(FileInfoHeader); h != "" {
		if err := json.Unmarshal([]byte(h), &info); err != nil {
			resp.Body.Close()
			return nil, info, err
		}
	}
	return resp.Body, info, nil
}

// FileInfoHeader carries a FileInfo (JSON) on answers with a file.
const FileInfoHeader = "X-Hpc-File-Info"

// answerErr is the API's error in a non-200 answer.
func answerErr(resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e Error
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Message == "" {
		return fmt.Errorf("%s", resp.Status)
	}
	return &e
}
