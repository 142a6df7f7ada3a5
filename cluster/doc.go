// Package cluster is the node daemon: every node runs one. It joins the
// gossip ring (memberlist), and on controller nodes (SlurmctldHost lines)
// takes part in Raft, whose state machine (fsm.go) holds jobs and node
// states and writes each controller's accounting store. The leader's loop
// (leader.go) turns gossip into node states and runs sched over a snapshot,
// committing its decisions; the agent (agent.go) runs batch steps through
// exec and reports their ends. The HTTP/JSON API (server.go) listens on a
// unix socket for local clients, whose identity comes from peer
// credentials, and on TCP for other nodes, whose requests are signed with
// the cluster key (auth.go); followers forward to the leader. It may import
// sched, exec, accounting and its own subpackages (api, config, hostlist).
package cluster
