// Package openapi is Slurm 22.05's data model as its openapi plugins write
// it: the answers of slurmrestd's v0.0.38 (jobs, nodes) and dbv0.0.38
// (accounting's jobs) paths, as ordered objects (Obj) and the one writer
// of their JSON and YAML text (write.go), and the values Slurm derives
// from a job or a node for them: state names and flags (nodestate.go),
// reasons, priorities, standard paths (job.go), TRES strings (tres.go,
// util.go), an array's pending tasks as one record (arrays.go).
//
// The daemon's REST API answers with these objects and the commands print
// them (squeue, sinfo and sacct --json/--yaml); the commands' text views
// (commands/format) print the same derived values. Every function is pure:
// no network, no clock, no global state. It imports cluster/api,
// cluster/hostlist and cluster/jobspec only.
package openapi
