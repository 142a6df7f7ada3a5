package cluster

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"hpc/cluster/api"
)

// The web side (Slurm's REST API, the dashboard) asks the daemon's own
// socket routes, in its process, with an api.Client (d.local): the same
// handlers, behind the same leaderRoute, which read the caller's identity
// from the request's context (peer.WithIdentity), forward to the leader
// and apply privacy and Slurm's permissions as for the same user's
// command.

// localClient is a client of mux (the socket's routes) in this process.
func localClient(mux http.Handler) *api.Client {
	return api.NewInProcessClient("the node's own routes", handlerTransport{mux})
}

// handlerTransport answers a request with an http.Handler in the process.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil { // as a server's request has it
		req = req.Clone(req.Context())
		req.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	t.h.ServeHTTP(rec, req)
	return &http.Response{
		StatusCode: rec.status, Status: strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		Header: rec.header, Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req,
	}, nil
}

// recorder is the http.ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
