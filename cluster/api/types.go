package api

import (
	"strconv"
	"strings"
	"time"
)

// JobState is a Slurm job state, spelled as Slurm spells it.
type JobState string

// Job states (Slurm 22.05 names).
const (
	StatePending     JobState = "PENDING"
	StateRunning     JobState = "RUNNING"
	StateCompleting  JobState = "COMPLETING"
	StateCompleted   JobState = "COMPLETED"
	StateFailed      JobState = "FAILED"
	StateCancelled   JobState = "CANCELLED"
	StateTimeout     JobState = "TIMEOUT"
	StateOutOfMemory JobState = "OUT_OF_MEMORY"
	StateNodeFail    JobState = "NODE_FAIL"
	StatePreempted   JobState = "PREEMPTED"
)

// Short returns squeue's compact state code (PD, R, CD, ...).
func (s JobState) Short() string {
	switch s {
	case StatePending:
		return "PD"
	case StateRunning:
		return "R"
	case StateCompleting:
		return "CG"
	case StateCompleted:
		return "CD"
	case StateFailed:
		return "F"
	case StateCancelled:
		return "CA"
	case StateTimeout:
		return "TO"
	case StateOutOfMemory:
		return "OOM"
	case StateNodeFail:
		return "NF"
	case StatePreempted:
		return "PR"
	}
	return string(s)
}

// Final reports whether a job in this state will never run again.
func (s JobState) Final() bool {
	switch s {
	case StateCompleted, StateFailed, StateCancelled, StateTimeout, StateOutOfMemory, StateNodeFail, StatePreempted:
		return true
	}
	return false
}

// Pending reasons (Slurm's names).
const (
	ReasonNone      = "None"
	ReasonPriority  = "Priority"
	ReasonResources = "Resources"
)

// JobSpec is what a user asks for: #SBATCH directives and command-line flags,
// merged. Zero values mean "not given; use the default".
type JobSpec struct {
	Name         string   `json:"name,omitempty"`
	Partition    string   `json:"partition,omitempty"`
	Nodes        int      `json:"nodes,omitempty"`
	NTasks       int      `json:"ntasks,omitempty"`
	CPUsPerTask  int      `json:"cpus_per_task,omitempty"`
	MemPerNodeMB int64    `json:"mem_per_node_mb,omitempty"`
	TimeLimitMin int64    `json:"time_limit_min,omitempty"` // minutes; 0 = partition default
	Output       string   `json:"output,omitempty"`         // -o pattern, unexpanded
	Error        string   `json:"error,omitempty"`          // -e pattern, unexpanded
	WorkDir      string   `json:"work_dir,omitempty"`       // -D, absolute after the client resolves it
	Script       string   `json:"script"`                   // whole batch script (with --wrap: a generated one)
	Wrap         bool     `json:"wrap,omitempty"`           // script was made from --wrap
	Env          []string `json:"env,omitempty"`            // the submitter's environment (--export=ALL)
	SubmitHost   string   `json:"submit_host,omitempty"`

	// sbatch options carried for the controller (issue 5). The client
	// checks their syntax as Slurm's sbatch does; acting on them is the
	// controller's part.
	Account         string    `json:"account,omitempty"`           // -A/--account
	Array           string    `json:"array,omitempty"`             // -a/--array, as given: "0-15%4", "1,3,5"
	Constraint      string    `json:"constraint,omitempty"`        // -C/--constraint
	Dependency      string    `json:"dependency,omitempty"`        // -d/--dependency, as given: "afterok:12:13"
	Export          string    `json:"export,omitempty"`            // --export as given (Env already honours it)
	Gpus            string    `json:"gpus,omitempty"`              // -G/--gpus: "2" or "tesla:2"
	Gres            string    `json:"gres,omitempty"`              // --gres: "gpu:2"
	GpusPerNode     string    `json:"gpus_per_node,omitempty"`     // --gpus-per-node
	GpusPerTask     string    `json:"gpus_per_task,omitempty"`     // --gpus-per-task
	Hold            bool      `json:"hold,omitempty"`              // -H/--hold: submit held (JobHeldUser)
	Input           string    `json:"input,omitempty"`             // -i/--input pattern, unexpanded
	MemPerCPUMB     int64     `json:"mem_per_cpu_mb,omitempty"`    // --mem-per-cpu
	MemPerGPUMB     int64     `json:"mem_per_gpu_mb,omitempty"`    // --mem-per-gpu
	MaxNodes        int       `json:"max_nodes,omitempty"`         // -N min-max: the max (0: same as Nodes)
	NTasksPerNode   int       `json:"ntasks_per_node,omitempty"`   // --ntasks-per-node
	NodeList        string    `json:"node_list,omitempty"`         // -w/--nodelist (hostlist)
	Exclude         string    `json:"exclude,omitempty"`           // -x/--exclude (hostlist)
	Exclusive       string    `json:"exclusive,omitempty"`         // --exclusive: "exclusive", "user", "mcs" or "oversubscribe"
	OpenMode        string    `json:"open_mode,omitempty"`         // --open-mode: "append" or "truncate"
	QOS             string    `json:"qos,omitempty"`               // -q/--qos
	Requeue         *bool     `json:"requeue,omitempty"`           // --requeue (true), --no-requeue (false); nil: cluster default
	TimeMinMin      int64     `json:"time_min_min,omitempty"`      // --time-min, minutes
	Begin           time.Time `json:"begin,omitzero"`              // --begin, resolved against the submit time
	Switches        int       `json:"switches,omitempty"`          // --switches=N[@max-time]
	SwitchesWaitSec int64     `json:"switches_wait_sec,omitempty"` // the @max-time of --switches, seconds
	Signal          string    `json:"signal,omitempty"`            // --signal=[{R|B}:]sig[@secs], as given
	MailType        string    `json:"mail_type,omitempty"`         // --mail-type (hpc sends no mail)
	MailUser        string    `json:"mail_user,omitempty"`         // --mail-user
	// Overcommit is -O/--overcommit: the job is allocated as if it ran
	// one task per node (its tasks then share those CPUs), and its steps
	// may run more tasks than CPUs.
	Overcommit bool `json:"overcommit,omitempty"`
	// MinCPUs is --mincpus: the fewest CPUs each of the job's nodes must
	// give it.
	MinCPUs int `json:"min_cpus,omitempty"`

	// Containers, as pyxis adds them to Slurm (issue 4): the batch script
	// runs in this root file system or OCI bundle, and so do the job's
	// srun steps unless srun names its own. The client makes the paths
	// absolute; the nodes check them when a step starts.
	ContainerImage   string `json:"container_image,omitempty"`   // --container-image
	ContainerMounts  string `json:"container_mounts,omitempty"`  // --container-mounts: SRC:DST[:ro],...
	ContainerWorkDir string `json:"container_workdir,omitempty"` // --container-workdir
}

