package cluster

// hpc controller add|remove: the leader changes the Raft voter set, one
// change at a time, and asks the node to take up or give up its role
// (roles.go). What hpc status and scontrol ping show of each controller
// is here too (controllerStates).
//
// Adding is done in two steps, as Raft's membership changes are safest: the
// node joins as a non-voter, receives the log, and is made a voter only
// once it has applied what the cluster committed before it joined; a
// voter that lags would count in the quorum without being able to
// acknowledge anything, and a two-controller cluster would stop committing
// until it caught up. A change is refused when it would leave fewer live
// voters than a quorum of the new voter set: the cluster would stop.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

// roleChange is the leader's word to a node: record role and act on it.
type roleChange struct {
	Role string `json:"role"` // roleVoter, roleRemoved, or "" for the config's
}

// roleChangeResult is the node's answer: the role it had (for a roll
// back) and whether it restarts to act on the new one.
type roleChangeResult struct {
	Previous   string `json:"previous"`
	Restarting bool   `json:"restarting"`
}

// How long the steps of a change may take.
const (
	ctlCatchUpTimeout = time.Minute      // a new controller to apply the log
	ctlStateTimeout   = time.Second      // one controller to answer for its state
	nudgeEvery        = 10 * time.Second // the leader's reminder to a stray Raft
)

func (d *Daemon) registerControllerRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/controller", d.leaderRoute(d.handleControllerChange))
	mux.HandleFunc("POST /internal/controller/role", d.nodeRoute(d.handleRoleChange))
	mux.HandleFunc("GET /internal/controller/state", d.nodeRoute(d.handleControllerState))
}

// ctlErr is a refused controller change: its HTTP status and its text.
type ctlErr struct {
	code int
	msg  string
}

func (e *ctlErr) Error() string { return e.msg }

func refuse(code int, format string, args ...any) error {
	return &ctlErr{code, fmt.Sprintf(format, args...)}
}

func writeCtlErr(w http.ResponseWriter, err error) {
	var ce *ctlErr
	if errors.As(err, &ce) {
		peer.WriteErr(w, ce.code, &api.Error{Message: ce.msg})
		return
	}
	peer.WriteErr(w, http.StatusServiceUnavailable, &api.Error{Message: "controller change failed", Detail: err.Error()})
}

// handleControllerChange is hpc controller add|remove NODE, on the leader.
// Only root and SlurmUser change the controllers (as only they may run
// slurmctld), not sacctmgr's administrators.
func (d *Daemon) handleControllerChange(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.ControllerChange
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	if su := d.conf().SlurmUser; id.Node || (id.UID != 0 && (su == "" || id.User != su)) {
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrAccessDenied, Detail: "controllers are changed by root and SlurmUser only"})
		return
	}
	if _, ok := d.cfg.HostAddr(req.Node); !ok {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrInvalidNodeName, Detail: req.Node})
		return
	}
	if d.cfg.IsSubmitHost(req.Node) {
		// A login node is where users are: it holds no cluster state.
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: req.Node + " is a submit host (HpcSubmitHost): it runs no controller"})
		return
	}
	if req.Action != "add" && req.Action != "remove" {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: "unknown controller action " + strconv.Quote(req.Action) + ": add or remove"})
		return
	}
	what := fmt.Sprintf("%s %s", map[string]string{"add": "adding", "remove": "removing"}[req.Action], req.Node)
	if !d.ctlChange.CompareAndSwap(nil, &what) {
		busy := "another change"
		if p := d.ctlChange.Load(); p != nil {
			busy = *p
		}
		peer.WriteErr(w, http.StatusConflict, &api.Error{Message: "a controller change is in progress (" + busy + "): one at a time, try again when it is done"})
		return
	}
	defer d.ctlChange.Store(nil)
	if req.Action == "remove" && req.Node == d.o.Name {
		d.removeSelf(w, r, id, body, req.Node)
		return
	}
	var res *api.ControllerChangeResult
	var err error
	if req.Action == "add" {
		res, err = d.addController(r.Context(), req.Node)
	} else {
		res, err = d.removeController(r.Context(), req.Node)
	}
	if err != nil {
		d.log.Warn("controller change refused or failed", "change", what, "err", err)
		writeCtlErr(w, err)
		return
	}
	d.log.Info("controllers changed", "change", what, "voters", res.Voters)
	peer.WriteJSON(w, res)
}

