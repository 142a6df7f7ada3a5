// Package cluster is the node daemon and the composition root of the
// packages below it: every node runs one Daemon. It joins the gossip ring
// (memberlist) and, on controller nodes (SlurmctldHost lines), takes part
// in Raft, whose state machine is cluster/fsm. It holds the daemon's
// wiring (daemon.go), the HTTP/JSON API and its routes (server.go: a unix
// socket for local clients, TCP for other nodes; identities and signed
// requests come from cluster/peer; followers forward to the leader; who
// sees which jobs and what of them is privacy.go's rule), the
// leader's loop (leader.go: node states from gossip, a scheduling pass over
// a snapshot of the state, its decisions committed through Raft), the
// leader's side of steps and allocations (stepleader.go) and the launcher
// srun talks to (steplauncher.go). The node side (batch steps, srun
// steps' tasks, prolog and epilog) is cluster/agent, whose routes it
// mounts.
//
// It may import sched, exec, accounting and its subpackages: acct, agent,
// api, config, fsm, hostlist, jobspec, peer. Nothing in the project but
// main.go imports it.
package cluster
