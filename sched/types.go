package sched

import "time"

// Snapshot is everything one scheduling pass looks at. The controller builds
// it from its replicated state; Schedule never changes it.
type Snapshot struct {
	// Now is the time of the pass. Nothing in sched reads a clock.
	Now        time.Time
	Config     Config
	Nodes      []Node
	Partitions []Partition
	// Topology is topology.conf: the switch tree. Empty means flat.
	Topology []Switch
	QOS      []QOS
	// Assocs is the account/user association tree (sacctmgr). Empty means
	// no accounting: no association limits and a fair-share factor of 0.
	Assocs []Assoc
	// Usage is past usage for fair-share, decayed here to Now. Running jobs
	// are added from Running; do not list them here too.
	Usage []Usage
	// Running are the jobs holding resources now (RUNNING, COMPLETING,
	// SUSPENDED): their allocations are what is in use on the nodes.
	Running []RunningJob
	// Pending are the PENDING jobs, in any order.
	Pending []Job
}

// Config holds the slurm.conf settings that steer scheduling.
type Config struct {
	// Multifactor priority weights (PriorityWeight*). When all five are 0
	// the plugin is priority/basic: jobs run in submit order and Priority
	// is 4294901760 minus the job id, as Slurm prints it.
	PriorityWeightAge       uint32
	PriorityWeightFairshare uint32
	PriorityWeightJobSize   uint32
	PriorityWeightPartition uint32
	PriorityWeightQOS       uint32
	// PriorityMaxAge is the age at which the age factor reaches 1.
	// 0 means Slurm's default, 7 days.
	PriorityMaxAge time.Duration
	// PriorityDecayHalfLife is the half-life of past usage for
	// fair-share. 0 means no decay (Slurm's default is 7 days: pass it).
	PriorityDecayHalfLife time.Duration
	// PriorityFavorSmall makes smaller jobs get the larger job-size factor.
	PriorityFavorSmall bool
	// PriorityCalcPeriod, when set, makes priorities be computed as of Now
	// rounded down to a multiple of it (since the Unix epoch), as Slurm
	// recalculates them only every PriorityCalcPeriod (default 5 minutes
	// there). 0 computes them at Now exactly. A Planner reuses the queue
	// order between passes of the same period.
	PriorityCalcPeriod time.Duration
	// DefMemPerCPU is the memory (MB) per allocated CPU of a job that asks
	// for none; 0 means such jobs use no memory.
	DefMemPerCPU int64
	// BackfillMaxJobTest caps how many pending jobs per pass get a
	// backfill reservation (an expected start) when they cannot start at
	// once, like Slurm's bf_max_job_test. Jobs past the cap may still start
	// at once when that delays no reserved job, but get no reservation and
	// no expected start. 0 means 500; negative means no cap.
	BackfillMaxJobTest int
	// BackfillWindow is how far ahead reservations are planned (bf_window),
	// from Now, or from the start of the priority period when
	// PriorityCalcPeriod is set; 0 means one day.
	BackfillWindow time.Duration
	// MaxSwitchWait is how long a job waits for its --switches count before
	// the count is ignored (SchedulerParameters max_switch_wait); 0 means
	// 300 seconds.
	MaxSwitchWait time.Duration
	// PreemptType is "preempt/qos" to let QoS preempt, anything else for
	// none.
	PreemptType string
	// PreemptMode is the cluster's PreemptMode, used for QoS that set none.
	PreemptMode PreemptMode
}

// NodeState is what the scheduler needs to know of a node's state.
type NodeState uint8

const (
	// NodeUp nodes take work (IDLE, MIXED, ALLOCATED).
	NodeUp NodeState = iota
	// NodeDrain nodes keep their running jobs but take no new ones
	// (DRAIN, DRAINING, DRAINED).
	NodeDrain
	// NodeDown nodes take no work and are not expected back (DOWN,
	// UNKNOWN, FAIL, FUTURE, POWERED_DOWN).
	NodeDown
)

// Node is one compute node as configured. What is in use on it comes from
// the allocations of Snapshot.Running.
type Node struct {
	Name     string
	CPUs     int
	MemMB    int64 // RealMemory
	Features []string
	Gres     []Gres
	State    NodeState
	// Weight orders nodes: lower weights are allocated first; 0 means 1.
	// Equal weights keep the order of Snapshot.Nodes.
	Weight int
}

