#!/bin/bash
#SBATCH --job-name=sweep
#SBATCH --array=0-5%2
#SBATCH --output=sweep-%A_%a.out
# A parameter sweep: six tasks, at most two at a time, each on its own slice.
echo "task $SLURM_ARRAY_TASK_ID of array $SLURM_ARRAY_JOB_ID (job $SLURM_JOB_ID, $SLURM_ARRAY_TASK_COUNT tasks)"
sleep 0.5
