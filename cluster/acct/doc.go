// Package acct holds what sacctmgr manages: QoS, accounts, users and
// associations, as the replicated records the FSM keeps (State), the
// permission rules (who may change what, Slurm's AdminLevel), the
// validation and error texts in sacctmgr's words, and their conversion
// into the scheduler's inputs (SchedInputs).
//
// An add, modify or delete is planned on the leader against a copy of the
// records (Clone, then Apply: that is where permissions, validation and
// the answer come from) and committed as one Raft entry that carries the
// Op and the Version of the records it was planned on. The FSM replays the
// same plan on a copy and swaps it in, so an op is all or nothing; if
// another sacctmgr op was committed in between, the FSM refuses it with
// ErrChanged and the leader plans again.
//
// It imports only cluster/api and sched: no Raft, no HTTP, no clock.
package acct
