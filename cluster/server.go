package cluster

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"hpc/accounting"
	"hpc/cluster/acct"
	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

type bodyKey struct{}

// startServers listens on the unix socket (local clients; identity from
// peer credentials) and on TCP (other nodes; identity from signed headers).
func (d *Daemon) startServers() error {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/submit", d.leaderRoute(d.rateLimited(d.handleSubmit)))
	mux.HandleFunc("POST /api/testonly", d.leaderRoute(d.handleTestOnly))
	mux.HandleFunc("GET /api/jobs", d.leaderRoute(d.handleJobs))
	mux.HandleFunc("GET /api/priority", d.leaderRoute(d.handlePriority))
	mux.HandleFunc("GET /api/nodes", d.leaderRoute(d.handleNodes))
	mux.HandleFunc("POST /api/cancel", d.leaderRoute(d.handleCancel))
	mux.HandleFunc("POST /api/jobcontrol", d.leaderRoute(d.handleJobControl))
	mux.HandleFunc("POST /api/update", d.leaderRoute(d.handleUpdate))
	mux.HandleFunc("POST /api/takeover", d.leaderRoute(d.handleTakeover))
	mux.HandleFunc("GET /api/acct", d.leaderRoute(d.handleAcct))
	mux.HandleFunc("GET /api/wait", d.leaderRoute(d.handleWait))
	mux.HandleFunc("GET /api/jobscript", d.leaderRoute(d.handleJobScript))
	mux.HandleFunc("GET /api/diag", d.leaderRoute(d.handleDiag))
	mux.HandleFunc("POST /api/diag/reset", d.leaderRoute(d.handleDiagReset))
	mux.HandleFunc("GET /api/status", d.handleStatus)
	mux.HandleFunc("GET /api/config", d.handleConfig)
	mux.HandleFunc("POST /api/token", d.handleToken)
	if d.runsJobs() {
		// A controller-only or submit host runs no jobs: no agent routes
		// to send any to.
		d.agent.Routes(mux, d.nodeRoute)
	}
	mux.HandleFunc("POST /internal/job-end", d.nodeRoute(d.leaderRoute(d.handleJobEnd)))
	mux.HandleFunc("POST /internal/register", d.nodeRoute(d.leaderRoute(d.handleRegister)))
	d.registerStepRoutes(mux)
	d.registerAcctRoutes(mux)
	d.registerShareRoutes(mux)
	d.registerPartitionRoutes(mux)
	d.registerTriggerRoutes(mux)
	d.registerFileRoutes(mux)
	d.registerProfileRoutes(mux) // profile.go
	d.registerControllerRoutes(mux)
	d.registerDashboardDataRoutes(mux) // dashboard_jobs.go
	d.local = localClient(mux)         // inprocess.go: the web side asks these routes

	_ = os.Remove(d.o.Socket)
	ul, err := net.Listen("unix", d.o.Socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", d.o.Socket, err)
	}
	// Anyone on the node may talk to it; the peer credentials say who.
	if err := os.Chmod(d.o.Socket, 0o666); err != nil {
		ul.Close()
		return err
	}
	// A client that sends its headers slowly or stays idle is cut off, and
	// requestBody bounds the time a body may take; no ReadTimeout, which
	// would cancel the long answers (srun's output, sbatch --wait).
	unixSrv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			id, err := peer.PeerIdentity(c)
			if err != nil {
				return ctx
			}
			return peer.WithIdentity(ctx, id)
		},
	}
	tl, err := net.Listen("tcp", d.addr(d.cfg.APIPort))
	if err != nil {
		ul.Close()
		return fmt.Errorf("listen on %s: %w", d.addr(d.cfg.APIPort), err)
	}
	// Other nodes speak TLS: a client certificate of this cluster is
	// required before a byte of HTTP is read. People speak plain HTTP to
	// the web routes only (web.go).
	split := newSplitListener(tl)
	tl = tls.NewListener(split.tls, d.creds.ServerConfig())
	webSrv := d.webServer()
	tcpSrv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, body, err := peer.Verify(d.o.Key, r)
			if err != nil {
				peer.WriteErr(w, http.StatusUnauthorized, err)
				return
			}
			ctx := peer.WithIdentity(r.Context(), id)
			ctx = context.WithValue(ctx, bodyKey{}, body)
			r.Body = peer.NewBody(body)
			mux.ServeHTTP(w, r.WithContext(ctx))
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// Failed handshakes (a process without the cluster's
		// credentials) are for the debug log, not the daemon's stderr.
		ErrorLog: slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
	}
	d.srvs = append(d.srvs, unixSrv, tcpSrv, webSrv)
	for _, s := range []struct {
		srv *http.Server
		l   net.Listener
	}{{unixSrv, ul}, {tcpSrv, tl}, {webSrv, split.plain}} {
		go func() {
			if err := s.srv.Serve(s.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("server stopped", "err", err)
			}
		}()
	}
	return nil
}

