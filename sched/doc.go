// Package sched is the cluster's scheduling policy, kept pure: it takes a
// Snapshot (configuration, running jobs with their allocations and end
// times, pending jobs, associations, usage, the time) and returns a Result
// (which jobs start where, which running jobs to preempt, and for every
// pending job its priority factors, its pending reason and its expected
// start). It does no I/O, reads no clock and starts no goroutines, never
// ranges over a map where order reaches the output, and so gives the same
// decisions for the same input; it may import only the standard library.
// The leader's loop in cluster/ builds the snapshot, calls Schedule (or a
// Planner) and commits the result through Raft.
//
// # Order
//
// Priority is Slurm's priority/multifactor: weighted age (from the eligible
// time, capped at PriorityMaxAge), fair-share, job size (nodes and CPUs
// over the cluster's, or their complement with PriorityFavorSmall),
// partition (PriorityJobFactor over the largest) and QoS (Priority over the
// largest) factors, less nice. Fair-share is the Fair Tree algorithm over
// the association tree: usage (Snapshot.Usage and running jobs, decayed
// with PriorityDecayHalfLife) and shares give each association a Level
// Fairshare among its siblings; walking the tree depth first in that order
// ranks the users, and a user's factor is its rank over the number of user
// associations (ties share a rank; tied accounts merge their children).
// With all weights 0 it is priority/basic: submit order. Jobs are taken in
// the order PriorityTier (highest of the job's partitions), priority, id.
//
// # Placement
//
// A job asks for tasks (CPUs, memory per task or node, GRES per task or
// node) on an exact or free number of nodes. It starts only when all of it
// fits at once (gang: never partly placed, nothing held while waiting).
// Nodes are taken in allocation order (Weight, then as listed): first fit,
// and when a fixed node count needs more room than the first nodes have,
// the roomiest. --exclusive and OverSubscribe=EXCLUSIVE take whole nodes.
// -w, -x and -C (features with & and |) restrict the nodes. GRES come from
// the node's pools, typed requests from pools of that type; the chosen
// device indices are in the Alloc. A job that names several partitions
// runs in the first (by tier and priority, then its own order) that can
// start it. With a topology, a multi-node job goes to the lowest switch
// that can hold it, best fit among switches of that level (fewest usable
// nodes left over), filling the fullest leaves first and the best-fitting
// leaf last, with an even share of tasks per node; --switches bounds the
// leaves until its wait (default max_switch_wait, 300 s) runs out.
//
// # Backfill
//
// Each node has a time line: what is free now, what running jobs give back
// at their end time (a job past it is expected to end at once), and what is
// reserved. A job that cannot start gets a reservation at the earliest time
// within BackfillWindow when enough nodes are free for its whole time limit
// (its ExpectedStart and ExpectedNodes, squeue --start), planned as k nodes
// with an even share of its tasks each. Later jobs start only where their
// time limit ends before, or their size fits beside, every reservation:
// they never delay a reserved job. Reservations are made for the first
// BackfillMaxJobTest waiting jobs of a pass (default 500, like Slurm's
// bf_max_job_test); jobs past that may still start where they delay no
// reservation, but get no expected start.
//
// # Reasons
//
// Pending reasons are Slurm's strings: held, BeginTime, Dependency and
// DependencyNeverSatisfied from the job's flags; partition state and limits
// (PartitionDown, PartitionInactive, PartitionTimeLimit,
// PartitionNodeLimit, PartitionConfig for what the configuration can never
// give, BadConstraints, AccountNotAllowed, QOSNotAllowed), nodes down
// ("ReqNodeNotAvail, UnavailableNodes:..." for -w nodes, else Slurm's
// "Nodes required for job are DOWN, ..."), QoS and association limits
// (QOSMaxJobsPerUserLimit, AssocGrpCpuLimit, ...; the QoS's limit wins
// where both set one), then Resources for the first job waiting in its
// partitions and Priority for the jobs behind it or held off by a
// reservation.
//
// # Preemption
//
// With PreemptType=preempt/qos, a job whose QoS lists others in Preempt
// and that cannot start otherwise may preempt their running jobs (unless
// their PreemptMode is OFF): nodes are costed by how many victims, youngest
// first, free them; the cheapest are used and victims not needed are kept.
// Result.Preempt says what to requeue or cancel for which start.
//
// # Speed
//
// A segment tree over the nodes keeps the most of each resource free on any
// node now and for all time, so a full cluster rejects a job at the root;
// a request shape that failed in a partition is not tried again in the
// pass for jobs as long or longer (resources only shrink during a pass);
// node classes answer "could this partition ever run it" per class; a job
// on one node is planned by the earliest start of any node, without a
// sweep.
//
// A Planner keeps the compiled state (jobs, priorities, queue, nodes and
// the last pass's decisions) between passes and takes changes as a Delta
// (jobs ended, started, submitted, removed; time) and SetUsage. Its next
// pass replays the last one: nodes whose state differs between the two
// walks are tracked (with their old state), and a job keeps its last
// decision when nothing it depends on differs (see replay.go); the rest are
// decided afresh. A reservation search keeps the spans that start a little
// past its outcome, so that the next pass works out the same search from
// them and the delta nodes alone, kept or moved, mostly without going
// over all nodes again. Plan always equals a fresh Schedule of the
// planner's snapshot (tested on random changes, and the bookkeeping is
// checked node by node); Schedule does not depend on the order of the
// snapshot's lists (fair-share sums running jobs' usage smallest first), so
// neither does a Planner. It needs priorities that hold still between
// passes: set PriorityCalcPeriod (Slurm recalculates priorities only that
// often too) or use priority/basic; a new period, a change of fair-share,
// a pass that preempted, or Reset make the next pass a full one.
package sched