// NodeAlloc is one node's share of an allocation.
type NodeAlloc struct {
	Node  string      `json:"node"`
	CPUs  int         `json:"cpus"`
	Tasks int         `json:"tasks,omitempty"`
	MemMB int64       `json:"mem_mb"`
	Gres  []GresAlloc `json:"gres,omitempty"`
	// CPUIDs are the node's CPUs (0 to CPUs-1 of its NodeName line) the
	// job holds there, chosen when it starts (scontrol show job -d shows
	// them as CPU_IDs); its steps' cpuset.
	CPUIDs []int `json:"cpu_ids,omitempty"`
}

// GresAlloc names the devices of one GRES pool given to a job on a node
// (their indices: CUDA_VISIBLE_DEVICES and the devices cgroup use them).
type GresAlloc struct {
	Name    string `json:"name"`
	Type    string `json:"type,omitempty"`
	Indices []int  `json:"indices"`
}

// Job is the controller's record of a job.
type Job struct {
	ID         uint64      `json:"id"`
	Spec       JobSpec     `json:"spec"`
	UID        uint32      `json:"uid"`
	GID        uint32      `json:"gid"`
	User       string      `json:"user"`
	Group      string      `json:"group"`
	Account    string      `json:"account"`
	State      JobState    `json:"state"`
	Reason     string      `json:"reason"`
	SubmitTime time.Time   `json:"submit_time"`
	StartTime  time.Time   `json:"start_time,omitzero"`
	EndTime    time.Time   `json:"end_time,omitzero"`
	Alloc      []NodeAlloc `json:"alloc,omitempty"`
	BatchHost  string      `json:"batch_host,omitempty"`
	ExitCode   int         `json:"exit_code"`
	Signal     int         `json:"signal"`
	// CancelledBy is the uid that cancelled the job; meaningful when
	// CancelRequested is true.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// TimedOut is set when the job ran past its time limit and the
	// controller had it killed; it then ends TIMEOUT.
	TimedOut bool `json:"timed_out,omitempty"`
	// RequeueHold is set on a job being requeued because its prolog failed:
	// back in the queue it is held (Hold = HoldRequeue).
	RequeueHold bool `json:"requeue_hold,omitempty"`
	// RequeueDelay is set on a job preempted with PreemptMode=REQUEUE: once
	// back in the queue it waits 121 s before it may start again.
	RequeueDelay bool `json:"requeue_delay,omitempty"`
	// BatchUsage is what the batch step used, once it has ended.
	BatchUsage *StepUsage `json:"batch_usage,omitempty"`
	// Warned is set once the job's --signal warning has been sent (it is
	// sent once per run).
	Warned      bool   `json:"warned,omitempty"`
	CancelledBy uint32 `json:"cancelled_by,omitempty"`
	StdOut      string `json:"std_out,omitempty"` // expanded path
	StdErr      string `json:"std_err,omitempty"` // expanded path
	// ArrayJobID and ArrayTaskID are set on the tasks of a job array
	// (--array): squeue shows them as ArrayJobID_ArrayTaskID. The array's
	// id is its first task's job id.
	ArrayJobID  uint64 `json:"array_job_id,omitempty"`
	ArrayTaskID int    `json:"array_task_id,omitempty"`
	// ArrayTasks is set on a record that stands for several pending tasks
	// of an array that have not started (Slurm's array "meta" record): the
	// task ids as ranges ("0-7", "1,3-5"). A view of the commands, never
	// stored or sent.
	ArrayTasks string `json:"-"`
	// Hold is "" (not held), "user" (JobHeldUser), "admin" (JobHeldAdmin)
	// or HoldRequeue.
	Hold string `json:"hold,omitempty"`
	// Restarts counts requeues (scontrol requeue, preemption).
	Restarts int `json:"restarts,omitempty"`
	// Launched is set once the batch host has acknowledged the launch of
	// this run; until then the leader launches it again (the node starts
	// a run once).
	Launched bool `json:"launched,omitempty"`
	// LaunchFailures counts the launches in a row its node could not be
	// reached for; at fsm.MaxLaunchRequeues the job is held.
	LaunchFailures int `json:"launch_failures,omitempty"`
	// Preempted is set ("REQUEUE" or "CANCEL") when the job was preempted
	// (or requeued); it then ends PREEMPTED or goes back to PENDING.
	Preempted string `json:"preempted,omitempty"`
	// Priority, ExpectedStart and SchedNodes are the leader's latest
	// scheduling pass's view (not replicated: recomputed every pass).
	Priority      uint32    `json:"priority,omitempty"`
	ExpectedStart time.Time `json:"expected_start,omitzero"`
	SchedNodes    []string  `json:"sched_nodes,omitempty"`
	// Steps are the job's srun steps (JOBID.0, JOBID.1, ...), in order;
	// NextStepID numbers the next one.
	Steps      []Step `json:"steps,omitempty"`
	NextStepID uint32 `json:"next_step_id,omitempty"`
	// Withheld is set on a job as the controller answers it without its
	// batch script and environment: to a caller who may not see them
	// (Slurm shows them to the job's owner, root and operators only), and
	// in job lists unless asked for whole jobs (squeue needs neither, and
	// they are most of a job's size). Spec.Script, Env and Export are then
	// empty. It is never stored.
	Withheld bool `json:"withheld,omitempty"`
}

// HasScript reports whether the job has a batch script (scontrol's
// BatchFlag), withheld from this caller or not.
func (j *Job) HasScript() bool { return j.Spec.Script != "" || j.Withheld }

// JobScript answers GET /api/jobscript?job=N (scontrol write batch_script).
type JobScript struct {
	JobID  uint64 `json:"job_id"`
	Script string `json:"script"`
}

// JobOutput answers GET /api/job/output?job=N&stream=stdout|stderr: the
// tail of a job's standard output or error file, read on its batch host
// as the job's owner (the dashboard's live tail). Only the job's owner,
// root, SlurmUser and operators get it, as the batch script.
type JobOutput struct {
	JobID  uint64 `json:"job_id"`
	Stream string `json:"stream"` // "stdout" or "stderr"
	Node   string `json:"node,omitempty"`
	Path   string `json:"path,omitempty"`
	// Size is the file's size; Data is its bytes from Offset to Size (at
	// most MaxJobOutputTail of them, from the first whole line when the
	// tail starts inside the file), invalid UTF-8 replaced.
	Size   int64  `json:"size"`
	Offset int64  `json:"offset"`
	Data   string `json:"data"`
	// Note says why there is no file to read: the job has not started, or
	// it is an allocation (salloc, srun) whose output goes to its client.
	Note string `json:"note,omitempty"`
}

// MaxJobOutputTail is the most of a job's output one JobOutput carries.
const MaxJobOutputTail = 64 << 10

// Slurm's answers to a request for a job's batch script it will not give.
const (
	// ErrUserIDMissing (ESLURM_USER_ID_MISSING): the job is another
	// user's.
	ErrUserIDMissing = "Invalid user id"
	// ErrJobScriptMissing (ESLURM_JOB_SCRIPT_MISSING): the job has none
	// (an allocation of salloc or srun).
	ErrJobScriptMissing = "Job script not specified"
)

