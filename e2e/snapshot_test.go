package e2e

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"hpc/cluster/api"
)

// snapEntries is how many Raft entries the lab commits while one
// controller is down: well beyond the trailingLogs entries a controller
// keeps behind the head of its log after a snapshot, and past the 4096
// entries after which it takes one, so the leader can no longer send the
// missing entries and must send a snapshot instead.
const snapEntries = 8000

// trailingLogs is cluster's raftTrailingLogs.
const trailingLogs = 1024

// TestLabSnapshotCatchUp stops one controller (node3) while node1 leads,
// commits snapEntries entries without it (scontrol updates of held jobs,
// each one entry, from many clients at once so that Raft batches them),
// together with jobs that run, end and are purged from the state, a job
// held and released (its accounting row keeps the reason it waited for)
// and a cancelled one, waits for the leader to snapshot and compact its
// log past node3's last entry, and starts node3 again. node3 catches up
// by installing the leader's snapshot; its accounting database then holds
// exactly the rows the others' hold, purged jobs' included, and once it
// leads it answers with the same jobs.
func TestLabSnapshotCatchUp(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-snapcatch-", 3, "MinJobAge=1\nKillWait=2\n")
	if out, errs, code := l.run(0, l.top, "scontrol", "takeover", "node1"); code != 0 {
		t.Fatalf("takeover: %s %s", out, errs)
	}
	lead := l.client("node1")

	l.stopDaemon("node3", syscall.SIGTERM)
	// node3 had no entry past the leader's commit index once it stopped.
	stopped := l.status("node1").CommitIndex
	t.Logf("node3 stopped; the leader's commit index is %d", stopped)

	purged := l.snapJobs(lead)
	start := l.status("node1").CommitIndex
	t0 := time.Now()
	n := l.driveEntries(lead, stopped+snapEntries)
	end := l.status("node1").CommitIndex
	t.Logf("%d scontrol updates committed entries %d-%d (%d) in %v: %.0f entries/s",
		n, start+1, end, end-start, time.Since(t0).Round(time.Millisecond), float64(end-start)/time.Since(t0).Seconds())

	// The leader compacts at a snapshot taken at least trailingLogs entries
	// past what node3 has: its log then begins after node3's last entry.
	var leaderSnap snapMeta
	waitFor(t, 90*time.Second, fmt.Sprintf("the leader to snapshot %d entries past node3's last", trailingLogs), func() (bool, string) {
		snaps := l.snapshots("node1")
		if len(snaps) > 0 {
			leaderSnap = snaps[len(snaps)-1]
		}
		return leaderSnap.Index > stopped+trailingLogs, fmt.Sprint(snaps)
	})
	t.Logf("the leader's snapshot is at index %d (term %d)", leaderSnap.Index, leaderSnap.Term)

	target := l.status("node1").CommitIndex
	t1 := time.Now()
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up again: %d\n%s\n%s", code, out, errs)
	}
	waitFor(t, 60*time.Second, "node3 to apply the leader's entries", func() (bool, string) {
		st := l.status("node3")
		return st.AppliedIdx >= target, fmt.Sprintf("applied %d of %d", st.AppliedIdx, target)
	})
	t.Logf("node3 applied index %d %v after it was started again", target, time.Since(t1).Round(time.Millisecond))

	// It caught up by installing a snapshot of the leader's: one it could
	// not have made itself, since it never had the entries before it.
	// (node2 too takes the same snapshots, should it have come to lead.)
	others := append(l.snapshots("node1"), l.snapshots("node2")...)
	var installed *snapMeta
	for _, s := range l.snapshots("node3") {
		if s.Index > stopped && slices.ContainsFunc(others, func(o snapMeta) bool { return o.Index == s.Index && o.Term == s.Term }) {
			installed = &s
		}
	}
	if installed == nil {
		t.Fatalf("node3 holds no snapshot of the others' past index %d: node3 %v, node1 and node2 %v",
			stopped, l.snapshots("node3"), others)
	}
	t.Logf("node3 installed the leader's snapshot at index %d", installed.Index)

	l.sameAccounting(purged)
	l.sameJobs("node1", "node3")
}

// client is an API client on a node's socket.
func (l *labT) client(node string) *api.Client {
	return api.NewClient(filepath.Join(l.dir, node, "hpc.sock"))
}

