package cluster

import (
	"fmt"
	"sync"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
)

// Submits are committed in groups. A submit that arrives while fewer than
// submitBatchesInFlight groups are committing is proposed at once, alone,
// and takes no longer than before. One that arrives while that many are
// committing waits in the queue, and the next group to go takes the whole
// queue as one SubmitBatch entry: one entry, one disk write on each
// controller and one message to each follower for a burst, where each job
// was one of each. Every submit is still answered only once its entry is
// committed (fsync on a majority), with its own job id or its own error.

const (
	// submitBatchesInFlight is how many submit entries the leader has
	// proposed and not yet seen committed before new submits wait to
	// form a group.
	submitBatchesInFlight = 2
	// maxSubmitBatch bounds a group by jobs, and maxSubmitBatchBytes by
	// their size in the entry (one job is always taken, whatever its
	// size): the log's newest entries stay in memory (raftLogCache) and a
	// message to a follower carries up to raftMaxAppend of them.
	maxSubmitBatch      = 256
	maxSubmitBatchBytes = 512 << 10
	// submitOverhead is a job's share of the entry besides its script
	// and environment: 264 bytes for a bare job, 522 with sbatch's usual
	// options set (TestSubmitSizeCoversEntry); the rest is room for jobs
	// that set more.
	submitOverhead = 768
)

// submitQueue is the leader's submits waiting to be proposed.
type submitQueue struct {
	mu       sync.Mutex
	waiting  []*queuedSubmit
	inFlight int
}

type queuedSubmit struct {
	sub  fsm.BatchSubmit
	done chan submitDone // buffered: the committer never waits on it
}

type submitDone struct {
	res fsm.Result
	err error
}

// submit commits one job (its token too) alone or in a group and returns
// its result: the new job's id, its own refusal, or the commit's error.
func (d *Daemon) submit(job *api.Job, token string) (fsm.Result, error) {
	q := &queuedSubmit{sub: fsm.BatchSubmit{Job: job, Token: token}, done: make(chan submitDone, 1)}
	sq := &d.submitQ
	sq.mu.Lock()
	sq.waiting = append(sq.waiting, q)
	if sq.inFlight >= submitBatchesInFlight {
		sq.mu.Unlock()
		r := <-q.done
		return r.res, r.err
	}
	sq.inFlight++
	group := sq.take()
	sq.mu.Unlock()
	d.commitSubmits(group)
	r := <-q.done
	return r.res, r.err
}

// take removes the next group from the queue. Called with mu held.
func (sq *submitQueue) take() []*queuedSubmit {
	n, size := 0, 0
	for n < len(sq.waiting) && n < maxSubmitBatch {
		size += submitSize(sq.waiting[n].sub.Job)
		if n > 0 && size > maxSubmitBatchBytes {
			break
		}
		n++
	}
	group := sq.waiting[:n:n]
	sq.waiting = sq.waiting[n:]
	if len(sq.waiting) == 0 {
		sq.waiting = nil // let the array go
	}
	return group
}

// submitSize is about the size of a job in the entry: its script and
// environment, which are most of it, and the rest.
func submitSize(j *api.Job) int {
	n := submitOverhead + len(j.Spec.Script)
	for _, kv := range j.Spec.Env {
		n += len(kv) + 3 // its quotes and comma in the entry
	}
	return n
}

// commitSubmits proposes group, answers each of its submits, and hands
// its place in flight to the group that waited meanwhile, if any.
func (d *Daemon) commitSubmits(group []*queuedSubmit) {
	d.proposeSubmits(group)
	sq := &d.submitQ
	sq.mu.Lock()
	if len(sq.waiting) == 0 {
		sq.inFlight--
		sq.mu.Unlock()
		return
	}
	next := sq.take()
	sq.mu.Unlock()
	// The caller's own submit is answered now: its request goes on while
	// another goroutine commits the next group.
	go d.commitSubmits(next)
}

// proposeSubmits commits group as one entry: a Submit for one job (the
// entry a lone submit always was), a SubmitBatch for more.
func (d *Daemon) proposeSubmits(group []*queuedSubmit) {
	now := d.now()
	if len(group) == 1 {
		s := group[0].sub
		res, err := d.propose(&fsm.Submit{Time: now, Job: s.Job, Token: s.Token})
		group[0].done <- submitDone{res, err}
		return
	}
	b := &fsm.SubmitBatch{Time: now, Jobs: make([]fsm.BatchSubmit, len(group))}
	for i, q := range group {
		b.Jobs[i] = q.sub
	}
	res, err := d.propose(b)
	for i, q := range group {
		switch {
		case err == nil && i < len(res.Batch):
			q.done <- submitDone{res.Batch[i], res.Batch[i].Err}
		case err == nil:
			q.done <- submitDone{err: fmt.Errorf("commit: the batch's result has %d of its %d jobs", len(res.Batch), len(group))}
		default:
			q.done <- submitDone{err: err}
		}
	}
}
