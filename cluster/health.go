package cluster

import (
	"sync"
	"time"

	"hpc/cluster/fsm"
)

// A node's health, as the leader sees it, follows slurmctld's: a node the
// controller does not hear is "not responding" (sinfo's `*`) at once and
// gets no new work; one not heard for SlurmdTimeout since its last contact
// goes DOWN ("Not responding"), its jobs with it; one heard again is UP
// again (unless an administrator set it DOWN or DRAIN). The leader hears a
// node through gossip (a member until memberlist declares it dead, which
// its settings make quick: startGossip) and through its registrations
// (register.go), and not at all while its daemon fails to answer a launch
// (intents.go). memberlist tells nobody of a member it only suspects, so
// the leader looks at the members often (healthInterval).

// healthInterval is how often the leader looks at gossip's members.
const healthInterval = 250 * time.Millisecond

// nodeDownGrace is how long a node must have been UP before the leader may
// mark it DOWN: a node that just came up is not yet in every member's view.
const nodeDownGrace = 2 * time.Second

// nodeHealth is when the leader last heard each node. A new leader knows
// nothing of the past: it counts every node as heard when it took over.
// A node whose daemon did not answer a launch is not responding, whatever
// gossip says, until it registers again (as slurmctld marks a node that
// did not answer an RPC).
type nodeHealth struct {
	mu          sync.Mutex
	contact     map[string]time.Time
	term        uint64               // the term contact was counted in
	unreachable map[string]time.Time // when a call to the node's daemon failed
}

// markUnreachable records that a call to node's daemon failed at t.
func (h *nodeHealth) markUnreachable(node string, t time.Time) {
	h.mu.Lock()
	if h.unreachable == nil {
		h.unreachable = map[string]time.Time{}
	}
	h.unreachable[node] = t
	h.mu.Unlock()
}

// registered records a registration of node: it answers again.
func (h *nodeHealth) registered(node string, t time.Time) {
	h.mu.Lock()
	delete(h.unreachable, node)
	h.mu.Unlock()
	h.heard(node, t)
}

// isUnreachable tells whether node's daemon failed a call since it last
// registered.
func (h *nodeHealth) isUnreachable(node string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.unreachable[node]
	return ok
}

// heard records a contact with node at t.
func (h *nodeHealth) heard(node string, t time.Time) {
	h.mu.Lock()
	if h.contact == nil {
		h.contact = map[string]time.Time{}
	}
	if t.After(h.contact[node]) {
		h.contact[node] = t
	}
	h.mu.Unlock()
}

// begin starts counting afresh in a new term: what an earlier leader heard
// is not known here.
func (h *nodeHealth) begin(term uint64) {
	h.mu.Lock()
	if h.term != term || h.contact == nil {
		h.term, h.contact = term, map[string]time.Time{}
	}
	h.mu.Unlock()
}

// lastContact is when node was last heard in this term; a node not heard
// in it counts as heard at now, when the leader first asks.
func (h *nodeHealth) lastContact(node string, now time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.contact[node]
	if !ok {
		h.contact[node] = now
		return now
	}
	return t
}

// healthLoop watches the nodes while this node leads.
func (d *Daemon) healthLoop() {
	defer d.wg.Done()
	tick := time.NewTicker(healthInterval)
	defer tick.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		}
		if d.isLeader() && d.caughtUp.Load() {
			d.reconcileNodes()
		}
	}
}

// reconcileNodes commits what gossip shows of the nodes: whether each
// responds, UP for a node heard again, DOWN for one not heard for
// SlurmdTimeout (0: never).
func (d *Daemon) reconcileNodes() {
	now := d.now()
	d.health.begin(d.raft.CurrentTerm())
	alive := map[string]bool{}
	for _, m := range d.members() {
		if !d.health.isUnreachable(m.Name) {
			alive[m.Name] = true
			d.health.heard(m.Name, now)
		}
	}
	timeout := time.Duration(d.conf().SlurmdTimeout) * time.Second
	var ops []fsm.Op
	d.fsm.View(func(st *fsm.State) {
		for _, n := range d.cfg.Nodes {
			ns := st.Nodes[n.Name]
			if ns == nil {
				continue
			}
			if ns.NoResp == alive[n.Name] {
				ops = append(ops, &fsm.NodeResponding{Time: now, Node: n.Name, Responding: alive[n.Name]})
			}
			switch {
			case alive[n.Name] && (ns.State == "UNKNOWN" || ns.State == "DOWN"):
				// DRAIN and an administrator's DOWN stay until scontrol
				// update State=RESUME.
				ops = append(ops, &fsm.NodeStateChange{Time: now, Node: n.Name, State: "UP"})
			case !alive[n.Name] && ns.State == "UP" && timeout > 0 && now.Sub(ns.Since) > nodeDownGrace &&
				now.Sub(d.health.lastContact(n.Name, now)) >= timeout:
				ops = append(ops, &fsm.NodeStateChange{Time: now, Node: n.Name, State: "DOWN", Why: "Not responding", Requeue: true})
			}
		}
	})
	for _, op := range ops {
		if _, err := d.propose(op); err != nil {
			d.log.Warn("node state commit failed", "op", op, "err", err)
			return
		}
		d.log.Info("node state", "change", op)
	}
}
