package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/hostlist"
	"hpc/cluster/peer"
	"hpc/ui"
)

// The dashboard: every node serves it on the plain-HTTP side of its API
// port (web.go), a follower or a compute-only node as well as the leader.
// The page (package ui) reads one JSON snapshot of the cluster, then a
// stream of server-sent events that carries the next snapshot whenever it
// differs (dashboard_events.go). A snapshot is built on the serving node
// from what the commands read, through the socket's routes in the process
// (d.local): the leader's node list (handleNodes), the leader's bounded
// share of the job list (handleDashJobs, dashboard_jobs.go), both through
// leaderRoute, which forwards them with the viewer's identity, so
// privacy.go's rules decide what each viewer sees, and this node's status
// (handleStatus: the Raft and gossip views). A job's detail adds its
// accounting rows and, for whoever may read it, its script and the live
// tail of its output (joboutput.go). Actions (cancel, hold, release, drain, resume) are
// POSTs that need a user who showed a token and go to the same handlers
// as scancel's and scontrol's requests, with Slurm's authorization and
// error texts.

// registerDashboardRoutes is the dashboard's web routes: the page, its
// snapshot, its event stream, a job's detail and the actions.
func (d *Daemon) registerDashboardRoutes(mux *http.ServeMux) {
	mux.Handle("GET /{$}", ui.Handler()) // index.html
	mux.Handle("GET /ui/", http.StripPrefix("/ui", ui.Handler()))
	hub := newDashHub(d)
	mux.HandleFunc("GET /hpc/dashboard/state", d.handleDashState)
	mux.HandleFunc("GET /hpc/dashboard/events", hub.serveEvents)
	mux.HandleFunc("GET /hpc/dashboard/job", d.handleDashJob)
	mux.HandleFunc("GET /hpc/dashboard/job/output", d.handleDashOutput) // joboutput.go
	mux.HandleFunc("POST /hpc/dashboard/action", d.handleDashAction)
}

// dashState is one snapshot of the cluster as a viewer may see it.
type dashState struct {
	// Now is the serving node's clock when the snapshot was sent: the
	// page counts elapsed times from it.
	Now     time.Time   `json:"now"`
	Viewer  dashViewer  `json:"viewer"`
	Cluster dashCluster `json:"cluster"`
	Nodes   []dashNode  `json:"nodes"`
	// Jobs are a bounded share of the queue (dashboard_jobs.go): Counts
	// says how many jobs of each section the viewer may see, Shown how
	// many of them Jobs holds.
	Jobs     []dashJob     `json:"jobs"`
	Counts   dashJobCounts `json:"counts"`
	Shown    dashJobCounts `json:"shown"`
	Topology []dashSwitch  `json:"topology"`
	// Error says why part of the snapshot could not be read this time
	// (no leader during an election); the jobs and nodes are then the
	// last ones read.
	Error string `json:"error,omitempty"`
}

type dashViewer struct {
	User      string `json:"user"`
	Anonymous bool   `json:"anonymous"`
}

// dashCluster is hpc status's view: who leads, the Raft indexes, each
// controller as it answers for itself, and the gossip members.
type dashCluster struct {
	Name        string                `json:"name"`
	ServedBy    string                `json:"served_by"`
	Leader      string                `json:"leader"`
	Term        uint64                `json:"term"`
	CommitIndex uint64                `json:"commit_index"`
	AppliedIdx  uint64                `json:"applied_index"`
	Voters      []string              `json:"voters"`
	Controllers []api.ControllerState `json:"controllers"`
	Members     []api.Member          `json:"members"`
}

// dashNode is a node's cell in the grid. State is sinfo's compact name in
// lower case (idle, mix, alloc, drain, drng, down, unk) with Slurm's
// suffix (* not responding); Base is the state without the suffix.
type dashNode struct {
	Name          string   `json:"name"`
	State         string   `json:"state"`
	Base          string   `json:"base"`
	NotResponding bool     `json:"not_responding,omitempty"`
	Long          string   `json:"long"` // scontrol's State=, e.g. MIXED+DRAIN
	Reason        string   `json:"reason,omitempty"`
	CPUs          int      `json:"cpus"`
	AllocCPUs     int      `json:"alloc_cpus"`
	MemMB         int64    `json:"mem_mb"`
	AllocMemMB    int64    `json:"alloc_mem_mb"`
	Gres          string   `json:"gres,omitempty"`
	GresUsed      string   `json:"gres_used,omitempty"`
	Switch        string   `json:"switch,omitempty"`
	Partitions    []string `json:"partitions"`
	Jobs          []uint64 `json:"jobs"`
}

