package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// fakeCluster answers the node API from memory, so commands can be tested
// without a lab: the same client and wire format, canned records.
type fakeCluster struct {
	mu       sync.Mutex
	jobs     []api.Job
	nodes    api.NodesResponse
	rows     []api.AcctRow
	cfg      *config.Config
	status   api.Status
	cancels  []api.CancelRequest
	updates  []api.UpdateRequest
	controls []api.JobControlRequest
	submits  []api.JobSpec
	acctQ    []string
	nextID   uint64
	fail     string // when set, every request fails with this Slurm error
	// pendingSignals is how many more signals to a pending job are
	// answered as the controller answers them before it starts.
	pendingSignals int
}

func at(h, m, s int) time.Time { return time.Date(2026, 11, 30, h, m, s, 0, time.Local) }

func refJob(id uint64, name, part string) api.Job {
	return api.Job{
		ID: id, User: "root", Group: "root", Account: "root",
		Spec: api.JobSpec{Name: name, Partition: part, TimeLimitMin: 10, WorkDir: "/tmp/w",
			Script: "#!/bin/sh\nsleep 600\n", SubmitHost: "localhost"},
	}
}

func runningOn(j api.Job, nodes ...string) api.Job {
	j.State, j.Reason = api.StateRunning, api.ReasonNone
	j.SubmitTime, j.StartTime = at(4, 59, 28), at(4, 59, 29)
	j.BatchHost = nodes[0]
	for _, n := range nodes {
		j.Alloc = append(j.Alloc, api.NodeAlloc{Node: n, CPUs: 1, MemMB: 1000})
	}
	return j
}

func pendingFor(j api.Job, reason string) api.Job {
	j.State, j.Reason, j.SubmitTime = api.StatePending, reason, at(4, 59, 29)
	return j
}

// newFake starts a fake cluster shaped like the reference lab (node[1-4],
// gpu on node[3-4]) with the reference's busy queue, and an Env whose
// output goes to buffers.
func newFake(t *testing.T) (*fakeCluster, *Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	text, err := config.Lab(4)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCluster{cfg: cfg, nextID: 30}
	for i := 1; i <= 4; i++ {
		n := api.Node{Name: "node" + strconv.Itoa(i), Addr: "127.0.1." + strconv.Itoa(i), CPUs: 2, MemMB: 4000,
			State: api.NodeIdle, Partitions: []string{"debug"}}
		if i >= 3 {
			n.Gres, n.Partitions = "gpu:2", []string{"debug", "gpu"}
		}
		f.nodes.Nodes = append(f.nodes.Nodes, n)
	}
	f.nodes.Partitions = []api.Partition{
		{Name: "debug", Nodes: []string{"node[1-4]"}, Default: true, MaxTimeMin: 1440, State: "UP"},
		{Name: "gpu", Nodes: []string{"node[3-4]"}, MaxTimeMin: 1440, State: "UP"},
	}
	j18 := refJob(18, "multi", "debug")
	j18.Spec.Nodes = 2
	j20 := refJob(20, "big", "debug")
	j20.Spec.Nodes, j20.Spec.NTasks = 2, 4
	done := refJob(14, "wrap", "debug")
	done.State, done.SubmitTime, done.StartTime, done.EndTime = api.StateCompleted, at(4, 59, 20), at(4, 59, 20), at(4, 59, 21)
	done.Alloc, done.BatchHost = []api.NodeAlloc{{Node: "node1", CPUs: 1, MemMB: 1000}}, "node1"
	nobody := pendingFor(refJob(26, "theirs", "debug"), "Priority")
	nobody.UID, nobody.GID, nobody.User, nobody.Group, nobody.Account = 65534, 65534, "nobody", "nogroup", "nobody"
	f.jobs = []api.Job{
		done,
		runningOn(refJob(15, "sleeper", "debug"), "node1"),
		runningOn(refJob(16, "sleeper", "debug"), "node1"),
		runningOn(refJob(17, "sleeper", "debug"), "node2"),
		runningOn(j18, "node2", "node3"),
		runningOn(refJob(19, "gpujob", "gpu"), "node3"),
		pendingFor(j20, "Resources"),
		pendingFor(refJob(25, "small", "debug"), "Priority"),
		nobody,
	}
	for i := range f.nodes.Nodes {
		n := &f.nodes.Nodes[i]
		for _, j := range f.jobs {
			if j.State != api.StateRunning {
				continue
			}
			for _, a := range j.Alloc {
				if a.Node == n.Name {
					n.AllocCPUs += a.CPUs
					n.AllocMemMB += a.MemMB
				}
			}
		}
		if n.AllocCPUs == n.CPUs {
			n.State = api.NodeAllocated
		}
	}
	for _, j := range f.jobs {
		if j.State == api.StatePending {
			continue
		}
		f.rows = append(f.rows, api.AcctRow{JobID: j.ID, JobName: j.Spec.Name, Partition: j.Spec.Partition,
			Account: j.Account, User: j.User, UID: j.UID, AllocCPUs: j.AllocCPUs(), State: string(j.State),
			NodeList: strings.Join(j.NodeNames(), ","), Submit: j.SubmitTime, Start: j.StartTime, End: j.EndTime})
		f.rows = append(f.rows, api.AcctRow{JobID: j.ID, Step: "batch", JobName: "batch", Account: j.Account,
			User: j.User, UID: j.UID, AllocCPUs: 1, State: string(j.State), NodeList: j.BatchHost,
			Submit: j.SubmitTime, Start: j.StartTime, End: j.EndTime})
	}
	f.status = api.Status{Node: "node1", Leader: "node1", Voters: []string{"node1", "node2", "node3"},
		Members: []api.Member{{Name: "node1", State: "alive"}, {Name: "node2", State: "dead"},
			{Name: "node3", State: "alive"}, {Name: "node4", State: "alive"}}}

	sock := filepath.Join(t.TempDir(), "hpc.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	var stdout, stderr bytes.Buffer
	e := &Env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Environ:    []string{"PATH=/usr/bin:/bin", "HOME=/root"},
		Now:        func() time.Time { return at(4, 59, 33) },
		Client:     func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil },
		Executable: func() (string, error) { return "/usr/local/bin/hpc", nil },
		Cwd:        t.TempDir(),
		Hostname:   "submithost",
		UID:        0,
	}
	return f, e, &stdout, &stderr
}

