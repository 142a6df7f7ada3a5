#!/bin/bash
#SBATCH --job-name=hello
#SBATCH --ntasks=1
#SBATCH --time=00:05:00
# A first batch job: where did it run, and what did Slurm tell it?
echo "Hello from $(hostname) (node $SLURMD_NODENAME), job $SLURM_JOB_ID '$SLURM_JOB_NAME'"
echo "partition=$SLURM_JOB_PARTITION nodes=$SLURM_JOB_NODELIST cpus_on_node=$SLURM_CPUS_ON_NODE"
echo "submitted from $SLURM_SUBMIT_DIR as $(id -un)"