type handler func(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte)

// requestBody is a request's body: read by the TCP server when it checked
// the signature, or read here from a local client, up to the route's
// limit (bodyLimit).
func (d *Daemon) requestBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if b, ok := r.Context().Value(bodyKey{}).([]byte); ok {
		return b, nil
	}
	limit := d.bodyLimit(r.URL.Path)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyTimeout))
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &api.Error{Message: api.ErrTooLong, Detail: fmt.Sprintf("request body over %d bytes", limit)}
	}
	return b, nil
}

// bodyTimeout is how long a local client may take to send a body.
const bodyTimeout = time.Minute

// bodyLimit is the largest body a local client may send to path: room for
// a job's script and environment (JSON may escape a byte as six) on the
// routes that carry them, 1 MiB elsewhere.
func (d *Daemon) bodyLimit(path string) int64 {
	switch path {
	case "/api/submit", "/api/testonly", "/api/step/run", "/api/step/create":
		return 6*int64(d.conf().MaxScriptSize()+config.DefaultMaxEnvSize) + 64<<10
	}
	return 1 << 20
}

// bodyErr answers a body that could not be read.
func bodyErr(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	var ae *api.Error
	if errors.As(err, &ae) && ae.Message == api.ErrTooLong {
		code = http.StatusRequestEntityTooLarge
	}
	peer.WriteErr(w, code, err)
}

// leaderRoute runs h on the leader; elsewhere it forwards the request, with
// the caller's identity, signed.
func (d *Daemon) leaderRoute(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := peer.IdentityFrom(r.Context())
		if !ok {
			peer.WriteErr(w, http.StatusUnauthorized, errors.New("cannot tell who is asking (no peer credentials)"))
			return
		}
		body, err := d.requestBody(w, r)
		if err != nil {
			bodyErr(w, err)
			return
		}
		if d.isLeader() || !d.forward(w, r, id, body) {
			d.awaitCaughtUp(r.Context())
			d.counted(h)(w, r, id, body)
		}
	}
}

// awaitCaughtUp holds a request a new leader takes before it has applied
// what earlier terms committed (after a restart of every controller, its
// state is replayed then): answering from a state that lags would say a
// running job is gone. It waits applyTimeout at most.
func (d *Daemon) awaitCaughtUp(ctx context.Context) {
	deadline := time.Now().Add(applyTimeout)
	for d.isLeader() && !d.caughtUp.Load() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nodeRoute admits only signed node-to-node requests.
func (d *Daemon) nodeRoute(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id, ok := peer.IdentityFrom(r.Context()); !ok || !id.Node {
			peer.WriteErr(w, http.StatusForbidden, errors.New("node-to-node request refused"))
			return
		}
		h(w, r)
	}
}

const hdrHops = "X-Hpc-Hops"

