package fsm

import (
	"encoding/json"
	"fmt"
	"time"

	"hpc/cluster/acct"
	"hpc/cluster/api"
)

// Type names a log entry's operation. An entry is one Type byte followed
// by the JSON encoding of that operation's payload. Entries written before
// typed entries existed begin with '{' instead (legacy.go); no Type may
// take that value.
type Type uint8

// The operations. Their values are in the Raft log: never renumber one,
// and keep a retired one's value reserved.
const (
	TypeSubmit    Type = 1  // a new job (an array: one per index); the FSM assigns ids
	TypeStart     Type = 2  // allocations the leader's scheduler decided
	TypeReasons   Type = 3  // pending reasons changed
	TypeEnd       Type = 4  // a job's batch step ended on its node
	TypeCancel    Type = 5  // scancel: a pending job ends now, a running one is marked
	TypeNodeState Type = 6  // a node came up, went down, or was drained or resumed
	TypeTimeout   Type = 7  // running jobs past their time limit are being killed
	TypeWarned    Type = 8  // running jobs got their --signal warning
	TypePurge     Type = 9  // finished jobs older than MinJobAge leave the state
	TypePreempt   Type = 10 // running jobs preempted for others (requeue or cancel)
	TypeHold      Type = 11 // scontrol hold/release
	TypeRequeue   Type = 12 // scontrol requeue, or a failed prolog: back to pending
	TypeUpdateJob Type = 13 // scontrol update JobId=
	TypeStepStart Type = 14 // a new step of a running job; the FSM numbers it
	TypeStepEnd   Type = 15 // every task of a step has ended
	TypeAcctmgr   Type = 16 // an sacctmgr add, modify or delete
)

// The trigger operations (strigger; payloads in triggers.go).
const (
	TypeTriggerSet   Type = 17 // strigger --set
	TypeTriggerClear Type = 18 // strigger --clear
	TypeTriggerFired Type = 19 // the leader runs a trigger's program now
)

// The partition and configuration operations (scontrol; payloads in
// partitions.go).
const (
	TypePartition   Type = 20 // scontrol create, update or delete partition
	TypeReconfigure Type = 21 // scontrol reconfigure: the new slurm.conf
)

// TypeSubmitBatch is many submissions in one entry (SubmitBatch). The
// intents' types (intents.go) come before it.
const TypeSubmitBatch Type = 25

// Op is the payload of one log entry. Every field Apply reads is in the
// payload, the time included: Apply never reads a clock, so every
// controller reaches the same state and writes the same accounting rows.
type Op interface{ Type() Type }

// newOp returns an empty payload of type t, or nil for an unknown type.
var newOp = map[Type]func() Op{
	TypeSubmit:      func() Op { return new(Submit) },
	TypeSubmitBatch: func() Op { return new(SubmitBatch) },
	TypeStart:       func() Op { return new(Start) },
	TypeReasons:     func() Op { return new(Reasons) },
	TypeEnd:         func() Op { return new(End) },
	TypeCancel:      func() Op { return new(Cancel) },
	TypeNodeState:   func() Op { return new(NodeStateChange) },
	TypeTimeout:     func() Op { return new(Timeout) },
	TypeWarned:      func() Op { return new(Warned) },
	TypePurge:       func() Op { return new(Purge) },
	TypePreempt:     func() Op { return new(Preempt) },
	TypeHold:        func() Op { return new(Hold) },
	TypeRequeue:     func() Op { return new(Requeue) },
	TypeUpdateJob:   func() Op { return new(UpdateJob) },
	TypeStepStart:   func() Op { return new(StepStart) },
	TypeStepEnd:     func() Op { return new(StepEnd) },
	TypeAcctmgr:     func() Op { return new(Acctmgr) },

	TypeTriggerSet:   func() Op { return new(TriggerSet) },
	TypeTriggerClear: func() Op { return new(TriggerClear) },
	TypeTriggerFired: func() Op { return new(TriggerFired) },

	TypePartition:   func() Op { return new(PartitionChange) },
	TypeReconfigure: func() Op { return new(Reconfigure) },

	TypeLaunched:       func() Op { return new(Launched) },
	TypeNodeResponding: func() Op { return new(NodeResponding) },
	TypeLaunchFailed:   func() Op { return new(LaunchFailed) },
}