// Gres is one pool of generic resources on a node: Gres=gpu:2 is
// {Name: "gpu", Count: 2}, Gres=gpu:a100:2 is {Name: "gpu", Type: "a100",
// Count: 2}. A node has at most 8 pools of at most 64 devices each.
type Gres struct {
	Name  string
	Type  string // "" when untyped
	Count int
	// Indices are the device indices of the pool (gres.conf File= order,
	// e.g. 0 and 1 for /dev/nvidia[0-1]). Nil numbers the devices on from
	// the node's earlier pools of the same Name, starting at 0.
	Indices []int
}

// PartitionState is a partition's State= in slurm.conf.
type PartitionState uint8

const (
	PartitionUp       PartitionState = iota // jobs queue and run
	PartitionDown                           // jobs queue but do not start: PartitionDown
	PartitionDrain                          // no new jobs (the controller refuses them); queued jobs run
	PartitionInactive                       // nothing queues or starts: PartitionInactive
)

// OverSubscribe is a partition's OverSubscribe= setting.
type OverSubscribe uint8

const (
	// OverSubscribeNo shares nodes between jobs by consumable resource
	// (CPUs, memory, GRES), never beyond what a node has.
	OverSubscribeNo OverSubscribe = iota
	// OverSubscribeExclusive gives every job whole nodes.
	OverSubscribeExclusive
)

// Partition is one PartitionName line of slurm.conf.
type Partition struct {
	Name  string
	Nodes []string
	// Default marks the partition of jobs that name none.
	Default bool
	// MaxTime is the longest time limit; 0 means UNLIMITED. A job asking
	// for more pends with PartitionTimeLimit.
	MaxTime time.Duration
	// DefaultTime is the time limit of jobs that set none; 0 means NONE
	// (they get MaxTime).
	DefaultTime time.Duration
	// MaxNodes is the most nodes a job may use; 0 means UNLIMITED. A job
	// asking for more pends with PartitionNodeLimit.
	MaxNodes int
	State    PartitionState
	// PriorityTier: jobs of partitions with a higher tier are considered
	// first, whatever their priority.
	PriorityTier int
	// PriorityJobFactor feeds the partition priority factor (the job's
	// partition's factor over the largest of all partitions).
	PriorityJobFactor int
	OverSubscribe     OverSubscribe
	// AllowAccounts and AllowQOS restrict who may run here; nil means ALL.
	AllowAccounts []string
	AllowQOS      []string
}

// Switch is one SwitchName line of topology.conf: a leaf switch lists
// Nodes, an upper switch lists child Switches.
type Switch struct {
	Name     string
	Switches []string
	Nodes    []string
}

// PreemptMode says what happens to a preempted job.
type PreemptMode string

const (
	PreemptOff     PreemptMode = "OFF"
	PreemptRequeue PreemptMode = "REQUEUE"
	PreemptCancel  PreemptMode = "CANCEL"
)

// QOS is one quality of service (sacctmgr show qos).
type QOS struct {
	Name string
	// Priority feeds the QoS priority factor (this over the largest).
	Priority int
	Limits   Limits
	// Preempt lists the QoS whose running jobs this QoS may preempt
	// (PreemptType=preempt/qos).
	Preempt []string
	// PreemptMode is what happens to jobs of this QoS when preempted;
	// "" means Config.PreemptMode; OFF makes them not preemptable.
	PreemptMode PreemptMode
}

