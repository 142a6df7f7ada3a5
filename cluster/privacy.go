package cluster

import (
	"net/http"
	"strconv"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

// Who sees what of jobs, as slurmctld decides it, in one place for every
// route that answers with jobs or their data:
//
//   - Root, a node of the cluster, and sacctmgr users of AdminLevel
//     Operator or Administrator (slurmctld's validate_operator) see every
//     job whole.
//   - A job's owner sees it whole.
//   - Anyone else sees every job (squeue, scontrol show job, sacct -a,
//     sprio) but not its batch script and environment (Spec.Script, Env
//     and the --export list, which may carry values): they are emptied and
//     Withheld set. scontrol write batch_script answers "Invalid user id".
//   - With PrivateData=jobs in slurm.conf, anyone else does not see the
//     job at all: it is left out of lists, and asked for by id it is
//     unknown (Invalid job id specified), as slurmctld's _hide_job does.
//   - With PrivateData=usage, sshare and sreport show an ordinary user
//     only their own associations' rows.
//
// The dashboard's anonymous viewer asks as anonymousUID (web.go), a uid
// no account has: it owns nothing, is no operator, and so sees what any
// other user sees, never a script, an environment or an output.
//
// Acting on a job (scancel, scontrol hold/update, srun --jobid, salloc's
// release) is the owner's or root's: callersJob and the handlers' checks.

// jobViewer is a caller as the job routes see it.
type jobViewer struct {
	id peer.Identity
	// operator: root, a node, or AdminLevel Operator/Administrator.
	operator     bool
	privateJobs  bool // PrivateData=jobs
	privateUsage bool // PrivateData=usage
}

// viewer returns the caller's jobViewer; it reads the sacctmgr records.
// Inside d.fsm.View, use viewerIn.
func (d *Daemon) viewer(id peer.Identity) jobViewer {
	var v jobViewer
	d.fsm.View(func(st *fsm.State) { v = d.viewerIn(st, id) })
	return v
}

// viewerIn is viewer for a caller already holding the state.
func (d *Daemon) viewerIn(st *fsm.State, id peer.Identity) jobViewer {
	return jobViewer{
		id:           id,
		operator:     id.Node || id.UID == 0 || (id.UID != anonymousUID && st.Acct.IsOperator(id.UID, id.User)),
		privateJobs:  d.conf().PrivateData.Jobs,
		privateUsage: d.conf().PrivateData.Usage,
	}
}

// owns reports whether the job is the caller's. The anonymous viewer
// owns none, whatever a job's uid.
func (v jobViewer) owns(j *api.Job) bool {
	return !v.id.Node && !v.anonymous() && j.UID == v.id.UID
}

// anonymous reports whether the caller is the dashboard's anonymous
// viewer (web.go's anonymousUID).
func (v jobViewer) anonymous() bool { return !v.id.Node && v.id.UID == anonymousUID }

// listed reports whether the caller sees the job at all.
func (v jobViewer) listed(j *api.Job) bool {
	return !v.privateJobs || v.operator || v.owns(j)
}

// whole reports whether the caller sees the job's batch script and
// environment.
func (v jobViewer) whole(j *api.Job) bool { return v.operator || v.owns(j) }

// job returns a copy of the job as the caller may see it; false if the
// caller may not see it at all.
func (v jobViewer) job(j *api.Job) (api.Job, bool) {
	if j == nil || !v.listed(j) {
		return api.Job{}, false
	}
	out := *j
	if !v.whole(j) {
		withhold(&out)
	}
	return out, true
}

// withhold leaves a copy of a job without its batch script and
// environment (api.Job.Withheld).
func withhold(j *api.Job) {
	j.Spec.Script, j.Spec.Env, j.Spec.Export = "", nil, ""
	j.Withheld = true
}

// acctUID is the uid sacct's rows are limited to (nil: none) for a
// request that asked for all users' rows or not: an ordinary user sees
// only their own without --allusers, and with PrivateData=jobs always.
func (v jobViewer) acctUID(all bool) *uint32 {
	if v.operator && (all || v.id.UID == 0) {
		return nil
	}
	if all && !v.privateJobs {
		return nil
	}
	uid := v.id.UID
	return &uid
}

// usageRow reports whether the caller sees the usage of user's
// association (sshare, sreport).
func (v jobViewer) usageRow(user string) bool {
	return !v.privateUsage || v.operator || (user != "" && user == v.id.User)
}

// handleJobScript is scontrol write batch_script: the job's batch script,
// for its owner, root and operators (slurmctld's
// _slurm_rpc_dump_batch_script); PrivateData does not change the answer.
func (d *Daemon) handleJobScript(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	jid, err := strconv.ParseUint(r.URL.Query().Get("job"), 10, 64)
	var j *api.Job
	if err == nil {
		j, _ = d.fsm.Job(jid)
	}
	v := d.viewer(id)
	switch {
	case j == nil:
		peer.WriteErr(w, http.StatusNotFound, &api.Error{Message: api.ErrInvalidJobID})
	case !v.whole(j):
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrUserIDMissing})
	case j.Spec.Script == "" || j.Spec.Script == api.HolderScript:
		// salloc's and srun's allocations have no batch script.
		peer.UserErr(w, &api.Error{Message: api.ErrJobScriptMissing})
	default:
		peer.WriteJSON(w, api.JobScript{JobID: j.ID, Script: j.Spec.Script})
	}
}

// mayActOn reports whether the caller may act on job j (cancel, signal,
// hold, release, requeue, update): its owner, or root, a node, or an
// sacctmgr Operator/Administrator, as Slurm's authorization goes.
func (v jobViewer) mayActOn(j *api.Job) bool { return v.owns(j) || v.operator }
