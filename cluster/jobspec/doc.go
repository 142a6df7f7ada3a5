// Package jobspec turns sbatch's command line, its SBATCH_* input
// variables and a batch script's #SBATCH directives into an api.JobSpec, the
// way Slurm's sbatch does: options parsed getopt_long style from a table (the
// place to add options), directives read from the script's leading comment
// block, variables over directives and command-line options over both, and
// Slurm's own error texts and exit codes. Its Getopt type is the one
// getopt_long parser of the Slurm-style commands (squeue, sinfo, scancel,
// sacct, scontrol use it too). It is pure (no process state: the caller
// passes the working directory, environment, file reader, stdin and the
// time) and imports the standard library, cluster/api, cluster/config (for
// the shared time and memory syntax) and internal/words only. It also
// expands output file patterns (ExpandPath), reads --array (ParseArray)
// and checks the container options (ValidateContainer).
package jobspec