// NodeNames returns the allocated node names in allocation order.
func (j *Job) NodeNames() []string {
	out := make([]string, len(j.Alloc))
	for i, a := range j.Alloc {
		out[i] = a.Node
	}
	return out
}

// AllocatedOn reports whether the job's allocation includes node.
func (j *Job) AllocatedOn(node string) bool {
	for _, a := range j.Alloc {
		if a.Node == node {
			return true
		}
	}
	return false
}

// TasksPerNode is how many of the job's tasks each allocated node holds:
// what the scheduler decided, else as many as its CPUs allow.
func (j *Job) TasksPerNode() []int {
	cpt := max(j.Spec.CPUsPerTask, 1)
	out := make([]int, len(j.Alloc))
	for i, a := range j.Alloc {
		if a.Tasks > 0 {
			out[i] = a.Tasks
		} else {
			out[i] = max(a.CPUs/cpt, 1)
		}
	}
	return out
}

// StepIndex is the index in Steps of step id, or -1.
func (j *Job) StepIndex(id uint32) int {
	for i := range j.Steps {
		if j.Steps[i].ID == id {
			return i
		}
	}
	return -1
}

// StepEndState is the state one of the job's steps ends in, given the
// end its launcher reported. The report's State is a hint: OUT_OF_MEMORY
// (the OOM killer struck) or CANCELLED (srun killed it, or the job ended
// under it: cancelled, timed out, preempted).
func (j *Job) StepEndState(report Step) JobState {
	switch {
	case report.State == StateOutOfMemory:
		return StateOutOfMemory
	case report.State == StateCancelled,
		(j.CancelRequested || j.TimedOut || j.Preempted != "") && report.Signal != 0:
		return StateCancelled
	case report.ExitCode != 0 || report.Signal != 0:
		return StateFailed
	}
	return StateCompleted
}

// ReqCPUs is the CPU count a job asks for.
func (s *JobSpec) ReqCPUs() int {
	tasks := s.NTasks
	if tasks <= 0 || s.Overcommit { // -O: one task's CPUs per node
		tasks = max(s.Nodes, 1)
	}
	return tasks * max(s.CPUsPerTask, 1)
}

// AllocCPUs is the number of CPUs allocated over all nodes.
func (j *Job) AllocCPUs() int {
	n := 0
	for _, a := range j.Alloc {
		n += a.CPUs
	}
	return n
}

// Node states as scontrol prints them; sinfo lowercases and abbreviates.
const (
	NodeIdle      = "IDLE"
	NodeMixed     = "MIXED"
	NodeAllocated = "ALLOCATED"
	NodeDown      = "DOWN"
	NodeUnknown   = "UNKNOWN"
)

// Node is a compute node as the controller sees it.
type Node struct {
	Name       string   `json:"name"`
	Addr       string   `json:"addr"`
	CPUs       int      `json:"cpus"`
	MemMB      int64    `json:"mem_mb"`
	Gres       string   `json:"gres,omitempty"` // e.g. "gpu:2", "" for none
	Partitions []string `json:"partitions"`
	State      string   `json:"state"` // IDLE, MIXED, ALLOCATED, DOWN, UNKNOWN
	Reason     string   `json:"reason,omitempty"`
	// ReasonUser and ReasonTime say who set the reason and when (sinfo
	// -R); "slurm" for reasons the controller set itself.
	ReasonUser string    `json:"reason_user,omitempty"`
	ReasonTime time.Time `json:"reason_time,omitzero"`
	AllocCPUs  int       `json:"alloc_cpus"`
	AllocMemMB int64     `json:"alloc_mem_mb"`
}

// Partition is a partition as the controller sees it.
type Partition struct {
	Name       string   `json:"name"`
	Nodes      []string `json:"nodes"`
	Default    bool     `json:"default"`
	MaxTimeMin int64    `json:"max_time_min"` // -1 = UNLIMITED
	State      string   `json:"state"`        // UP, DOWN, DRAIN, INACTIVE
	// Limits are the partition's other settings (slurm.conf's, or
	// scontrol's since); nil prints Slurm's defaults.
	Limits *PartitionLimits `json:"limits,omitempty"`
}

// PartitionLimits are what scontrol show partition prints of a partition
// beyond its name, nodes, default flag, MaxTime and state.
type PartitionLimits struct {
	DefaultTimeMin    int64    `json:"default_time_min"` // -1: NONE
	MaxNodes          int      `json:"max_nodes"`        // -1: UNLIMITED
	PriorityTier      int      `json:"priority_tier"`
	PriorityJobFactor int      `json:"priority_job_factor"`
	OverSubscribe     string   `json:"over_subscribe,omitempty"` // "": NO
	AllowAccounts     []string `json:"allow_accounts,omitempty"` // nil: ALL
	AllowQos          []string `json:"allow_qos,omitempty"`      // nil: ALL
}

// AcctRow is one line of sacct: a job (Step == "") or one of its steps.
type AcctRow struct {
	JobID       uint64    `json:"job_id"`
	Step        string    `json:"step,omitempty"` // "", "batch", "0", ...
	JobName     string    `json:"job_name"`
	Partition   string    `json:"partition"`
	Account     string    `json:"account"`
	User        string    `json:"user"`
	UID         uint32    `json:"uid"`
	AllocCPUs   int       `json:"alloc_cpus"`
	State       string    `json:"state"`
	ExitCode    int       `json:"exit_code"`
	Signal      int       `json:"signal"`
	CancelledBy *uint32   `json:"cancelled_by,omitempty"`
	NodeList    string    `json:"node_list"`
	Submit      time.Time `json:"submit"`
	Start       time.Time `json:"start,omitzero"`
	End         time.Time `json:"end,omitzero"`
	// Usage is what a step used (sacct's MaxRSS, MaxRSSNode, TotalCPU,
	// UserCPU, SystemCPU); nil for a job's own row and unmeasured steps.
	Usage *StepUsage `json:"usage,omitempty"`
	// ArrayJobID and ArrayTaskID are an array task's (a step row carries
	// its job's); ArrayTasks, set by sacct on a row that stands for an
	// array's tasks that have not started, lists them ("3-7").
	ArrayJobID  uint64 `json:"array_job_id,omitempty"`
	ArrayTaskID int    `json:"array_task_id,omitempty"`
	ArrayTasks  string `json:"-"`
	// The job's (a step row carries its job's): sacct's Group, GID, QOS,
	// Constraints, Reason, Timelimit, WorkDir, ReqCPUS and ReqMem, and
	// what -g, -q, -C, -R and -k/-K select on.
	Group        string `json:"group,omitempty"`
	GID          uint32 `json:"gid,omitempty"`
	QOS          string `json:"qos,omitempty"`
	Constraints  string `json:"constraints,omitempty"`
	Reason       string `json:"reason,omitempty"`
	TimeLimitMin int64  `json:"time_limit_min,omitempty"`
	WorkDir      string `json:"work_dir,omitempty"`
	ReqCPUs      int    `json:"req_cpus,omitempty"`
	ReqMemMB     int64  `json:"req_mem_mb,omitempty"`
	// Script and Env are the batch script and environment the accounting
	// store keeps where AccountingStoreFlags says job_script / job_env
	// (sacct -B, --env-vars): on job rows of a query by job id, for the
	// job's owner, root and operators; nil when not stored or withheld.
	Script *string  `json:"script,omitempty"`
	Env    []string `json:"env,omitempty"`
}