// dashJob is a job as the queue, the grid, the topology and the timeline
// show it; never its script or environment.
type dashJob struct {
	ID            uint64     `json:"id"`
	Name          string     `json:"name"`
	Display       string     `json:"display"` // squeue's JOBID: 12 or 12_3
	User          string     `json:"user"`
	Account       string     `json:"account,omitempty"`
	Partition     string     `json:"partition"`
	State         string     `json:"state"`
	Code          string     `json:"code"` // squeue's ST
	Reason        string     `json:"reason,omitempty"`
	Hold          string     `json:"hold,omitempty"`
	Submit        time.Time  `json:"submit"`
	Start         time.Time  `json:"start,omitzero"`
	End           time.Time  `json:"end,omitzero"`
	ExpectedStart time.Time  `json:"expected_start,omitzero"`
	SchedNodes    []string   `json:"sched_nodes,omitempty"` // squeue --start's SCHEDNODES
	TimeLimitMin  int64      `json:"time_limit_min"`
	NodeList      string     `json:"nodelist,omitempty"`
	Nodes         []string   `json:"nodes,omitempty"`
	NumNodes      int        `json:"num_nodes"`
	CPUs          int        `json:"cpus"`
	Priority      uint32     `json:"priority,omitempty"`
	ExitCode      string     `json:"exit_code,omitempty"`
	BatchHost     string     `json:"batch_host,omitempty"`
	StdOut        string     `json:"std_out,omitempty"`
	Steps         []dashStep `json:"steps,omitempty"`
	// Switch is the lowest switch of topology.conf that holds all of a
	// running multi-node job's nodes: where topology-aware placement put
	// it.
	Switch string `json:"switch,omitempty"`
}

