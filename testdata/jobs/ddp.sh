#!/bin/bash
#SBATCH --job-name=ddp
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --time=00:10:00
# A PyTorch-DDP-style job: one launcher per node (as torchrun would be
# started), the rendezvous on the first node of the allocation, and every
# rank told its place in the world.
nodes=( $(scontrol show hostnames "$SLURM_JOB_NODELIST") )
head=${nodes[0]}
echo "head node: $head of ${#nodes[@]} nodes"
srun --ntasks-per-node=1 bash -c 'echo "launcher node_rank=$SLURM_NODEID nnodes=$SLURM_NNODES on $SLURMD_NODENAME"'
srun bash -c 'echo "rank=$RANK local_rank=$LOCAL_RANK world_size=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT"' | sort
