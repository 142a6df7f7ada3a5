#!/bin/bash
#SBATCH --job-name=stage1
#SBATCH --output=stage1-%j.out
# First link of a dependency chain: produce something for the next stage.
seq 1 100 > numbers.txt
echo "stage1 wrote $(wc -l < numbers.txt) numbers"
