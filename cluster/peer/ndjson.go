package peer

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
)

// ErrDetached ends the writes to a stream whose reader has gone.
var ErrDetached = errors.New("the launcher went away")

// NDJSON writes a streamed answer, one JSON value a line, each flushed at
// once. Safe for concurrent use; after the first failed write it drops
// everything.
type NDJSON struct {
	mu  sync.Mutex
	enc *json.Encoder
	fl  http.Flusher
	err error
}

// NewNDJSON starts a streamed answer on w.
func NewNDJSON(w http.ResponseWriter) *NDJSON {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	n := &NDJSON{enc: json.NewEncoder(w), fl: fl}
	if fl != nil {
		fl.Flush()
	}
	return n
}

// Close ends the stream for its writers: sends fail from now on (one in
// progress finishes first).
func (n *NDJSON) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err == nil {
		n.err = ErrDetached
	}
}

// Send writes v as one line and flushes it.
func (n *NDJSON) Send(v any) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil {
		return n.err
	}
	if n.err = n.enc.Encode(v); n.err == nil && n.fl != nil {
		n.fl.Flush()
	}
	return n.err
}
