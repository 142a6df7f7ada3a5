package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hpc/cluster/api"
)

// TestLabFailoverSubmit submits in a loop through every node while the
// leader's daemon is killed (twice: node1, then whoever leads next) and
// started again. Every submission is acknowledged (the client sends one
// whose answer was lost again under its token, through the election and
// the restart of its own node), and every acknowledged id is a job that
// exists once: no submission committed twice, none lost.
func TestLabFailoverSubmit(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-failover-", 3, "KillWait=2\n")
	t.Cleanup(func() { l.run(0, l.top, "up", "--dir", l.dir) })
	if out, errs, code := l.run(0, l.top, "scontrol", "takeover", "node1"); code != 0 {
		t.Fatalf("takeover: %s %s", out, errs)
	}

	type ack struct {
		name string
		id   uint64
		err  error
	}
	var mu sync.Mutex
	var acks []ack
	stop := make(chan struct{})
	var stopOnce sync.Once
	var wg sync.WaitGroup
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt() // should the test stop early
	for n := 1; n <= 3; n++ {
		cl := api.NewClient(filepath.Join(l.dir, fmt.Sprintf("node%d", n), "hpc.sock"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("via%d-%d", n, i)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				id, err := cl.Submit(ctx, api.JobSpec{Name: name, Script: "#!/bin/sh\ntrue\n", WorkDir: l.top, Hold: true})
				cancel()
				mu.Lock()
				acks = append(acks, ack{name, id, err})
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}

	killed := "node1"
	for round := 0; round < 2; round++ {
		time.Sleep(time.Second)
		t0 := time.Now()
		l.stopDaemon(killed, syscall.SIGKILL)
		var next string
		waitFor(t, 30*time.Second, "a new leader", func() (bool, string) {
			for n := 1; n <= 3; n++ {
				node := fmt.Sprintf("node%d", n)
				if node == killed {
					continue
				}
				st, err := api.NewClient(filepath.Join(l.dir, node, "hpc.sock")).Status(context.Background())
				if err == nil && st.Leader != "" && st.Leader != killed {
					next = st.Leader
					return true, ""
				}
			}
			return false, ""
		})
		t.Logf("killed %s; %s leads %v later", killed, next, time.Since(t0).Round(time.Millisecond))
		time.Sleep(500 * time.Millisecond)
		if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
			t.Fatalf("up after killing %s: %d\n%s\n%s", killed, code, out, errs)
		}
		t.Logf("%s up again %v after the kill", killed, time.Since(t0).Round(time.Millisecond))
		killed = next
	}
	time.Sleep(time.Second)
	halt()

	jobs, err := api.NewClient(filepath.Join(l.dir, "node1", "hpc.sock")).Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]uint64{}
	for _, j := range jobs {
		byName[j.Spec.Name] = append(byName[j.Spec.Name], j.ID)
	}
	var failed []string
	for _, a := range acks {
		switch ids := byName[a.name]; {
		case a.err != nil:
			failed = append(failed, fmt.Sprintf("%s: %v", a.name, a.err))
		case len(ids) != 1 || ids[0] != a.id:
			t.Errorf("submission %s acknowledged as job %d; jobs of that name: %v", a.name, a.id, ids)
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d submissions failed:\n%s", len(failed), len(acks), strings.Join(failed, "\n"))
	}
	if len(jobs) != len(acks) {
		t.Errorf("%d jobs for %d submissions", len(jobs), len(acks))
	}
	t.Logf("%d submissions through two failovers, each one job", len(acks))
}
