package e2e

// TestJepsen: many clients submit while the cluster loses its leader,
// a follower and a compute node, and afterwards the history of what the
// clients were told is checked against what the cluster holds and what
// the jobs themselves wrote down.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

const (
	// jepsenSubnet is the lab's 10.62.0.x (TestFaultHarness has 61).
	jepsenSubnet = 62
	// jepsenSubmitters submit jepsenJobs jobs each: the first two with
	// the sbatch command, the others with the Go API client.
	jepsenSubmitters = 4
	jepsenJobs       = 250
	// jepsenSlurmdTimeout is short, so that the frozen compute node is
	// marked down (and its jobs requeued) within seconds.
	jepsenSlurmdTimeout = 3
	// jepsenPace is the pause between two submissions of one submitter:
	// it spreads the submissions over the whole fault schedule, so that
	// every fault meets submissions in flight.
	jepsenPace = 150 * time.Millisecond
	// jepsenTries is how often a submitter tries one submission whose
	// client gave up (each try a new sbatch, or a new token), as a user
	// would submit again; a retry may make a second job, counted apart.
	jepsenTries = 5
)

// jepsenAck is one submission: its tag (the job's name and its marker
// file's), the id it was acknowledged with (0 if never) and the errors
// its tries met before that.
type jepsenAck struct {
	sub, seq int
	tag      string
	id       uint64
	via      []string // the node of each try
	errs     []string
	at, took time.Duration // when (since the start) the submission began, and how long until acknowledged
}

// jepsenRun is the history of one run: the submissions and the faults.
type jepsenRun struct {
	l     *netLab
	marks string // the marker files' directory
	start time.Time
	acked atomic.Int64

	mu       sync.Mutex
	subs     [jepsenSubmitters][]jepsenAck
	timeline []string
}

// TestJepsen runs 4 submitters of 250 jobs each (two through sbatch, two
// through the API client) against a 4-node lab (node1-3 controllers,
// node4 compute only) while the leader is killed with SIGKILL three times,
// a follower is partitioned off alone once, and node4 is frozen past
// SlurmdTimeout. Every job appends its id, restart count and host to a
// marker file of its submission. Afterwards every acknowledged id must be
// one job, in a final state, of its submission's name; no submission may
// have made two jobs unless its client gave up and submitted again; no job
// may have run twice with one restart count; each submitter's ids rise;
// and the three controllers' accounting databases hold the same rows.
func TestJepsen(t *testing.T) {
	needLab(t)
	cfg, err := config.LabConfig(4)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.ControlHosts) != 3 || cfg.IsController("node4") {
		t.Fatalf("config.Lab(4) has controllers %v; the test expects node1-3", cfg.ControlHosts)
	}
	t0 := time.Now()
	// MinJobAge keeps every finished job in the state, so its restart
	// count can be read at the end.
	l := startNetLab(t, jepsenSubnet, 4, fmt.Sprintf("SlurmdTimeout=%d\nMinJobAge=3600\nKillWait=2\n", jepsenSlurmdTimeout))
	r := &jepsenRun{l: l, marks: filepath.Join(l.top, "marks"), start: time.Now()}
	if err := os.Mkdir(r.marks, 0o777); err != nil {
		t.Fatal(err)
	}
	r.event(fmt.Sprintf("lab up after %v", time.Since(t0).Round(100*time.Millisecond)))
	// Before the lab's own cleanup: the timeline comes out even when the
	// test stops early, ahead of the daemons' logs.
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Logf("fault timeline:\n%s", strings.Join(r.timeline, "\n"))
	})

	stop := make(chan struct{})
	var stopOnce sync.Once
	var wg sync.WaitGroup
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt() // should the test stop early
	for s := range jepsenSubmitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.submitter(s, stop)
		}()
	}
	r.faults()
	wg.Wait()
	r.event(fmt.Sprintf("%d of %d submissions acknowledged", r.acked.Load(), jepsenSubmitters*jepsenJobs))

	lead := l.waitAgree()
	r.waitFinal(lead)
	r.check(lead)
	r.latencies()
	r.sameAccounting()
}

// event adds a line to the timeline, with the time since the start and
// how many submissions were acknowledged by then.
func (r *jepsenRun) event(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timeline = append(r.timeline, fmt.Sprintf("%7.1fs  %4d acked  %s", time.Since(r.start).Seconds(), r.acked.Load(), what))
}

