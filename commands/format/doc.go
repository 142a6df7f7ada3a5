// Package format turns the cluster's api records into exactly the text Slurm
// 22.05 prints: squeue tables (-o format strings, -O field lists, -l, -s
// steps, -S sorting), sinfo views (summary, -N, -l, -s, -R, -o and -O
// formats, with sinfo's line grouping), sacct tables (fixed-width and -P/-p
// parsable), scontrol show job/node/partition records (and -o one-liners),
// scontrol show config and ping lines, plus the time helpers behind them.
// What Slurm derives from a job or a node (state names and flags, reasons,
// priorities, TRES strings, an array's pending tasks as one record) and the
// --json/--yaml objects are cluster/openapi's, which the daemon's REST API
// shares. Every function is pure: callers pass the records and the current
// time, and get a string back; nothing here talks to the network, reads the
// clock or holds global state. It may import the standard library,
// hpc/cluster/api, hpc/cluster/hostlist, hpc/cluster/jobspec and
// hpc/cluster/openapi only.
package format
