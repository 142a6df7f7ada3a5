// Package e2e holds hpc's multi-process lab tests: real clusters of hpc
// daemons (memberlist, Raft over TCP, libcontainer steps, SQLite
// accounting) on loopback addresses of their own, driven through the
// command line as root and as an unprivileged user. They need root and
// are skipped under -short. helpers_test.go has what they share: the hpc
// binary (built once per test process), the skip condition, the one
// polling function, and the table of each lab's addresses and ports.
//
// HPC_LAB_RACE=1 builds the labs' hpc with the race detector; a daemon's
// log that reports a data race then fails the test.
package e2e