// JobEnd is what a node's agent reports when a job's batch step ends
// (POST /internal/job-end, then the FSM's End entry).
type JobEnd struct {
	JobID    uint64    `json:"job_id"`
	Node     string    `json:"node"`
	ExitCode int       `json:"exit_code"`
	Signal   int       `json:"signal"`
	OOM      bool      `json:"oom"`
	Error    string    `json:"error,omitempty"` // the step could not start
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Usage is what the batch step used.
	Usage *StepUsage `json:"usage,omitempty"`
	// Run is the run of the job the end is for: its StartTime as the
	// node was given it at launch. The FSM ignores an end for another
	// run (a resent report of a run that was requeued); zero (ends the
	// leader decides itself, older entries) stands for the run going.
	Run time.Time `json:"run,omitzero"`
}

// StepUsage is what a step used: its peak memory on its busiest node and
// the CPU time of its processes on all its nodes.
type StepUsage struct {
	MaxRSSKB   int64         `json:"max_rss_kb,omitempty"`
	MaxRSSNode string        `json:"max_rss_node,omitempty"`
	UserCPU    time.Duration `json:"user_cpu,omitempty"`
	SystemCPU  time.Duration `json:"system_cpu,omitempty"`
}

// JobIDString returns sacct's JobID column: "12", "12.batch", an array
// task's "10_2" (its array and index) or, on a row standing for an array's
// pending tasks, "10_[3-7]".
func (r AcctRow) JobIDString() string {
	id := uintString(r.JobID)
	switch {
	case r.ArrayTasks != "":
		id = uintString(r.ArrayJobID) + "_[" + r.ArrayTasks + "]"
	case r.ArrayJobID != 0:
		id = uintString(r.ArrayJobID) + "_" + strconv.Itoa(r.ArrayTaskID)
	}
	if r.Step == "" {
		return id
	}
	return id + "." + r.Step
}

// JobIDRawString returns sacct's JobIDRaw column: the job's own id (an
// array task's too), with the step: "15", "15.batch".
func (r AcctRow) JobIDRawString() string {
	if r.Step == "" {
		return uintString(r.JobID)
	}
	return uintString(r.JobID) + "." + r.Step
}

func uintString(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}

// Member is one gossip member as memberlist sees it.
type Member struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	State string `json:"state"` // alive, suspect, dead, left
	// ExecMode is how the member runs steps, as it announces it.
	ExecMode string `json:"exec_mode,omitempty"`
}

// Status is `hpc status`: who leads, the Raft view and the gossip view.
type Status struct {
	Node        string   `json:"node"`
	Leader      string   `json:"leader"`
	LeaderAddr  string   `json:"leader_addr"`
	Term        uint64   `json:"term"`
	RaftState   string   `json:"raft_state"`
	Voters      []string `json:"voters"`
	Members     []Member `json:"members"`
	CommitIndex uint64   `json:"commit_index"`
	AppliedIdx  uint64   `json:"applied_index"`
	ExecMode    string   `json:"exec_mode"` // how this node runs steps, e.g. "containers (cgroup v1)"
	// Controllers are the Raft servers, SlurmctldHost order first, each as
	// it answers for itself (api/controllers.go).
	Controllers []ControllerState `json:"controllers,omitempty"`
}

// SubmitRequest asks the controller to queue a job.
type SubmitRequest struct {
	Spec JobSpec `json:"spec"`
	// Token is the submission's random token: the copies of one submission
	// a client sends again when an answer was lost make one job.
	Token string `json:"token,omitempty"`
}

// SubmitResponse carries the new job's id.
type SubmitResponse struct {
	JobID uint64 `json:"job_id"`
}

// CancelRequest asks to cancel jobs (scancel).
type CancelRequest struct {
	JobIDs []uint64 `json:"job_ids"`
	Signal int      `json:"signal,omitempty"` // 0: cancel (SIGTERM, then SIGKILL)
	// Scope says which processes a signal reaches, as scancel's flags do:
	// SignalSteps (the default: every step but the batch shell, unless
	// the signal is SIGKILL), SignalBatch (-b: the batch shell and its
	// children only) or SignalFull (-f: both).
	Scope string `json:"scope,omitempty"`
}

// HoldRequeue is the hold of a job requeued because its prolog failed; its
// reason is ReasonRequeueHeld, and scontrol release lifts it.
const (
	HoldRequeue       = "requeue"
	ReasonRequeueHeld = "launch failed requeued held"
)

// Scopes of a CancelRequest's signal.
const (
	SignalSteps = ""
	SignalBatch = "batch"
	SignalFull  = "full"
	// SignalShell reaches the batch shell alone, not its children: sbatch
	// --signal=B:SIG@secs.
	SignalShell = "shell"
)

// CancelResult is the outcome for one job id.
type CancelResult struct {
	JobID uint64 `json:"job_id"`
	Error string `json:"error,omitempty"` // Slurm's text, e.g. "Invalid job id specified"
}

// CancelResponse answers a CancelRequest.
type CancelResponse struct {
	Results []CancelResult `json:"results"`
}

// JobsResponse answers a job listing: the count first, so that a client
// reading the list as it arrives sizes it once (Client.jobList).
type JobsResponse struct {
	Count int   `json:"count"`
	Jobs  []Job `json:"jobs"`
}

// NodesResponse answers a node/partition listing (sinfo).
type NodesResponse struct {
	Nodes      []Node      `json:"nodes"`
	Partitions []Partition `json:"partitions"`
}

// AcctResponse answers sacct.
type AcctResponse struct {
	Rows []AcctRow `json:"rows"`
}

