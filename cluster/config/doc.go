// Package config reads the cluster's configuration, written in a subset of
// Slurm's slurm.conf syntax: the cluster name, the controllers (SlurmctldHost,
// the Raft voters), the submit hosts (HpcSubmitHost, login nodes that run
// neither jobs nor a controller), hpc's own ports, the nodes (NodeName lines, hostlists
// allowed) and the partitions. It also holds the Slurm time and memory syntax
// shared by config and job options (ParseTime, ParseMem, FormatTime), and Lab,
// the commented default configuration `hpc up` writes. It is pure: it imports
// the standard library, cluster/hostlist and internal/words only, and does no I/O beyond Load
// reading the file it is given.
package config
