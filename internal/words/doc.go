// Package words splits a line into words the way shells and Slurm's
// configuration files do: at unquoted white space, quotes grouping words
// and disappearing from them. It serves slurm.conf lines (cluster/config),
// #SBATCH directives (cluster/jobspec) and interactive scontrol lines
// (commands), which differ only in the options below.
//
// It imports only the standard library.
package words
