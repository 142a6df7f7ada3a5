// Package export writes what a production Slurm 22.05 cluster of the same
// shape as an hpc cluster needs: slurm.conf, gres.conf, topology.conf,
// cgroup.conf, an sacctmgr script with the QoS, accounts, users and
// associations, and a README of what the admin adds by hand (munge,
// slurmdbd, the daemons' directories). `hpc export slurm` calls it with the
// running cluster's configuration and sacctmgr records, or with a
// slurm.conf when no cluster runs. It is pure: it imports the standard
// library, cluster/api, cluster/config and cluster/hostlist, and does no
// I/O but Write's.
package export