// status is a node's own answer to hpc status (its Raft indexes).
func (l *labT) status(node string) *api.Status {
	l.t.Helper()
	var st *api.Status
	waitFor(l.t, 30*time.Second, node+"'s status", func() (bool, string) {
		var err error
		st, err = l.client(node).Status(context.Background())
		return err == nil, fmt.Sprint(err)
	})
	return st
}

// snapJobs makes, while a controller is down, what a snapshot must carry
// beyond the live jobs: jobs that end and leave the state (their rows stay
// in accounting), a job held and then released, whose row keeps the
// reason it waited for while it runs, and a cancelled job. It returns the
// purged jobs' ids.
func (l *labT) snapJobs(lead *api.Client) []uint64 {
	l.t.Helper()
	ctx := context.Background()
	submit := func(spec api.JobSpec) uint64 {
		spec.WorkDir = l.top
		id, err := lead.Submit(ctx, spec)
		if err != nil {
			l.t.Fatalf("submit %s: %v", spec.Name, err)
		}
		return id
	}
	var purged []uint64
	for i := range 4 {
		purged = append(purged, submit(api.JobSpec{Name: fmt.Sprintf("done-%d", i), NodeList: "node1", Script: "#!/bin/sh\ntrue\n"}))
	}
	released := submit(api.JobSpec{Name: "released", NodeList: "node2", Hold: true, Script: "#!/bin/sh\nsleep 600\n"})
	cancelled := submit(api.JobSpec{Name: "cancelled", Hold: true, Script: "#!/bin/sh\ntrue\n"})
	if _, err := lead.JobControl(ctx, api.JobControlRequest{JobIDs: []uint64{released}, Action: "release"}); err != nil {
		l.t.Fatal(err)
	}
	if _, err := lead.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{cancelled}}); err != nil {
		l.t.Fatal(err)
	}
	waitFor(l.t, 60*time.Second, "the finished jobs to be purged and the released one to run", func() (bool, string) {
		jobs, err := lead.Jobs(ctx)
		if err != nil {
			return false, err.Error()
		}
		var left []string
		running := false
		for _, j := range jobs {
			if slices.Contains(purged, j.ID) {
				left = append(left, fmt.Sprintf("%d %s", j.ID, j.State))
			}
			running = running || (j.ID == released && j.State == api.StateRunning)
		}
		return len(left) == 0 && running, fmt.Sprintf("left %v, released running %v", left, running)
	})
	return purged
}