// raftServers is the leader's latest Raft configuration and its index.
func (d *Daemon) raftServers() ([]raft.Server, uint64, error) {
	f := d.raft.GetConfiguration()
	if err := d.await(f); err != nil {
		return nil, 0, err
	}
	return f.Configuration().Servers, f.Index(), nil
}

// voterNames lists the voters of a configuration.
func voterNames(servers []raft.Server) []string {
	var out []string
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			out = append(out, string(s.ID))
		}
	}
	return out
}

// aliveMembers are the gossip members memberlist sees alive.
func (d *Daemon) aliveMembers() map[string]bool {
	alive := map[string]bool{}
	for _, m := range d.members() {
		if m.State == memberlist.StateAlive {
			alive[m.Name] = true
		}
	}
	return alive
}

// quorumAfter refuses a voter set whose live members are fewer than its
// quorum (a majority): the cluster could commit nothing.
func quorumAfter(voters []string, alive map[string]bool, change string) error {
	if len(voters) == 0 {
		return refuse(http.StatusConflict, "%s would leave no controller: the cluster needs at least one", change)
	}
	live := 0
	for _, v := range voters {
		if alive[v] {
			live++
		}
	}
	if need := len(voters)/2 + 1; live < need {
		return refuse(http.StatusConflict, "%s would leave %d of %d controllers up, short of the quorum of %d: bring the others back first",
			change, live, len(voters), need)
	}
	return nil
}

// addController makes node a non-voter, waits for it to catch up, then
// makes it a voter; on a failure the node goes back to its old role.
func (d *Daemon) addController(ctx context.Context, node string) (*api.ControllerChangeResult, error) {
	servers, idx, err := d.raftServers()
	if err != nil {
		return nil, err
	}
	for _, s := range servers {
		if string(s.ID) == node && s.Suffrage == raft.Voter {
			return nil, refuse(http.StatusConflict, "%s is already a controller (a Raft voter)", node)
		}
	}
	alive := d.aliveMembers()
	if !alive[node] {
		return nil, refuse(http.StatusConflict, "%s is not responding: its daemon must run to become a controller", node)
	}
	if err := quorumAfter(append(voterNames(servers), node), alive, "adding "+node); err != nil {
		return nil, err
	}
	if err := d.restartSafe(node); err != nil {
		return nil, err
	}
	prev, err := d.tellRole(ctx, node, roleVoter)
	if err != nil {
		return nil, fmt.Errorf("%s did not take up its controller role: %w", node, err)
	}
	addr, _ := d.cfg.HostAddr(node)
	f := d.raft.AddNonvoter(raft.ServerID(node), d.raftAddr(addr), idx, applyTimeout)
	if err := d.await(f); err != nil {
		d.rollBack(node, prev)
		return nil, fmt.Errorf("add %s to the Raft configuration: %w", node, err)
	}
	if err := d.awaitCatchUp(ctx, node, f.Index()); err != nil {
		if _, idx, cerr := d.raftServers(); cerr == nil {
			_ = d.await(d.raft.RemoveServer(raft.ServerID(node), idx, applyTimeout))
		}
		d.rollBack(node, prev)
		return nil, err
	}
	_, idx, err = d.raftServers()
	if err != nil {
		return nil, err
	}
	if err := d.await(d.raft.AddVoter(raft.ServerID(node), d.raftAddr(addr), idx, applyTimeout)); err != nil {
		return nil, fmt.Errorf("make %s a voter: %w", node, err)
	}
	servers, _, err = d.raftServers()
	if err != nil {
		return nil, err
	}
	return &api.ControllerChangeResult{Voters: voterNames(servers)}, nil
}

