// Package accounting is the SQLite store behind sacct, sreport and sshare:
// one row per job and one per job step, written on every controller by the
// Raft FSM as it applies log entries, and read concurrently by the API
// handlers. Because Raft replays the log after a restart, every write is an
// idempotent upsert; a snapshot carries the rows a Dump reads, and
// ReplaceAll rebuilds the store from them when the snapshot is restored.
// The package defines its own record types (the cluster converts to and
// from its wire types) and may import only the standard library and
// github.com/mattn/go-sqlite3; it never imports cluster/.
package accounting
