// Package scenario holds the guided teaching scenarios of `hpc lab scenario
// run NAME`: each sets up what it needs on a running lab, submits a canned
// workload, narrates what to watch (the commands a learner types and the
// dashboard), and ends with a verdict it checked itself from what the lab
// reported (job start and end times, node lists, accounting rows), with
// the evidence, leaving the lab as it found it.
//
// A scenario drives the lab as a user would: through the node's socket
// with cluster/api's client, its jobs built by cluster/jobspec from the
// very sbatch command line it shows. It never reaches into a daemon.
// Where a scenario shows something the lab does not do (a strict FIFO
// queue, Kubernetes' pod-at-a-time binding), that part is computed by the
// scenario from the lab's own node list and job times, and the narration
// says so.
//
// The verdicts are pure functions of what was observed (judge* in each
// scenario's file), tested without a lab; e2e's TestScenarios runs every
// scenario on a real one.
//
// It may import cluster/api, cluster/config, cluster/hostlist and
// cluster/jobspec.
package scenario
