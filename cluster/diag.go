package cluster

import (
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
	"hpc/sched"
)

// What sdiag shows: the leader's counters since it became leader (or since
// sdiag -r): jobs submitted, started, completed, cancelled and failed, its
// scheduling passes (main and backfill, in microseconds), and the requests
// it served by type (Slurm's message type names and numbers) and by user.

// rpcTypes names each leader route as the Slurm request it stands for.
var rpcTypes = map[string]struct {
	name string
	id   int
}{
	"/api/submit":        {"REQUEST_SUBMIT_BATCH_JOB", 4003},
	"/api/testonly":      {"REQUEST_JOB_WILL_RUN", 4012},
	"/api/jobs":          {"REQUEST_JOB_INFO", 2003},
	"/api/wait":          {"REQUEST_JOB_INFO_SINGLE", 2021},
	"/api/jobscript":     {"REQUEST_BATCH_SCRIPT", 2051},
	"/api/nodes":         {"REQUEST_NODE_INFO", 2007},
	"/api/priority":      {"REQUEST_PRIORITY_FACTORS", 2026},
	"/api/cancel":        {"REQUEST_KILL_JOB", 5032},
	"/api/jobcontrol":    {"REQUEST_UPDATE_JOB", 3001},
	"/api/update":        {"REQUEST_UPDATE_JOB", 3001},
	"/api/takeover":      {"REQUEST_TAKEOVER", 1012},
	"/api/acct":          {"DBD_GET_JOBS_COND", 1444},
	"/api/share":         {"REQUEST_SHARE_INFO", 2022},
	"/api/report":        {"DBD_GET_ASSOC_USAGE", 1472},
	"/api/acctmgr":       {"REQUEST_ASSOC_MGR_INFO", 2043},
	"/api/diag":          {"REQUEST_STATS_INFO", 2035},
	"/api/diag/reset":    {"REQUEST_STATS_INFO", 2035},
	"/api/step/create":   {"REQUEST_JOB_STEP_CREATE", 5001},
	"/api/step/find":     {"REQUEST_JOB_STEP_INFO", 2005},
	"/api/alloc/wait":    {"REQUEST_JOB_ALLOCATION_INFO", 4014},
	"/api/alloc/release": {"REQUEST_COMPLETE_JOB_ALLOCATION", 5017},
	"/internal/job-end":  {"REQUEST_COMPLETE_BATCH_SCRIPT", 5018},
	"/internal/step/end": {"REQUEST_STEP_COMPLETE", 5016},
}

type rpcCount struct {
	count uint64
	total time.Duration
}

// diagStats are the leader's counters.
type diagStats struct {
	mu    sync.Mutex
	since time.Time

	submitted, started, completed, canceled, failed uint64

	cycles, cycleLast, cycleMax, cycleSum, queueLen uint64
	bfJobs, bfCycles, bfLast, bfMax, bfSum          uint64
	bfWhen                                          time.Time

	byType map[string]*rpcCount
	byUser map[uint32]*rpcCount
}

func newDiagStats(now time.Time) *diagStats {
	return &diagStats{since: now, byType: map[string]*rpcCount{}, byUser: map[uint32]*rpcCount{}}
}

