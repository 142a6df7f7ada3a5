package cluster

import (
	"errors"
	"net/http"
	"net/http/pprof"

	"hpc/cluster/peer"
)

// registerProfileRoutes serves Go's profiles (CPU, heap, allocations,
// blocking, goroutines) of this daemon to root on its local socket, for
// finding what dominates before making anything faster:
//
//	curl --unix-socket /var/lib/hpc/node1/hpc.sock -o cpu.pprof 'http://x/debug/pprof/profile?seconds=10'
//	go tool pprof -top bin/hpc cpu.pprof
//
// Another node's request is refused: profiles are for the machine's own
// administrator.
func (d *Daemon) registerProfileRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", rootOnly(pprof.Index))
	mux.HandleFunc("/debug/pprof/cmdline", rootOnly(pprof.Cmdline))
	mux.HandleFunc("/debug/pprof/profile", rootOnly(pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", rootOnly(pprof.Symbol))
	mux.HandleFunc("/debug/pprof/trace", rootOnly(pprof.Trace))
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
