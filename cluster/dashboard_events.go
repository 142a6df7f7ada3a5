package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// The dashboard's live updates: server-sent events (text/event-stream).
// Each viewer's snapshots are built by one feed, shared by every stream of
// that viewer (what a viewer sees depends on who it is: privacy.go). A
// feed polls the cluster every dashPoll while it has streams and hands a
// snapshot to its streams only when it differs from the last; each stream
// holds at most one snapshot not yet written (a newer one replaces it), so
// a slow client only ever misses intermediate snapshots and never holds up
// the feed, and a client that cannot take a write within dashWriteTimeout
// is dropped. At most dashMaxStreams streams are open on a node.

const (
	dashPoll         = 500 * time.Millisecond
	dashHeartbeat    = 15 * time.Second
	dashWriteTimeout = 10 * time.Second
	dashMaxStreams   = 32
	// dashRetryMS is how long the browser waits before it reconnects a
	// stream that broke (the SSE retry: field).
	dashRetryMS = 2000
)

// dashHub holds a node's feeds and counts its streams.
type dashHub struct {
	d       *Daemon
	mu      sync.Mutex
	streams int
	feeds   map[string]*dashFeed
}

// dashFeed polls for one viewer.
type dashFeed struct {
	id   WebIdentity
	key  string
	subs map[chan []byte]bool // under the hub's lock
	last []byte               // the last snapshot sent, under the hub's lock
}

func newDashHub(d *Daemon) *dashHub { return &dashHub{d: d, feeds: map[string]*dashFeed{}} }

// viewerKey names a viewer's feed: every anonymous viewer sees the same.
func viewerKey(id WebIdentity) string {
	if id.Anonymous {
		return "anonymous"
	}
	return "uid:" + strconv.FormatUint(uint64(id.UID), 10) + ":" + id.User
}

// subscribe adds a stream for viewer id: its channel, and false when the
// node already has dashMaxStreams.
func (h *dashHub) subscribe(id WebIdentity) (chan []byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streams >= dashMaxStreams {
		return nil, false
	}
	h.streams++
	ch := make(chan []byte, 1)
	key := viewerKey(id)
	f := h.feeds[key]
	if f == nil {
		f = &dashFeed{id: id, key: key, subs: map[chan []byte]bool{}}
		h.feeds[key] = f
		go h.run(f) // it ends with its last stream, or with the daemon
	}
	f.subs[ch] = true
	if f.last != nil {
		ch <- f.last
	}
	return ch, true
}

// unsubscribe drops a stream; its feed stops with its last stream.
func (h *dashHub) unsubscribe(id WebIdentity, ch chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streams--
	if f := h.feeds[viewerKey(id)]; f != nil {
		delete(f.subs, ch)
	}
}

// run is a feed's loop: a snapshot every dashPoll, handed on when it
// differs from the last, until the feed has no stream or the daemon stops.
func (h *dashHub) run(f *dashFeed) {
	var prev *dashState
	tick := time.NewTicker(dashPoll)
	defer tick.Stop()
	for {
		st := h.d.dashSnapshot(h.d.ctx, f.id, prev)
		if st.Error == "" {
			prev = st
		}
		body, err := json.Marshal(st)
		if err == nil {
			h.publish(f, body)
		}
		select {
		case <-h.d.ctx.Done():
			return
		case <-tick.C:
		}
		h.mu.Lock()
		idle := len(f.subs) == 0
		if idle {
			delete(h.feeds, f.key)
		}
		h.mu.Unlock()
		if idle {
			return
		}
	}
}

// publish hands body to the feed's streams if it differs from the last:
// each stream's channel holds the newest snapshot only.
func (h *dashHub) publish(f *dashFeed, body []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if bytes.Equal(body, f.last) {
		return
	}
	f.last = body
	for ch := range f.subs {
		select {
		case <-ch: // a snapshot the stream has not written yet: replaced
		default:
		}
		ch <- body
	}
}

// serveEvents is GET /hpc/dashboard/events: the stream of snapshots, each
// an event "state" whose data is the snapshot with the time it was sent,
// and a comment line every dashHeartbeat so that proxies and the browser
// see the stream alive.
func (h *dashHub) serveEvents(w http.ResponseWriter, r *http.Request) {
	id, _ := WebIdentityFrom(r)
	ch, ok := h.subscribe(id)
	if !ok {
		w.Header().Set("Retry-After", "5")
		peer.WriteErr(w, http.StatusServiceUnavailable, &api.Error{Message: fmt.Sprintf("too many dashboard streams on this node (%d)", dashMaxStreams)})
		return
	}
	defer h.unsubscribe(id, ch)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(text string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(dashWriteTimeout))
		if _, err := fmt.Fprint(w, text); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(fmt.Sprintf("retry: %d\n\n", dashRetryMS)) {
		return
	}
	beat := time.NewTicker(dashHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.d.ctx.Done():
			return
		case <-beat.C:
			if !write(": heartbeat\n\n") {
				return
			}
		case body := <-ch:
			if !write("event: state\ndata: " + withNow(body) + "\n\n") {
				return
			}
		}
	}
}

// withNow sets the snapshot's "now" to the time it is sent (the feed
// compares snapshots without it).
func withNow(body []byte) string {
	now, _ := json.Marshal(time.Now())
	return string(bytes.Replace(body, []byte(`"now":"0001-01-01T00:00:00Z"`), []byte(`"now":`+string(now)), 1))
}
