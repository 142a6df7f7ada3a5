#!/bin/sh
# sacctmgr records for Slurm 22.05, exported by `hpc export slurm` from testdata/lab/slurm.conf.
# Run it once, as root, when slurmdbd runs and before the first job (README).
set -e
sacctmgr -n -P list cluster lab format=cluster | grep -qx lab || sacctmgr -i add cluster lab

# QoS.
sacctmgr -i modify qos normal set GrpTRES=mem=16000
sacctmgr -i add qos low Description='Scavenger jobs' MaxWall=02:00:00
sacctmgr -i add qos high Priority=100 MaxJobsPerUser=4 MaxTRESPerUser=cpu=4,gres/gpu=2
# Preemption, once every QoS exists.
sacctmgr -i modify qos high set Preempt=low PreemptMode=REQUEUE

# Accounts, each after its parent.
sacctmgr -i add account physics Cluster=lab Parent=root Description='Physics department' Organization=science Fairshare=10 GrpTRES=cpu=8 MaxJobs=5 QOS=high,low,normal DefaultQOS=normal
sacctmgr -i add account theory Cluster=lab Parent=physics MaxWall=01:00:00

# Users: the first line of each gives the default account, then one per association.
sacctmgr -i add user alice Cluster=lab Account=theory DefaultAccount=theory AdminLevel=Operator
sacctmgr -i add user alice Cluster=lab Account=physics MaxJobs=2
sacctmgr -i add user bob Cluster=lab Account=physics DefaultAccount=physics