// jepsenVia are the nodes each submitter goes through, one after another:
// killed and partitioned controllers and the frozen compute node alike. A
// client whose node is away waits for it (the API client and sbatch send
// a submission again under its token for api.SubmitRetryWait).
var jepsenVia = [jepsenSubmitters][]string{
	{"node4", "node1"},
	{"node1", "node2", "node3"},
	{"node2", "node3", "node4"},
	{"node3", "node1", "node2", "node4"},
}

// submitter makes submitter s's jepsenJobs submissions in order, each
// tried up to jepsenTries times, until stop.
func (r *jepsenRun) submitter(s int, stop <-chan struct{}) {
	via := jepsenVia[s]
	for seq := range jepsenJobs {
		a := jepsenAck{sub: s, seq: seq, tag: fmt.Sprintf("jp%d-%03d", s, seq), at: time.Since(r.start)}
		for try := 0; try < jepsenTries && a.id == 0; try++ {
			select {
			case <-stop:
				return
			default:
			}
			node := via[(seq+try)%len(via)]
			a.via = append(a.via, node)
			id, err := r.submitOnce(s, node, a.tag)
			if err != nil {
				a.errs = append(a.errs, fmt.Sprintf("via %s: %v", node, err))
				continue
			}
			a.id = id
			a.took = time.Since(r.start) - a.at
			r.acked.Add(1)
		}
		r.mu.Lock()
		r.subs[s] = append(r.subs[s], a)
		r.mu.Unlock()
		time.Sleep(jepsenPace)
	}
}

// jepsenLine is what a job's run appends to its marker file as it
// begins: its id, its restart count (Slurm's SLURM_RESTART_COUNT, unset on
// a first run) and the node it ran on. The job then sleeps (jepsenSleep),
// so that the killed and frozen nodes have jobs running when they go.
const (
	jepsenLine  = `echo "$SLURM_JOB_ID ${SLURM_RESTART_COUNT:-0} $SLURMD_NODENAME" >> `
	jepsenSleep = "sleep 0.5"
)

// submitOnce submits the job of tag through node: with sbatch for the
// first two submitters, with the API client for the others.
func (r *jepsenRun) submitOnce(s int, node, tag string) (uint64, error) {
	cmd := jepsenLine + filepath.Join(r.marks, tag) + "; " + jepsenSleep
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if s >= 2 {
		return r.l.client(node).Submit(ctx, api.JobSpec{
			Name: tag, WorkDir: r.l.top, Output: "/dev/null", Script: "#!/bin/sh\n" + cmd + "\n",
		})
	}
	sb := exec.CommandContext(ctx, filepath.Join(r.l.links, "sbatch"), "-J", tag, "-o", "/dev/null", "--wrap", cmd)
	sb.Dir = r.l.top
	sb.Env = append(os.Environ(), "HPC_DIR="+r.l.dir, "HPC_SOCKET="+filepath.Join(r.l.dir, node, "hpc.sock"))
	var out, errb strings.Builder
	sb.Stdout, sb.Stderr = &out, &errb
	err := sb.Run()
	if m := submittedRE.FindStringSubmatch(out.String()); err == nil && m != nil {
		return strconv.ParseUint(m[1], 10, 64)
	}
	return 0, fmt.Errorf("sbatch: %v: %q %q", err, out.String(), strings.TrimSpace(errb.String()))
}

// faults runs the schedule while the submitters go on: kill -9 of the
// leader, a follower partitioned alone, kill -9 of the leader, node4
// frozen past SlurmdTimeout, kill -9 of the leader. Each fault begins once
// a further share of the submissions is acknowledged, and the cluster is
// whole again (a leader every node follows) before the next.
func (r *jepsenRun) faults() {
	total := int64(jepsenSubmitters * jepsenJobs)
	steps := []func(){r.killLeader, r.partitionFollower, r.killLeader, r.freezeCompute, r.killLeader}
	for i, step := range steps {
		want := total * int64(i+1) / int64(len(steps)+3)
		poll(5*time.Minute, func() (bool, string) { return r.acked.Load() >= want, "" })
		step()
	}
}

// killLeader kills the leader's daemon with SIGKILL, waits for another
// leader, and starts the daemon again a few seconds later.
func (r *jepsenRun) killLeader() {
	l := r.l
	lead := l.waitAgree()
	if err := l.fn.Kill9(lead); err != nil {
		l.t.Fatal(err)
	}
	r.event("kill -9 " + lead + " (the leader)")
	next := l.waitLeader(otherController(lead, ""), lead)
	r.event(next + " leads")
	time.Sleep(3 * time.Second) // the daemon stays away a while
	l.restart(lead)
	r.event("restarted " + lead)
	l.waitAgree()
	r.event("every node follows one leader")
}

