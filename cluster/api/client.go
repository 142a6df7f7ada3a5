package api

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Client talks to the local node's API over its unix socket. The node
// learns who the caller is from the socket's peer credentials.
type Client struct {
	Socket string
	hc     *http.Client
}

// NewClient returns a client for the node listening on socket.
func NewClient(socket string) *Client {
	// One client may send many requests at once (a script's submitters):
	// its connections stay open for the next ones rather than two
	// (net/http's default) and a new connection for each of the others.
	tr := &http.Transport{
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	return &Client{Socket: socket, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// Listening reports whether a daemon accepts connections on the client's
// socket: a socket file left by a daemon that stopped refuses them. It
// asks nothing of the daemon (cheaper than any request).
func (c *Client) Listening(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return err
	}
	return conn.Close()
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// send makes a request and returns a successful answer, whose body the
// caller reads and closes, or the answer's error.
func (c *Client) send(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://hpc"+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		var ne *net.OpError
		if errors.As(err, &ne) {
			return nil, &Error{Message: ErrNoLeader, Detail: fmt.Sprintf("cannot reach the node at %s: %v", c.Socket, ne.Err)}
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e Error
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Message == "" {
			return nil, fmt.Errorf("%s %s: %s", method, path, resp.Status)
		}
		return nil, &e
	}
	return resp, nil
}

// Submit queues a job and returns its id once the submission is committed
// (SubmitToken with a new token).
func (c *Client) Submit(ctx context.Context, spec JobSpec) (uint64, error) {
	return c.SubmitToken(ctx, spec, NewSubmitToken())
}

// SubmitToken queues a job under a submission token and returns its id
// once the submission is committed. When the answer is lost (the node or
// the leader went away, the leader changed, the connection broke) it sends
// the same submission with the same token again, for SubmitRetryWait at
// most: the controller makes one job of the copies and answers each with
// its id. After that it fails with Slurm's connect failure. An answer that
// refuses the job ends it at once.
func (c *Client) SubmitToken(ctx context.Context, spec JobSpec, token string) (uint64, error) {
	req := SubmitRequest{Spec: spec, Token: token}
	deadline := time.Now().Add(SubmitRetryWait)
	wait := 50 * time.Millisecond
	for {
		var out SubmitResponse
		err := c.do(ctx, http.MethodPost, "/api/submit", req, &out)
		if err == nil || ctx.Err() != nil || !answerLost(err) {
			return out.JobID, err
		}
		if !time.Now().Before(deadline) {
			return 0, &Error{Message: ErrNoLeader, Detail: fmt.Sprintf("no answer from the controller in %v: %v", SubmitRetryWait, err)}
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(wait):
		}
		// Short waits: an election takes under a second, and a node that
		// has no leader holds the request until it knows one (forward).
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// SubmitRetryWait is how long SubmitToken sends a submission whose answer
// was lost again (a variable for tests). The controller remembers tokens
// far longer (fsm.TokenTTL).
var SubmitRetryWait = 30 * time.Second

// NewSubmitToken returns a random submission token.
func NewSubmitToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// answerLost tells whether err may have lost the answer to a request the
// controller committed (or never saw): no leader, a node that cannot be
// reached, a broken connection, a timeout, an answer that is not one. A
// controller's refusal (an *Error of another kind) is an answer.
func answerLost(err error) bool {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Message == ErrNoLeader
	}
	return !errors.Is(err, context.Canceled)
}

// Jobs lists the jobs the controller holds.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	return c.jobList(ctx, "/api/jobs")
}

// JobsBrief lists the jobs the controller holds as api.JobBrief carries
// them: each Job has only a brief's fields (squeue's common listings).
// A daemon that knows no briefs answers with whole jobs.
func (c *Client) JobsBrief(ctx context.Context) ([]Job, error) {
	return c.jobList(ctx, "/api/jobs?brief=2")
}

// JobsWhole lists jobs with the batch scripts and environments the caller
// may see (Jobs leaves them out).
func (c *Client) JobsWhole(ctx context.Context) ([]Job, error) {
	return c.jobList(ctx, "/api/jobs?whole=1")
}

// Job lists one job, or an array's tasks when id is the array's (the
// list is empty when there is no such job).
func (c *Client) Job(ctx context.Context, id uint64) ([]Job, error) {
	return c.jobList(ctx, fmt.Sprintf("/api/jobs?job=%d", id))
}

// jobList reads a job list ({"count":N,"jobs":[...]}) as it arrives into
// a list sized once by the count: a list of 100,000 jobs is never held
// twice, as text and as records. The daemon writes one job per line
// (cluster's joblist.go); those lines are decoded side by side, on every
// core. An answer not framed so is read as plain JSON.
func (c *Client) jobList(ctx context.Context, path string) ([]Job, error) {
	resp, err := c.send(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 256<<10)
	head, err := br.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("GET %s: reading the job list: %w", path, err)
	}
	var jobs []Job
	if n, ok := briefListHead(head); ok {
		jobs, err = readRecords(br, n, briefRecord, briefDecoder)
	} else if n, ok := jobListHead(head); ok {
		jobs, err = readRecords(br, n, jsonLine, jsonDecoder)
	} else {
		jobs, err = jobListJSON(io.MultiReader(bytes.NewReader(head), br))
	}
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the job list: %w", path, err)
	}
	return jobs, nil
}

// maxListed bounds the jobs a client makes room for before it has read
// them (a job is a kilobyte); the daemon's count is trusted up to it.
const maxListed = 1 << 20

// jobListHead reads the count of a framed list's first line.
func jobListHead(line []byte) (int, bool) {
	return listCount(line, `{"count":`, ",\"jobs\":[\n")
}

// briefListHead reads the count of a list of briefs' first line
// (brief.go's briefHead).
func briefListHead(line []byte) (int, bool) { return listCount(line, briefHead, "\n") }

// listCount reads the count between a head line's prefix and suffix.
func listCount(line []byte, prefix, suffix string) (int, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(prefix))
	if !ok {
		return 0, false
	}
	num, ok := bytes.CutSuffix(rest, []byte(suffix))
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(num))
	return n, err == nil && n >= 0 && n <= maxListed
}

