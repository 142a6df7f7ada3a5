#!/bin/bash
#SBATCH --job-name=bookkeeping
#SBATCH --output=%x-%j.log
# A job that uses Slurm's variables for its own bookkeeping.
mkdir -p "$SLURM_SUBMIT_DIR/results"
out="$SLURM_SUBMIT_DIR/results/${SLURM_JOB_NAME}-${SLURM_JOB_ID}.txt"
{
  echo "job=$SLURM_JOB_ID name=$SLURM_JOB_NAME user=$SLURM_JOB_USER"
  echo "partition=$SLURM_JOB_PARTITION nodes=$SLURM_JOB_NODELIST cpus=$SLURM_CPUS_ON_NODE"
} > "$out"
echo "wrote $out"