// forward passes a request on to the leader and answers with its answer.
// It returns false, answering nothing, if this node became the leader
// meanwhile: the request is then its own to handle.
func (d *Daemon) forward(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) bool {
	hops, _ := strconv.Atoi(r.Header.Get(hdrHops))
	if hops >= 3 {
		peer.WriteErr(w, http.StatusServiceUnavailable, &api.Error{Message: api.ErrNoLeader})
		return true
	}
	target, err := d.waitLeader(r.Context())
	if errors.Is(err, errSelfLeader) {
		return false
	}
	if err != nil {
		peer.WriteErr(w, http.StatusServiceUnavailable, err)
		return true
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, peer.URL(target, r.URL.RequestURI()), bytes.NewReader(body))
	if err != nil {
		peer.WriteErr(w, http.StatusInternalServerError, err)
		return true
	}
	req.Header.Set("Content-Type", "application/json")
	if a := r.Header.Get("Accept"); a != "" {
		req.Header.Set("Accept", a)
	}
	req.Header.Set(hdrHops, strconv.Itoa(hops+1))
	peer.Sign(d.o.Key, req, id, body)
	resp, err := d.peers.HTTP.Do(req)
	if err != nil {
		if d.raft == nil && r.Context().Err() == nil {
			d.ctlFailed(target) // the client's retry goes to another
		}
		peer.WriteErr(w, http.StatusServiceUnavailable, &api.Error{Message: api.ErrNoLeader, Detail: err.Error()})
		return true
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
	return true
}

// errSelfLeader: this node became the leader while a request waited for one.
var errSelfLeader = errors.New("this node leads now")

// waitLeader waits a few seconds for an election to finish.
func (d *Daemon) waitLeader(ctx context.Context) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		addr, err := d.leaderAPI()
		if err == nil && addr != d.addr(d.cfg.APIPort) {
			return addr, nil
		}
		if d.isLeader() {
			return "", errSelfLeader
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = &api.Error{Message: api.ErrNoLeader}
			}
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *Daemon) handleSubmit(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	job, token, err := d.newJob(id, body)
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	// Alone or in a group with others arriving meanwhile (submitbatch.go).
	res, err := d.submit(job, token)
	if errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrRaftShutdown) ||
		errors.Is(err, raft.ErrEnqueueTimeout) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		// The entry may be committed or not: the client sends it again
		// with its token, and the next leader answers.
		peer.WriteErr(w, http.StatusServiceUnavailable, &api.Error{Message: api.ErrNoLeader, Detail: err.Error()})
		return
	}
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	d.diag.add(&d.diag.submitted, 1)
	peer.WriteJSON(w, api.SubmitResponse{JobID: res.JobID})
}

// handleTestOnly is sbatch --test-only: the job is checked as a submission
// and the scheduler says when and where it would start; nothing is queued.
func (d *Daemon) handleTestOnly(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	job, _, err := d.newJob(id, body)
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	res, err := d.testOnly(job)
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	if res.Reason != "" && res.ExpectedStart.IsZero() {
		peer.UserErr(w, &api.Error{Message: "Job can not start now: " + res.Reason})
		return
	}
	start := res.ExpectedStart
	if start.IsZero() {
		start = d.now()
	}
	peer.WriteJSON(w, api.TestOnlyResponse{JobID: job.ID, Start: start, CPUs: job.Spec.ReqCPUs(), Nodes: res.ExpectedNodes, Partition: res.Partition})
}

