package cluster

import (
	"fmt"
	"io"
	"net/http"
	"os/user"
	"strconv"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
	"hpc/cluster/openapi"
)

// Slurm's REST API, as slurmrestd 22.05 serves it: the openapi/v0.0.38
// paths under /slurm/v0.0.38/ and dbv0.0.38's accounting jobs under
// /slurmdb/v0.0.38/, on every node's web side (web.go), for a user who
// shows a token of Slurm's JWT scheme.
//
// A REST request is the same user's socket request: each handler calls
// the daemon's own routes in its process (restClient), with the web
// identity as the caller's, so that the same handlers answer, forwarded to
// the leader, with PrivateData and Slurm's permission errors. The answers
// are cluster/openapi's objects, the ones squeue, sinfo and sacct --json
// print. A failure is answered with the errors of the plugin's answer:
// 401 without a token, 400 for a body that cannot be read, 500 for what
// the controller refuses (as slurmrestd answers, and its document says).

const (
	restPrefix   = "/slurm/v0.0.38"
	restDBPrefix = "/slurmdb/v0.0.38"
)

// registerRESTRoutes adds the REST API's paths to the web side. A list's
// path is served with and without the trailing slash Slurm's documents
// give it.
func (d *Daemon) registerRESTRoutes(mux *http.ServeMux) {
	list := func(method, path string, h restHandler, db bool) {
		mux.HandleFunc(method+" "+path, d.restRoute(h, db))
		mux.HandleFunc(method+" "+path+"/{$}", d.restRoute(h, db))
	}
	list("GET", restPrefix+"/ping", d.restPing, false)
	list("GET", restPrefix+"/diag", d.restDiag, false)
	list("GET", restPrefix+"/jobs", d.restJobs, false)
	list("GET", restPrefix+"/nodes", d.restNodes, false)
	list("GET", restPrefix+"/partitions", d.restPartitions, false)
	mux.HandleFunc("GET "+restPrefix+"/job/{job_id}", d.restRoute(d.restJob, false))
	mux.HandleFunc("DELETE "+restPrefix+"/job/{job_id}", d.restRoute(d.restCancel, false))
	mux.HandleFunc("POST "+restPrefix+"/job/submit", d.restRoute(d.restSubmit, false))
	mux.HandleFunc("GET "+restPrefix+"/node/{node_name}", d.restRoute(d.restNode, false))
	mux.HandleFunc("GET "+restPrefix+"/partition/{partition_name}", d.restRoute(d.restPartition, false))
	list("GET", restDBPrefix+"/jobs", d.restAcctJobs, true)
	mux.HandleFunc("GET "+restDBPrefix+"/job/{job_id}", d.restRoute(d.restAcctJob, true))
}

// restHandler answers one REST request through cl, the caller's client of
// the daemon's own routes: the answer and its HTTP status.
type restHandler func(r *http.Request, cl *api.Client, id WebIdentity) (openapi.Obj, int)

// restRoute admits a caller with a token, runs h and writes its answer as
// slurmrestd does (json-c's text). db says whether the answer is the
// dbv0.0.38 plugin's.
func (d *Daemon) restRoute(h restHandler, db bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := WebIdentityFrom(r)
		if !ok || id.Anonymous {
			w.Header().Set("WWW-Authenticate", `Bearer realm="slurm"`)
			writeREST(w, http.StatusUnauthorized, openapi.ErrorsAnswer(db, openapi.ErrorObject(&api.Error{
				Message: openapi.ErrAuthCredInvalid,
				Detail:  "authentication required: send X-SLURM-USER-NAME and X-SLURM-USER-TOKEN (scontrol token)",
			}, "rest_auth/jwt")))
			return
		}
		ans, status := h(r, d.local, id)
		writeREST(w, status, ans)
	}
}

// writeREST writes an answer with its status.
func writeREST(w http.ResponseWriter, status int, ans openapi.Obj) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, openapi.JSON(ans))
}

// restFailed is a failed request's answer: the plugin's meta and the
// error, with HTTP 500 as slurmrestd gives any error of the controller.
func restFailed(db bool, err error, source string) (openapi.Obj, int) {
	return openapi.ErrorsAnswer(db, openapi.ErrorObject(err, source)), http.StatusInternalServerError
}

