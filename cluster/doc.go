// Package cluster is the node daemon, and the composition root of the
// packages below it: every node runs one Daemon. It joins the gossip ring
// (memberlist) and, on controller nodes (SlurmctldHost lines), takes part
// in Raft, whose state machine is cluster/fsm. It holds the daemon's
// wiring (daemon.go), the HTTP/JSON API and its routes (server.go: a unix
// socket for local clients, whose identity comes from peer credentials,
// and TCP for other nodes, whose requests are signed with the cluster key,
// auth.go; followers forward to the leader), the leader's loop (leader.go:
// node states from gossip, a scheduling pass over a snapshot of the state,
// its decisions committed through Raft), and the node agent that runs
// batch steps and srun steps through exec (agent.go, stepagent.go) and
// reports their ends.
//
// It may import sched, exec, accounting and its subpackages: acct, api,
// config, fsm, hostlist, jobspec. Nothing in the project below it imports
// it.
package cluster
