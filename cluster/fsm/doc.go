// Package fsm is the controller's replicated state: the Raft state machine
// (FSM) that holds jobs, their steps, node states and the sacctmgr records,
// and writes each controller's accounting store (the projection of that
// state into SQLite rows, records.go).
//
// A Raft log entry is one typed operation (ops.go): a Type byte and the
// JSON of its payload. Apply decodes it and dispatches it, in one switch,
// to the applyX method of its type. Entries of the earlier, untyped format
// are still read (legacy.go), so old logs and snapshots replay. Each applyX
// checks its payload against the state and the config first (validate.go)
// and refuses a malformed one whole, with an error in Result: Apply never
// panics on an entry (FuzzApply).
//
// It may import accounting, sched (for submit limits), and cluster/acct,
// api, config, hostlist and jobspec. It never imports exec, the node agent
// or the daemon (cluster), and it reads no clock: everything Apply needs
// is in the entry.
package fsm
