// Package hostlist reads and writes Slurm hostlists: the compact way Slurm
// names sets of hosts, such as "node[1-4,7]" or "rack[01-02]n[1-2]". Expand
// turns a hostlist into host names and Compress turns host names back into the
// shortest hostlist Slurm would print. It is pure string handling and imports
// the standard library only, so every other package (config, the scheduler's
// callers, the commands) may use it.
package hostlist