// A recordSplitter appends a list's next record to data and returns it;
// end is true, and nothing appended, once the list has ended (i records
// read).
type recordSplitter func(br *bufio.Reader, data []byte, i int) (out []byte, end bool, err error)

// A recordDecoder reads one record into a zero Job; newDecoder gives each
// of readRecords' decoders its own.
type recordDecoder func(rec []byte, j *Job) error

// jsonLine splits a framed JSON list: one job per line, a comma before
// all but the first, "]}" after the last.
func jsonLine(br *bufio.Reader, data []byte, i int) ([]byte, bool, error) {
	start := len(data)
	for { // a line longer than the reader's buffer (a script) comes in pieces
		piece, err := br.ReadSlice('\n')
		data = append(data, piece...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return data, false, err
		}
		break
	}
	ln := data[start:]
	if ln[0] == ']' {
		return data[:start], true, nil
	}
	if i > 0 {
		if ln[0] != ',' {
			return data, false, fmt.Errorf("job %d: not a list item", i)
		}
		ln[0] = ' ' // the comma between items: a space to the decoder
	}
	return data, false, nil
}

func jsonDecoder() recordDecoder {
	// ReadJSON: decoding is most of squeue's time with thousands of jobs.
	return func(rec []byte, j *Job) error { return ReadJSON(rec, j) }
}

// briefRecord splits a list of briefs: each record its length (a uvarint)
// and its bytes; the list ends after its count and the answer with it.
func briefRecord(br *bufio.Reader, data []byte, i int) ([]byte, bool, error) {
	size, err := binary.ReadUvarint(br)
	if err == io.EOF {
		return data, true, nil
	}
	if err != nil {
		return data, false, err
	}
	if size > maxBriefRecord {
		return data, false, fmt.Errorf("job %d: a brief record of %d bytes", i, size)
	}
	start := len(data)
	data = slices.Grow(data, int(size))[:start+int(size)]
	if _, err := io.ReadFull(br, data[start:]); err != nil {
		return data, false, err
	}
	return data, false, nil
}

// maxBriefRecord bounds a brief's record (its strings are names).
const maxBriefRecord = 1 << 20

func briefDecoder() recordDecoder {
	var r briefReader
	return r.read
}