// SubmitBatch is many submissions in one entry: the leader groups the
// submits that arrive while earlier ones are committing (cluster's
// submitbatch.go), so that a burst costs one entry, one disk write and
// one message where it cost one each per job. Each applies in order as
// its own Submit would, at the batch's Time; Result.Batch holds each one's
// result, in the same order.
type SubmitBatch struct {
	Time time.Time     `json:"time"`
	Jobs []BatchSubmit `json:"jobs"`
}

// BatchSubmit is one submission of a SubmitBatch: Submit's job and token.
type BatchSubmit struct {
	Job   *api.Job `json:"job"`
	Token string   `json:"token,omitempty"`
}

// Submit is a new job, or a job array (Job.Spec.Array) of one job per
// index with consecutive ids. Result.JobID is the (first) job's id.
type Submit struct {
	Time time.Time `json:"time"`
	Job  *api.Job  `json:"job"`
	// Token is the client's submission token (tokens.go): a Submit whose
	// token is remembered creates nothing and answers the first one's id.
	Token string `json:"token,omitempty"`
}

// Start starts pending jobs on their allocations.
type Start struct {
	Time   time.Time  `json:"time"`
	Starts []JobStart `json:"starts"`
}

// JobStart is one job's start.
type JobStart struct {
	JobID     uint64          `json:"job_id"`
	Alloc     []api.NodeAlloc `json:"alloc"`
	Partition string          `json:"partition,omitempty"` // the one it runs in, of those it named
	// TimeLimitMin is the effective limit (its own or the partition's);
	// -1 is UNLIMITED.
	TimeLimitMin int64  `json:"time_limit_min,omitempty"`
	StdOut       string `json:"std_out"`
	StdErr       string `json:"std_err"`
}

// Reasons sets the pending reasons of pending jobs.
type Reasons struct {
	Reasons map[uint64]string `json:"reasons"`
}

// End is a job's batch step's end, as its node reported it.
type End struct {
	Time time.Time  `json:"time"`
	End  api.JobEnd `json:"end"`
}

// Cancel is scancel of one job by uid.
type Cancel struct {
	Time  time.Time `json:"time"`
	JobID uint64    `json:"job_id"`
	UID   uint32    `json:"uid"`
}

// NodeStateChange sets a node's state (UP, DOWN, DRAIN, ADMIN_DOWN) and
// reason; UID is the administrator's for DRAIN and ADMIN_DOWN. Requeue,
// on a DOWN the controller decides, sends the node's batch jobs that may
// be requeued back to the queue (JobRequeue, --requeue) instead of ending
// them NODE_FAIL; entries written before it existed end them all.
type NodeStateChange struct {
	Time    time.Time `json:"time"`
	Node    string    `json:"node"`
	State   string    `json:"state"`
	Why     string    `json:"why,omitempty"`
	UID     uint32    `json:"uid,omitempty"`
	Requeue bool      `json:"requeue,omitempty"`
}

// Timeout marks running jobs past their time limit (they end TIMEOUT).
type Timeout struct {
	JobIDs []uint64 `json:"job_ids"`
}

// Warned marks running jobs whose --signal warning was sent.
type Warned struct {
	JobIDs []uint64 `json:"job_ids"`
}

// Purge drops finished jobs from the state (accounting keeps them).
type Purge struct {
	JobIDs []uint64 `json:"job_ids"`
}

// Preempt marks running jobs preempted for others.
type Preempt struct {
	Preempts []PreemptMark `json:"preempts"`
}

// PreemptMark is one preempted job and what becomes of it.
type PreemptMark struct {
	JobID uint64 `json:"job_id"`
	Mode  string `json:"mode"` // REQUEUE or CANCEL
}

// Hold sets (or, with Hold "", lifts) the hold of pending jobs: all or
// none.
type Hold struct {
	JobIDs []uint64 `json:"job_ids"`
	Hold   string   `json:"hold,omitempty"`
}

