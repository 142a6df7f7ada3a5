package cluster

import (
	"errors"
	"io"
	"net/http"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/peer"
)

// registerProfileRoutes serves Go's profiles of this daemon to root on its
// local socket, for finding what dominates before making anything faster:
//
//	curl --unix-socket /var/lib/hpc/node1/hpc.sock -o cpu.pprof 'http://x/debug/pprof/profile?seconds=10'
//	curl --unix-socket /var/lib/hpc/node1/hpc.sock -o heap.pprof http://x/debug/pprof/heap
//	go tool pprof -top bin/hpc cpu.pprof
//
// /debug/pprof/NAME serves runtime/pprof's profile NAME (heap, allocs,
// goroutine, block, mutex, threadcreate); ?debug=1 or 2 as text.
// /debug/pprof/trace records an execution trace for ?seconds= (go tool
// trace: where a request waits, on what, and for how long). Another
// node's request is refused: profiles are for the machine's own
// administrator. (net/http/pprof is not imported: its init would run in
// every command this binary is.)
func (d *Daemon) registerProfileRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/profile", rootOnly(cpuProfile))
	mux.HandleFunc("GET /debug/pprof/trace", rootOnly(execTrace))
	mux.HandleFunc("GET /debug/pprof/{name}", rootOnly(namedProfile))
}

// rootOnly admits root on the local socket only.
func rootOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id, ok := peer.IdentityFrom(r.Context()); !ok || id.Node || id.UID != 0 || r.TLS != nil {
			peer.WriteErr(w, http.StatusForbidden, errors.New("profiles are for root on the node's own socket"))
			return
		}
		h(w, r)
	}
}

// cpuProfile records the CPU for ?seconds= (default 30, at most 300).
func cpuProfile(w http.ResponseWriter, r *http.Request) {
	record(w, r, 30, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// execTrace records an execution trace for ?seconds= (default 1, at most
// 300: a busy daemon's trace grows by megabytes a second).
func execTrace(w http.ResponseWriter, r *http.Request) {
	record(w, r, 1, trace.Start, trace.Stop)
}

// record runs start, writing to w, for the request's ?seconds= (def when
// it is missing or not a positive number; at most 300) or until the
// client goes, then stop.
func record(w http.ResponseWriter, r *http.Request, def int, start func(io.Writer) error, stop func()) {
	secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
	if err != nil || secs <= 0 {
		secs = def
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := start(w); err != nil {
		peer.WriteErr(w, http.StatusConflict, err) // another one is running
		return
	}
	select {
	case <-time.After(time.Duration(min(secs, 300)) * time.Second):
	case <-r.Context().Done():
	}
	stop()
}

// namedProfile writes one of runtime/pprof's profiles.
func namedProfile(w http.ResponseWriter, r *http.Request) {
	p := pprof.Lookup(strings.TrimSpace(r.PathValue("name")))
	if p == nil {
		peer.WriteErr(w, http.StatusNotFound, errors.New("no such profile"))
		return
	}
	debug, _ := strconv.Atoi(r.URL.Query().Get("debug"))
	if debug > 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	_ = p.WriteTo(w, debug)
}