// driveEntries commits scontrol updates of held jobs through lead until
// its commit index reaches target, from many clients at once (Raft writes
// and sends the entries that wait together in one batch), and returns how
// many it made. It stops early after 100 failed updates.
func (l *labT) driveEntries(lead *api.Client, target uint64) int64 {
	l.t.Helper()
	const clients = 64
	ctx := context.Background()
	var ids []uint64
	for i := range clients {
		id, err := lead.Submit(ctx, api.JobSpec{Name: fmt.Sprintf("held-%d", i), Hold: true, WorkDir: l.top, Script: "#!/bin/sh\ntrue\n"})
		if err != nil {
			l.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var made, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	var stop atomic.Bool
	for c, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				err := lead.Update(ctx, api.UpdateRequest{JobID: id, Set: map[string]string{"Name": fmt.Sprintf("held-%d-%d", c, i)}})
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				// The commit index is read now and then: every status
				// call costs the leader too.
				if made.Add(1)%500 == 0 {
					if st, err := lead.Status(ctx); err == nil && st.CommitIndex >= target {
						stop.Store(true)
					}
				}
				if failed.Load() > 100 {
					stop.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	// An update that fails under the load (a timeout, a lost leader) is
	// no concern here, as long as the entries are made.
	if f := failed.Load(); f > 100 {
		l.t.Fatalf("%d scontrol updates failed, the first: %v", f, firstErr.Load())
	} else if f > 0 {
		l.t.Logf("%d scontrol updates failed, the first: %v", f, firstErr.Load())
	}
	return made.Load()
}

// snapMeta is what Raft's file snapshot store writes beside a snapshot.
type snapMeta struct {
	ID    string
	Index uint64
	Term  uint64
}

// snapshots lists a node's Raft snapshots, oldest first.
func (l *labT) snapshots(node string) []snapMeta {
	l.t.Helper()
	metas, _ := filepath.Glob(filepath.Join(l.dir, node, "raft", "snapshots", "*", "meta.json"))
	var out []snapMeta
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			continue // a snapshot being written or removed
		}
		var s snapMeta
		if json.Unmarshal(b, &s) == nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b snapMeta) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// sameAccounting waits until the three controllers' accounting databases
// hold the same rows, every column of jobs and steps, and checks that they
// hold the purged jobs'.
func (l *labT) sameAccounting(purged []uint64) {
	l.t.Helper()
	var dumps [3][]string
	waitFor(l.t, 30*time.Second, "the controllers' accounting rows to be equal", func() (bool, string) {
		for i := range dumps {
			var err error
			if dumps[i], err = acctDump(filepath.Join(l.dir, fmt.Sprintf("node%d", i+1), "accounting.db")); err != nil {
				return false, err.Error()
			}
		}
		return slices.Equal(dumps[0], dumps[1]) && slices.Equal(dumps[0], dumps[2]),
			fmt.Sprintf("\nnode2 against node1:\n%s\nnode3 against node1:\n%s", rowDiff(dumps[0], dumps[1]), rowDiff(dumps[0], dumps[2]))
	})
	for _, id := range purged {
		prefix := fmt.Sprintf("jobs|%d|", id)
		if !slices.ContainsFunc(dumps[2], func(r string) bool { return strings.HasPrefix(r, prefix) }) {
			l.t.Errorf("node3 has no accounting row of purged job %d", id)
		}
	}
	l.t.Logf("the three accounting databases hold the same %d rows", len(dumps[0]))
}

// acctDump reads every row of an accounting database's jobs and steps
// tables, all columns, in key order, read-only while its daemon writes.
func acctDump(path string) ([]string, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tx, err := db.Begin() // one read transaction: both tables as of one commit
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var out []string
	for _, q := range []struct{ table, order string }{{"jobs", "job_id"}, {"steps", "job_id, step"}} {
		rows, err := tx.Query("SELECT * FROM " + q.table + " ORDER BY " + q.order)
		if err != nil {
			return nil, err
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			fields := []string{q.table}
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fields = append(fields, fmt.Sprint(v))
			}
			out = append(out, strings.Join(fields, "|"))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rowDiff lists the rows only one of a and b has (at most 20 of each).
func rowDiff(a, b []string) string {
	var s strings.Builder
	for _, d := range []struct {
		sign     string
		from, in []string
	}{{"-", a, b}, {"+", b, a}} {
		n := 0
		for _, r := range d.from {
			if !slices.Contains(d.in, r) {
				if n++; n <= 20 {
					fmt.Fprintf(&s, "%s %s\n", d.sign, r)
				}
			}
		}
		if n > 20 {
			fmt.Fprintf(&s, "%s ... %d more\n", d.sign, n-20)
		}
	}
	return s.String()
}

// sameJobs checks that node to, once it leads, holds the jobs node from
// holds now. What the leader's scheduling pass adds to a pending job
// (priority, expected start) is its own view, not replicated state, and
// left out.
func (l *labT) sameJobs(from, to string) {
	l.t.Helper()
	jobsJSON := func(node string) (string, error) {
		jobs, err := l.client(node).Jobs(context.Background())
		if err != nil {
			return "", err
		}
		for i := range jobs {
			jobs[i].Priority, jobs[i].ExpectedStart, jobs[i].SchedNodes = 0, time.Time{}, nil
		}
		b, err := json.MarshalIndent(jobs, "", " ")
		return string(b), err
	}
	want, err := jobsJSON(from)
	if err != nil {
		l.t.Fatal(err)
	}
	if out, errs, code := l.run(0, l.top, "scontrol", "takeover", to); code != 0 {
		l.t.Fatalf("takeover %s: %s %s", to, out, errs)
	}
	waitFor(l.t, 30*time.Second, to+" to lead with "+from+"'s jobs", func() (bool, string) {
		if st := l.status(to); st.Leader != to {
			return false, "leader " + st.Leader
		}
		got, err := jobsJSON(to)
		if err != nil {
			return false, err.Error()
		}
		return got == want, fmt.Sprintf("\n%s\nwant\n%s", got, want)
	})
	l.t.Logf("%s leads with the same jobs as %s", to, from)
}