// readRecords decodes the n jobs of a list whose records split splits
// off, up to the list's end. Records go to the decoders, one per core, in
// batches whose buffers are used again once decoded.
func readRecords(br *bufio.Reader, n int, split recordSplitter, newDecoder func() recordDecoder) ([]Job, error) {
	jobs := make([]Job, n)
	if n > 0 {
		adviseHuge(unsafe.Slice((*byte)(unsafe.Pointer(&jobs[0])), n*int(unsafe.Sizeof(jobs[0]))))
	}
	type batch struct {
		first int
		data  []byte
		ends  []int // where each record ends in data
	}
	const perBatch = 64
	free := sync.Pool{New: func() any { return &batch{data: make([]byte, 0, 32<<10), ends: make([]int, 0, perBatch)} }}
	work := make(chan *batch, 4)
	var mu sync.Mutex
	var decodeErr error
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			decode := newDecoder()
			for b := range work {
				start := 0
				for k, end := range b.ends {
					if err := decode(b.data[start:end], &jobs[b.first+k]); err != nil {
						mu.Lock()
						decodeErr = cmp.Or(decodeErr, err)
						mu.Unlock()
					}
					start = end
				}
				b.data, b.ends = b.data[:0], b.ends[:0]
				free.Put(b)
			}
		}()
	}
	read, err := func() (int, error) {
		defer close(work)
		i, b := 0, free.Get().(*batch)
		for {
			var end bool
			var err error
			b.data, end, err = split(br, b.data, i)
			if err != nil {
				return i, fmt.Errorf("cut short after %d of %d jobs: %w", i, n, err)
			}
			if end {
				if len(b.ends) > 0 {
					work <- b
				}
				return i, nil
			}
			if i >= n {
				return i, fmt.Errorf("more jobs than the %d counted", n)
			}
			if len(b.ends) == 0 {
				b.first = i
			}
			b.ends = append(b.ends, len(b.data))
			i++
			if len(b.ends) == perBatch {
				work <- b
				b = free.Get().(*batch)
			}
		}
	}()
	wg.Wait()
	if err == nil && read != n {
		err = fmt.Errorf("%d jobs of the %d counted", read, n)
	}
	return jobs, cmp.Or(err, decodeErr)
}

// jobListJSON reads a job list as plain JSON, one job at a time.
func jobListJSON(r io.Reader) ([]Job, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object (%v)", err)
	}
	var jobs []Job
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t {
		case "count":
			var n int
			if err := dec.Decode(&n); err != nil {
				return nil, err
			}
			if jobs == nil {
				jobs = make([]Job, 0, min(max(n, 0), 1<<16)) // a hint: it grows
			}
		case "jobs":
			t, err := dec.Token()
			if err == nil && t == nil {
				continue // null: none
			}
			if err != nil || t != json.Delim('[') {
				return nil, fmt.Errorf("jobs is not a list (%v)", err)
			}
			for dec.More() {
				jobs = append(jobs, Job{})
				if err := dec.Decode(&jobs[len(jobs)-1]); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		}
	}
	if jobs == nil {
		jobs = []Job{}
	}
	return jobs, nil
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

// Diag is sdiag: the leader's scheduling and request statistics.
func (c *Client) Diag(ctx context.Context) (*Diag, error) {
	var out Diag
	err := c.do(ctx, http.MethodGet, "/api/diag", nil, &out)
	return &out, err
}

// DiagReset is sdiag -r: the statistics start over.
func (c *Client) DiagReset(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/api/diag/reset", struct{}{}, nil)
}

// Status is the local node's view of the cluster.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var out Status
	err := c.do(ctx, http.MethodGet, "/api/status", nil, &out)
	return &out, err
}