// Limits are the resource limits of a QoS or an association. Zero means no
// limit; a negative value is a limit of zero, which allows nothing (Slurm's
// limit of 0: MaxJobsPerUser=0 lets no job run, GrpTRES=gres/gpu=0 lets no
// job use a GPU, MaxWall=0 lets no job run). LimitZero spells it. Where a
// QoS and an association set the same limit, the QoS's wins (Slurm's
// precedence); association Grp limits hold at every level of the tree, and
// Max limits are inherited from the nearest account that sets them.
type Limits struct {
	// MaxWall is the longest time limit a job may have (MaxWall).
	MaxWall time.Duration
	// MaxJobsPerUser is how many jobs one user may run at once: QoS
	// MaxJobsPerUser, association MaxJobs.
	MaxJobsPerUser int
	// MaxSubmitJobsPerUser is how many jobs one user may have pending or
	// running: QoS MaxSubmitJobsPerUser, association MaxSubmitJobs.
	MaxSubmitJobsPerUser int
	// MaxTRESPerUser is what one user's running jobs may hold together
	// (QoS only; on an association use GrpTRES of the user's association).
	MaxTRESPerUser TRES
	// MaxTRESPerJob is what one job may hold (MaxTRES / MaxTRESPerJob).
	MaxTRESPerJob TRES
	// GrpTRES is what all running jobs of the QoS, or of the association
	// and everything under it, may hold together.
	GrpTRES TRES
	// GrpJobs is how many such jobs may run at once.
	GrpJobs int
	// GrpSubmitJobs is how many such jobs may be pending or running.
	GrpSubmitJobs int
}

// LimitZero is a limit of zero in Limits and TRES (zero itself means no
// limit); a MaxWall of zero is any negative duration.
const LimitZero = -1

// TRES are trackable resources: cpu, mem (MB), node, gres/gpu.
type TRES struct {
	CPU   int64
	MemMB int64
	Node  int64
	GPU   int64
}

// Assoc is one association: an account (User == "") or a user under an
// account. The root account is "root"; an account whose Parent is "" hangs
// under root.
type Assoc struct {
	Account string
	User    string
	// Parent is the parent account of an account association; user
	// associations hang under Account.
	Parent string
	// Shares is Fairshare=; 0 means 1 (Slurm's default), negative means
	// no share.
	Shares int
	Limits Limits
	// Usage is decayed usage (CPU-seconds) as of Now that the controller
	// keeps itself; it adds to Snapshot.Usage. Only user associations'
	// usage counts; accounts sum their children.
	Usage float64
}

// Usage is past use of CPUs by one user under one account over an interval;
// it is decayed to Now with PriorityDecayHalfLife.
type Usage struct {
	// JobID is the job the usage is of (0 when not known); it tells the
	// same job apart when two sources list it.
	JobID   uint64
	Account string
	User    string
	CPUs    int
	Start   time.Time
	End     time.Time
}

// Hold says whether a job is held (scontrol hold/release).
type Hold uint8

const (
	HoldNone  Hold = iota
	HoldUser       // JobHeldUser
	HoldAdmin      // JobHeldAdmin
)

// DependencyState is the controller's evaluation of a job's --dependency.
type DependencyState uint8

const (
	DependencyNone      DependencyState = iota // no dependency
	DependencyPending                          // not yet satisfied: Dependency
	DependencySatisfied                        // satisfied: the job may run
	DependencyNever                            // can never be satisfied: DependencyNeverSatisfied
)

// Job is a pending job's request, as sbatch/srun flags and #SBATCH lines
// give it.
type Job struct {
	ID      uint64
	User    string
	Account string
	// QOS is the job's QoS; "" means "normal".
	QOS string
	// Partitions are the partitions named with -p a,b in that order; empty
	// means the default partition.
	Partitions []string
	SubmitTime time.Time
	// EligibleTime is when the job became eligible (begin time reached,
	// dependency satisfied, released); age counts from it. Zero means the
	// later of SubmitTime and BeginTime.
	EligibleTime time.Time
	// BeginTime is --begin; the job waits (BeginTime) until then.
	BeginTime  time.Time
	Hold       Hold
	Dependency DependencyState
	// Nice is --nice: subtracted from the priority.
	Nice int
	// Priority, when not 0, is the priority an administrator set
	// (scontrol update priority=); the factors are still reported.
	Priority uint32
	// TimeLimit is -t; 0 means the partition's DefaultTime, else MaxTime.
	TimeLimit time.Duration
	// Nodes is -N, the exact node count; 0 means as few as fit.
	Nodes int
	// NTasks is -n; 0 means one task per node (or NTasksPerNode per node).
	NTasks int
	// NTasksPerNode is --ntasks-per-node; 0 lets tasks spread by room.
	NTasksPerNode int
	// CPUsPerTask is -c; 0 means 1.
	CPUsPerTask int
	// MemPerNodeMB is --mem; MemPerCPUMB is --mem-per-cpu. Neither means
	// Config.DefMemPerCPU per CPU.
	MemPerNodeMB int64
	MemPerCPUMB  int64
	// Exclusive is --exclusive: whole nodes (all CPUs, memory and GRES).
	Exclusive bool
	// NodeList is -w: nodes the job must have. Exclude is -x.
	NodeList []string
	Exclude  []string
	// Constraint is -C: node features joined with & (and) and | (or),
	// e.g. "a100&ib" or "skylake|icelake".
	Constraint string
	// Gres is --gres, per node: gpu:2 or gpu:a100:2.
	Gres []GresRequest
	// GPUs is --gpus (for the whole job; split evenly over its nodes),
	// GPUsPerNode --gpus-per-node, GPUsPerTask --gpus-per-task. GPUType is
	// the type given with them (--gpus=a100:4), "" for any.
	GPUs        int
	GPUsPerNode int
	GPUsPerTask int
	GPUType     string
	// Switches is --switches=N[@max-time]: the most leaf switches the job
	// may span; SwitchWait is max-time, 0 meaning Config.MaxSwitchWait.
	Switches   int
	SwitchWait time.Duration
}

