// Package commands holds the user-facing commands: the hpc verbs (up, down,
// submit, queue, nodes, cancel, acct, status) and the Slurm-named ones
// (sbatch, squeue, sinfo, scancel, sacct), one file each, sharing one
// implementation per command. It parses flags, talks to the local node
// through cluster/api's client and prints through commands/format. It may
// import cluster/api, cluster/config, cluster/jobspec, cluster/hostlist,
// commands/format and, for the daemon verb only, cluster.
package commands