// Error is the JSON body of a failed request. Message reads like Slurm's
// error text (for example "Invalid partition name specified").
type Error struct {
	Message string `json:"error"`
	// Detail is an extra line some errors print first
	// (e.g. "invalid partition specified: nosuch").
	Detail string `json:"detail,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Slurm's error texts (slurm_strerror), shared by the controller and clients.
const (
	ErrInvalidPartition   = "Invalid partition name specified"
	ErrTooManyProcessors  = "More processors requested than permitted"
	ErrNodeCountInvalid   = "Node count specification invalid"
	ErrInvalidTimeLimit   = "Requested time limit is invalid (missing or exceeds some limit)"
	ErrConfigUnavailable  = "Requested node configuration is not available"
	ErrInvalidJobID       = "Invalid job id specified"
	ErrAlreadyDone        = "Job/step already completing or completed"
	ErrAccessDenied       = "Access/permission denied"
	ErrNoLeader           = "Unable to contact slurm controller (connect failure)"
	ErrJobDependency      = "Job dependency problem"
	ErrInvalidAccount     = "Invalid account or account/partition combination specified"
	ErrUnexpectedMessage  = "Unexpected message received"
	ErrEmptyScript        = "Batch script is empty!"
	ErrScriptNoInterp     = "This does not look like a batch script.  The first"
	ErrMemoryUnsatisfied  = "Memory specification can not be satisfied"
	ErrInvalidNodeName    = "Invalid node name specified"
	ErrJobNotPendingOrRun = "Job is no longer pending execution"
	// ErrTransitionState answers a signal to a job that has not started
	// (Slurm's ESLURM_TRANSITION_STATE_NO_UPDATE); scancel tries again.
	ErrTransitionState = "Job can not be altered now, try again later"
	// ErrNodesBusy answers an exclusive step whose CPUs other steps hold:
	// srun waits and asks again.
	ErrNodesBusy = "Requested nodes are busy"
	// ErrTryAgain is EAGAIN's text: the controller holds MaxJobCount jobs
	// (sbatch retries, as Slurm's does).
	ErrTryAgain = "Resource temporarily unavailable"
	// ErrTooLong is ESLURM_PATHNAME_TOO_LONG, Slurm's answer to a job
	// whose script or strings exceed their limits.
	ErrTooLong = "Pathname of a file, directory or other parameter too long"
	// ErrRateLimit is SLURMCTLD_COMMUNICATIONS_BACKOFF: a user's
	// submissions came faster than the rate limit lets them.
	ErrRateLimit = "Rate limit exceeded, please retry momentarily"
	// ErrInvalidArray is ESLURM_INVALID_ARRAY.
	ErrInvalidArray = "Invalid job array specification"
)

// IsFinalState is a helper for strings coming off the wire.
func IsFinalState(s string) bool { return JobState(strings.TrimSuffix(s, "+")).Final() }

// ---- sacctmgr: QoS, accounts, users and associations ----

// TRES are trackable-resource amounts, as sacctmgr takes and prints them
// ("cpu=4,mem=8G,node=2,gres/gpu=1"). Keys are "cpu", "mem" (in MB),
// "node" and "gres/gpu". In a limit, a missing key means no limit and 0 is
// a limit of zero; in a change (AcctmgrSet), -1 removes the key.
type TRES map[string]int64

// TRES names hpc tracks, in the order sacctmgr prints them.
var TRESNames = []string{"cpu", "gres/gpu", "mem", "node"}

// ParseTRES reads "cpu=4,mem=8G,gres/gpu=1" as sacctmgr does. A number
// may end in K, M, G, T or P (powers of 1024); mem is in MB, so mem=8G is
// 8192, and, as in sacctmgr, K there means M. A value of -1 is kept (it
// removes the limit in a change).
func ParseTRES(s string) (TRES, error) {
	out := TRES{}
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		name, val, ok := strings.Cut(item, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		known := false
		for _, n := range TRESNames {
			known = known || n == name
		}
		if !ok || !known {
			return nil, &Error{Message: "slurmdb_format_tres_str: no TRES known by type " + name}
		}
		n, err := parseTRESCount(name, strings.TrimSpace(val))
		if err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, nil
}

func parseTRESCount(name, val string) (int64, error) {
	if val == "-1" {
		return -1, nil
	}
	var n int64
	i := 0
	for ; i < len(val) && val[i] >= '0' && val[i] <= '9'; i++ {
		if n > (1<<53)/10 {
			return 0, &Error{Message: "Invalid value for TRES " + name + " (" + val + ")"}
		}
		n = n*10 + int64(val[i]-'0')
	}
	if i == 0 || len(val) > i+1 {
		bad := "(empty)"
		if i < len(val) {
			bad = val[i : i+1]
		}
		return 0, &Error{Message: "Invalid unit type '" + bad + "'. Possible options are 'KMGTP'"}
	}
	if i < len(val) {
		p := strings.IndexByte("KMGTP", val[i]&^0x20)
		if p < 0 {
			return 0, &Error{Message: "Invalid unit type '" + val[i:] + "'. Possible options are 'KMGTP'"}
		}
		e := p + 1 // K is 1024
		if name == "mem" {
			// mem counts MB, and sacctmgr takes K as M (mem=2048K is
			// mem=2G there): K and M are the unit, G is 1024.
			e = max(p-1, 0)
		}
		for ; e > 0; e-- {
			if n > (1<<62)/1024 {
				return 0, &Error{Message: "Invalid value for TRES " + name + " (" + val + ")"}
			}
			n *= 1024
		}
	}
	return n, nil
}

// String prints the TRES as sacctmgr does: names in alphabetical order,
// memory in the largest unit reached by dividing by 1024 while the amount
// is a multiple of 512 (mem=8G, mem=500M, mem=1.50G, mem=1025M).
func (t TRES) String() string {
	var b strings.Builder
	for _, name := range TRESNames {
		v, ok := t[name]
		if !ok {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
		b.WriteByte('=')
		if name == "mem" {
			b.WriteString(FormatMB(v))
		} else {
			b.WriteString(intString(v))
		}
	}
	return b.String()
}

// FormatMB prints a size in MB as Slurm's convert_num_unit does.
func FormatMB(mb int64) string {
	if mb <= 0 {
		return intString(mb)
	}
	const units = "MGTPE"
	u, div := 0, int64(1) // the amount is mb/div in units[u]
	for u < len(units)-1 && mb/div >= 1024 && mb%(512*div) == 0 {
		div *= 1024
		u++
	}
	s := intString(mb / div)
	if mb%div != 0 { // a division left a half
		s += ".50"
	}
	return s + units[u:u+1]
}

func intString(v int64) string {
	if v < 0 {
		return "-" + uintString(uint64(-v))
	}
	return uintString(uint64(v))
}

// Admin levels of sacctmgr users.
const (
	AdminNone          = "None"
	AdminOperator      = "Operator"
	AdminAdministrator = "Administrator"
)

// PreemptMode values of a QoS ("" is "cluster": the slurm.conf PreemptMode).
const (
	PreemptModeOff     = "OFF"
	PreemptModeCancel  = "CANCEL"
	PreemptModeRequeue = "REQUEUE"
)

// QOS is one quality of service (sacctmgr show qos). A nil limit is no
// limit; a limit of 0 allows nothing.
type QOS struct {
	// ID orders QoS by creation, as sacctmgr lists them.
	ID                   int      `json:"id"`
	Name                 string   `json:"name"`
	Description          string   `json:"description,omitempty"`
	Priority             int      `json:"priority"`
	MaxWallMin           *int64   `json:"max_wall_min,omitempty"` // MaxWall, minutes
	MaxJobsPerUser       *int     `json:"max_jobs_per_user,omitempty"`
	MaxSubmitJobsPerUser *int     `json:"max_submit_jobs_per_user,omitempty"`
	MaxTRESPerUser       TRES     `json:"max_tres_per_user,omitempty"`
	MaxTRESPerJob        TRES     `json:"max_tres_per_job,omitempty"`
	GrpTRES              TRES     `json:"grp_tres,omitempty"`
	GrpJobs              *int     `json:"grp_jobs,omitempty"`
	GrpSubmitJobs        *int     `json:"grp_submit_jobs,omitempty"`
	Preempt              []string `json:"preempt,omitempty"`      // QoS this one may preempt, sorted
	PreemptMode          string   `json:"preempt_mode,omitempty"` // "" (cluster), OFF, CANCEL, REQUEUE
}

// Account is an account record (sacctmgr show account).
type Account struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Organization string `json:"organization"`
}

// AcctUser is a user record (sacctmgr show user).
type AcctUser struct {
	Name           string `json:"name"`
	DefaultAccount string `json:"default_account"`
	AdminLevel     string `json:"admin_level"` // None, Operator, Administrator
}

// Assoc is an association: an account's own (User "") or a user's under
// an account. In records nil limits, a nil QOS list and an empty
// DefaultQOS are inherited from the parent account (Grp limits and
// shares are not); sacctmgr's answers carry the inherited values.
type Assoc struct {
	Account string `json:"account"`
	User    string `json:"user,omitempty"`
	// Parent is the parent account of an account association ("" for
	// root); a user association's parent is its Account.
	Parent        string   `json:"parent,omitempty"`
	Shares        int      `json:"shares"` // Fairshare, default 1
	GrpJobs       *int     `json:"grp_jobs,omitempty"`
	GrpSubmitJobs *int     `json:"grp_submit_jobs,omitempty"`
	GrpTRES       TRES     `json:"grp_tres,omitempty"`
	MaxJobs       *int     `json:"max_jobs,omitempty"`
	MaxSubmitJobs *int     `json:"max_submit_jobs,omitempty"`
	MaxTRESPerJob TRES     `json:"max_tres_per_job,omitempty"`
	MaxWallMin    *int64   `json:"max_wall_min,omitempty"`
	QOS           []string `json:"qos,omitempty"` // sorted
	DefaultQOS    string   `json:"default_qos,omitempty"`
	// Depth is the level in the tree in answers (root 0), for `tree`.
	Depth int `json:"depth,omitempty"`
}

// AcctCluster is what sacctmgr show cluster prints of the cluster itself.
type AcctCluster struct {
	Name        string `json:"name"`
	ControlHost string `json:"control_host"`
	ControlPort int    `json:"control_port"`
	RPC         int    `json:"rpc"`
}

// AcctmgrState answers GET /api/acctmgr: everything sacctmgr shows, QoS in
// creation order, accounts and users by name, associations in tree order.
type AcctmgrState struct {
	Cluster  AcctCluster `json:"cluster"`
	QOS      []QOS       `json:"qos"`
	Accounts []Account   `json:"accounts"`
	Users    []AcctUser  `json:"users"`
	Assocs   []Assoc     `json:"assocs"`
}

// ListEdit changes a list of names: Op "=" replaces it, "+=" adds to it,
// "-=" removes from it.
type ListEdit struct {
	Op    string   `json:"op"`
	Names []string `json:"names"`
}

// AcctmgrSet holds the settings of an add or modify; nil fields are not
// given. Counts and MaxWallMin of -1 clear a limit; TRES keys of -1 remove
// that TRES from the limit (other keys are merged in).
type AcctmgrSet struct {
	Description          *string   `json:"description,omitempty"`
	Organization         *string   `json:"organization,omitempty"`
	Priority             *int      `json:"priority,omitempty"`
	MaxWallMin           *int64    `json:"max_wall_min,omitempty"`
	MaxJobsPerUser       *int      `json:"max_jobs_per_user,omitempty"`
	MaxSubmitJobsPerUser *int      `json:"max_submit_jobs_per_user,omitempty"`
	MaxTRESPerUser       TRES      `json:"max_tres_per_user,omitempty"`
	MaxTRESPerJob        TRES      `json:"max_tres_per_job,omitempty"`
	GrpTRES              TRES      `json:"grp_tres,omitempty"`
	GrpJobs              *int      `json:"grp_jobs,omitempty"`
	GrpSubmitJobs        *int      `json:"grp_submit_jobs,omitempty"`
	Preempt              *ListEdit `json:"preempt,omitempty"`
	PreemptMode          *string   `json:"preempt_mode,omitempty"` // "" means cluster
	Fairshare            *int      `json:"fairshare,omitempty"`    // -1: back to 1
	MaxJobs              *int      `json:"max_jobs,omitempty"`
	MaxSubmitJobs        *int      `json:"max_submit_jobs,omitempty"`
	QOS                  *ListEdit `json:"qos,omitempty"`
	DefaultQOS           *string   `json:"default_qos,omitempty"` // "" clears
	Parent               *string   `json:"parent,omitempty"`
	DefaultAccount       *string   `json:"default_account,omitempty"`
	AdminLevel           *string   `json:"admin_level,omitempty"`
}

// AcctmgrRequest is one sacctmgr add, modify or delete.
type AcctmgrRequest struct {
	Action string `json:"action"` // add, modify, delete
	Entity string `json:"entity"` // qos, account, user
	// Names are the QoS, accounts or users to act on; empty in a modify
	// means all of them.
	Names []string `json:"names,omitempty"`
	// Accounts: for add user, the accounts to add the users to; for
	// modify/delete user, only their associations under these accounts.
	Accounts []string   `json:"accounts,omitempty"`
	Set      AcctmgrSet `json:"set"`
}

// AssocRef names an association in sacctmgr's messages.
type AssocRef struct {
	Account string `json:"account"`
	User    string `json:"user,omitempty"`
	Parent  string `json:"parent,omitempty"`
}

// AcctmgrResult says what an add, modify or delete changed; all empty
// means nothing matched (" Nothing modified").
type AcctmgrResult struct {
	Cluster  string     `json:"cluster"`
	QOS      []string   `json:"qos,omitempty"`      // QoS added, modified or deleted
	Accounts []string   `json:"accounts,omitempty"` // account records
	Users    []string   `json:"users,omitempty"`    // user records
	Assocs   []AssocRef `json:"assocs,omitempty"`   // associations
	// UsersNoAssoc are users deleted because their last association went.
	UsersNoAssoc []string `json:"users_no_assoc,omitempty"`
}

// ErrInvalidQOS is Slurm's text for a QoS a job may not use.
const ErrInvalidQOS = "Invalid qos specification"

// ---- scontrol hold/release/requeue ----

// JobControlRequest asks for scontrol hold, uhold, release or requeue of
// jobs.
type JobControlRequest struct {
	JobIDs []uint64 `json:"job_ids"`
	// Action is "hold" (an administrator's hold when root asks, else the
	// user's), "uhold" (a user hold), "release" or "requeue".
	Action string `json:"action"`
}

// JobControlResponse has one result per job, with Slurm's error text.
type JobControlResponse struct {
	Results []CancelResult `json:"results"`
}

// ---- job steps: srun, salloc (issue 4) ----

// Step is one job step started by srun: sacct's and squeue -s's JOBID.ID.
type Step struct {
	ID    uint32   `json:"id"`
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"` // in task order: tasks 0.. on Nodes[0], then Nodes[1]...
	Tasks []int    `json:"tasks"` // tasks on each node of Nodes
	// CPUsPerTask is the step's -c (or the job's).
	CPUsPerTask int `json:"cpus_per_task"`
	// Exclusive is srun --exclusive (or --exact): the step holds its
	// tasks' CPUs, and other such steps of the job run beside it, on other
	// CPUs, or wait.
	Exclusive bool `json:"exclusive,omitempty"`
	// Launcher is the node whose daemon runs the step for its srun.
	Launcher string    `json:"launcher"`
	State    JobState  `json:"state"`
	ExitCode int       `json:"exit_code"`
	Signal   int       `json:"signal"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"`
	// Usage is what the step used, once it has ended.
	Usage *StepUsage `json:"usage,omitempty"`
}