// GresRequest is one --gres item, per node.
type GresRequest struct {
	Name  string
	Type  string // "" for any type
	Count int
}

// RunningJob is a job holding resources.
type RunningJob struct {
	ID        uint64
	User      string
	Account   string
	QOS       string
	Partition string
	StartTime time.Time
	// EndTime is when its time limit runs out (StartTime + TimeLimit);
	// zero means no limit. Backfill plans by it; a job past it is expected
	// to end at once.
	EndTime time.Time
	Alloc   []Alloc
}

// Alloc is one node's share of an allocation.
type Alloc struct {
	Node  string
	CPUs  int
	Tasks int
	MemMB int64
	Gres  []GresAlloc
}

// GresAlloc names the devices of one GRES pool given to a job on a node.
type GresAlloc struct {
	Name    string
	Type    string
	Indices []int
}

// Result holds the decisions of one pass.
type Result struct {
	// Starts are the jobs to start now, in the order decided.
	Starts []Start
	// Preempt are running jobs to requeue or cancel now; each names the
	// starting job that needs its resources. Commit them before (or with)
	// that start.
	Preempt []Preemption
	// Jobs has one entry per Snapshot.Pending job, in the same order.
	Jobs []JobResult
}

// Start says that a job starts now on the given nodes.
type Start struct {
	JobID     uint64
	Partition string
	Alloc     []Alloc
	// TimeLimit is the job's effective time limit (its own, or the
	// partition's default or maximum); 0 means UNLIMITED.
	TimeLimit time.Duration
	// Preempts lists the running jobs that must end for this start.
	Preempts []uint64
}

// Preemption says what to do to one preempted running job.
type Preemption struct {
	JobID uint64
	Mode  PreemptMode // REQUEUE or CANCEL
	For   uint64      // the job that needs its resources
}

// JobResult is the pass's word on one pending job.
type JobResult struct {
	JobID uint64
	// Reason is Slurm's pending reason, "" for a job that starts now.
	Reason   string
	Priority uint32
	// Factors are the normalized (0..1) priority factors (sprio -n) and
	// Weighted the same times their weights (what sprio prints).
	Factors  Factors
	Weighted Factors
	// PartitionPriorities, for jobs that name several partitions, gives
	// the priority in each, in the job's order (sprio prints a line each).
	PartitionPriorities []PartitionPriority
	// ExpectedStart is when the job is expected to start (squeue --start):
	// Now for a job that starts, the backfill reservation otherwise, zero
	// when unknown.
	ExpectedStart time.Time
	// ExpectedNodes are the nodes of the start or reservation (SCHEDNODES).
	ExpectedNodes []string
	// Partition is the partition of the start or reservation.
	Partition string
}

// Factors are the multifactor priority factors of a job.
type Factors struct {
	Age       float64
	Fairshare float64
	JobSize   float64
	Partition float64
	QOS       float64
	Nice      int
}

// PartitionPriority is a job's priority in one of its partitions.
type PartitionPriority struct {
	Partition string
	Priority  uint32
}

