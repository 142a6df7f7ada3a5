#!/bin/sh
# sacctmgr records for Slurm 22.05, exported by `hpc export slurm` from testdata/vms/slurm.conf.
# Run it once, as root, when slurmdbd runs and before the first job (README).
set -e
sacctmgr -n -P list cluster vlab format=cluster | grep -qx vlab || sacctmgr -i add cluster vlab
# Exported from a slurm.conf: no QoS, accounts or users beyond a new database's.
# An export of a running cluster (hpc export slurm DIR) carries its records.
