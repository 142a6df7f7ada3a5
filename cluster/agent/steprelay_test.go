package agent

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// relayStream is a launcher's stream from a relay: an HTTP answer read
// frame by frame. done ends it as a launcher going away would.
type relayStream struct {
	frames chan TaskFrame
	done   chan struct{}
	closed chan struct{}
	leave  sync.Once
}

// end closes done, once.
func (s *relayStream) end() { s.leave.Do(func() { close(s.done) }) }

// streamFrom serves rel to a new HTTP client and returns its stream.
func streamFrom(t *testing.T, rel *stepRelay) *relayStream {
	t.Helper()
	s := &relayStream{frames: make(chan TaskFrame, 100), done: make(chan struct{}), closed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(s.closed)
		rel.serve(peer.NewNDJSON(w), s.done)
	}))
	t.Cleanup(srv.Close)
	// Cleanups run last first: a test that stopped early ends its
	// streams, whose handlers srv.Close waits for.
	t.Cleanup(s.end)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var f TaskFrame
			if json.Unmarshal(sc.Bytes(), &f) == nil {
				s.frames <- f
			}
		}
		close(s.frames)
	}()
	return s
}

func (s *relayStream) next(t *testing.T) TaskFrame {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			t.Fatal("the stream ended")
		}
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame came")
	}
	return TaskFrame{}
}

// A step's share keeps its output while its launcher is away and gives it
// to the next one, with the task ends so far; the share is over once a
// launcher has its end.
func TestStepRelayReattach(t *testing.T) {
	var abandoned atomic.Bool
	rel := newStepRelay(time.Minute, func() { abandoned.Store(true) })
	first := streamFrom(t, rel)
	w := relayWriter{rel, 3, api.StreamStdout}
	if _, err := io.WriteString(w, "one\n"); err != nil {
		t.Fatal(err)
	}
	if f := first.next(t); f.Task != 3 || string(f.Data) != "one\n" {
		t.Fatalf("first frame %+v", f)
	}
	rel.exit(api.TaskExit{Task: 4, ExitCode: 2})
	if f := first.next(t); f.Exit == nil || f.Exit.Task != 4 {
		t.Fatalf("exit frame %+v", f)
	}
	first.end() // the launcher goes away
	<-first.closed
	// Output written now waits for the next launcher.
	wrote := make(chan struct{})
	go func() {
		io.WriteString(w, "two\n")
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatal("a write went through with no launcher attached")
	case <-time.After(100 * time.Millisecond):
	}
	second := streamFrom(t, rel)
	if f := second.next(t); f.Exit == nil || f.Exit.Task != 4 || f.Exit.ExitCode != 2 {
		t.Fatalf("the task end was not sent again: %+v", f)
	}
	if f := second.next(t); string(f.Data) != "two\n" {
		t.Fatalf("waiting output %+v", f)
	}
	<-wrote
	rel.finish(NodeEnd{OOM: true})
	if f := second.next(t); f.End == nil || !f.End.OOM {
		t.Fatalf("end frame %+v", f)
	}
	select {
	case <-rel.delivered:
	case <-time.After(10 * time.Second):
		t.Fatal("the share is not over once its end was delivered")
	}
	<-second.closed
	if abandoned.Load() {
		t.Error("a share whose launcher came back was abandoned")
	}
}

// A share whose launcher does not come back in time is abandoned (its
// step killed) and its output dropped rather than blocking its tasks.
func TestStepRelayGivesUp(t *testing.T) {
	abandoned := make(chan struct{})
	rel := newStepRelay(50*time.Millisecond, func() { close(abandoned) })
	rel.expect()
	select {
	case <-abandoned:
	case <-time.After(10 * time.Second):
		t.Fatal("never abandoned")
	}
	if _, err := io.WriteString(relayWriter{rel, 0, api.StreamStdout}, "dropped\n"); err != nil {
		t.Fatal(err)
	}
	rel.finish(NodeEnd{})
	select {
	case <-rel.delivered:
	default:
		t.Fatal("an abandoned share is not over at its end")
	}
	late := streamFrom(t, rel)
	if f := late.next(t); f.End == nil || f.End.Error == "" {
		t.Fatalf("a launcher too late got %+v", f)
	}
}

// A stream that breaks after the share's end reached it (an output write
// that failed late) does not start a wait for another launcher: the share
// is over, and nothing is abandoned or closed twice.
func TestStepRelayOverStaysOver(t *testing.T) {
	var abandoned atomic.Bool
	rel := newStepRelay(20*time.Millisecond, func() { abandoned.Store(true) })
	s := streamFrom(t, rel)
	rel.finish(NodeEnd{})
	if f := s.next(t); f.End == nil {
		t.Fatalf("end frame %+v", f)
	}
	<-rel.delivered
	out := peer.NewNDJSON(httptest.NewRecorder())
	rel.mu.Lock()
	rel.out = out // a stream a late write still had
	rel.mu.Unlock()
	rel.detach(out)
	rel.giveUp()
	time.Sleep(100 * time.Millisecond)
	if abandoned.Load() {
		t.Error("a share that was over was abandoned")
	}
}