// Requeue sends running jobs back to pending once they end; Hold is
// api.HoldRequeue when a failed prolog requeues them held.
type Requeue struct {
	JobIDs []uint64 `json:"job_ids"`
	Hold   string   `json:"hold,omitempty"`
}

// UpdateJob is scontrol update JobId=; zero fields are unchanged.
type UpdateJob struct {
	JobID  uint64    `json:"job_id"`
	Update JobUpdate `json:"update"`
}

// JobUpdate is what scontrol update changes of a job.
type JobUpdate struct {
	TimeLimitMin int64  `json:"time_limit_min,omitempty"`
	Partition    string `json:"partition,omitempty"`
	Nodes        int    `json:"nodes,omitempty"`
	Name         string `json:"name,omitempty"`
	// Begin is scontrol's StartTime=: the earliest start of a pending job.
	Begin *time.Time `json:"begin,omitempty"`
}

// StepStart is a new step of a running job; Result.JobID is its step id.
type StepStart struct {
	Time  time.Time `json:"time"`
	JobID uint64    `json:"job_id"`
	Step  api.Step  `json:"step"`
}

// StepEnd is the end of every task of a step (Step.ID), with its exit
// code, signal, usage and a state hint (OUT_OF_MEMORY, CANCELLED).
type StepEnd struct {
	Time  time.Time `json:"time"`
	JobID uint64    `json:"job_id"`
	Step  api.Step  `json:"step"`
}

// Acctmgr is an sacctmgr add, modify or delete, planned on the leader.
type Acctmgr struct {
	Time time.Time `json:"time"`
	Op   acct.Op   `json:"op"`
}

func (*Submit) Type() Type          { return TypeSubmit }
func (*SubmitBatch) Type() Type     { return TypeSubmitBatch }
func (*Start) Type() Type           { return TypeStart }
func (*Reasons) Type() Type         { return TypeReasons }
func (*End) Type() Type             { return TypeEnd }
func (*Cancel) Type() Type          { return TypeCancel }
func (*NodeStateChange) Type() Type { return TypeNodeState }
func (*Timeout) Type() Type         { return TypeTimeout }
func (*Warned) Type() Type          { return TypeWarned }
func (*Purge) Type() Type           { return TypePurge }
func (*Preempt) Type() Type         { return TypePreempt }
func (*Hold) Type() Type            { return TypeHold }
func (*Requeue) Type() Type         { return TypeRequeue }
func (*UpdateJob) Type() Type       { return TypeUpdateJob }
func (*StepStart) Type() Type       { return TypeStepStart }
func (*StepEnd) Type() Type         { return TypeStepEnd }
func (*Acctmgr) Type() Type         { return TypeAcctmgr }

func (*TriggerSet) Type() Type   { return TypeTriggerSet }
func (*TriggerClear) Type() Type { return TypeTriggerClear }
func (*TriggerFired) Type() Type { return TypeTriggerFired }

// Encode makes the log entry of op.
func Encode(op Op) ([]byte, error) {
	data, err := json.Marshal(op)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", op, err)
	}
	return append([]byte{byte(op.Type())}, data...), nil
}

// Decode reads a log entry: a typed one, or one written in the earlier
// format (legacy.go).
func Decode(data []byte) (Op, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty log entry")
	}
	if data[0] == '{' {
		return decodeLegacy(data)
	}
	mk := newOp[Type(data[0])]
	if mk == nil {
		return nil, fmt.Errorf("unknown operation type %d", data[0])
	}
	op := mk()
	// api.ReadJSON reads what Encode wrote as encoding/json does
	// (TestDecodeAsEncodingJSON), in about half the time
	// (BenchmarkDecode): every controller decodes every entry, and
	// decoding was 11% of BenchmarkSubmitConcurrent's CPU (a submit's
	// environment is most of its entry).
	if err := api.ReadJSON(data[1:], op); err != nil {
		return nil, fmt.Errorf("operation type %d: %w", data[0], err)
	}
	return op, nil
}