// partitionFollower puts a controller that does not lead alone on the
// minority side for a few seconds, then heals.
func (r *jepsenRun) partitionFollower() {
	l := r.l
	lead := l.waitAgree()
	f := otherController(lead, "")
	if err := l.fn.Partition(f); err != nil {
		l.t.Fatal(err)
	}
	r.event("partition " + f + " (a follower) alone")
	time.Sleep(5 * time.Second)
	if err := l.fn.Heal(); err != nil {
		l.t.Fatal(err)
	}
	r.event("heal")
	next := l.waitAgree()
	r.event("every node follows " + next)
}

// freezeCompute stops node4's daemon (SIGSTOP) until the leader has marked
// it down, which takes longer than SlurmdTimeout, then lets it go on.
func (r *jepsenRun) freezeCompute() {
	l := r.l
	lead := l.waitAgree()
	if err := l.fn.Freeze("node4"); err != nil {
		l.t.Fatal(err)
	}
	frozen := time.Now()
	r.event("freeze node4 (SIGSTOP)")
	l.waitNode(lead, "node4", downRE, 30*time.Second)
	r.event("node4 down")
	if d := time.Since(frozen); d < jepsenSlurmdTimeout*time.Second {
		l.t.Errorf("node4 was down %v after it froze, within SlurmdTimeout", d)
	}
	if err := l.fn.Thaw("node4"); err != nil {
		l.t.Fatal(err)
	}
	r.event(fmt.Sprintf("thaw node4 after %v", time.Since(frozen).Round(100*time.Millisecond)))
	l.waitNode(lead, "node4", `^(idle|mixed|allocated)$`, 30*time.Second)
	r.event("node4 up")
}

// acknowledged is every acknowledged submission.
func (r *jepsenRun) acknowledged() []jepsenAck {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []jepsenAck
	for _, sub := range r.subs {
		for _, a := range sub {
			if a.id != 0 {
				out = append(out, a)
			}
		}
	}
	return out
}

// waitFinal waits until the accounting rows (through node) give every
// acknowledged job a final state, and reports those that never reach one.
func (r *jepsenRun) waitFinal(node string) {
	acks := r.acknowledged()
	last := time.Now()
	ok, seen := poll(5*time.Minute, func() (bool, string) {
		rows, err := r.acctRows(node)
		if err != nil {
			return false, err.Error()
		}
		var open []string
		for _, a := range acks {
			if row, ok := rows[a.id]; !ok || !api.IsFinalState(row.State) {
				open = append(open, fmt.Sprintf("%d(%s)", a.id, row.State))
			}
		}
		n := len(open)
		if n > 20 {
			open = append(open[:20], fmt.Sprintf("... %d more", n-20))
		}
		// Now and then, how the queue drains: a job stuck shows here.
		if n > 0 && time.Since(last) > 20*time.Second {
			last = time.Now()
			r.event(fmt.Sprintf("%d jobs not final: %s", n, strings.Join(open[:min(n, 5)], " ")))
		}
		return n == 0, strings.Join(open, " ")
	})
	r.event("every acknowledged job final: " + strconv.FormatBool(ok))
	if !ok {
		r.l.t.Errorf("acknowledged jobs not in a final state after 5 minutes: %s", seen)
	}
}

// acctRows is the accounting database's job rows, as sacct gets them
// through node, by id.
func (r *jepsenRun) acctRows(node string) (map[uint64]api.AcctRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := r.l.client(node).Acct(ctx, api.AcctQuery{AllUsers: true, JobsOnly: true})
	if err != nil {
		return nil, err
	}
	out := map[uint64]api.AcctRow{}
	for _, row := range rows {
		if row.Step == "" {
			out[row.JobID] = row
		}
	}
	return out, nil
}

// jepsenMarkRE is one line of a marker file.
var jepsenMarkRE = regexp.MustCompile(`^(\d+) (\d+) (\S+)$`)

// markers reads a submission's marker file: each run's job id, restart
// count and node.
func (r *jepsenRun) markers(tag string) ([][3]string, error) {
	b, err := os.ReadFile(filepath.Join(r.marks, tag))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][3]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		m := jepsenMarkRE.FindStringSubmatch(line)
		if m == nil {
			return out, fmt.Errorf("marker %s: line %q", tag, line)
		}
		out = append(out, [3]string{m[1], m[2], m[3]})
	}
	return out, nil
}