// Wait blocks until the job has ended and returns its final record.
func (c *Client) Wait(ctx context.Context, id uint64) (*Job, error) {
	var j Job
	err := c.longPoll(ctx, fmt.Sprintf("/api/wait?job=%d&timeout=20s", id), func() any { j = Job{}; return &j }, func() bool {
		return j.State.Final()
	})
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// JobScript returns a job's batch script (scontrol write batch_script).
func (c *Client) JobScript(ctx context.Context, id uint64) (string, error) {
	var out JobScript
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/api/jobscript?job=%d", id), nil, &out)
	return out.Script, err
}

// JobOutput returns the last max bytes (at most MaxJobOutputTail; 0:
// that many) of a job's standard output or error ("stdout", "stderr").
func (c *Client) JobOutput(ctx context.Context, id uint64, stream string, max int) (*JobOutput, error) {
	var out JobOutput
	v := url.Values{"job": {strconv.FormatUint(id, 10)}, "stream": {stream}}
	if max > 0 {
		v.Set("max", strconv.Itoa(max))
	}
	err := c.do(ctx, http.MethodGet, "/api/job/output?"+v.Encode(), nil, &out)
	return &out, err
}

// DashboardJobs fetches the dashboard's bounded share of the job list
// (GET /api/dashboard/jobs), decoded into out: its shape is the
// dashboard's own (cluster/dashboard.go).
func (c *Client) DashboardJobs(ctx context.Context, out any) error {
	return c.do(ctx, http.MethodGet, "/api/dashboard/jobs", nil, out)
}

// longPoll repeats a long-poll GET until done says the answer (decoded
// into what fresh returns) is the one waited for. While the leader is
// changing it tries again every half second; other errors end it.
func (c *Client) longPoll(ctx context.Context, path string, fresh func() any, done func() bool) error {
	for {
		err := c.do(ctx, http.MethodGet, path, nil, fresh())
		if err == nil {
			if done() {
				return nil
			}
			continue
		}
		var ae *Error
		if errors.As(err, &ae) && ae.Message != ErrNoLeader {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Config fetches the cluster's config as JSON, decoded into out (a
// *config.Config: the api package does not import config).
func (c *Client) Config(ctx context.Context, out any) error {
	return c.do(ctx, http.MethodGet, "/api/config", nil, out)
}

// Acctmgr reads what sacctmgr shows: QoS, accounts, users, associations.
func (c *Client) Acctmgr(ctx context.Context) (*AcctmgrState, error) {
	var out AcctmgrState
	err := c.do(ctx, http.MethodGet, "/api/acctmgr", nil, &out)
	return &out, err
}

// AcctmgrChange commits a sacctmgr add, modify or delete.
func (c *Client) AcctmgrChange(ctx context.Context, req AcctmgrRequest) (*AcctmgrResult, error) {
	var out AcctmgrResult
	err := c.do(ctx, http.MethodPost, "/api/acctmgr", req, &out)
	return &out, err
}

// JobControl runs scontrol hold/uhold/release/requeue on jobs.
func (c *Client) JobControl(ctx context.Context, req JobControlRequest) ([]CancelResult, error) {
	var out JobControlResponse
	err := c.do(ctx, http.MethodPost, "/api/jobcontrol", req, &out)
	return out.Results, err
}

// ---- job steps: srun, salloc (issue 4) ----

// RunStep creates a step of a running job and runs it, calling fn for each
// event of its stream (output, task ends, the final Done) as it comes. The
// request goes to this client's node, which launches the tasks and streams
// their output; it ends the step if the caller goes away. fn's error stops
// the stream. If the stream breaks once the step runs (the node's daemon
// was restarted), RunStep attaches to the step again through the node's
// next daemon, for StepAttachWait at most, calling lost once each time it
// starts waiting; the step's event comes again then.
func (c *Client) RunStep(ctx context.Context, req StepRequest, fn func(*StepEvent) error, lost func(error)) error {
	var step *Step
	track := func(ev *StepEvent) error {
		if ev.Step != nil {
			step = ev.Step
		}
		return fn(ev)
	}
	var deadline time.Time // while attaching again
	for {
		err := c.runStep(ctx, req, track)
		var se *streamError
		var ae *Error
		switch {
		case err == nil || step == nil || ctx.Err() != nil:
			return err
		case errors.As(err, &se) && !se.before:
			// The stream broke once the step ran: attach to it again.
			if lost != nil {
				lost(se.err)
			}
			req.Attach, req.StepID = true, step.ID
			deadline = time.Now().Add(StepAttachWait)
		case (errors.As(err, &se) || (errors.As(err, &ae) && ae.Message == ErrNoLeader)) && time.Now().Before(deadline):
			// The node's daemon is not back (or not ready) yet.
		default:
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// StepAttachWait is how long srun tries to attach to its step again (a
// variable for tests).
var StepAttachWait = 3 * time.Minute

// streamError is a step's stream that broke (before: before it started,
// the node being unreachable).
type streamError struct {
	err    error
	before bool
}

func (e *streamError) Error() string { return e.err.Error() }
func (e *streamError) Unwrap() error { return e.err }

// runStep runs (or attaches to) a step once.
func (c *Client) runStep(ctx context.Context, req StepRequest, fn func(*StepEvent) error) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://hpc/api/step/run", bytes.NewReader(b))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	// No overall timeout: a step runs as long as it runs.
	resp, err := (&http.Client{Transport: c.hc.Transport}).Do(hr)
	if err != nil {
		var ne *net.OpError
		if errors.As(err, &ne) {
			return &streamError{before: true, err: &Error{Message: ErrNoLeader, Detail: fmt.Sprintf("cannot reach the node at %s: %v", c.Socket, ne.Err)}}
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e Error
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Message == "" {
			return fmt.Errorf("run step: %s", resp.Status)
		}
		return &e
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev StepEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the node ended the step's stream early")
			}
			return &streamError{err: err}
		}
		if err := fn(&ev); err != nil {
			return err
		}
		if ev.Done != nil {
			return nil
		}
	}
}

// SignalStep signals a step that RunStep runs through this client's node;
// signal 9 kills it.
// StepInput sends a piece of srun's input (or a terminal size) to a
// running step; it returns once the tasks' nodes have taken it.
func (c *Client) StepInput(ctx context.Context, in StepInput) error {
	return c.do(ctx, http.MethodPost, "/api/step/input", in, nil)
}

func (c *Client) SignalStep(ctx context.Context, job uint64, step uint32, sig int) error {
	return c.do(ctx, http.MethodPost, "/api/step/signal", StepSignalRequest{JobID: job, StepID: step, Signal: sig}, nil)
}

// WaitAllocation blocks until the job has started (or ended) and returns
// it, with the environment of its allocation once it runs. pending, when
// set, is called once if the job has to wait.
func (c *Client) WaitAllocation(ctx context.Context, id uint64, pending func(*Job)) (*Allocation, error) {
	told := false
	var a Allocation
	err := c.longPoll(ctx, fmt.Sprintf("/api/alloc/wait?job=%d&timeout=20s", id), func() any { a = Allocation{}; return &a }, func() bool {
		if a.Job.State != StatePending {
			return true
		}
		if !told && pending != nil {
			told = true
			pending(&a.Job)
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// Release ends an allocation that salloc or srun made (a job running
// HolderScript): the job ends with the exit status given.
func (c *Client) Release(ctx context.Context, req ReleaseRequest) error {
	return c.do(ctx, http.MethodPost, "/api/alloc/release", req, nil)
}

// Priority returns the pending jobs' priorities and factors (sprio).
func (c *Client) Priority(ctx context.Context) (*PriorityResponse, error) {
	var out PriorityResponse
	err := c.do(ctx, http.MethodGet, "/api/priority", nil, &out)
	return &out, err
}

// Update runs scontrol update on a job or on nodes.
func (c *Client) Update(ctx context.Context, req UpdateRequest) error {
	return c.do(ctx, http.MethodPost, "/api/update", req, nil)
}

// TestOnly asks when and where a job would start (sbatch --test-only).
func (c *Client) TestOnly(ctx context.Context, spec JobSpec) (*TestOnlyResponse, error) {
	var out TestOnlyResponse
	err := c.do(ctx, http.MethodPost, "/api/testonly", SubmitRequest{Spec: spec}, &out)
	return &out, err
}

// Share returns every association's fair-share numbers (sshare).
func (c *Client) Share(ctx context.Context) (*ShareResponse, error) {
	var out ShareResponse
	err := c.do(ctx, http.MethodGet, "/api/share", nil, &out)
	return &out, err
}

// Report returns the usage in [start, end) for sreport.
func (c *Client) Report(ctx context.Context, start, end time.Time) (*ReportResponse, error) {
	v := url.Values{}
	v.Set("start", start.Format(time.RFC3339))
	v.Set("end", end.Format(time.RFC3339))
	var out ReportResponse
	err := c.do(ctx, http.MethodGet, "/api/report?"+v.Encode(), nil, &out)
	return &out, err
}

// Takeover moves the controller role to node (scontrol takeover).
func (c *Client) Takeover(ctx context.Context, node string) error {
	return c.do(ctx, http.MethodPost, "/api/takeover", TakeoverRequest{Node: node}, nil)
}

// Token asks the local node for a token (scontrol token).
func (c *Client) Token(ctx context.Context, req TokenRequest) (string, error) {
	var out TokenResponse
	err := c.do(ctx, http.MethodPost, "/api/token", req, &out)
	return out.Token, err
}
