package cluster

import (
	"cmp"
	"net/http"
	"slices"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

// The dashboard's share of the job list, chosen on the leader in one pass
// over the jobs (GET /api/dashboard/jobs). Every open page polls twice a
// second; with a long queue the whole list (100,000 pending jobs are
// tens of MB of JSON) would be read, encoded, sent and decoded each time
// for each viewer. The answer is bounded instead: at most dashRunningKept
// running jobs (the lowest ids), the first dashPendingKept pending ones in
// squeue's order (priority, then id), the newest dashFinishedKept finished
// ones, how many of each kind the viewer may see, and, for the node grid,
// each node's running jobs and GRES in use over all of them. The rows are
// the dashboard's own (dashJob: never a script nor an environment); who
// sees which job is handleJobs' rule (privacy.go).

const (
	dashRunningKept  = 300
	dashPendingKept  = 200
	dashFinishedKept = 200
)

// registerDashboardDataRoutes adds the socket's routes the dashboard asks
// through d.local (they are the leader's, as the commands' are).
func (d *Daemon) registerDashboardDataRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/dashboard/jobs", d.leaderRoute(d.handleDashJobs))
	mux.HandleFunc("GET /api/job/output", d.leaderRoute(d.handleJobOutput)) // joboutput.go
}

// dashJobCounts counts jobs by the queue's sections.
type dashJobCounts struct {
	Running  int `json:"running"`
	Pending  int `json:"pending"`
	Finished int `json:"finished"`
}

// dashJobList answers GET /api/dashboard/jobs.
type dashJobList struct {
	// Jobs are the rows kept, in id order.
	Jobs []dashJob `json:"jobs"`
	// Counts are of every job the viewer may see; Shown of those in Jobs.
	Counts dashJobCounts `json:"counts"`
	Shown  dashJobCounts `json:"shown"`
	// OnNode and GresUsed are each node's running jobs and GRES in use
	// (by name: count), over every running job the viewer may see.
	OnNode   map[string][]uint64       `json:"on_node"`
	GresUsed map[string]map[string]int `json:"gres_used"`
}

// handleDashJobs answers the dashboard's bounded job list for the caller.
func (d *Daemon) handleDashJobs(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var running, pending, done []*api.Job
	// The records picked are lent: unchanged until release.
	_, release := d.fsm.LendJobs(func(st *fsm.State, _ func(*api.Job)) {
		v := d.viewerIn(st, id) // privacy.go
		for _, j := range st.Jobs {
			switch {
			case !v.listed(j):
			case j.State == api.StatePending:
				pending = append(pending, j)
			case j.State.Final():
				done = append(done, j)
			default:
				running = append(running, j)
			}
		}
	})
	defer release()
	out := dashJobList{
		Counts:   dashJobCounts{Running: len(running), Pending: len(pending), Finished: len(done)},
		OnNode:   map[string][]uint64{},
		GresUsed: map[string]map[string]int{},
	}
	for _, j := range running {
		for _, a := range j.Alloc {
			out.OnNode[a.Node] = append(out.OnNode[a.Node], j.ID)
			for _, g := range a.Gres {
				if out.GresUsed[a.Node] == nil {
					out.GresUsed[a.Node] = map[string]int{}
				}
				out.GresUsed[a.Node][g.Name] += len(g.Indices)
			}
		}
	}
	for _, ids := range out.OnNode {
		slices.Sort(ids)
	}
	running = firstK(running, dashRunningKept, func(a, b *api.Job) bool { return a.ID < b.ID })
	pending = d.firstPending(pending, dashPendingKept)
	done = firstK(done, dashFinishedKept, func(a, b *api.Job) bool {
		if !a.EndTime.Equal(b.EndTime) {
			return a.EndTime.After(b.EndTime)
		}
		return a.ID > b.ID
	})
	out.Shown = dashJobCounts{Running: len(running), Pending: len(pending), Finished: len(done)}
	cfg := d.conf()
	leaf := leafSwitches(cfg.Topology)
	out.Jobs = make([]dashJob, 0, len(running)+len(pending)+len(done))
	for _, list := range [][]*api.Job{running, pending, done} {
		for _, j := range list {
			seen := *j
			withhold(&seen) // the rows never carry them
			d.view.overlay(&seen)
			out.Jobs = append(out.Jobs, dashJobOf(&seen, cfg.Topology, leaf))
		}
	}
	slices.SortFunc(out.Jobs, func(a, b dashJob) int { return cmp.Compare(a.ID, b.ID) })
	peer.WriteJSON(w, out)
}

// firstPending is the first k pending jobs in squeue's order: the last
// scheduling pass's priority (the state's for a job not in it, a held
// one), highest first, then the lower id.
func (d *Daemon) firstPending(jobs []*api.Job, k int) []*api.Job {
	type ranked struct {
		j    *api.Job
		prio uint32
	}
	rs := make([]ranked, len(jobs))
	d.view.mu.Lock()
	for i, j := range jobs {
		rs[i] = ranked{j, j.Priority}
		if r, ok := d.view.results[j.ID]; ok {
			rs[i].prio = r.Priority
		}
	}
	d.view.mu.Unlock()
	rs = firstK(rs, k, func(a, b ranked) bool {
		if a.prio != b.prio {
			return a.prio > b.prio
		}
		return a.j.ID < b.j.ID
	})
	out := make([]*api.Job, len(rs))
	for i, r := range rs {
		out[i] = r.j
	}
	return out
}

// firstK returns the k first of s by less, in that order, in one pass
// with a heap of k (O(n log k)); s's own order is lost.
func firstK[T any](s []T, k int, less func(a, b T) bool) []T {
	byLess := func(a, b T) int {
		if less(a, b) {
			return -1
		}
		if less(b, a) {
			return 1
		}
		return 0
	}
	if len(s) <= k {
		slices.SortFunc(s, byLess)
		return s
	}
	// h is a heap whose root is the last of the k kept: an element
	// before it takes its place.
	h := slices.Clone(s[:k])
	after := func(i, j int) bool { return less(h[j], h[i]) }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && after(c+1, c) {
				c++
			}
			if !after(c, i) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, x := range s[k:] {
		if k > 0 && less(x, h[0]) {
			h[0] = x
			down(0)
		}
	}
	slices.SortFunc(h, byLess)
	return h
}