// newJob reads a submission and makes the job record, and returns the
// submission's token. The record: the spec checked against the config,
// the caller's identity, and its association: the user's default account
// and its default QoS (acct.State.SubmitAssoc). slurm.conf's
// AccountingStorageEnforce says what is refused: with
// associations a user without an association (of the account asked for),
// with qos a QoS the association may not use. Without them, as in Slurm,
// a user without an association still submits (with the account asked
// for), and an account the user has no association with gives way to the
// user's default account; a QoS that does not exist is always refused.
func (d *Daemon) newJob(id peer.Identity, body []byte) (*api.Job, string, error) {
	var req api.SubmitRequest
	// As encoding/json reads it, in a quarter of its time with an
	// environment of 60 variables (BenchmarkReadSubmit).
	if err := api.ReadJSON(body, &req); err != nil {
		return nil, "", &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()}
	}
	spec := req.Spec
	if err := validateSpec(d.conf(), &spec); err != nil {
		return nil, "", err
	}
	job := &api.Job{Spec: spec, UID: id.UID, GID: id.GID, User: id.User, Group: id.Group, Account: spec.Account}
	if spec.Hold {
		job.Hold = "user"
	}
	cfg := d.conf()
	enforce := acct.Enforce{Associations: cfg.AccountingStorageEnforce.Associations, QOS: cfg.AccountingStorageEnforce.QOS}
	var assocErr error
	d.fsm.View(func(st *fsm.State) {
		job.Account, job.Spec.QOS, assocErr = st.Acct.SubmitAssoc(id.User, spec.Account, spec.QOS, enforce)
	})
	return job, req.Token, assocErr
}

// handleJobs lists the jobs the caller may see, by id: all of them, or
// with ?job=ID that job (with its array's tasks when it is an array's id
// or task), as scontrol show job ID asks. The records are lent by the state (fsm.LendJobs) and
// written one by one as the client reads them: a long list holds no lock
// and no copy of itself. The count comes first, so a client sizes its
// list once.
func (d *Daemon) handleJobs(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	whole := r.URL.Query().Get("whole") == "1"
	brief := r.URL.Query().Get("brief") == "2" && !whole // "1" was a JSON brief: an older client gets whole jobs
	var one uint64
	if s := r.URL.Query().Get("job"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidJobID, Detail: s})
			return
		}
		one = n
	}
	var v jobViewer
	jobs, release := d.fsm.LendJobs(func(st *fsm.State, add func(*api.Job)) {
		v = d.viewerIn(st, id) // privacy.go
		if one == 0 {
			for _, j := range st.Jobs {
				add(j)
			}
			return
		}
		j := st.Jobs[one]
		if j != nil && j.ArrayJobID == 0 {
			add(j)
			return
		}
		// A task of an array, or an array's id (whose first task may be
		// gone): the whole array, which scontrol shows as one record
		// while its tasks wait.
		array := one
		if j != nil {
			array = j.ArrayJobID
		}
		for _, t := range st.Jobs {
			if t.ArrayJobID == array {
				add(t)
			}
		}
	})
	defer release()
	sortByID(jobs)
	n := 0
	for _, j := range jobs {
		if v.listed(j) {
			jobs[n] = j
			n++
		}
	}
	jobs = jobs[:n]
	see := func(j *api.Job) api.Job {
		seen, _ := v.job(j)
		if !whole && seen.Spec.Script != "" {
			withhold(&seen) // privacy.go
		}
		d.view.overlay(&seen)
		return seen
	}
	if brief {
		// A brief carries nothing that privacy withholds (the jobs are
		// those listed): it is read from the shared record.
		writeJobList(w, jobs, func(j *api.Job) api.JobBrief {
			b := j.Brief()
			d.view.overlayBrief(&b)
			return b
		})
		return
	}
	writeJobList(w, jobs, see)
}

// sortByID sorts jobs by id, the ids side by side: compared through
// the pointers, a kilobyte apart, sorting was a third of the leader's
// time for a list of 100,000. A long list is sorted by radix, a byte of
// the id at a time and only the bytes in which ids differ (three for ids
// under 16,777,216): comparing, it was a fifth of the leader's time for
// squeue with 100,000 jobs.
func sortByID(jobs []*api.Job) {
	type keyed struct {
		id  uint64
		job *api.Job
	}
	ks := make([]keyed, len(jobs))
	var or, and uint64 = 0, ^uint64(0)
	for i, j := range jobs {
		ks[i] = keyed{j.ID, j}
		or, and = or|j.ID, and&j.ID
	}
	if len(ks) < 256 {
		slices.SortFunc(ks, func(a, b keyed) int { return cmp.Compare(a.id, b.id) })
	} else {
		tmp := make([]keyed, len(ks))
		for shift := 0; shift < 64; shift += 8 {
			if ((or^and)>>shift)&0xff == 0 {
				continue // every id has the same byte here
			}
			var at [256]int
			for _, k := range ks {
				at[byte(k.id>>shift)]++
			}
			n := 0
			for b, c := range at {
				at[b], n = n, n+c
			}
			for _, k := range ks { // stable: the order of the bytes before holds
				b := byte(k.id >> shift)
				tmp[at[b]] = k
				at[b]++
			}
			ks, tmp = tmp, ks
		}
	}
	for i := range ks {
		jobs[i] = ks[i].job
	}
}

