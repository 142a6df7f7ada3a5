package api

import (
	"context"
	"net/http"
)

// Trigger is one event trigger (strigger): when its event happens the
// controller runs Program, as the trigger's owner, on the leader's host.
type Trigger struct {
	ID uint32 `json:"id"`
	// ResType is what the event is about: job, node, slurmctld, slurmdbd,
	// database, front_end or other (burst buffers).
	ResType string `json:"res_type"`
	// ResID is the job id, the node hostlist ("*": every node), or empty
	// for the controller and database events.
	ResID string `json:"res_id,omitempty"`
	// Types are the events (TrigDown, TrigFini...): strigger may combine
	// several in one trigger.
	Types []string `json:"types"`
	// Offset is in seconds after the event (negative: before it, where
	// that has a meaning: a job's time limit).
	Offset  int    `json:"offset"`
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	Program string `json:"program"`
	// Perm keeps the trigger after it fires (--flags=PERM).
	Perm bool `json:"perm,omitempty"`
}

// The trigger event names, as strigger --get prints them.
const (
	TrigUp       = "up"
	TrigDown     = "down"
	TrigDrained  = "drained"
	TrigFail     = "fail"
	TrigIdle     = "idle"
	TrigTime     = "time"
	TrigFini     = "fini"
	TrigReconfig = "reconfig"
	TrigBurstBuf = "burst_buffer"
)

// The resource types of triggers.
const (
	TrigResJob       = "job"
	TrigResNode      = "node"
	TrigResSlurmctld = "slurmctld"
	TrigResSlurmdbd  = "slurmdbd"
	TrigResDatabase  = "database"
	TrigResFrontEnd  = "front_end"
	TrigResOther     = "other"
)

// TypeName is the TYPE column of strigger --get: the event's name, or
// "unknown" for a trigger of several events, as Slurm prints it.
func (t *Trigger) TypeName() string {
	if len(t.Types) == 1 {
		return t.Types[0]
	}
	return "unknown"
}

// Has says whether the trigger waits for event typ.
func (t *Trigger) Has(typ string) bool {
	for _, x := range t.Types {
		if x == typ {
			return true
		}
	}
	return false
}

// TriggerClearRequest is strigger --clear: the triggers of id, of a job,
// or of a user (UserSet: UID is a filter), or all three at once.
type TriggerClearRequest struct {
	ID      uint32 `json:"id,omitempty"`
	JobID   uint64 `json:"job_id,omitempty"`
	UID     uint32 `json:"uid,omitempty"`
	UserSet bool   `json:"user_set,omitempty"`
}

// TriggerList is strigger --get's answer: every trigger waiting, in id
// order.
type TriggerList struct {
	Triggers []Trigger `json:"triggers"`
}

// Slurm's texts of the errors only triggers give (slurm_strerror).
const (
	ErrTriggerDup      = "Duplicate event trigger"
	ErrNoSuchProcess   = "No such process"
	ErrInvalidArgument = "Invalid argument"
)

// SetTrigger is strigger --set; the controller fills in the caller's uid
// and gid.
func (c *Client) SetTrigger(ctx context.Context, t Trigger) error {
	return c.do(ctx, http.MethodPost, "/api/trigger/set", t, nil)
}

// Triggers is strigger --get.
func (c *Client) Triggers(ctx context.Context) ([]Trigger, error) {
	var out TriggerList
	err := c.do(ctx, http.MethodGet, "/api/triggers", nil, &out)
	return out.Triggers, err
}

// ClearTrigger is strigger --clear.
func (c *Client) ClearTrigger(ctx context.Context, req TriggerClearRequest) error {
	return c.do(ctx, http.MethodPost, "/api/trigger/clear", req, nil)
}
