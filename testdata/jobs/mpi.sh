#!/bin/bash
#SBATCH --job-name=mpi
#SBATCH --ntasks=8
#SBATCH --time=00:10:00
# An MPI-style job: 8 ranks spread over the allocation, started by srun.
srun -l bash -c 'echo "rank $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME"' | sort -n
