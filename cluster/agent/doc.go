// Package agent is the node side of the daemon: what slurmd and
// slurmstepd do for Slurm. It runs a job's batch step (batch.go) and its
// node's share of srun steps (steps.go) through exec, builds their
// environment (stepenv.go), carries their output to the step's launcher
// through a relay that outlives a restart of either daemon (steprelay.go),
// writes srun's input to its tasks (taskinput.go), runs Prolog and Epilog
// (prolog.go), keeps each job's $TMPDIR and the storage areas
// (jobstorage.go), re-attaches to the steps a previous daemon left running
// (reattach.go), and reports a job's end to the leader through its own
// node's API until the leader has committed it.
//
// Its routes are /internal/... node-to-node calls (Routes). It may import
// exec, cluster/api, config, hostlist, jobspec and peer; never cluster/fsm
// or cluster: what it needs of the cluster it asks for over the API.
package agent
