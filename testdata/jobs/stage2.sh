#!/bin/bash
#SBATCH --job-name=stage2
#SBATCH --output=stage2-%j.out
# Second link: runs only after stage1 succeeded (sbatch -d afterok:ID).
echo "stage2 sum=$(awk '{s += $1} END {print s}' numbers.txt)"
