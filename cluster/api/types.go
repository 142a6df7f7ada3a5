package api

import (
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
	}
	return string(s)
}

// Final reports whether a job in this state will never run again.
func (s JobState) Final() bool {
	switch s {
	case StateCompleted, StateFailed, StateCancelled, StateTimeout, StateOutOfMemory, StateNodeFail:
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
}

// NodeAlloc is one node's share of an allocation.
type NodeAlloc struct {
	Node  string `json:"node"`
	CPUs  int    `json:"cpus"`
	MemMB int64  `json:"mem_mb"`
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
	TimedOut    bool   `json:"timed_out,omitempty"`
	CancelledBy uint32 `json:"cancelled_by,omitempty"`
	StdOut      string `json:"std_out,omitempty"` // expanded path
	StdErr      string `json:"std_err,omitempty"` // expanded path
}

// NodeNames returns the allocated node names in allocation order.
func (j *Job) NodeNames() []string {
	out := make([]string, len(j.Alloc))
	for i, a := range j.Alloc {
		out[i] = a.Node
	}
	return out
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
	AllocCPUs  int      `json:"alloc_cpus"`
	AllocMemMB int64    `json:"alloc_mem_mb"`
}

// Partition is a partition as the controller sees it.
type Partition struct {
	Name       string   `json:"name"`
	Nodes      []string `json:"nodes"`
	Default    bool     `json:"default"`
	MaxTimeMin int64    `json:"max_time_min"` // -1 = UNLIMITED
	State      string   `json:"state"`        // UP, DOWN, DRAIN, INACTIVE
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
}

// JobIDString returns sacct's JobID column: "12" or "12.batch".
func (r AcctRow) JobIDString() string {
	id := uintString(r.JobID)
	if r.Step == "" {
		return id
	}
	return id + "." + r.Step
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
}

// SubmitRequest asks the controller to queue a job.
type SubmitRequest struct {
	Spec JobSpec `json:"spec"`
}

// SubmitResponse carries the new job's id.
type SubmitResponse struct {
	JobID uint64 `json:"job_id"`
}

// CancelRequest asks to cancel jobs (scancel).
type CancelRequest struct {
	JobIDs []uint64 `json:"job_ids"`
	Signal int      `json:"signal,omitempty"` // 0: cancel (SIGTERM, then SIGKILL)
}

// CancelResult is the outcome for one job id.
type CancelResult struct {
	JobID uint64 `json:"job_id"`
	Error string `json:"error,omitempty"` // Slurm's text, e.g. "Invalid job id specified"
}

// CancelResponse answers a CancelRequest.
type CancelResponse struct {
	Results []CancelResult `json:"results"`
}

// JobsResponse answers a job listing.
type JobsResponse struct {
	Jobs []Job `json:"jobs"`
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
)

// IsFinalState is a helper for strings coming off the wire.
func IsFinalState(s string) bool { return JobState(strings.TrimSuffix(s, "+")).Final() }
