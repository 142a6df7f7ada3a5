package scenario

import (
	"fmt"
	"strconv"
	"time"

	"hpc/cluster/api"
)

var backfill = &Scenario{
	Name:  "backfill",
	Title: "short jobs run in the hole a wide job waits for, without delaying it",
	Needs: "2 idle nodes",
	run:   runBackfill,
}

// slack is how far a time may stray from another and still count as the
// same: the leader's passes and the jobs' launches take a moment.
const slack = 2 * time.Second

// backfillObs is what the backfill scenario saw.
type backfillObs struct {
	blocker, wide api.Job
	shorts        []api.Job
	// firstExpected is the wide job's expected start when first seen
	// pending, before the short jobs were queued; latestExpected the
	// latest seen while it pended.
	firstExpected, latestExpected time.Time
	t0                            time.Time
}

func runBackfill(r *Run) Verdict {
	nodes := r.needNodes(2)
	n := len(nodes)
	blockT, shortT, wideT := r.dur(40*time.Second), r.dur(8*time.Second), r.dur(8*time.Second)
	r.say("The queue is taken in submit order (priority/basic). A job that cannot start")
	r.say("gets a reservation; later jobs may start early only where they end before it.")
	r.say("1. A blocker holds %s. It asks for 3 minutes but ends after %s.", nodes[0], blockT)
	b := r.sbatch("-J", "bf-blocker", "-w", nodes[0], "--exclusive", "-t", "3", "-o", "/dev/null", "--wrap", sleepCmd(blockT))
	r.waitState(b, 30*time.Second, api.StateRunning)
	r.say("2. A wide job asks for all %d nodes: it must wait for the blocker.", n)
	w := r.sbatch("-J", "bf-wide", "-N", strconv.Itoa(n), "--exclusive", "-t", "2", "-o", "/dev/null", "--wrap", sleepCmd(wideT))
	var first time.Time
	r.waitUntil(fmt.Sprintf("job %d to get an expected start", w), 30*time.Second, func() bool {
		j := r.job(w)
		first = j.ExpectedStart
		return j.State == api.StatePending && !first.IsZero()
	})
	r.say("   It pends with a reservation of all nodes at %s: the blocker's time limit.", r.at(first))
	r.typeCmd("squeue --start")
	r.watch("the timeline shows the wide job's reservation after the blocker")
	r.say("3. %d short jobs (1-minute limits) queue behind it. Strict FIFO would keep", n-1)
	r.say("   them waiting for the wide job; backfill starts them now, as they end before it.")
	ids := []uint64{b, w}
	for i := 1; i < n; i++ {
		ids = append(ids, r.sbatch("-J", "bf-short", "-N1", "--exclusive", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(shortT)))
	}
	r.typeCmd("squeue")
	f := r.follow()
	latest := first
	m := f.until("the backfill workload to end", blockT+wideT+90*time.Second, ids, func(m map[uint64]api.Job) bool {
		if wj := m[w]; wj.State == api.StatePending && wj.ExpectedStart.After(latest) {
			latest = wj.ExpectedStart
		}
		return allEnded(m, ids...)
	})
	o := backfillObs{blocker: m[b], wide: m[w], firstExpected: first, latestExpected: latest, t0: r.t0}
	for _, id := range ids[2:] {
		o.shorts = append(o.shorts, m[id])
	}
	r.typeCmd("sacct -X -j " + joinIDs(ids) + " -o JobID,JobName,Start,End,NodeList")
	res, summary, evidence := judgeBackfill(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// judgeBackfill checks that every short job started before the wide one
// (in the hole) and that the wide job started no later than the
// reservation it had before they were queued, which never moved later.
// The strict-FIFO figures are computed: under FIFO the short jobs, behind
// the wide one, could not start before it ended.
func judgeBackfill(o backfillObs) (Result, string, []string) {
	rel := func(t time.Time) string { return fmt.Sprintf("%+.1fs", t.Sub(o.t0).Seconds()) }
	ev := []string{
		fmt.Sprintf("blocker %d on %s: ran %s to %s (time limit 3 min)", o.blocker.ID, compress(o.blocker.NodeNames()), rel(o.blocker.StartTime), rel(o.blocker.EndTime)),
		fmt.Sprintf("wide %d: expected start %s before the short jobs were queued, latest seen %s; started %s on %s",
			o.wide.ID, rel(o.firstExpected), rel(o.latestExpected), rel(o.wide.StartTime), compress(o.wide.NodeNames())),
	}
	var fail []string
	var saved time.Duration
	for _, s := range o.shorts {
		ev = append(ev, fmt.Sprintf("short %d on %s: ran %s to %s", s.ID, compress(s.NodeNames()), rel(s.StartTime), rel(s.EndTime)))
		if s.StartTime.IsZero() || !s.StartTime.Before(o.wide.StartTime) {
			fail = append(fail, fmt.Sprintf("short job %d did not start before the wide job (no backfill)", s.ID))
		} else {
			saved += o.wide.EndTime.Sub(s.StartTime)
		}
	}
	fail = append(fail, notCompleted(append([]api.Job{o.blocker, o.wide}, o.shorts...)...)...)
	if o.firstExpected.IsZero() {
		fail = append(fail, "the wide job never showed an expected start")
	} else {
		if o.wide.StartTime.IsZero() || o.wide.StartTime.After(o.firstExpected.Add(slack)) {
			fail = append(fail, fmt.Sprintf("the wide job started %s, after its expected start %s: backfill delayed it", rel(o.wide.StartTime), rel(o.firstExpected)))
		}
		if o.latestExpected.After(o.firstExpected.Add(slack)) {
			fail = append(fail, fmt.Sprintf("the wide job's expected start moved later, from %s to %s", rel(o.firstExpected), rel(o.latestExpected)))
		}
	}
	ev = append(ev, fmt.Sprintf("strict FIFO (computed, not run): the short jobs could start only after the wide job ended (%s): %.1f s of waiting in all, saved by backfill",
		rel(o.wide.EndTime), saved.Seconds()))
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("%d short job(s) ran in the hole before the wide job, which started %s, no later than its expected start %s",
		len(o.shorts), rel(o.wide.StartTime), rel(o.firstExpected)), ev
}