// sortedIDs lists a set's ids in order.
func sortedIDs[V any](m map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// sameAccounting waits until the controllers have applied the same log
// (the leader's commit index), then until their accounting databases hold
// the same rows, and reports the rows that differ.
func (r *jepsenRun) sameAccounting() {
	l := r.l
	ctrl := []string{"node1", "node2", "node3"}
	ok, seen := poll(60*time.Second, func() (bool, string) {
		var idx []uint64
		for _, n := range ctrl {
			st := l.status(n)
			if st == nil {
				return false, n + " gives no status"
			}
			idx = append(idx, st.AppliedIdx)
		}
		return idx[0] == idx[1] && idx[0] == idx[2], fmt.Sprint("applied ", idx)
	})
	if !ok {
		l.t.Errorf("the controllers never applied the same index: %s", seen)
	}
	var dumps [3][]string
	ok, seen = poll(30*time.Second, func() (bool, string) {
		for i, n := range ctrl {
			var err error
			if dumps[i], err = acctDump(filepath.Join(l.dir, n, "accounting.db")); err != nil {
				return false, err.Error()
			}
		}
		return slices.Equal(dumps[0], dumps[1]) && slices.Equal(dumps[0], dumps[2]),
			fmt.Sprintf("\nnode2 against node1:\n%s\nnode3 against node1:\n%s", rowDiff(dumps[0], dumps[1]), rowDiff(dumps[0], dumps[2]))
	})
	if !ok {
		l.t.Errorf("the controllers' accounting databases differ: %s", seen)
		return
	}
	r.event(fmt.Sprintf("the three accounting databases hold the same %d rows", len(dumps[0])))
}

// jepsenCounts are the summary's figures.
type jepsenCounts struct {
	acked, completed, requeued, failed, lost, duplicated int
	retried, retryJobs, gaveUp, notFinal, ranTwice       int
}

// check compares the history with the cluster's jobs and accounting rows
// (through node) and the marker files, and prints the summary line.
func (r *jepsenRun) check(node string) {
	t := r.l.t
	rows, err := r.acctRows(node)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs, err := r.l.client(node).Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := map[uint64]api.Job{}
	for _, j := range jobs {
		state[j.ID] = j
	}
	byName := map[string][]uint64{}
	for _, id := range sortedIDs(rows) {
		byName[rows[id].JobName] = append(byName[rows[id].JobName], id)
	}
	var c jepsenCounts
	seen := map[uint64]string{}
	acked := map[uint64]bool{}
	for _, a := range r.acknowledged() {
		c.acked++
		acked[a.id] = true
		if other, dup := seen[a.id]; dup {
			t.Errorf("job %d acknowledged to two submissions, %s and %s", a.id, other, a.tag)
			c.duplicated++
		}
		seen[a.id] = a.tag
		r.checkAck(a, rows, state, byName[a.tag], &c)
	}
	r.checkOrder(&c)
	// Jobs of the test's names that no client was told of: the first
	// tries of a submission its client retried after an error.
	var unacked []string
	for _, id := range sortedIDs(rows) {
		if name := rows[id].JobName; strings.HasPrefix(name, "jp") && !acked[id] {
			unacked = append(unacked, fmt.Sprintf("%d(%s)", id, name))
		}
	}
	if len(unacked) > c.retryJobs {
		t.Errorf("jobs no client was acknowledged, beyond those of retried submissions: %v", unacked)
	}
	t.Logf("jepsen: acknowledged=%d completed=%d requeued=%d failed=%d lost=%d duplicated=%d "+
		"(not final %d, ran twice %d; submissions retried after an error %d, their extra jobs %d, given up %d)",
		c.acked, c.completed, c.requeued, c.failed, c.lost, c.duplicated, c.notFinal, c.ranTwice, c.retried, c.retryJobs, c.gaveUp)
}

// checkAck checks one acknowledged submission: its job exists once under
// its name, in a final state, and every run its marker file shows was a
// run of that job under a restart count of its own.
func (r *jepsenRun) checkAck(a jepsenAck, rows map[uint64]api.AcctRow, state map[uint64]api.Job, named []uint64, c *jepsenCounts) {
	t := r.l.t
	if len(a.errs) > 0 {
		c.retried++
	}
	row, ok := rows[a.id]
	if !ok {
		t.Errorf("lost: %s acknowledged as job %d, which accounting does not hold (tries: %v)", a.tag, a.id, a.errs)
		c.lost++
		return
	}
	if row.JobName != a.tag {
		t.Errorf("%s acknowledged as job %d, which is named %q", a.tag, a.id, row.JobName)
	}
	if len(named) > 1 {
		if len(a.errs) > 0 {
			c.retryJobs += len(named) - 1
			t.Logf("%s was submitted again after an error and made jobs %v (acknowledged %d; errors %v)", a.tag, named, a.id, a.errs)
		} else {
			c.duplicated++
			t.Errorf("duplicated: %s, acknowledged once as job %d, made jobs %v", a.tag, a.id, named)
		}
	}
	switch {
	case !api.IsFinalState(row.State):
		c.notFinal++
		t.Errorf("job %d (%s) is %s, not final", a.id, a.tag, row.State)
	case row.State == string(api.StateCompleted):
		c.completed++
	default:
		c.failed++
		t.Logf("job %d (%s) ended %s on %s", a.id, a.tag, row.State, row.NodeList)
	}
	job, ok := state[a.id]
	if !ok || string(job.State) != row.State {
		t.Errorf("job %d (%s): the state has it %q (held %v), accounting %s", a.id, a.tag, job.State, ok, row.State)
	}
	restarts := job.Restarts
	marks, err := r.markers(a.tag)
	if err != nil {
		t.Error(err)
	}
	if restarts > 0 {
		if c.requeued++; c.requeued <= 10 {
			t.Logf("job %d (%s) requeued %d times, ended %s; its runs (id, restart count, node): %v", a.id, a.tag, restarts, row.State, marks)
		}
	}
	runs := map[string]int{}
	last := false
	for _, m := range marks {
		if id, _ := strconv.ParseUint(m[0], 10, 64); !slices.Contains(named, id) {
			t.Errorf("%s's marker has a run of job %s, not one of its jobs %v", a.tag, m[0], named)
		}
		if runs[m[0]+" "+m[1]]++; runs[m[0]+" "+m[1]] == 2 {
			c.ranTwice++
			t.Errorf("ran twice: job %s (%s) ran more than once with restart count %s: %v", m[0], a.tag, m[1], marks)
		}
		last = last || (m[0] == strconv.FormatUint(a.id, 10) && m[1] == strconv.Itoa(restarts))
	}
	if row.State == string(api.StateCompleted) && !last {
		t.Errorf("job %d (%s) COMPLETED after %d restarts, but no run of that count left its marker: %v", a.id, a.tag, restarts, marks)
	}
}

// checkOrder checks that each submitter's acknowledged ids rise in the
// order it submitted, and counts the submissions it gave up on.
func (r *jepsenRun) checkOrder(c *jepsenCounts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s, sub := range r.subs {
		var prev uint64
		for _, a := range sub {
			if a.id == 0 {
				c.gaveUp++
				r.l.t.Logf("submitter %d gave up on %s after %d tries: %v", s, a.tag, len(a.via), a.errs)
				continue
			}
			if a.id <= prev {
				r.l.t.Errorf("submitter %d: %s acknowledged as job %d after job %d", s, a.tag, a.id, prev)
			}
			prev = a.id
		}
		if len(sub) != jepsenJobs {
			r.l.t.Errorf("submitter %d made %d submissions of %d", s, len(sub), jepsenJobs)
		}
	}
}

// latencies logs how long acknowledgements took: the slowest, and every
// submission that waited more than two seconds (a fault in its way).
func (r *jepsenRun) latencies() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var slow []jepsenAck
	var max jepsenAck
	for _, sub := range r.subs {
		for _, a := range sub {
			if a.took > max.took {
				max = a
			}
			if a.took > 2*time.Second {
				slow = append(slow, a)
			}
		}
	}
	sort.Slice(slow, func(i, j int) bool { return slow[i].at < slow[j].at })
	var lines []string
	for _, a := range slow {
		lines = append(lines, fmt.Sprintf("  %s at %5.1fs via %v: %v", a.tag, a.at.Seconds(), a.via, a.took.Round(100*time.Millisecond)))
	}
	r.l.t.Logf("slowest acknowledgement %v (%s via %v); %d took over 2s:\n%s",
		max.took.Round(100*time.Millisecond), max.tag, max.via, len(slow), strings.Join(lines, "\n"))
}
