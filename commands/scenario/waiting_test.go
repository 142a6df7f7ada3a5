package scenario

import (
	"bytes"
	"context"
	"testing"
	"time"
)

type fakeWaiter struct {
	started       []string
	clears, dones int
}

func (f *fakeWaiter) Clear() { f.clears++ }
func (f *fakeWaiter) Done()  { f.dones++ }

// A wait shows (Options.Waiting) once it is one, steps aside for the
// narration, and ends with it; a condition that holds at once shows none.
func TestWaitingShown(t *testing.T) {
	f := &fakeWaiter{}
	var out bytes.Buffer
	r := &Run{ctx: context.Background(), o: Options{Out: &out, Waiting: func(what string) Waiter {
		f.started = append(f.started, what)
		return f
	}}}
	r.waitUntil("nothing", time.Minute, func() bool { return true })
	if len(f.started) != 0 {
		t.Fatalf("a condition that held at once showed a wait: %v", f.started)
	}
	n := 0
	r.waitUntil("job 7 to start", time.Minute, func() bool {
		n++
		r.say("look %d", n)
		return n == 3
	})
	if len(f.started) != 1 || f.started[0] != "job 7 to start" || f.dones != 1 || f.clears < 2 || r.waiting != nil {
		t.Errorf("started %v, %d clears, %d dones, still waiting %v", f.started, f.clears, f.dones, r.waiting != nil)
	}
	if got := bytes.Count(out.Bytes(), []byte("look ")); got != 3 {
		t.Errorf("narration %q", out.String())
	}
}