func (d *Daemon) handleNodes(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var out api.NodesResponse
	d.fsm.ViewConfig(func(cfg *config.Config, st *fsm.State) { out = nodesView(cfg, st) })
	peer.WriteJSON(w, out)
}

func (d *Daemon) handleCancel(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.CancelRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	var out api.CancelResponse
	// An array's id stands for all of its tasks, as in scancel.
	var tasks []uint64
	d.fsm.View(func(st *fsm.State) {
		for _, jid := range req.JobIDs {
			if j := st.Jobs[jid]; j != nil && j.ArrayJobID == jid {
				for _, t := range st.Jobs {
					if t.ArrayJobID == jid && t.ID != jid && !t.State.Final() {
						tasks = append(tasks, t.ID)
					}
				}
			}
		}
	})
	sort.Slice(tasks, func(a, b int) bool { return tasks[a] < tasks[b] })
	v := d.viewer(id)
	ids := append(append([]uint64(nil), req.JobIDs...), tasks...)
	out.Results = make([]api.CancelResult, len(ids))
	// Cancels are proposed side by side, so that Raft commits many in one
	// batch (a filtered scancel of thousands); signals go one by one.
	var wg sync.WaitGroup
	slots := make(chan struct{}, cancelParallel)
	for i, jid := range ids {
		res := &out.Results[i]
		res.JobID = jid
		j, _ := d.fsm.Job(jid)
		switch {
		case j == nil:
			res.Error = api.ErrInvalidJobID
		case j.State.Final():
			res.Error = api.ErrAlreadyDone
		case !v.mayActOn(j):
			res.Error = api.ErrAccessDenied
		case req.Signal != 0:
			// scancel --signal: deliver the signal, cancel nothing. A job
			// that has not started cannot take one yet (scancel retries).
			switch {
			case j.State == api.StatePending || startingSteps(j, req.Scope, d.now()):
				res.Error = api.ErrTransitionState
			case j.State != api.StateRunning:
				res.Error = api.ErrJobNotPendingOrRun
			default:
				if err := d.signalJobScope(j, req.Signal, req.Scope); err != nil {
					res.Error = err.Error()
				}
			}
		default:
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				d.cancelJob(jid, id.UID, res)
			})
		}
	}
	wg.Wait()
	peer.WriteJSON(w, out)
}

// cancelParallel is how many cancels one request has in Raft at once.
const cancelParallel = 64

// cancelJob commits the cancel of job jid by uid into res, and has the
// job killed if it runs.
func (d *Daemon) cancelJob(jid uint64, uid uint32, res *api.CancelResult) {
	if _, err := d.propose(&fsm.Cancel{Time: d.now(), JobID: jid, UID: uid}); err != nil {
		res.Error = err.Error()
	} else if j, _ := d.fsm.Job(jid); j != nil && j.State == api.StateCompleting {
		// As the cancel left it: a job that started after the read
		// above is killed too.
		go d.signalJob(j, 0)
	} else if j != nil && j.State == api.StateCancelled {
		d.diag.ended(j.State) // a pending job: it ends here
	}
}

