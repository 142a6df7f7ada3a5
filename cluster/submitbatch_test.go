package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
)

// submitEntries reads the Submit and SubmitBatch entries of the leader's
// log after index from: the number of jobs in each.
func submitEntries(t *testing.T, d *Daemon, from uint64) (single, batches []int) {
	t.Helper()
	last, err := d.bolt.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	for i := from + 1; i <= last; i++ {
		var l raft.Log
		if err := d.bolt.GetLog(i, &l); err != nil || l.Type != raft.LogCommand {
			continue
		}
		op, err := fsm.Decode(l.Data)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		switch op := op.(type) {
		case *fsm.Submit:
			single = append(single, 1)
		case *fsm.SubmitBatch:
			batches = append(batches, len(op.Jobs))
		}
	}
	return single, batches
}

// Submits that arrive while submitBatchesInFlight entries are committing
// wait, and go as one SubmitBatch entry once one of those is done: each
// is answered with its own id, the ids are consecutive, and the log holds
// one entry for all of them. A submit on an idle queue goes at once, as a
// Submit entry of its own.
func TestSubmitsGroupWhileCommitting(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	spec := api.JobSpec{Name: "group", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true}
	first, err := cl.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	from, _ := d.bolt.LastIndex()

	sq := &d.submitQ
	sq.mu.Lock()
	sq.inFlight = submitBatchesInFlight // as if that many were committing
	sq.mu.Unlock()
	const n = 40
	type answer struct {
		id  uint64
		err error
	}
	answers := make(chan answer, n)
	for range n {
		go func() {
			id, err := cl.Submit(ctx, spec)
			answers <- answer{id, err}
		}()
	}
	waitUntil(t, 20*time.Second, "the submits to queue", func() (bool, string) {
		sq.mu.Lock()
		defer sq.mu.Unlock()
		return len(sq.waiting) == n, ""
	})
	select {
	case a := <-answers:
		t.Fatalf("a submit was answered while it should wait: %+v", a)
	case <-time.After(200 * time.Millisecond):
	}
	// One of the entries in flight is done: the queue goes as one group.
	sq.mu.Lock()
	sq.inFlight--
	group := sq.take()
	sq.mu.Unlock()
	go d.commitSubmits(group)

	var ids []uint64
	for range n {
		a := <-answers
		if a.err != nil {
			t.Fatal(a.err)
		}
		ids = append(ids, a.id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != first+1+uint64(i) {
			t.Fatalf("ids %v: not each its own, following %d", ids, first)
		}
	}
	single, batches := submitEntries(t, d, from)
	if len(single) != 0 || !slices.Equal(batches, []int{n}) {
		t.Errorf("entries: %d Submit, SubmitBatch of %v jobs; want one SubmitBatch of %d", len(single), batches, n)
	}
	for _, id := range ids {
		if j, err := cl.Job(ctx, id); err != nil || len(j) != 1 || j[0].State != api.StatePending || j[0].Hold != "user" {
			t.Fatalf("job %d: %+v %v", id, j, err)
		}
	}

	sq.mu.Lock()
	if sq.inFlight != 0 || len(sq.waiting) != 0 {
		t.Errorf("after the group: %d in flight, %d waiting", sq.inFlight, len(sq.waiting))
	}
	sq.mu.Unlock()
	from, _ = d.bolt.LastIndex()
	if _, err := cl.Submit(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if single, batches := submitEntries(t, d, from); len(single) != 1 || len(batches) != 0 {
		t.Errorf("a lone submit: %d Submit, SubmitBatch of %v", len(single), batches)
	}
}

// A group stops at maxSubmitBatch jobs, and at maxSubmitBatchBytes of
// entry unless that would leave it empty.
func TestSubmitGroupBounds(t *testing.T) {
	q := func(script int) *queuedSubmit {
		return &queuedSubmit{sub: fsm.BatchSubmit{Job: &api.Job{Spec: api.JobSpec{Script: string(make([]byte, script))}}}}
	}
	var sq submitQueue
	for range maxSubmitBatch + 3 {
		sq.waiting = append(sq.waiting, q(10))
	}
	if g := sq.take(); len(g) != maxSubmitBatch || len(sq.waiting) != 3 {
		t.Errorf("took %d, left %d", len(g), len(sq.waiting))
	}
	sq.waiting = []*queuedSubmit{q(maxSubmitBatchBytes + 1), q(10)}
	if g := sq.take(); len(g) != 1 || len(sq.waiting) != 1 {
		t.Errorf("a job past the bound: took %d, left %d", len(g), len(sq.waiting))
	}
	half := maxSubmitBatchBytes/2 - submitOverhead
	sq.waiting = []*queuedSubmit{q(half), q(half), q(1)}
	if g := sq.take(); len(g) != 2 || len(sq.waiting) != 1 {
		t.Errorf("up to the bound: took %d, left %d", len(g), len(sq.waiting))
	}
	if g := sq.take(); len(g) != 1 || sq.waiting != nil {
		t.Errorf("the last: took %d, left %v", len(g), sq.waiting)
	}
}

// submitSize, which bounds a group's entry, is never less than what the
// job adds to the entry: a job as sbatch sends it from a shell (its
// script, 60 variables, the usual options set), and the same job bare.
func TestSubmitSizeCoversEntry(t *testing.T) {
	env := make([]string, 60)
	for i := range env {
		env[i] = fmt.Sprintf("VAR_%02d=/usr/local/lib/something/%d:/usr/lib/x86_64-linux-gnu", i, i)
	}
	full := &api.Job{Spec: api.JobSpec{Name: "analysis", Partition: "debug", WorkDir: "/home/alice/project",
		Script: "#!/bin/bash\n#SBATCH -n 4\nsrun ./analyse input.dat\n", Env: env, TimeLimitMin: 60, NTasks: 4,
		CPUsPerTask: 2, MemPerCPUMB: 1000, Output: "/home/alice/project/slurm-%j.out", Account: "physics", QOS: "normal",
		Constraint: "fast", Array: "1-10%2"},
		UID: 1000, GID: 1000, User: "alice", Group: "alice", Account: "physics", Hold: "user"}
	bare := &api.Job{Spec: api.JobSpec{Name: "wrap", WorkDir: "/tmp"}, UID: 1000, GID: 1000, User: "alice", Group: "alice"}
	entry := func(jobs ...*api.Job) int {
		b := &fsm.SubmitBatch{Time: time.Now()}
		for _, j := range jobs {
			b.Jobs = append(b.Jobs, fsm.BatchSubmit{Job: j, Token: "0123456789abcdef0123456789abcdef"})
		}
		data, err := fsm.Encode(b)
		if err != nil {
			t.Fatal(err)
		}
		return len(data)
	}
	for name, j := range map[string]*api.Job{"full": full, "bare": bare} {
		if added := entry(j, j) - entry(j); submitSize(j) < added {
			t.Errorf("%s: submitSize %d, the job adds %d bytes to the entry", name, submitSize(j), added)
		}
	}
}
