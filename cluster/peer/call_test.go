package peer

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Calls to a node go over one connection, one after another: each answer
// is read to its end, the ones dropped too, so that its connection goes
// back to the pool instead of being closed.
func TestCallsReuseConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "Job is busy"})
		default:
			_ = json.NewEncoder(w).Encode(map[string]int{"n": 1})
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	c := &Caller{Key: []byte("k"), HTTP: srv.Client()}
	addr := srv.Listener.Addr().String()
	ctx := context.Background()
	for range 5 {
		var out struct{ N int }
		if err := c.CallNode(ctx, addr, "/ok", struct{}{}, &out); err != nil || out.N != 1 {
			t.Fatalf("call: %v %+v", err, out)
		}
		if err := c.CallNode(ctx, addr, "/ok", struct{}{}, nil); err != nil { // the answer dropped
			t.Fatal(err)
		}
		if err := c.CallNode(ctx, addr, "/fail", struct{}{}, nil); err == nil || err.Error() != "Job is busy" {
			t.Fatalf("refused call: %v", err)
		}
		var got map[string]int
		if err := c.Get(ctx, addr, "/get", &got); err != nil || got["n"] != 1 {
			t.Fatalf("get: %v %v", err, got)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 calls opened %d connections, want 1", n)
	}
}
