package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"hpc/cluster/agent"
	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// sbcast and sgather: files copied into and out of the nodes of a running
// job. The command talks to its own node (the unix socket only: the file
// streams through that request), which asks the leader whether the caller
// may (the job's owner or root, the job RUNNING: /api/file/job) and then
// carries the file to or from the node's agent piece by piece
// (agent/filecopy.go), each piece a signed node-to-node request; the
// agent reads and writes as the job's owner.

// registerFileRoutes adds sstat's, sbcast's and sgather's routes.
func (d *Daemon) registerFileRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/stat", d.leaderRoute(d.handleStat)) // sstat.go
	mux.HandleFunc("POST /api/file/job", d.leaderRoute(d.handleFileJob))
	mux.HandleFunc("POST /api/file/put", d.handleFilePut)
	mux.HandleFunc("POST /api/file/get", d.handleFileGet)
}

// handleFileJob answers where a running job of the caller's runs and as
// whom its files are written: to its owner and root only.
func (d *Daemon) handleFileJob(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.FileJobRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage})
		return
	}
	j, _ := d.fsm.Job(req.JobID)
	v := d.viewer(id)
	switch {
	case j == nil || !v.listed(j):
		peer.UserErr(w, &api.Error{Message: api.ErrInvalidJobID})
	case id.Node || (id.UID != 0 && id.UID != j.UID):
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrAccessDenied})
	case j.State == api.StatePending:
		peer.UserErr(w, &api.Error{Message: "Job is pending execution"})
	case j.State != api.StateRunning:
		peer.UserErr(w, &api.Error{Message: api.ErrAlreadyDone})
	default:
		peer.WriteJSON(w, api.FileJob{JobID: j.ID, UID: j.UID, GID: j.GID, Start: j.StartTime, Nodes: j.NodeNames()})
	}
}

// fileTarget is the node and file a local file request names, once the
// leader said the caller may.
type fileTarget struct {
	job  api.FileJob
	addr string // the node's API
	path string
}

// fileTarget checks a local file request: the caller on this node's
// socket, a job of theirs that runs on the node named. It answers the
// error itself and returns false.
func (d *Daemon) fileTarget(w http.ResponseWriter, r *http.Request) (fileTarget, bool) {
	var t fileTarget
	id, ok := peer.IdentityFrom(r.Context())
	if _, remote := r.Context().Value(bodyKey{}).([]byte); !ok || remote {
		peer.WriteErr(w, http.StatusForbidden, errors.New("file copies are asked for on the node's socket only"))
		return t, false
	}
	q := r.URL.Query()
	jobID, err := strconv.ParseUint(q.Get("job"), 10, 64)
	if err != nil {
		peer.UserErr(w, &api.Error{Message: api.ErrInvalidJobID})
		return t, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := d.peers.Call(ctx, id, d.addr(d.cfg.APIPort), "/api/file/job", api.FileJobRequest{JobID: jobID}, &t.job); err != nil {
		peer.UserErr(w, err)
		return t, false
	}
	node := q.Get("node")
	if !slices.Contains(t.job.Nodes, node) {
		peer.UserErr(w, &api.Error{Message: "Invalid node name specified"})
		return t, false
	}
	if t.addr, err = d.peers.API(node); err != nil {
		peer.UserErr(w, &api.Error{Message: "Invalid node name specified"})
		return t, false
	}
	t.path = q.Get("path")
	return t, true
}

// handleFilePut streams a file sent by sbcast into its place on one node
// of the job: open there, pieces, close.
func (d *Daemon) handleFilePut(w http.ResponseWriter, r *http.Request) {
	t, ok := d.fileTarget(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	mode, _ := strconv.ParseUint(q.Get("mode"), 8, 32)
	at, _ := strconv.ParseInt(q.Get("atime"), 10, 64)
	mt, _ := strconv.ParseInt(q.Get("mtime"), 10, 64)
	preserve := q.Get("preserve") == "true"
	info := api.FileInfo{Mode: uint32(mode), Atime: time.Unix(0, at), Mtime: time.Unix(0, mt)}
	ref := agent.FileRef{UID: t.job.UID, GID: t.job.GID, Path: t.path}
	ctx := r.Context()
	var tok agent.FileToken
	if err := d.peers.CallNode(ctx, t.addr, "/internal/file/open", agent.FileOpen{FileRef: ref, Force: q.Get("force") == "true"}, &tok); err != nil {
		peer.UserErr(w, err)
		return
	}
	buf := make([]byte, agent.MaxFilePiece)
	var off int64
	var err error
	for {
		n, rerr := io.ReadFull(r.Body, buf)
		if n > 0 {
			wq := url.Values{"token": {tok.Token}, "off": {strconv.FormatInt(off, 10)}}
			if _, err = d.rawNodeCall(ctx, t.addr, "/internal/file/write?"+wq.Encode(), buf[:n]); err != nil {
				break
			}
			off += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	// A body cut short (the command went away) is not the file.
	if size, perr := strconv.ParseInt(q.Get("size"), 10, 64); err == nil && (perr != nil || size != off) {
		err = &api.Error{Message: fmt.Sprintf("sent %d bytes of a file of %s", off, q.Get("size"))}
	}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cerr := d.peers.CallNode(cctx, t.addr, "/internal/file/close", agent.FileClose{Token: tok.Token, Commit: err == nil, Preserve: preserve, Info: info}, nil)
	if err == nil {
		err = cerr
	}
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}

// handleFileGet streams a file of one node of the job to sgather (its
// FileInfo in a header), or removes it there (remove=true).
func (d *Daemon) handleFileGet(w http.ResponseWriter, r *http.Request) {
	t, ok := d.fileTarget(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	ref := agent.FileRef{UID: t.job.UID, GID: t.job.GID, Path: t.path}
	if r.URL.Query().Get("remove") == "true" {
		if err := d.peers.CallNode(ctx, t.addr, "/internal/file/remove", ref, nil); err != nil {
			peer.UserErr(w, err)
			return
		}
		peer.WriteJSON(w, struct{}{})
		return
	}
	var info api.FileInfo
	if err := d.peers.CallNode(ctx, t.addr, "/internal/file/stat", ref, &info); err != nil {
		peer.UserErr(w, err)
		return
	}
	h, _ := json.Marshal(info)
	w.Header().Set(api.FileInfoHeader, string(h))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for off := int64(0); off < info.Size; {
		n := int(min(info.Size-off, agent.MaxFilePiece))
		body, _ := json.Marshal(agent.FileRead{FileRef: ref, Offset: off, Len: n})
		b, err := d.rawNodeCall(ctx, t.addr, "/internal/file/read", body)
		if err != nil || len(b) == 0 {
			// Cut the answer short: the command sees fewer bytes than
			// the size it was told.
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(b); err != nil {
			return
		}
		_ = rc.Flush()
		off += int64(len(b))
	}
}

// rawNodeCall posts body as it is to path on the node at addr, signed as
// a node, and returns the answer's body (an api.Error if not 200).
func (d *Daemon) rawNodeCall(ctx context.Context, addr, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, peer.URL(addr, path), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	peer.Sign(d.o.Key, req, peer.Identity{Node: true}, body)
	resp, err := d.peers.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer peer.DrainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Message != "" {
			return nil, &e
		}
		return nil, fmt.Errorf("%s: %s", path, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, agent.MaxFilePiece+1))
}
