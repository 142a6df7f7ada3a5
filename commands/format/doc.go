// Package format turns the cluster's api records into exactly the text Slurm
// 22.05 prints: squeue tables (with -o format strings and -l), sinfo summaries
// and -N -l node lists, sacct tables (fixed-width and -P/-p parsable), and
// scontrol show job/node/partition records, plus the time helpers behind them.
// Every function is pure: callers pass the records and the current time, and
// get a string back; nothing here talks to the network, reads the clock or
// holds global state. It may import the standard library, hpc/cluster/api and
// hpc/cluster/hostlist only.
package format
