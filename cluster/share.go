package cluster

import (
	"math"
	"net/http"
	"sort"
	"time"

	"hpc/accounting"
	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
	"hpc/sched"
)

// registerShareRoutes adds the sshare and sreport routes to the API.
func (d *Daemon) registerShareRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/share", d.leaderRoute(d.handleShare))
	mux.HandleFunc("GET /api/report", d.leaderRoute(d.handleReport))
}

// shareSnapshot is what the scheduler would see now, without the pending
// jobs: enough for fair-share.
func (d *Daemon) shareSnapshot(now time.Time) sched.Snapshot {
	snap := sched.Snapshot{Now: now, Config: schedConfig(d.cfg), Partitions: schedPartitions(d.cfg)}
	var ended []sched.Usage
	d.fsm.View(func(st *fsm.State) {
		snap.Nodes = schedNodes(d.cfg, st)
		snap.QOS, snap.Assocs = st.Acct.SchedInputs()
		for j := range st.NotPending() {
			if j.State == api.StateRunning || j.State == api.StateCompleting {
				snap.Running = append(snap.Running, runningJob(j))
			} else if u, ok := endedUsage(j); ok {
				ended = append(ended, u)
			}
		}
	})
	sort.Slice(snap.Running, func(a, b int) bool { return snap.Running[a].ID < snap.Running[b].ID })
	// A job just ended may not be in accounting yet: the state still
	// holds it.
	past, _ := pastUsage(d.acct, now, snap.Config.PriorityDecayHalfLife)
	snap.Usage = withEnded(past, usageJobs(past), ended)
	return snap
}

// pastUsage reads the ended jobs' usage over the fair-share window from
// accounting.
func pastUsage(acct *accounting.Store, now time.Time, halfLife time.Duration) ([]sched.Usage, error) {
	if acct == nil {
		return nil, nil
	}
	since := now.Add(-30 * 24 * time.Hour)
	if halfLife > 0 {
		since = now.Add(-8 * halfLife)
	}
	rows, err := acct.Query(accounting.Filter{StartAfter: since, JobsOnly: true})
	if err != nil {
		return nil, err
	}
	var out []sched.Usage
	for _, r := range rows {
		j := r.Job
		if j.Start.IsZero() || j.End.IsZero() || j.AllocCPUs == 0 {
			continue // pending, or running: the snapshot has those
		}
		out = append(out, sched.Usage{JobID: j.JobID, Account: j.Account, User: j.User, CPUs: j.AllocCPUs, Start: j.Start, End: j.End})
	}
	return out, nil
}

func shareRows(in []sched.AssocShare) []api.ShareRow {
	out := make([]api.ShareRow, 0, len(in))
	for _, s := range in {
		r := api.ShareRow{Account: s.Account, User: s.User, Depth: s.Depth, RawShares: s.RawShares,
			NormShares: s.NormShares, RawUsage: s.RawUsage, NormUsage: s.NormUsage,
			EffectvUsage: s.EffectvUsage, LevelFS: s.LevelFS, FairShare: s.FairShare}
		if math.IsInf(r.LevelFS, 0) || math.IsNaN(r.LevelFS) {
			r.LevelFS = -1
		}
		out = append(out, r)
	}
	return out
}

func (d *Daemon) handleShare(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	rows := shareRows(sched.Shares(d.shareSnapshot(d.now())))
	// PrivateData=usage: an ordinary user's own associations only
	// (privacy.go), as slurmctld's assoc_mgr_get_shares.
	v := d.viewer(id)
	out := rows[:0]
	for _, r := range rows {
		if v.usageRow(r.User) {
			out = append(out, r)
		}
	}
	peer.WriteJSON(w, api.ShareResponse{Cluster: d.cfg.ClusterName, Rows: out})
}

func (d *Daemon) handleReport(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	q := r.URL.Query()
	start, err1 := time.Parse(time.RFC3339, q.Get("start"))
	end, err2 := time.Parse(time.RFC3339, q.Get("end"))
	if err1 != nil || err2 != nil || !end.After(start) {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: "Invalid time range"})
		return
	}
	now := d.now()
	out := api.ReportResponse{Cluster: d.cfg.ClusterName, Start: start, End: end}
	for _, n := range d.cfg.Nodes {
		out.TotalCPUs += int64(n.CPUs)
	}
	var v jobViewer
	d.fsm.View(func(st *fsm.State) {
		v = d.viewerIn(st, id) // privacy.go: PrivateData=usage
		for _, a := range st.Acct.Resolved() {
			if v.usageRow(a.User) {
				out.Assocs = append(out.Assocs, api.ShareRow{Account: a.Account, User: a.User, Depth: a.Depth, RawShares: a.Shares})
			}
		}
	})
	if d.acct != nil {
		rows, err := d.acct.Query(accounting.Filter{StartAfter: start, EndBefore: end, JobsOnly: true})
		if err != nil {
			peer.WriteErr(w, http.StatusInternalServerError, err)
			return
		}
		for _, u := range reportUsage(rows, start, end, now) {
			if v.usageRow(u.User) {
				out.Usage = append(out.Usage, u)
			}
		}
	}
	peer.WriteJSON(w, out)
}

// reportUsage sums AllocCPUs times the part of each started job's run
// inside [start, end) per account and user; a running job counts up to now.
func reportUsage(rows []accounting.Row, start, end, now time.Time) []api.ReportUsage {
	type key struct{ acct, user string }
	sum := map[key]float64{}
	for _, r := range rows {
		j := r.Job
		if j.Start.IsZero() || j.AllocCPUs == 0 {
			continue
		}
		stop := j.End
		if stop.IsZero() {
			stop = now
		}
		lo, hi := j.Start, stop
		if lo.Before(start) {
			lo = start
		}
		if hi.After(end) {
			hi = end
		}
		if !hi.After(lo) {
			continue
		}
		sum[key{j.Account, j.User}] += float64(j.AllocCPUs) * hi.Sub(lo).Seconds()
	}
	out := make([]api.ReportUsage, 0, len(sum))
	for k, v := range sum {
		out = append(out, api.ReportUsage{Account: k.acct, User: k.user, CPUSeconds: v})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Account != out[b].Account {
			return out[a].Account < out[b].Account
		}
		return out[a].User < out[b].User
	})
	return out
}