// Pending reasons, spelled as Slurm spells them.
const (
	ReasonPriority           = "Priority"
	ReasonResources          = "Resources"
	ReasonDependency         = "Dependency"
	ReasonDependencyNever    = "DependencyNeverSatisfied"
	ReasonBeginTime          = "BeginTime"
	ReasonJobHeldUser        = "JobHeldUser"
	ReasonJobHeldAdmin       = "JobHeldAdmin"
	ReasonPartitionDown      = "PartitionDown"
	ReasonPartitionInactive  = "PartitionInactive"
	ReasonPartitionTimeLimit = "PartitionTimeLimit"
	ReasonPartitionNodeLimit = "PartitionNodeLimit"
	ReasonPartitionConfig    = "PartitionConfig"
	ReasonBadConstraints     = "BadConstraints"
	ReasonAccountNotAllowed  = "AccountNotAllowed"
	ReasonQOSNotAllowed      = "QOSNotAllowed"
	ReasonInvalidQOS         = "InvalidQOS"
	// ReasonReqNodeNotAvail is the prefix of the reason of a job whose -w
	// nodes are down or drained; the unavailable nodes follow it:
	// "ReqNodeNotAvail, UnavailableNodes:node[3-4]".
	ReasonReqNodeNotAvail = "ReqNodeNotAvail"
	// ReasonNodesDown is what Slurm 22.05 prints for a job whose partition
	// has too few nodes up to ever run it.
	ReasonNodesDown = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"

	ReasonQOSGrpCpuLimit              = "QOSGrpCpuLimit"
	ReasonQOSGrpMemLimit              = "QOSGrpMemLimit"
	ReasonQOSGrpNodeLimit             = "QOSGrpNodeLimit"
	ReasonQOSGrpGRES                  = "QOSGrpGRES"
	ReasonQOSGrpJobsLimit             = "QOSGrpJobsLimit"
	ReasonQOSGrpSubmitJobsLimit       = "QOSGrpSubmitJobsLimit"
	ReasonQOSMaxCpuPerJobLimit        = "QOSMaxCpuPerJobLimit"
	ReasonQOSMaxMemoryPerJob          = "QOSMaxMemoryPerJob"
	ReasonQOSMaxNodePerJobLimit       = "QOSMaxNodePerJobLimit"
	ReasonQOSMaxGRESPerJob            = "QOSMaxGRESPerJob"
	ReasonQOSMaxWallDurationPerJob    = "QOSMaxWallDurationPerJobLimit"
	ReasonQOSMaxCpuPerUserLimit       = "QOSMaxCpuPerUserLimit"
	ReasonQOSMaxMemoryPerUser         = "QOSMaxMemoryPerUser"
	ReasonQOSMaxNodePerUserLimit      = "QOSMaxNodePerUserLimit"
	ReasonQOSMaxGRESPerUser           = "QOSMaxGRESPerUser"
	ReasonQOSMaxJobsPerUserLimit      = "QOSMaxJobsPerUserLimit"
	ReasonQOSMaxSubmitJobPerUserLimit = "QOSMaxSubmitJobPerUserLimit"

	ReasonAssocGrpCpuLimit           = "AssocGrpCpuLimit"
	ReasonAssocGrpMemLimit           = "AssocGrpMemLimit"
	ReasonAssocGrpNodeLimit          = "AssocGrpNodeLimit"
	ReasonAssocGrpGRES               = "AssocGrpGRES"
	ReasonAssocGrpJobsLimit          = "AssocGrpJobsLimit"
	ReasonAssocGrpSubmitJobsLimit    = "AssocGrpSubmitJobsLimit"
	ReasonAssocMaxCpuPerJobLimit     = "AssocMaxCpuPerJobLimit"
	ReasonAssocMaxMemPerJob          = "AssocMaxMemPerJob"
	ReasonAssocMaxNodePerJobLimit    = "AssocMaxNodePerJobLimit"
	ReasonAssocMaxGRESPerJob         = "AssocMaxGRESPerJob"
	ReasonAssocMaxWallDurationPerJob = "AssocMaxWallDurationPerJobLimit"
	ReasonAssocMaxJobsLimit          = "AssocMaxJobsLimit"
	ReasonAssocMaxSubmitJobLimit     = "AssocMaxSubmitJobLimit"
)