// restartSafe refuses a role change that would end jobs: a node whose
// steps run as plain processes cannot keep them through the daemon
// restart a role change is.
func (d *Daemon) restartSafe(node string) error {
	plain := false
	for _, m := range d.members() {
		var meta nodeMeta
		if m.Name == node && json.Unmarshal(m.Meta, &meta) == nil {
			plain = meta.Plain
		}
	}
	if !plain {
		return nil
	}
	var running []string
	d.fsm.View(func(st *fsm.State) {
		for _, j := range st.Jobs {
			if j.State.Final() || j.State == api.StatePending {
				continue
			}
			for _, a := range j.Alloc {
				if a.Node == node {
					running = append(running, strconv.FormatUint(j.ID, 10))
				}
			}
		}
	})
	if len(running) == 0 {
		return nil
	}
	slices.Sort(running)
	return refuse(http.StatusConflict, "%s runs steps as plain processes, which its daemon's restart into a new role would end, and has jobs (%s): drain it and let them end first",
		node, strings.Join(running, ","))
}

// tellRole asks node to record role and act on it; it returns the role
// the node had.
func (d *Daemon) tellRole(ctx context.Context, node, role string) (string, error) {
	addr := d.apiAddr(node)
	if addr == "" {
		return "", fmt.Errorf("no address for %s", node)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var res roleChangeResult
	if err := d.peers.CallNode(ctx, addr, "/internal/controller/role", roleChange{Role: role}, &res); err != nil {
		return "", err
	}
	return res.Previous, nil
}

// rollBack gives node its previous role after a failed add.
func (d *Daemon) rollBack(node, prev string) {
	if _, err := d.tellRole(context.Background(), node, prev); err != nil {
		d.log.Warn("could not give the node its old role back; the leader tells it again later", "node", node, "err", err)
	}
}

// awaitCatchUp waits until node, restarted as a controller, has applied
// the log up to index.
func (d *Daemon) awaitCatchUp(ctx context.Context, node string, index uint64) error {
	ctx, cancel := context.WithTimeout(ctx, ctlCatchUpTimeout)
	defer cancel()
	addr := d.apiAddr(node)
	last := "no answer"
	for {
		var st api.ControllerState
		cctx, ccancel := context.WithTimeout(ctx, ctlStateTimeout)
		err := d.peers.Get(cctx, addr, "/internal/controller/state", &st)
		ccancel()
		switch {
		case err != nil:
			last = err.Error()
		case st.Role == api.RoleDown:
			last = "runs no Raft yet"
		case st.AppliedIndex >= index:
			return nil
		default:
			last = fmt.Sprintf("%s, applied %d of %d", st.Role, st.AppliedIndex, index)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not catch up with the log within %v (%s): not added", node, ctlCatchUpTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removeController takes node out of the voter set and tells it to stop
// its Raft.
func (d *Daemon) removeController(ctx context.Context, node string) (*api.ControllerChangeResult, error) {
	servers, idx, err := d.raftServers()
	if err != nil {
		return nil, err
	}
	if err := d.checkRemove(servers, node); err != nil {
		return nil, err
	}
	if err := d.restartSafe(node); err != nil {
		return nil, err
	}
	if err := d.await(d.raft.RemoveServer(raft.ServerID(node), idx, applyTimeout)); err != nil {
		return nil, fmt.Errorf("remove %s from the Raft configuration: %w", node, err)
	}
	servers, _, err = d.raftServers()
	if err != nil {
		return nil, err
	}
	res := &api.ControllerChangeResult{Voters: voterNames(servers)}
	if _, err := d.tellRole(ctx, node, roleRemoved); err != nil {
		res.Note = fmt.Sprintf("%s did not answer (%v); it stops its controller when the leader reaches it", node, err)
	}
	return res, nil
}

// checkRemove refuses removing a node that is no controller, the last
// voter, or one whose removal leaves no quorum up.
func (d *Daemon) checkRemove(servers []raft.Server, node string) error {
	found := false
	var rest []string
	for _, s := range servers {
		if string(s.ID) == node {
			found = true
		} else if s.Suffrage == raft.Voter {
			rest = append(rest, string(s.ID))
		}
	}
	if !found {
		return refuse(http.StatusConflict, "%s is not a controller", node)
	}
	if len(rest) == 0 {
		return refuse(http.StatusConflict, "%s is the last controller: the cluster cannot run without one", node)
	}
	return quorumAfter(rest, d.aliveMembers(), "removing "+node)
}

// removeSelf is removing the leader: it hands leadership to another voter
// and passes the request on to it, so that the new leader removes this
// node as it would any other.
func (d *Daemon) removeSelf(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte, node string) {
	servers, _, err := d.raftServers()
	if err == nil {
		err = d.checkRemove(servers, node)
	}
	if err != nil {
		writeCtlErr(w, err)
		return
	}
	if err := d.await(d.raft.LeadershipTransfer()); err != nil {
		writeCtlErr(w, fmt.Errorf("hand leadership over before removing %s: %w", node, err))
		return
	}
	if !d.forward(w, r, id, body) {
		writeCtlErr(w, fmt.Errorf("%s leads again after handing leadership over: try again", node))
	}
}

// handleRoleChange is the leader's word to this node: record the role
// and, if it changes whether the node runs Raft, restart the daemon in it.
func (d *Daemon) handleRoleChange(w http.ResponseWriter, r *http.Request) {
	var req roleChange
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	if req.Role != "" && req.Role != roleVoter && req.Role != roleRemoved {
		peer.WriteErr(w, http.StatusBadRequest, fmt.Errorf("unknown controller role %q", req.Role))
		return
	}
	restart := wantsRaft(req.Role, d.cfg.IsController(d.o.Name)) != (d.raft != nil)
	if restart && d.o.restart == nil {
		peer.WriteErr(w, http.StatusConflict, errors.New("this daemon cannot restart itself in a new role"))
		return
	}
	prev, err := readRole(d.o.Dir)
	if err == nil {
		err = writeRole(d.o.Dir, req.Role)
	}
	if err != nil {
		peer.WriteErr(w, http.StatusInternalServerError, err)
		return
	}
	d.log.Info("controller role recorded", "role", req.Role, "previous", prev, "restart", restart)
	peer.WriteJSON(w, roleChangeResult{Previous: prev, Restarting: restart})
	if restart {
		go d.o.restart()
	}
}

// handleControllerState answers for this node's Raft.
func (d *Daemon) handleControllerState(w http.ResponseWriter, r *http.Request) {
	peer.WriteJSON(w, d.localControllerState())
}

func (d *Daemon) localControllerState() api.ControllerState {
	st := api.ControllerState{Name: d.o.Name, Role: api.RoleDown, Dedicated: d.cfg.ControllerOnly(d.o.Name)}
	if d.raft == nil {
		st.Error = "runs no controller"
		return st
	}
	switch d.raft.State() {
	case raft.Leader:
		st.Role = api.RoleLeader
	case raft.Follower:
		st.Role = api.RoleFollower
		st.LastContact = d.raft.LastContact()
	case raft.Candidate:
		st.Role = api.RoleCandidate
		st.LastContact = d.raft.LastContact()
	default:
		st.Error = "Raft is shut down"
	}
	stats := d.raft.Stats()
	st.Term, _ = strconv.ParseUint(stats["term"], 10, 64)
	st.CommitIndex, _ = strconv.ParseUint(stats["commit_index"], 10, 64)
	st.AppliedIndex, _ = strconv.ParseUint(stats["applied_index"], 10, 64)
	if servers, _, err := d.raftServers(); err == nil {
		st.Voter = slices.Contains(voterNames(servers), d.o.Name)
	}
	return st
}
