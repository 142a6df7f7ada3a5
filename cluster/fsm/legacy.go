package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"hpc/cluster/acct"
	"hpc/cluster/api"
)

// Kept for replay. Before typed entries, every log entry was one JSON
// object, legacyEntry, naming its operation in "op" and carrying its
// payload in whichever optional fields that operation used (a step rode in
// a one-step Job). Logs and snapshots written then are still read: Decode
// turns such an entry into the typed payload it stands for. Nothing
// writes this format any more.
type legacyEntry struct {
	Op       string            `json:"op"`
	Time     time.Time         `json:"time"`
	Job      *api.Job          `json:"job,omitempty"`
	Starts   []JobStart        `json:"starts,omitempty"`
	Reason   map[uint64]string `json:"reasons,omitempty"`
	End      *api.JobEnd       `json:"end,omitempty"`
	JobID    uint64            `json:"job_id,omitempty"`
	JobIDs   []uint64          `json:"job_ids,omitempty"`
	UID      uint32            `json:"uid,omitempty"`
	Node     string            `json:"node,omitempty"`
	State    string            `json:"state,omitempty"`
	Why      string            `json:"why,omitempty"`
	Update   *JobUpdate        `json:"update,omitempty"`
	Preempts []PreemptMark     `json:"preempts,omitempty"`
	Hold     string            `json:"hold,omitempty"`
	Acct     *acct.Op          `json:"acct,omitempty"`
}

// decodeLegacy turns an entry of the earlier format into its payload.
func decodeLegacy(data []byte) (Op, error) {
	var c legacyEntry
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	switch c.Op {
	case "submit":
		return &Submit{Time: c.Time, Job: c.Job}, nil
	case "start":
		return &Start{Time: c.Time, Starts: c.Starts}, nil
	case "reasons":
		return &Reasons{Reasons: c.Reason}, nil
	case "end":
		if c.End == nil {
			return nil, errors.New("end entry without an end")
		}
		return &End{Time: c.Time, End: *c.End}, nil
	case "cancel":
		return &Cancel{Time: c.Time, JobID: c.JobID, UID: c.UID}, nil
	case "node-state":
		return &NodeStateChange{Time: c.Time, Node: c.Node, State: c.State, Why: c.Why, UID: c.UID}, nil
	case "timeout":
		return &Timeout{JobIDs: c.JobIDs}, nil
	case "warned":
		return &Warned{JobIDs: c.JobIDs}, nil
	case "purge":
		return &Purge{JobIDs: c.JobIDs}, nil
	case "preempt":
		return &Preempt{Preempts: c.Preempts}, nil
	case "hold":
		return &Hold{JobIDs: c.JobIDs, Hold: c.Hold}, nil
	case "requeue":
		return &Requeue{JobIDs: c.JobIDs, Hold: c.Hold}, nil
	case "update-job":
		if c.Update == nil {
			return nil, errors.New("update-job entry without an update")
		}
		return &UpdateJob{JobID: c.JobID, Update: *c.Update}, nil
	case "step-start", "step-end":
		if c.Job == nil || len(c.Job.Steps) != 1 {
			return nil, fmt.Errorf("%s entry without a step", c.Op)
		}
		if c.Op == "step-start" {
			return &StepStart{Time: c.Time, JobID: c.JobID, Step: c.Job.Steps[0]}, nil
		}
		return &StepEnd{Time: c.Time, JobID: c.JobID, Step: c.Job.Steps[0]}, nil
	case "acctmgr":
		if c.Acct == nil {
			return nil, errors.New("acctmgr entry without a payload")
		}
		return &Acctmgr{Time: c.Time, Op: *c.Acct}, nil
	}
	return nil, fmt.Errorf("unknown op %q", c.Op)
}
