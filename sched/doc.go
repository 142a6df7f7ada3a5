// Package sched is the cluster's scheduling policy, kept pure: it takes a
// snapshot of nodes and pending jobs and returns decisions (which jobs start
// where, and why the others wait). It does no I/O, reads no clock and starts
// no goroutines, so the same input always gives the same decisions; it may
// import only the standard library. The leader's loop in cluster/ builds the
// snapshot, calls Schedule and commits the result through Raft.
package sched
