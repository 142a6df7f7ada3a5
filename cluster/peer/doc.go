// Package peer is who asks and how nodes reach each other: a local
// client's identity from its unix socket's peer credentials (as munge
// gives Slurm), requests between nodes signed with the cluster key and
// carrying that identity, the calls a node makes to another node's API,
// and streamed answers (one JSON value a line).
//
// It imports only cluster/api and cluster/config.
package peer
