// Package jobspec turns sbatch's command line and a batch script's #SBATCH
// directives into an api.JobSpec, the way Slurm's sbatch does: options parsed
// getopt_long style from a table (the place to add options), directives read
// from the script's leading comment block, command-line options winning over
// directives, and Slurm's own error texts and exit codes. It is pure (no
// process state: the caller passes the working directory, environment, file
// reader and stdin) and imports the standard library, cluster/api and
// cluster/config (for the shared time and memory syntax) only.
package jobspec