func (d *Daemon) handleAcct(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	q := r.URL.Query()
	var f accounting.Filter
	for _, s := range strings.Split(q.Get("jobs"), ",") {
		if s == "" {
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidJobID})
			return
		}
		f.JobIDs = append(f.JobIDs, n)
	}
	// Whose rows: privacy.go; a stored script and environment only for
	// a query by job id, to the job's owner, root and operators.
	v := d.viewer(id)
	f.UID = v.acctUID(q.Get("all") == "1")
	f.JobsOnly = q.Get("jobs_only") == "1"
	f.Texts = len(f.JobIDs) > 0
	rows, err := d.acct.Query(f)
	if err != nil {
		peer.WriteErr(w, http.StatusInternalServerError, err)
		return
	}
	out := api.AcctResponse{Rows: make([]api.AcctRow, 0, len(rows))}
	job := -1 // the row of the job whose steps follow
	for _, row := range rows {
		r := acctRow(row)
		if r.Step == "" && (v.operator || (!id.Node && row.Job.UID == id.UID)) {
			r.Script, r.Env = row.Job.Script, row.Job.Env
		}
		if r.Step == "" {
			job = len(out.Rows)
		} else if job >= 0 && out.Rows[job].JobID == r.JobID && r.Usage != nil {
			// A job's TotalCPU is its steps', as sacct sums them.
			u := out.Rows[job].Usage
			if u == nil {
				u = &api.StepUsage{}
				out.Rows[job].Usage = u
			}
			u.UserCPU += r.Usage.UserCPU
			u.SystemCPU += r.Usage.SystemCPU
		}
		out.Rows = append(out.Rows, r)
	}
	peer.WriteJSON(w, out)
}

func acctRow(row accounting.Row) api.AcctRow {
	j := row.Job
	r := api.AcctRow{
		JobID: j.JobID, JobName: j.Name, Partition: j.Partition, Account: j.Account,
		User: j.User, UID: j.UID, AllocCPUs: j.AllocCPUs, State: j.State,
		ExitCode: j.ExitCode, Signal: j.Signal, CancelledBy: j.CancelledBy,
		NodeList: j.NodeList, Submit: j.Submit, Start: j.Start, End: j.End,
		Group: j.Group, GID: j.GID, QOS: j.QOS, Constraints: j.Constraints, Reason: j.Reason,
		TimeLimitMin: j.TimeLimitMin, WorkDir: j.WorkDir, ReqCPUs: j.ReqCPUs, ReqMemMB: j.ReqMemMB,
		ArrayJobID: j.ArrayJobID, ArrayTaskID: j.ArrayTaskID,
	}
	if s := row.Step; s != nil {
		r.Step, r.JobName, r.Partition = s.Step, s.Name, ""
		r.AllocCPUs, r.State = s.AllocCPUs, s.State
		r.ExitCode, r.Signal, r.CancelledBy = s.ExitCode, s.Signal, nil
		r.NodeList, r.Start, r.End = s.NodeList, s.Start, s.End
		if s.MaxRSSKB > 0 || s.UserCPU > 0 || s.SystemCPU > 0 {
			r.Usage = &api.StepUsage{MaxRSSKB: s.MaxRSSKB, MaxRSSNode: s.MaxRSSNode, UserCPU: s.UserCPU, SystemCPU: s.SystemCPU}
		}
	}
	return r
}

// handleWait answers when the job has ended or after the timeout (a long
// poll), so `--wait` hears of the end at once without polling the leader.
func (d *Daemon) handleWait(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	if j := d.pollJob(w, r, id, func(j *api.Job) bool { return j.State.Final() }); j != nil {
		peer.WriteJSON(w, j)
	}
}

// pollJob is a long poll over a job (?job=N&timeout=D, at most 20 s): it
// returns the job, as the caller may see it (privacy.go), once done says
// so, or as it is at the timeout; nil when it has answered with an error
// itself (a bad or unknown job id, or one the caller may not see) or the
// caller went away.
func (d *Daemon) pollJob(w http.ResponseWriter, r *http.Request, id peer.Identity, done func(*api.Job) bool) *api.Job {
	jid, err := strconv.ParseUint(r.URL.Query().Get("job"), 10, 64)
	if err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidJobID})
		return nil
	}
	timeout := 20 * time.Second
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 && t < timeout {
		timeout = t
	}
	deadline := time.After(timeout)
	v := d.viewer(id)
	for {
		j, changed := d.fsm.Job(jid)
		seen, ok := v.job(j)
		if !ok {
			peer.WriteErr(w, http.StatusNotFound, &api.Error{Message: api.ErrInvalidJobID})
			return nil
		}
		if done(j) {
			return &seen
		}
		select {
		case <-changed:
		case <-deadline:
			return &seen
		case <-r.Context().Done():
			return nil
		}
	}
}

