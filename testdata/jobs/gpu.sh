#!/bin/bash
#SBATCH --job-name=gpu
#SBATCH --partition=gpu
#SBATCH --gres=gpu:2
#SBATCH --time=00:05:00
# A GPU job: the devices it was given, as CUDA programs see them.
echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
echo "SLURM_JOB_GPUS=$SLURM_JOB_GPUS"
echo "node=$SLURMD_NODENAME partition=$SLURM_JOB_PARTITION"