// reset starts the counters over (sdiag -r), as a new leader does.
func (s *diagStats) reset(now time.Time) {
	fresh := newDiagStats(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since, s.byType, s.byUser = fresh.since, fresh.byType, fresh.byUser
	s.submitted, s.started, s.completed, s.canceled, s.failed = 0, 0, 0, 0, 0
	s.cycles, s.cycleLast, s.cycleMax, s.cycleSum, s.queueLen = 0, 0, 0, 0, 0
	s.bfJobs, s.bfCycles, s.bfLast, s.bfMax, s.bfSum, s.bfWhen = 0, 0, 0, 0, 0, time.Time{}
}

func (s *diagStats) add(what *uint64, n int) {
	s.mu.Lock()
	*what += uint64(n)
	s.mu.Unlock()
}

// rpc counts one request the leader served.
func (s *diagStats) rpc(path string, uid uint32, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range []*rpcCount{s.typeCount(path), s.userCount(uid)} {
		c.count++
		c.total += took
	}
}

func (s *diagStats) typeCount(path string) *rpcCount {
	c := s.byType[path]
	if c == nil {
		c = &rpcCount{}
		s.byType[path] = c
	}
	return c
}

func (s *diagStats) userCount(uid uint32) *rpcCount {
	c := s.byUser[uid]
	if c == nil {
		c = &rpcCount{}
		s.byUser[uid] = c
	}
	return c
}

// pass records a scheduling pass: its length, the pending queue it saw,
// and the starts that backfill made (jobs that start while a job of
// higher priority waits for resources), whose number it returns.
func (s *diagStats) pass(took time.Duration, now time.Time, res *sched.Result, pending int) int {
	var blocked uint32
	for _, j := range res.Jobs {
		if j.Reason == sched.ReasonResources && j.Priority > blocked {
			blocked = j.Priority
		}
	}
	bf := 0
	for _, j := range res.Jobs {
		if j.Reason == "" && j.Priority < blocked {
			bf++
		}
	}
	us := uint64(took.Microseconds())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cycles++
	s.cycleLast, s.cycleMax, s.cycleSum = us, max(s.cycleMax, us), s.cycleSum+us
	s.queueLen = uint64(pending)
	if blocked > 0 {
		s.bfCycles++
		s.bfLast, s.bfMax, s.bfSum = us, max(s.bfMax, us), s.bfSum+us
		s.bfJobs += uint64(bf)
		s.bfWhen = now
	}
	return bf
}

// ended counts a job's end by its final state.
func (s *diagStats) ended(st api.JobState) {
	switch st {
	case api.StateCompleted:
		s.add(&s.completed, 1)
	case api.StateCancelled:
		s.add(&s.canceled, 1)
	case api.StateFailed, api.StateNodeFail, api.StateTimeout, api.StateOutOfMemory:
		s.add(&s.failed, 1)
	}
}

// report is what GET /api/diag answers.
func (s *diagStats) report(now time.Time, st *fsm.State) api.Diag {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := api.Diag{
		Time: now, Since: s.since,
		JobsSubmitted: s.submitted, JobsStarted: s.started, JobsCompleted: s.completed,
		JobsCanceled: s.canceled, JobsFailed: s.failed,
		CycleLast: s.cycleLast, CycleMax: s.cycleMax, Cycles: s.cycles, CycleSum: s.cycleSum, QueueLen: s.queueLen,
		BackfilledJobs: s.bfJobs, BackfillCycles: s.bfCycles, BackfillLast: s.bfLast, BackfillMax: s.bfMax,
		BackfillSum: s.bfSum, BackfillWhen: s.bfWhen,
	}
	for _, j := range st.Jobs {
		switch j.State {
		case api.StatePending:
			out.JobsPending++
		case api.StateRunning:
			out.JobsRunning++
		}
	}
	merged := map[string]*api.DiagRPC{}
	for path, c := range s.byType {
		t, ok := rpcTypes[path]
		if !ok {
			t.name, t.id = "REQUEST_"+strings.ToUpper(strings.NewReplacer("/api/", "", "/internal/", "", "/", "_", "-", "_").Replace(path)), 0
		}
		m := merged[t.name]
		if m == nil {
			m = &api.DiagRPC{Name: t.name, ID: uint32(t.id)}
			merged[t.name] = m
		}
		m.Count += c.count
		m.TotalMicros += uint64(c.total.Microseconds())
	}
	for _, m := range merged {
		out.ByType = append(out.ByType, *m)
	}
	sort.Slice(out.ByType, func(a, b int) bool { return out.ByType[a].Count > out.ByType[b].Count })
	for uid, c := range s.byUser {
		out.ByUser = append(out.ByUser, api.DiagRPC{Name: peer.LookupIdentity(uid, 0).User, ID: uid, Count: c.count, TotalMicros: uint64(c.total.Microseconds())})
	}
	sort.Slice(out.ByUser, func(a, b int) bool { return out.ByUser[a].Count > out.ByUser[b].Count })
	return out
}

// handleDiag answers sdiag.
func (d *Daemon) handleDiag(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var out api.Diag
	d.fsm.View(func(st *fsm.State) { out = d.diag.report(time.Now(), st) })
	peer.WriteJSON(w, out)
}

// handleDiagReset is sdiag -r: root and operators only, as in Slurm.
func (d *Daemon) handleDiagReset(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	if !d.viewer(id).operator {
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrAccessDenied})
		return
	}
	d.diag.reset(time.Now())
	peer.WriteJSON(w, struct{}{})
}

// counted wraps a leader handler so that the request is counted.
func (d *Daemon) counted(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
		start := time.Now()
		h(w, r, id, body)
		d.diag.rpc(r.URL.Path, id.UID, time.Since(start))
	}
}