func (f *fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reply := func(v any) { json.NewEncoder(w).Encode(v) }
	if f.fail != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		reply(api.Error{Message: f.fail})
		return
	}
	switch r.URL.Path {
	case "/api/jobs":
		reply(api.JobsResponse{Jobs: f.jobs})
	case "/api/nodes":
		reply(f.nodes)
	case "/api/status":
		reply(f.status)
	case "/api/config":
		reply(f.cfg)
	case "/api/jobscript":
		// As the controller answers root's peer: nobody's job 26 stands
		// for another user's (the controller's rule is tested in cluster).
		id, _ := strconv.ParseUint(r.URL.Query().Get("job"), 10, 64)
		for _, j := range f.jobs {
			switch {
			case j.ID != id:
				continue
			case j.UID == 65534:
				w.WriteHeader(http.StatusForbidden)
				reply(api.Error{Message: api.ErrUserIDMissing})
			default:
				reply(api.JobScript{JobID: id, Script: j.Spec.Script})
			}
			return
		}
		w.WriteHeader(http.StatusNotFound)
		reply(api.Error{Message: api.ErrInvalidJobID})
	case "/api/acct":
		f.acctQ = append(f.acctQ, r.URL.RawQuery)
		q := r.URL.Query()
		var rows []api.AcctRow
		for _, row := range f.rows {
			if q.Get("jobs_only") == "1" && row.Step != "" {
				continue
			}
			// As the controller does, an array's id names its tasks.
			if jobs := q.Get("jobs"); jobs != "" && !strings.Contains(","+jobs+",", ","+strconv.FormatUint(row.JobID, 10)+",") &&
				(row.ArrayJobID == 0 || !strings.Contains(","+jobs+",", ","+strconv.FormatUint(row.ArrayJobID, 10)+",")) {
				continue
			}
			rows = append(rows, row)
		}
		reply(api.AcctResponse{Rows: rows})
	case "/api/submit":
		var req api.SubmitRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.submits = append(f.submits, req.Spec)
		if req.Spec.Partition == "nosuch" {
			w.WriteHeader(http.StatusBadRequest)
			reply(api.Error{Message: api.ErrInvalidPartition, Detail: "invalid partition specified: nosuch"})
			return
		}
		f.nextID++
		reply(api.SubmitResponse{JobID: f.nextID})
	case "/api/jobcontrol":
		var req api.JobControlRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.controls = append(f.controls, req)
		var out api.JobControlResponse
		for _, id := range req.JobIDs {
			res := api.CancelResult{JobID: id, Error: api.ErrInvalidJobID}
			for i := range f.jobs {
				if f.jobs[i].ID == id {
					res.Error = ""
					if f.jobs[i].State != api.StatePending && req.Action != "requeue" {
						res.Error = api.ErrJobNotPendingOrRun
					}
				}
			}
			out.Results = append(out.Results, res)
		}
		reply(out)
	case "/api/update":
		var req api.UpdateRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.updates = append(f.updates, req)
		reply(struct{}{})
	case "/api/cancel":
		var req api.CancelRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.cancels = append(f.cancels, req)
		var out api.CancelResponse
		for _, id := range req.JobIDs {
			res := api.CancelResult{JobID: id, Error: api.ErrInvalidJobID}
			for i := range f.jobs {
				if f.jobs[i].ID != id {
					continue
				}
				switch {
				case f.jobs[i].State.Final():
					res.Error = api.ErrAlreadyDone
				case f.jobs[i].UID == 65534:
					res.Error = api.ErrAccessDenied
				case req.Signal != 0 && req.Signal != 9 && f.jobs[i].State == api.StatePending && f.pendingSignals > 0:
					f.pendingSignals--
					res.Error = api.ErrTransitionState
				default:
					res.Error = ""
					if req.Signal == 0 || req.Signal == 9 {
						f.jobs[i].State = api.StateCancelled
					}
				}
			}
			out.Results = append(out.Results, res)
		}
		reply(out)
	default:
		w.WriteHeader(http.StatusNotFound)
		reply(api.Error{Message: "no such endpoint " + r.URL.Path})
	}
}

// run runs a command line and returns its output and status.
func run(e *Env, out, errb *bytes.Buffer, args ...string) (string, string, int) {
	out.Reset()
	errb.Reset()
	code := RunEnv(e, args)
	return out.String(), errb.String(), code
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
