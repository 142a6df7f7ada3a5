// Package commands holds the user-facing commands: the hpc verbs (up, down, login,
// submit, queue, nodes, cancel, acct, status, install-links) and the
// Slurm-named ones (sbatch, squeue, sinfo, scancel, sacct, scontrol, and
// the others as they are written), one file each, sharing one
// implementation per command: `hpc queue` is squeue, reached through
// Run's dispatch on argv[0] when invoked by a Slurm name. Options are
// parsed getopt_long style (cluster/jobspec's Getopt) so habits such as
// `squeue -uroot -j5,6` or `scancel 5 -v` work; commands talk to the local
// node through cluster/api's client, print through commands/format, and
// read and write only through an Env (streams, environment, clock, client),
// which tests replace. It may import cluster/api, cluster/config,
// cluster/jobspec, cluster/hostlist, commands/format, commands/scenario
// (`hpc lab scenario`), internal/netns (the namespaces of hpc up --netns
// and hpc login) and, for the daemon verb only, cluster.
package commands