// clusterName is the cluster's name, as the answers carry it.
func (d *Daemon) clusterName() string { return d.conf().ClusterName }

// restPing is GET ping: the controllers as scontrol ping lists them.
func (d *Daemon) restPing(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	st, err := cl.Status(r.Context())
	if err != nil {
		return restFailed(false, err, "slurm_ping")
	}
	ctls := openapi.PingControllers(st.Controllers)
	if len(ctls) == 0 {
		for _, v := range st.Voters {
			ctls = append(ctls, openapi.PingController{Name: v, Up: st.Leader != ""})
		}
	}
	return openapi.PingAnswer(ctls), http.StatusOK
}

// restDiag is GET diag: sdiag's figures.
func (d *Daemon) restDiag(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	dg, err := cl.Diag(r.Context())
	if err != nil {
		return restFailed(false, err, "slurm_get_statistics")
	}
	return openapi.DiagAnswer(*dg), http.StatusOK
}

// restJobs is GET jobs: what squeue --json prints for the caller.
func (d *Daemon) restJobs(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	jobs, err := cl.Jobs(r.Context())
	if err != nil {
		return openapi.JobsAnswer(nil, d.clusterName(), err), http.StatusInternalServerError
	}
	return openapi.JobsAnswer(jobs, d.clusterName(), nil), http.StatusOK
}

// restJobID reads the path's job id.
func restJobID(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("job_id"), 10, 64)
	if err != nil || id == 0 {
		return 0, &api.Error{Message: api.ErrInvalidJobID, Detail: fmt.Sprintf("job id %q", r.PathValue("job_id"))}
	}
	return id, nil
}

// restJob is GET job/{job_id}: the job, or every task of the array of
// that id, as the caller may see them.
func (d *Daemon) restJob(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	id, err := restJobID(r)
	if err != nil {
		return restFailed(false, err, "slurm_load_job")
	}
	jobs, err := cl.Jobs(r.Context())
	if err != nil {
		return openapi.JobsAnswer(nil, d.clusterName(), err), http.StatusInternalServerError
	}
	var mine []api.Job
	for _, j := range jobs {
		if j.ID == id || j.ArrayJobID == id {
			mine = append(mine, j)
		}
	}
	if len(mine) == 0 {
		return restFailed(false, &api.Error{Message: api.ErrInvalidJobID}, "slurm_load_job")
	}
	return openapi.JobsAnswer(mine, d.clusterName(), nil), http.StatusOK
}

// restCancel is DELETE job/{job_id}: scancel, or scancel --signal with
// the signal query (a name as v0.0.38_signal lists them, with or without
// SIG, or a number) sent to the whole job.
func (d *Daemon) restCancel(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	id, err := restJobID(r)
	if err != nil {
		return restFailed(false, err, "slurm_kill_job")
	}
	req := api.CancelRequest{JobIDs: []uint64{id}}
	if s := r.URL.Query().Get("signal"); s != "" {
		sig := jobspec.SignalNumber(s)
		if sig <= 0 || sig >= 65 {
			return openapi.ErrorsAnswer(false, openapi.ErrorObject(&api.Error{Message: "Invalid signal specified",
				Detail: fmt.Sprintf("signal %q", s)}, "slurm_kill_job")), http.StatusBadRequest
		}
		req.Signal, req.Scope = sig, api.SignalFull
	}
	res, err := cl.Cancel(r.Context(), req)
	if err != nil {
		return restFailed(false, err, "slurm_kill_job")
	}
	for _, c := range res {
		if c.Error != "" {
			return restFailed(false, &api.Error{Message: c.Error}, "slurm_kill_job")
		}
	}
	return openapi.ErrorsAnswer(false), http.StatusOK
}