func (d *Daemon) handleStatus(w http.ResponseWriter, r *http.Request) {
	st := api.Status{Node: d.o.Name, ExecMode: d.exec.Mode(), RaftState: "Agent (not a controller)"}
	if d.cfg.IsSubmitHost(d.o.Name) {
		st.ExecMode, st.RaftState = noStepsSubmit, "Submit host (a login node: no jobs, no controller)"
	}
	if d.raft == nil {
		// A node that is no controller asks one for the Raft view.
		if addr, err := d.leaderAPI(); err == nil {
			var cs api.Status
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			if d.peers.Get(ctx, addr, "/api/status", &cs) == nil {
				st.Leader, st.LeaderAddr, st.Term, st.Voters = cs.Leader, cs.LeaderAddr, cs.Term, cs.Voters
				st.CommitIndex, st.AppliedIdx = cs.CommitIndex, cs.AppliedIdx
				st.Controllers = cs.Controllers
			}
			cancel()
		}
	}
	if d.raft != nil {
		st.RaftState = d.raft.State().String()
		addr, lid := d.raft.LeaderWithID()
		st.Leader, st.LeaderAddr = string(lid), string(addr)
		stats := d.raft.Stats()
		st.Term, _ = strconv.ParseUint(stats["term"], 10, 64)
		st.CommitIndex, _ = strconv.ParseUint(stats["commit_index"], 10, 64)
		st.AppliedIdx, _ = strconv.ParseUint(stats["applied_index"], 10, 64)
		if f := d.raft.GetConfiguration(); d.await(f) == nil {
			for _, s := range f.Configuration().Servers {
				if s.Suffrage == raft.Voter {
					st.Voters = append(st.Voters, string(s.ID))
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, m := range d.members() {
		seen[m.Name] = true
		var meta nodeMeta
		_ = json.Unmarshal(m.Meta, &meta)
		st.Members = append(st.Members, api.Member{Name: m.Name, Addr: m.Address(), State: memberState(m.State), ExecMode: meta.Mode})
	}
	for _, n := range d.cfg.Nodes {
		if !seen[n.Name] {
			st.Members = append(st.Members, api.Member{Name: n.Name, Addr: net.JoinHostPort(n.Addr, strconv.Itoa(d.cfg.GossipPort)), State: "dead"})
		}
	}
	d.statusControllers(r.Context(), &st) // ctlstatus.go
	sort.Slice(st.Members, func(a, b int) bool { return st.Members[a].Name < st.Members[b].Name })
	peer.WriteJSON(w, st)
}

func memberState(s memberlist.NodeStateType) string {
	switch s {
	case memberlist.StateAlive:
		return "alive"
	case memberlist.StateSuspect:
		return "suspect"
	case memberlist.StateDead:
		return "dead"
	case memberlist.StateLeft:
		return "left"
	}
	return "unknown"
}

func (d *Daemon) handleJobEnd(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var e api.JobEnd
	if err := json.Unmarshal(body, &e); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	before, _ := d.fsm.Job(e.JobID)
	if _, err := d.propose(&fsm.End{Time: d.now(), End: e}); err != nil {
		peer.WriteErr(w, http.StatusServiceUnavailable, err)
		return
	}
	if after, _ := d.fsm.Job(e.JobID); before != nil && after != nil && !before.State.Final() && after.State.Final() {
		d.diag.ended(after.State)
	}
	peer.WriteJSON(w, struct{}{})
}

// daemonBoot is when this process's daemon started: scontrol show
// config's BOOT_TIME.
var daemonBoot = time.Now()

// handleConfig returns the cluster's parsed config and what scontrol show
// config prints beside it (api.ConfigInfo), in one JSON object.
func (d *Daemon) handleConfig(w http.ResponseWriter, r *http.Request) {
	if _, ok := peer.IdentityFrom(r.Context()); !ok {
		peer.WriteErr(w, http.StatusUnauthorized, errors.New("cannot tell who is asking (no peer credentials)"))
		return
	}
	// The daemon reads slurm.conf from its lab directory, the parent of
	// its node's state directory (hpc up copies --config there).
	conf, err := filepath.Abs(filepath.Join(filepath.Dir(d.o.Dir), "slurm.conf"))
	if err != nil {
		conf = filepath.Join(filepath.Dir(d.o.Dir), "slurm.conf")
	}
	info := api.ConfigInfo{SlurmConf: conf, BootTime: daemonBoot, StateSaveLocation: d.o.Dir}
	if d.fsm != nil { // a controller; a compute or login node holds no state
		d.fsm.View(func(st *fsm.State) { info.NextJobID = st.NextJobID })
	}
	peer.WriteJSON(w, struct {
		*config.Config
		api.ConfigInfo
	}{d.conf(), info})
}

// handleJobControl is scontrol hold, uhold, release and requeue. Users act
// on their own jobs; only root sets or lifts an administrator's hold.
func (d *Daemon) handleJobControl(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.JobControlRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	var out api.JobControlResponse
	v := d.viewer(id)
	for _, jid := range req.JobIDs {
		res := api.CancelResult{JobID: jid}
		j, _ := d.fsm.Job(jid)
		var op fsm.Op
		switch req.Action {
		case "hold", "uhold":
			hold := "user"
			if req.Action == "hold" && v.operator {
				hold = "admin"
			}
			op = &fsm.Hold{JobIDs: []uint64{jid}, Hold: hold}
		case "release":
			op = &fsm.Hold{JobIDs: []uint64{jid}}
		case "requeue":
			op = &fsm.Requeue{JobIDs: []uint64{jid}}
		default:
			peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: "unknown job control action " + req.Action})
			return
		}
		switch {
		case j == nil:
			res.Error = api.ErrInvalidJobID
		case !v.mayActOn(j):
			res.Error = api.ErrAccessDenied
		case req.Action == "release" && j.Hold == "admin" && !v.operator:
			res.Error = api.ErrAccessDenied
		case req.Action == "requeue" && j.State != api.StateRunning:
			res.Error = api.ErrJobNotPendingOrRun
		default:
			if _, err := d.propose(op); err != nil {
				res.Error = err.Error()
			} else if req.Action == "requeue" {
				go d.signalJob(j, 0)
			}
		}
		out.Results = append(out.Results, res)
	}
	peer.WriteJSON(w, out)
}

// handlePriority answers sprio from the leader's last scheduling pass.
func (d *Daemon) handlePriority(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	jobs := map[uint64]*api.Job{}
	d.fsm.View(func(st *fsm.State) {
		v := d.viewerIn(st, id) // privacy.go: PrivateData=jobs hides others' jobs
		for jid, j := range st.Jobs {
			if cp, ok := v.job(j); ok && j.State == api.StatePending {
				jobs[jid] = &cp
			}
		}
	})
	peer.WriteJSON(w, d.view.priorities(d.cfg, jobs))
}

// startingSteps reports whether a signal for a job's steps comes while the
// job is still starting them: it runs, has no step yet, and its batch
// script began less than stepStartWindow ago. Such a signal is answered as
// one to a pending job (scancel asks again), rather than reaching no step.
func startingSteps(j *api.Job, scope string, now time.Time) bool {
	if j.State != api.StateRunning || scope != "" || len(j.Steps) > 0 {
		return false
	}
	return now.Sub(j.StartTime) < stepStartWindow
}

// stepStartWindow is how long after its start a job without steps is still
// starting them, for signals.
const stepStartWindow = 10 * time.Second