// HeldCPUs are the CPUs the job's running exclusive steps (srun
// --exclusive) hold, by node.
func (j *Job) HeldCPUs() map[string]int {
	held := map[string]int{}
	for _, s := range j.Steps {
		if !s.Exclusive || s.State != StateRunning {
			continue
		}
		for k, n := range s.Nodes {
			held[n] += s.Tasks[k] * max(s.CPUsPerTask, 1)
		}
	}
	return held
}

// NTasks is the step's number of tasks.
func (s *Step) NTasks() int {
	n := 0
	for _, t := range s.Tasks {
		n += t
	}
	return n
}

// StepRequest is what srun asks for: a step of a running job.
type StepRequest struct {
	JobID         uint64   `json:"job_id"`
	Name          string   `json:"name,omitempty"`            // default: the command's base name
	Nodes         int      `json:"nodes,omitempty"`           // -N; 0: the job's nodes
	NTasks        int      `json:"ntasks,omitempty"`          // -n; 0: the job's tasks, or one per node
	NTasksPerNode int      `json:"ntasks_per_node,omitempty"` // --ntasks-per-node
	CPUsPerTask   int      `json:"cpus_per_task,omitempty"`   // -c; 0: the job's
	Overcommit    bool     `json:"overcommit,omitempty"`      // -O: more tasks than CPUs may run (also when the job overcommits)
	NodeList      string   `json:"node_list,omitempty"`       // -w hostlist: these nodes of the job first
	Argv          []string `json:"argv"`
	Env           []string `json:"env,omitempty"`    // srun's environment
	Export        string   `json:"export,omitempty"` // --export: "", ALL, NONE, or a list (with or without ALL)
	WorkDir       string   `json:"work_dir,omitempty"`
	// Input says which tasks get srun's standard input (--input): "all",
	// a task number, or "" (none: /dev/null, srun's own stdin being
	// /dev/null or --input=none). It arrives in StepInput requests.
	Input string `json:"input,omitempty"`
	// Pty runs task 0 on a pseudo-terminal of Rows x Cols (--pty); srun's
	// input goes to it alone.
	Pty  bool   `json:"pty,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	// Attach, with StepID, asks for the stream of a step this srun runs
	// already, after its node's daemon was restarted under it.
	Attach bool   `json:"attach,omitempty"`
	StepID uint32 `json:"step_id,omitempty"`
	// KillOnBadExit is srun -K: the step is killed as soon as one of its
	// tasks fails (exits non-zero or is signalled).
	KillOnBadExit bool `json:"kill_on_bad_exit,omitempty"`
	// Exclusive is srun --exclusive or --exact: the step takes CPUs no
	// other such step of the job holds, waiting for them if need be.
	Exclusive bool `json:"exclusive,omitempty"`
}

// StepInput carries a piece of srun's standard input to its step's tasks
// (Data, then EOF once), or, with Resize, its terminal's new size.
type StepInput struct {
	JobID  uint64 `json:"job_id"`
	StepID uint32 `json:"step_id"`
	Data   []byte `json:"data,omitempty"`
	EOF    bool   `json:"eof,omitempty"`
	Resize bool   `json:"resize,omitempty"`
	Rows   uint16 `json:"rows,omitempty"`
	Cols   uint16 `json:"cols,omitempty"`
}

// Stream numbers of StepEvent.Stream.
const (
	StreamStdout = 1
	StreamStderr = 2
)

// StepEvent is one line of a running step's stream, as srun reads it:
// first the step as created, then the tasks' output and ends as they
// happen, last Done.
type StepEvent struct {
	Step    *Step     `json:"step,omitempty"`
	Warning string    `json:"warning,omitempty"` // a line srun prints ("can't run 1 processes on 2 nodes...")
	Task    int       `json:"task,omitempty"`
	Stream  int       `json:"stream,omitempty"` // StreamStdout or StreamStderr, with Data
	Data    []byte    `json:"data,omitempty"`
	Exit    *TaskExit `json:"exit,omitempty"`
	Done    *StepDone `json:"done,omitempty"`
}

// TaskExit is how one task of a step ended.
type TaskExit struct {
	Task     int    `json:"task"`
	Node     string `json:"node"`
	ExitCode int    `json:"exit_code"`
	Signal   int    `json:"signal,omitempty"`
}

// StepDone ends a step's stream.
type StepDone struct {
	State    JobState `json:"state"`
	ExitCode int      `json:"exit_code"` // the highest task exit code
	Signal   int      `json:"signal,omitempty"`
	// Error says why (some) tasks could not run ("node2: ..."), if so.
	Error string `json:"error,omitempty"`
}

// SigOOM is what Slurm reports as the signal of a task the OOM killer
// ended (TaskExit.Signal); accounting shows a step or job that ran out of
// memory as OUT_OF_MEMORY 0:125 (SigOOM's low seven bits).
const SigOOM = 253

// StepSignalRequest asks srun's node to signal a step; Signal 9 kills it.
type StepSignalRequest struct {
	JobID  uint64 `json:"job_id"`
	StepID uint32 `json:"step_id"`
	Signal int    `json:"signal"`
}

// Allocation is a running job as salloc and srun see it once it starts:
// the job and the environment an allocation's shell gets.
type Allocation struct {
	Job Job      `json:"job"`
	Env []string `json:"env,omitempty"` // SLURM_JOB_ID=..., set when the job runs
}

// ReleaseRequest ends an allocation made by salloc or srun (a job whose
// batch step is HolderScript) with the given exit status.
type ReleaseRequest struct {
	JobID    uint64 `json:"job_id"`
	ExitCode int    `json:"exit_code"`
	Signal   int    `json:"signal,omitempty"`
	OOM      bool   `json:"oom,omitempty"` // the step it ran was OOM-killed
}

// HolderScript is the batch script of the jobs salloc and srun (outside a
// job) submit: it holds the allocation until the client releases it, and
// the job then ends with the exit status the client gives.
const HolderScript = "#!/bin/sh\n# hpc: holds an allocation for salloc or srun until it is released\nexec sleep infinity\n"

// ---- sprio ----

// PriorityRow is one pending job's priority and its factors, as sprio
// shows them: weighted (what the factors add to the priority) and
// normalized (0..1).
type PriorityRow struct {
	JobID      uint64          `json:"job_id"`
	User       string          `json:"user"`
	Partition  string          `json:"partition"`
	Priority   uint32          `json:"priority"`
	Weighted   PriorityFactors `json:"weighted"`
	Normalized PriorityFactors `json:"normalized"`
	Nice       int             `json:"nice"`
}

// PriorityFactors are the multifactor priority factors of a job.
type PriorityFactors struct {
	Age       float64 `json:"age"`
	Fairshare float64 `json:"fairshare"`
	JobSize   float64 `json:"job_size"`
	Partition float64 `json:"partition"`
	QOS       float64 `json:"qos"`
}

// PriorityResponse answers sprio: the rows, the plugin and its weights.
type PriorityResponse struct {
	Plugin  string          `json:"plugin"` // priority/basic or priority/multifactor
	Weights PriorityFactors `json:"weights"`
	Rows    []PriorityRow   `json:"rows"`
}

// ---- scontrol update ----

// UpdateRequest is scontrol update: of a job (JobID set) or of nodes
// (Nodes set), with Slurm's Key=Value settings (keys as the user typed
// them; matched case-insensitively).
type UpdateRequest struct {
	JobID uint64            `json:"job_id,omitempty"`
	Nodes []string          `json:"nodes,omitempty"`
	Set   map[string]string `json:"set"`
}

// TestOnlyResponse answers sbatch --test-only: when and where the job
// would start if submitted now (its id is the one it would get).
type TestOnlyResponse struct {
	JobID     uint64    `json:"job_id"`
	Start     time.Time `json:"start"`
	CPUs      int       `json:"cpus"`
	Nodes     []string  `json:"nodes"`
	Partition string    `json:"partition"`
}

// ShareRow is one association's line of sshare (Fair Tree): Depth is its
// level (root 0). RawShares < 0 means no share; LevelFS is +Inf-free: Inf
// is sent as -1. FairShare is set for user associations only.
type ShareRow struct {
	Account      string  `json:"account"`
	User         string  `json:"user,omitempty"`
	Depth        int     `json:"depth"`
	RawShares    int     `json:"raw_shares"`
	NormShares   float64 `json:"norm_shares"`
	RawUsage     float64 `json:"raw_usage"`
	NormUsage    float64 `json:"norm_usage"`
	EffectvUsage float64 `json:"effectv_usage"`
	LevelFS      float64 `json:"level_fs"`
	FairShare    float64 `json:"fair_share"`
}

// ShareResponse answers GET /api/share: every association in tree order.
type ShareResponse struct {
	Cluster string     `json:"cluster"`
	Rows    []ShareRow `json:"rows"`
}

// ReportUsage is the CPU-seconds one user used under one account inside a
// report window.
type ReportUsage struct {
	Account    string  `json:"account"`
	User       string  `json:"user"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

// ReportResponse answers GET /api/report?start=&end= (RFC 3339): the
// window, the cluster's CPU count, the associations in tree order (for
// sreport's account trees) and usage per account and user in the window.
type ReportResponse struct {
	Cluster   string        `json:"cluster"`
	Start     time.Time     `json:"start"`
	End       time.Time     `json:"end"`
	TotalCPUs int64         `json:"total_cpus"`
	Assocs    []ShareRow    `json:"assocs"`
	Usage     []ReportUsage `json:"usage"`
}

// TakeoverRequest is scontrol takeover: Raft leadership moves to Node.
type TakeoverRequest struct {
	Node string `json:"node"`
}

// ConfigInfo is what GET /api/config answers beside the parsed slurm.conf
// (whose fields share its JSON object): what scontrol show config prints
// that the file does not say.
type ConfigInfo struct {
	SlurmConf         string    `json:"slurm_conf,omitempty"`          // the slurm.conf the daemons read (SLURM_CONF)
	BootTime          time.Time `json:"boot_time,omitzero"`            // when the answering daemon started (BOOT_TIME)
	NextJobID         uint64    `json:"next_job_id,omitempty"`         // the id the next job gets (NEXT_JOB_ID)
	StateSaveLocation string    `json:"state_save_location,omitempty"` // the answering node's state directory
}

// Diag is what sdiag prints: the leader's counters since Since.
type Diag struct {
	Time  time.Time `json:"time"`
	Since time.Time `json:"since"`

	JobsSubmitted uint64 `json:"jobs_submitted"`
	JobsStarted   uint64 `json:"jobs_started"`
	JobsCompleted uint64 `json:"jobs_completed"`
	JobsCanceled  uint64 `json:"jobs_canceled"`
	JobsFailed    uint64 `json:"jobs_failed"`
	JobsPending   uint64 `json:"jobs_pending"`
	JobsRunning   uint64 `json:"jobs_running"`

	// The main scheduling passes, in microseconds.
	CycleLast uint64 `json:"cycle_last"`
	CycleMax  uint64 `json:"cycle_max"`
	Cycles    uint64 `json:"cycles"`
	CycleSum  uint64 `json:"cycle_sum"`
	QueueLen  uint64 `json:"queue_len"`
	// Passes in which backfill placed jobs behind a blocked one.
	BackfilledJobs uint64    `json:"backfilled_jobs"`
	BackfillCycles uint64    `json:"backfill_cycles"`
	BackfillLast   uint64    `json:"backfill_last"`
	BackfillMax    uint64    `json:"backfill_max"`
	BackfillSum    uint64    `json:"backfill_sum"`
	BackfillWhen   time.Time `json:"backfill_when,omitzero"`

	ByType []DiagRPC `json:"by_type"`
	ByUser []DiagRPC `json:"by_user"`
}

// DiagRPC counts the requests of one type (or of one user: Name is the
// user, ID the uid).
type DiagRPC struct {
	Name        string `json:"name"`
	ID          uint32 `json:"id"`
	Count       uint64 `json:"count"`
	TotalMicros uint64 `json:"total_us"`
}

// TokenRequest asks for a token of Slurm's JWT scheme (scontrol token).
type TokenRequest struct {
	User     string `json:"username,omitempty"` // default: the caller
	Lifespan int64  `json:"lifespan,omitempty"` // seconds; default 1800
}

// TokenResponse carries the token.
type TokenResponse struct {
	Token string `json:"token"`
}
