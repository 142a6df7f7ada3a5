package cluster

// What hpc status and scontrol ping show of the controllers, and the
// leader's reminder to a node that runs Raft outside the voter set.

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
)

// controllerStates asks each controller for its own Raft view, in
// parallel: the SlurmctldHosts in slurm.conf's order (scontrol ping calls
// the first the primary), then the voters added at run time. servers is
// the Raft configuration this node knows (nil on a node without Raft:
// the SlurmctldHosts then); a SlurmctldHost removed at run time is left
// out, since it is no controller any more.
func (d *Daemon) controllerStates(ctx context.Context, servers []raft.Server) []api.ControllerState {
	suffrage := map[string]raft.ServerSuffrage{}
	for _, s := range servers {
		suffrage[string(s.ID)] = s.Suffrage
	}
	var names []string
	for _, h := range d.cfg.ControlHosts {
		if _, ok := suffrage[h.Name]; ok || servers == nil {
			names = append(names, h.Name)
		}
	}
	for _, s := range servers {
		if !d.cfg.IsController(string(s.ID)) {
			names = append(names, string(s.ID))
		}
	}
	alive := d.aliveMembers()
	out := make([]api.ControllerState, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		out[i] = api.ControllerState{Name: name, Role: api.RoleDown, Dedicated: d.cfg.ControllerOnly(name)}
		switch {
		case name == d.o.Name:
			out[i] = d.localControllerState()
		case !alive[name]:
			out[i].Error = "not responding (gone from gossip)"
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, ctlStateTimeout)
				defer cancel()
				var st api.ControllerState
				if err := d.peers.Get(cctx, d.apiAddr(name), "/internal/controller/state", &st); err != nil {
					out[i].Error = "not responding: " + err.Error()
					return
				}
				out[i] = st
			}()
		}
	}
	wg.Wait()
	if servers != nil {
		// The configuration this node knows says who votes; a node's own
		// word may lag it (a non-voter being added).
		for i := range out {
			out[i].Voter = suffrage[out[i].Name] == raft.Voter
		}
	}
	return out
}

// statusControllers fills hpc status's controllers and the gossip members
// that never joined: controller-only hosts are no NodeName, so the node
// list alone would not name them.
func (d *Daemon) statusControllers(ctx context.Context, st *api.Status) {
	st.ExecMode = d.execMode()
	if d.raft != nil {
		var servers []raft.Server
		if s, _, err := d.raftServers(); err == nil {
			servers = s
		}
		st.Controllers = d.controllerStates(ctx, servers)
	} else if len(st.Controllers) == 0 {
		// No leader answered for them: each controller answers for itself.
		st.Controllers = d.controllerStates(ctx, nil)
	}
	seen := map[string]bool{}
	for _, m := range st.Members {
		seen[m.Name] = true
	}
	for _, h := range d.cfg.ControlHosts {
		if !seen[h.Name] {
			st.Members = append(st.Members, api.Member{Name: h.Name, Addr: net.JoinHostPort(h.Addr, strconv.Itoa(d.cfg.GossipPort)), State: "dead"})
		}
	}
}

// reconcileControllers, on the leader, tells a live node that runs Raft
// but is no longer in the Raft configuration to stop it: one removed
// while it was down, or one whose add failed half way. Not while a change
// is in progress, when the node being added runs Raft before it joins.
func (d *Daemon) reconcileControllers() {
	if d.ctlChange.Load() != nil {
		return
	}
	servers, _, err := d.raftServers()
	if err != nil || len(servers) == 0 {
		return
	}
	in := map[string]bool{}
	for _, s := range servers {
		in[string(s.ID)] = true
	}
	if d.ctlNudged == nil {
		d.ctlNudged = map[string]time.Time{}
	}
	now := time.Now()
	for _, m := range d.members() {
		var meta nodeMeta
		if json.Unmarshal(m.Meta, &meta) != nil || !meta.Ctl || in[m.Name] || now.Sub(d.ctlNudged[m.Name]) < nudgeEvery {
			continue
		}
		if _, known := d.cfg.HostAddr(m.Name); !known {
			continue
		}
		d.ctlNudged[m.Name] = now
		name := m.Name
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
			defer cancel()
			var res roleChangeResult
			if err := d.peers.CallNode(ctx, d.apiAddr(name), "/internal/controller/role", roleChange{Role: roleRemoved}, &res); err != nil {
				d.log.Warn("could not tell a node outside the voters to stop its Raft", "node", name, "err", err)
				return
			}
			d.log.Info("told a node outside the voters to stop its Raft", "node", name)
		}()
	}
}
