package cluster

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// The live tail of a job's output, for the dashboard's job detail. The
// leader decides who may read it (handleJobOutput: the job's owner, root,
// SlurmUser and operators, as the batch script; with PrivateData=jobs
// anyone else does not see the job at all) and asks the job's batch host,
// whose agent reads the end of the file as the job's owner
// (agent.handleOutputTail): a path the owner cannot read, a symbolic link
// or anything but a regular file is refused there, so the daemon's root
// never reads for a user what the user could not. The web side asks the
// leader through d.local with the viewer's identity; the anonymous viewer
// is refused before it asks.

// handleJobOutput answers GET /api/job/output?job=N&stream=stdout|stderr
// [&max=bytes] on the leader.
func (d *Daemon) handleJobOutput(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	q := r.URL.Query()
	jid, err := strconv.ParseUint(q.Get("job"), 10, 64)
	stream := q.Get("stream")
	if stream == "" {
		stream = "stdout"
	}
	limit, _ := strconv.Atoi(q.Get("max"))
	if err != nil || (stream != "stdout" && stream != "stderr") {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidJobID, Detail: "job=N&stream=stdout|stderr"})
		return
	}
	var j *api.Job
	j, _ = d.fsm.Job(jid)
	v := d.viewer(id)
	switch {
	case j == nil || !v.listed(j):
		peer.WriteErr(w, http.StatusNotFound, &api.Error{Message: api.ErrInvalidJobID})
		return
	case !v.whole(j) && id.UID != d.slurmUserUID():
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrUserIDMissing})
		return
	}
	out := api.JobOutput{JobID: j.ID, Stream: stream, Node: j.BatchHost, Path: j.StdOut}
	if stream == "stderr" {
		out.Path = j.StdErr
	}
	switch {
	case j.Spec.Script == api.HolderScript:
		out.Note = "an allocation (salloc, srun) has no batch output: its steps' output goes to the command"
	case j.BatchHost == "" || out.Path == "":
		out.Note = "the job has not started: no output yet"
	}
	if out.Note != "" {
		peer.WriteJSON(w, out)
		return
	}
	addr, err := d.peers.API(j.BatchHost)
	if err != nil {
		peer.WriteErr(w, http.StatusServiceUnavailable, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var rep agent.OutputTailReply
	req := agent.OutputTail{FileRef: agent.FileRef{UID: j.UID, GID: j.GID, Path: out.Path}, Max: limit}
	if err := d.peers.CallNode(ctx, addr, "/internal/job/output", req, &rep); err != nil {
		peer.UserErr(w, err)
		return
	}
	data := rep.Data
	if rep.Offset > 0 {
		// Cut inside the file: from its first whole line.
		if i := bytes.IndexByte(data, '\n'); i >= 0 && i+1 < len(data) {
			rep.Offset += int64(i + 1)
			data = data[i+1:]
		}
	}
	out.Size, out.Offset, out.Data = rep.Size, rep.Offset, string(bytes.ToValidUTF8(data, []byte("\uFFFD")))
	peer.WriteJSON(w, out)
}

// handleDashOutput answers GET /hpc/dashboard/job/output?id=N&stream=:
// the tail of job N's output for a signed-in viewer, through the leader's
// route and its rules.
func (d *Daemon) handleDashOutput(w http.ResponseWriter, r *http.Request) {
	id, _ := WebIdentityFrom(r)
	if id.Anonymous {
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrAccessDenied, Detail: "a job's output is shown to its owner: sign in with a token (scontrol token)"})
		return
	}
	jid, err := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidJobID})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	ctx = peer.WithIdentity(ctx, id.Identity)
	var out *api.JobOutput
	err = throughFailover(ctx, func() (err error) {
		out, err = d.local.JobOutput(ctx, jid, r.URL.Query().Get("stream"), 0)
		return err
	})
	if err != nil {
		code := http.StatusBadRequest
		if ae := (*api.Error)(nil); errors.As(err, &ae) && ae.Message == api.ErrUserIDMissing {
			code = http.StatusForbidden
		}
		peer.WriteErr(w, code, err)
		return
	}
	peer.WriteJSON(w, out)
}