// restSubmit is POST job/submit: the job runs as the token's user, from
// the caller's home directory unless current_working_directory says
// otherwise.
func (d *Daemon) restSubmit(r *http.Request, cl *api.Client, id WebIdentity) (openapi.Obj, int) {
	limit := d.bodyLimit("/api/submit")
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	switch {
	case err != nil:
		return openapi.ErrorsAnswer(false, openapi.ErrorObject(err, "job/submit")), http.StatusBadRequest
	case int64(len(body)) > limit:
		return openapi.ErrorsAnswer(false, openapi.ErrorObject(&api.Error{Message: api.ErrTooLong,
			Detail: fmt.Sprintf("request body over %d bytes", limit)}, "job/submit")), http.StatusRequestEntityTooLarge
	}
	sub, err := openapi.DecodeSubmission(body)
	if err != nil {
		return openapi.ErrorsAnswer(false, openapi.ErrorObject(err, "job/submit")), http.StatusBadRequest
	}
	home := "/"
	if u, err := user.Lookup(id.User); err == nil && u.HomeDir != "" {
		home = u.HomeDir
	}
	spec, err := sub.JobSpec(home, time.Now())
	if err != nil {
		return openapi.ErrorsAnswer(false, openapi.ErrorObject(err, "job/submit")), http.StatusBadRequest
	}
	spec.SubmitHost = d.o.Name
	jobID, err := cl.Submit(r.Context(), spec)
	if err != nil {
		return restFailed(false, err, "slurm_submit_batch_job")
	}
	return openapi.SubmitAnswer(jobID, ""), http.StatusOK
}

// restNodes is GET nodes: what sinfo --json prints.
func (d *Daemon) restNodes(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	resp, err := cl.Nodes(r.Context())
	if err != nil {
		return openapi.NodesAnswer(nil, err), http.StatusInternalServerError
	}
	return openapi.NodesAnswer(resp.Nodes, nil), http.StatusOK
}

// restNode is GET node/{node_name}.
func (d *Daemon) restNode(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	resp, err := cl.Nodes(r.Context())
	if err != nil {
		return openapi.NodesAnswer(nil, err), http.StatusInternalServerError
	}
	for _, n := range resp.Nodes {
		if n.Name == r.PathValue("node_name") {
			return openapi.NodesAnswer([]api.Node{n}, nil), http.StatusOK
		}
	}
	return openapi.NodesAnswer(nil, nil), http.StatusInternalServerError
}

// restPartitions is GET partitions.
func (d *Daemon) restPartitions(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	resp, err := cl.Nodes(r.Context())
	if err != nil {
		return restFailed(false, err, "slurm_load_partitions")
	}
	return openapi.PartitionsAnswer(resp.Partitions, resp.Nodes), http.StatusOK
}

// restPartition is GET partition/{partition_name}.
func (d *Daemon) restPartition(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	resp, err := cl.Nodes(r.Context())
	if err != nil {
		return restFailed(false, err, "slurm_load_partitions")
	}
	for _, p := range resp.Partitions {
		if p.Name == r.PathValue("partition_name") {
			return openapi.PartitionsAnswer([]api.Partition{p}, resp.Nodes), http.StatusOK
		}
	}
	return restFailed(false, &api.Error{Message: api.ErrInvalidPartition,
		Detail: fmt.Sprintf("partition %q", r.PathValue("partition_name"))}, "slurm_load_partitions")
}

// restAcctJobs is dbv0.0.38's GET jobs: accounting's jobs as sacct -a
// --json prints them for the caller (PrivateData decides whose).
func (d *Daemon) restAcctJobs(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	rows, err := cl.Acct(r.Context(), api.AcctQuery{AllUsers: true})
	if err != nil {
		return restFailed(true, err, "slurmdb_jobs_get")
	}
	return openapi.AcctJobsAnswer(rows, d.clusterName()), http.StatusOK
}

// restAcctJob is dbv0.0.38's GET job/{job_id}.
func (d *Daemon) restAcctJob(r *http.Request, cl *api.Client, _ WebIdentity) (openapi.Obj, int) {
	id, err := restJobID(r)
	if err != nil {
		return restFailed(true, err, "slurmdb_jobs_get")
	}
	rows, err := cl.Acct(r.Context(), api.AcctQuery{JobIDs: []uint64{id}, AllUsers: true})
	if err != nil {
		return restFailed(true, err, "slurmdb_jobs_get")
	}
	if len(rows) == 0 {
		return restFailed(true, &api.Error{Message: api.ErrInvalidJobID}, "slurmdb_jobs_get")
	}
	return openapi.AcctJobsAnswer(rows, d.clusterName()), http.StatusOK
}