type dashStep struct {
	ID    string    `json:"id"` // 12.0
	Name  string    `json:"name"`
	State string    `json:"state"`
	Nodes string    `json:"nodes"`
	Tasks int       `json:"tasks"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
}

// dashSwitch is one topology.conf line.
type dashSwitch struct {
	Name     string   `json:"name"`
	Parent   string   `json:"parent,omitempty"`
	Switches []string `json:"switches,omitempty"`
	Nodes    []string `json:"nodes,omitempty"`
	// Jobs are the running multi-node jobs this switch is the lowest
	// common switch of.
	Jobs []uint64 `json:"jobs,omitempty"`
}

// handleDashState answers one snapshot.
func (d *Daemon) handleDashState(w http.ResponseWriter, r *http.Request) {
	id, _ := WebIdentityFrom(r)
	st := d.dashSnapshot(r.Context(), id, nil)
	st.Now = time.Now()
	peer.WriteJSON(w, st)
}

// dashSnapshot builds a snapshot for the viewer id. prev, when not nil, is
// the last snapshot: what cannot be read now is taken from it.
func (d *Daemon) dashSnapshot(ctx context.Context, id WebIdentity, prev *dashState) *dashState {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st := &dashState{Viewer: dashViewer{User: id.User, Anonymous: id.Anonymous}}
	cfg := d.conf()
	// hpc status is answered by the node asked: this one (it asks a
	// controller for the Raft view when it runs none).
	ctx = peer.WithIdentity(ctx, id.Identity) // the anonymous viewer asks as anonymousUID
	var errs []string
	status, err := d.local.Status(ctx)
	if err != nil {
		status = &api.Status{}
		errs = append(errs, "status: "+err.Error())
	}
	st.Cluster = dashCluster{
		Name: cfg.ClusterName, ServedBy: d.o.Name, Leader: status.Leader, Term: status.Term,
		CommitIndex: status.CommitIndex, AppliedIdx: status.AppliedIdx, Voters: status.Voters,
		Controllers: status.Controllers, Members: status.Members,
	}
	var jobs dashJobList
	errJobs := d.local.DashboardJobs(ctx, &jobs) // dashboard_jobs.go: bounded
	nodes, errNodes := d.local.Nodes(ctx)
	if errJobs != nil || errNodes != nil {
		errs = append(errs, "jobs and nodes: "+errors.Join(errJobs, errNodes).Error())
		if prev != nil {
			st.Nodes, st.Jobs, st.Topology = prev.Nodes, prev.Jobs, prev.Topology
			st.Counts, st.Shown = prev.Counts, prev.Shown
		}
		st.Error = strings.Join(errs, "; ")
		return st
	}
	st.Error = strings.Join(errs, "; ")
	st.Jobs, st.Counts, st.Shown = jobs.Jobs, jobs.Counts, jobs.Shown
	if st.Jobs == nil {
		st.Jobs = []dashJob{}
	}
	st.Nodes = dashNodes(nodes.Nodes, &jobs, cfg.Topology)
	st.Topology = dashTopology(cfg.Topology, st.Jobs)
	return st
}

// dashJobOf is one job's row.
func dashJobOf(j *api.Job, topo []config.Switch, leaf map[string]string) dashJob {
	dj := dashJob{
		ID: j.ID, Name: j.Spec.Name, Display: strconv.FormatUint(j.ID, 10), User: j.User, Account: j.Account,
		Partition: j.Spec.Partition, State: string(j.State), Code: j.State.Short(), Reason: j.Reason,
		Hold: j.Hold, Submit: j.SubmitTime, Start: j.StartTime, End: j.EndTime,
		ExpectedStart: j.ExpectedStart, SchedNodes: j.SchedNodes,
		TimeLimitMin: j.Spec.TimeLimitMin, Nodes: j.NodeNames(), Priority: j.Priority,
		BatchHost: j.BatchHost, StdOut: j.StdOut,
	}
	if j.ArrayJobID != 0 {
		dj.Display = fmt.Sprintf("%d_%d", j.ArrayJobID, j.ArrayTaskID)
	}
	if j.State == api.StatePending {
		dj.Start, dj.End = time.Time{}, time.Time{}
	}
	dj.NodeList, dj.NumNodes = hostlist.Compress(dj.Nodes), len(dj.Nodes)
	if dj.NumNodes == 0 {
		dj.NumNodes = max(j.Spec.Nodes, 1)
	}
	for _, a := range j.Alloc {
		dj.CPUs += a.CPUs
	}
	if j.State.Final() {
		dj.ExitCode = fmt.Sprintf("%d:%d", j.ExitCode, j.Signal)
	}
	for _, s := range j.Steps {
		tasks := 0
		for _, n := range s.Tasks {
			tasks += n
		}
		dj.Steps = append(dj.Steps, dashStep{
			ID: fmt.Sprintf("%d.%d", j.ID, s.ID), Name: s.Name, State: string(s.State),
			Nodes: hostlist.Compress(s.Nodes), Tasks: tasks, Start: s.Start, End: s.End,
		})
	}
	if (j.State == api.StateRunning || j.State == api.StateCompleting) && len(dj.Nodes) > 1 {
		dj.Switch = commonSwitch(topo, leaf, dj.Nodes)
	}
	return dj
}

// leafSwitches maps each node to its leaf switch of topology.conf.
func leafSwitches(topo []config.Switch) map[string]string {
	leaf := map[string]string{}
	for _, s := range topo {
		for _, n := range s.Nodes {
			leaf[n] = s.Name
		}
	}
	return leaf
}

// commonSwitch is the lowest switch whose subtree holds every one of
// nodes; "" without a topology or when no switch does.
func commonSwitch(topo []config.Switch, leaf map[string]string, nodes []string) string {
	if len(topo) == 0 || len(nodes) == 0 {
		return ""
	}
	parent := map[string]string{}
	for _, s := range topo {
		for _, c := range s.Switches {
			parent[c] = s.Name
		}
	}
	// The path from the first node's leaf to the root; the answer is the
	// lowest switch on it that every other node's path reaches.
	var path []string
	for s := leaf[nodes[0]]; s != ""; s = parent[s] {
		path = append(path, s)
	}
	best := 0
	for _, n := range nodes[1:] {
		above := map[string]bool{}
		for s := leaf[n]; s != ""; s = parent[s] {
			above[s] = true
		}
		for best < len(path) && !above[path[best]] {
			best++
		}
	}
	if best == len(path) {
		return ""
	}
	return path[best]
}

// dashNodes is the node grid: the leader's node list (sinfo's), with the
// running jobs, GRES in use and leaf switch of each node.
func dashNodes(nodes []api.Node, jobs *dashJobList, topo []config.Switch) []dashNode {
	leaf := leafSwitches(topo)
	onNode, gres := jobs.OnNode, jobs.GresUsed
	out := make([]dashNode, 0, len(nodes))
	for _, n := range nodes {
		base, noResp := nodeStateCompact(n)
		dn := dashNode{
			Name: n.Name, Base: base, State: base, NotResponding: noResp, Long: n.State, Reason: n.Reason,
			CPUs: n.CPUs, AllocCPUs: n.AllocCPUs, MemMB: n.MemMB, AllocMemMB: n.AllocMemMB,
			Gres: n.Gres, Switch: leaf[n.Name], Partitions: n.Partitions, Jobs: onNode[n.Name],
		}
		if noResp {
			dn.State += "*"
		}
		if dn.Jobs == nil {
			dn.Jobs = []uint64{}
		}
		dn.GresUsed = gresUsed(n.Gres, gres[n.Name])
		out = append(out, dn)
	}
	return out
}

// gresUsed is sinfo's GRES_USED for a node: each of its GRES with the
// count in use ("gpu:1"); "" for a node without GRES.
func gresUsed(total string, used map[string]int) string {
	if total == "" {
		return ""
	}
	var parts []string
	for _, g := range strings.Split(total, ",") {
		name := strings.SplitN(g, ":", 2)[0]
		parts = append(parts, fmt.Sprintf("%s:%d", name, used[name]))
	}
	return strings.Join(parts, ",")
}

// nodeStateCompact is sinfo's %t for the states the node list holds
// (validate.go's nodesView): node_state_string_compact in lower case, and
// whether the node is not responding (Slurm's * suffix).
func nodeStateCompact(n api.Node) (string, bool) {
	s, noResp := strings.CutSuffix(n.State, "*")
	base, drain := strings.CutSuffix(s, "+DRAIN")
	if base == api.NodeIdle && n.AllocCPUs > 0 {
		base = api.NodeMixed
	}
	if drain {
		if base == api.NodeIdle {
			return "drain", noResp
		}
		return "drng", noResp
	}
	switch base {
	case api.NodeIdle:
		return "idle", noResp
	case api.NodeMixed:
		return "mix", noResp
	case api.NodeAllocated:
		return "alloc", noResp
	case api.NodeDown:
		return "down", noResp
	case api.NodeUnknown:
		return "unk", noResp
	}
	return strings.ToLower(base), noResp
}

// dashTopology is topology.conf's tree with each running multi-node job
// marked on its lowest common switch.
func dashTopology(topo []config.Switch, jobs []dashJob) []dashSwitch {
	out := make([]dashSwitch, 0, len(topo))
	parent := map[string]string{}
	for _, s := range topo {
		for _, c := range s.Switches {
			parent[c] = s.Name
		}
	}
	at := map[string][]uint64{}
	for _, j := range jobs {
		if j.Switch != "" {
			at[j.Switch] = append(at[j.Switch], j.ID)
		}
	}
	for _, s := range topo {
		out = append(out, dashSwitch{Name: s.Name, Parent: parent[s.Name], Switches: s.Switches, Nodes: s.Nodes, Jobs: at[s.Name]})
	}
	return out
}

// dashJobDetail answers a job's detail: its row, its batch script when the
// viewer may read it, its accounting rows (sacct's, steps included) and
// where its output is (the page asks for the output's tail on its own).
type dashJobDetail struct {
	Job dashJob `json:"job"`
	// Script is the batch script, for its owner, root and operators
	// only (scontrol write batch_script's rule); ScriptNote says why
	// there is none.
	Script     string `json:"script,omitempty"`
	ScriptNote string `json:"script_note,omitempty"`
	// Acct are the job's sacct rows, its steps' included, in sacct's
	// fields (dashboard_acct.go).
	Acct []dashAcct `json:"acct"`
	// Output and Error say where the job's standard output and error
	// are (node:path; Error only when it is another file); their live
	// tail is /hpc/dashboard/job/output's, for whoever may read them.
	Output string `json:"output,omitempty"`
	Error  string `json:"error_file,omitempty"`
}

// handleDashJob answers GET /hpc/dashboard/job?id=N.
func (d *Daemon) handleDashJob(w http.ResponseWriter, r *http.Request) {
	id, _ := WebIdentityFrom(r)
	jid, err := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidJobID})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	ctx = peer.WithIdentity(ctx, id.Identity)
	var jobs []api.Job
	err = throughFailover(ctx, func() (err error) { jobs, err = d.local.Job(ctx, jid); return err })
	if err != nil {
		peer.WriteErr(w, http.StatusServiceUnavailable, err)
		return
	}
	i := slices.IndexFunc(jobs, func(j api.Job) bool { return j.ID == jid })
	if i < 0 {
		peer.WriteErr(w, http.StatusNotFound, &api.Error{Message: api.ErrInvalidJobID})
		return
	}
	j := &jobs[i]
	cfg := d.conf()
	out := dashJobDetail{Job: dashJobOf(j, cfg.Topology, leafSwitches(cfg.Topology))}
	out.ScriptNote = d.dashScript(ctx, id, j, &out.Script)
	var rows []api.AcctRow
	err = throughFailover(ctx, func() (err error) {
		rows, err = d.local.Acct(ctx, api.AcctQuery{JobIDs: []uint64{jid}, AllUsers: true})
		return err
	})
	if err != nil {
		peer.WriteErr(w, http.StatusServiceUnavailable, err)
		return
	}
	out.Acct = dashAcctRows(rows, time.Now()) // never the script or environment rows may carry
	if j.StdOut != "" && j.BatchHost != "" {
		out.Output = fmt.Sprintf("%s:%s", j.BatchHost, j.StdOut)
		if j.StdErr != "" && j.StdErr != j.StdOut {
			out.Error = fmt.Sprintf("%s:%s", j.BatchHost, j.StdErr)
		}
	}
	peer.WriteJSON(w, out)
}

// dashScript puts job j's batch script into *script for a viewer who may
// read it (scontrol write batch_script's route and rule: its owner, root,
// operators) and otherwise says why not. An anonymous viewer never gets
// one: it is not asked for (the leader would refuse it too, as the
// anonymous uid owns nothing).
func (d *Daemon) dashScript(ctx context.Context, id WebIdentity, j *api.Job, script *string) string {
	if id.Anonymous {
		return "the batch script is shown to its owner (sign in with a token from scontrol token)"
	}
	if !j.HasScript() {
		return api.ErrJobScriptMissing
	}
	js, err := d.local.JobScript(ctx, j.ID) // ctx carries the viewer's identity
	if err != nil {
		return err.Error()
	}
	*script = js
	return ""
}

// dashAction is a POST /hpc/dashboard/action: what to do to which job or
// node.
type dashAction struct {
	Action string `json:"action"` // cancel, hold, release, drain, resume
	JobID  uint64 `json:"job_id,omitempty"`
	Node   string `json:"node,omitempty"`
	Reason string `json:"reason,omitempty"` // drain's
}

// handleDashAction does an action for a user who showed a token, through
// the route the command would use (scancel: /api/cancel; scontrol
// hold/release: /api/jobcontrol; scontrol update nodename= state=drain or
// resume: /api/update), so that Slurm's authorization and error texts
// apply. The body must be JSON (Content-Type: application/json), which a
// form on another site cannot send.
func (d *Daemon) handleDashAction(w http.ResponseWriter, r *http.Request) {
	id, _ := WebIdentityFrom(r)
	if id.Anonymous {
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrAccessDenied, Detail: "sign in with a token (scontrol token) to act"})
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		peer.WriteErr(w, http.StatusUnsupportedMediaType, errors.New("actions are JSON (Content-Type: application/json)"))
		return
	}
	var a dashAction
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&a); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	ctx = peer.WithIdentity(ctx, id.Identity)
	var res []api.CancelResult // the job routes' answer: one result per job
	var err error
	switch a.Action {
	case "cancel":
		res, err = d.local.Cancel(ctx, api.CancelRequest{JobIDs: []uint64{a.JobID}})
	case "hold", "release":
		res, err = d.local.JobControl(ctx, api.JobControlRequest{JobIDs: []uint64{a.JobID}, Action: a.Action})
	case "drain", "resume":
		set := map[string]string{"state": strings.ToUpper(a.Action)}
		if a.Action == "drain" {
			set["reason"] = a.Reason
		}
		err = d.local.Update(ctx, api.UpdateRequest{Nodes: []string{a.Node}, Set: set})
	default:
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: "unknown action " + a.Action})
		return
	}
	if err == nil && len(res) > 0 && res[0].Error != "" {
		err = &api.Error{Message: res[0].Error}
	}
	if err != nil {
		code := http.StatusBadRequest
		var ae *api.Error
		if errors.As(err, &ae) && ae.Message == api.ErrAccessDenied {
			code = http.StatusForbidden
		}
		peer.WriteErr(w, code, err)
		return
	}
	peer.WriteJSON(w, map[string]any{"ok": true})
}

// throughFailover calls fn again, every quarter second, while it fails for
// want of a leader (one was killed and the next is not elected yet, or a
// forward went to the dead one), until ctx ends: a page's request waits
// out a failover rather than failing in the middle of it.
func throughFailover(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		var ae *api.Error
		if err == nil || !errors.As(err, &ae) || ae.Message != api.ErrNoLeader {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}
