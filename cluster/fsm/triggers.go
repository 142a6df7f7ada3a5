package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
)

// Event triggers (strigger). The state holds every trigger and, once its
// event has happened, the event waiting to be run (Trigger.Event). Events
// of nodes and jobs are recorded here, by Apply, from the entries that
// change them (noteTriggerEvents), so every controller records the same
// ones and a new leader finds those its predecessor had not run yet. A
// job's time limit is the one event no entry marks: the leader sees it on
// its clock (TimeLimitEvent) and names it by a key of its own.
//
// The leader commits TriggerFired before it runs a program, and runs it
// only if that commit succeeds: an event is run at most once, whatever
// leader changes come between (one lost in the crash of a leader between
// the commit and the start of its program is not run again).
//
// Copy on write: Apply never changes a TriggerState or a Trigger in
// place; it builds new ones, so a snapshot or a reader may share them.

// TriggerState is the cluster's triggers.
type TriggerState struct {
	NextID  uint32     `json:"next_id"`
	NextSeq uint64     `json:"next_seq"`
	List    []*Trigger `json:"list"` // in id order
}

// Trigger is a trigger and its recorded event.
type Trigger struct {
	api.Trigger
	JobID uint64   `json:"job_id,omitempty"`
	Nodes []string `json:"nodes,omitempty"` // the node filter, expanded; nil: every node
	// Event is the event that happened and waits to be run.
	Event *TriggerEvent `json:"event,omitempty"`
	// Fired is the key of the last event run, for a permanent trigger.
	Fired string `json:"fired,omitempty"`
}

// TriggerEvent is an event of a trigger: its key (unique in the cluster),
// the argument its program gets (node names or a job id) and when the
// program is due (the event's time plus the trigger's offset).
type TriggerEvent struct {
	Key string    `json:"key"`
	Arg string    `json:"arg"`
	Due time.Time `json:"due"`
}

// TriggerSet is strigger --set, checked on the leader (who may set, the
// program); the uid and gid are the caller's.
type TriggerSet struct {
	Time    time.Time   `json:"time"`
	Trigger api.Trigger `json:"trigger"`
}

// TriggerClear is strigger --clear by UID.
type TriggerClear struct {
	Time  time.Time               `json:"time"`
	UID   uint32                  `json:"uid"`
	Clear api.TriggerClearRequest `json:"clear"`
}

// TriggerFired is the leader's record that it runs the event Key of
// trigger ID now: a trigger without PERM leaves, a permanent one waits for
// its next event.
type TriggerFired struct {
	Time time.Time `json:"time"`
	ID   uint32    `json:"id"`
	Key  string    `json:"key"`
}

// ErrTriggerStale refuses a TriggerFired whose event was already run, or
// whose trigger was cleared: the leader does not run the program.
var ErrTriggerStale = errors.New("trigger event already run or trigger gone")

// All returns the triggers (none for a nil state).
func (ts *TriggerState) All() []*Trigger {
	if ts == nil {
		return nil
	}
	return ts.List
}

// cloneTriggers returns a copy of the state that Apply may change: a new
// struct and list; the triggers themselves are still shared.
func (f *FSM) cloneTriggers() *TriggerState {
	ts := &TriggerState{NextID: 1, NextSeq: 1}
	if old := f.st.Triggers; old != nil {
		*ts = *old
		ts.List = slices.Clone(old.List)
	}
	return ts
}

var trigTypes = map[string]bool{
	api.TrigUp: true, api.TrigDown: true, api.TrigDrained: true, api.TrigFail: true, api.TrigIdle: true,
	api.TrigTime: true, api.TrigFini: true, api.TrigReconfig: true, api.TrigBurstBuf: true,
	"primary_slurmctld_failure": true, "primary_slurmctld_resumed_operation": true,
	"primary_slurmctld_resumed_control": true, "primary_slurmctld_acct_buffer_full": true,
	"backup_slurmctld_failure": true, "backup_slurmctld_resumed_operation": true,
	"backup_slurmctld_assumed_control": true, "primary_slurmdbd_failure": true,
	"primary_slurmdbd_resumed_operation": true, "primary_database_failure": true,
	"primary_database_resumed_operation": true,
}

var trigResTypes = map[string]bool{
	api.TrigResJob: true, api.TrigResNode: true, api.TrigResSlurmctld: true, api.TrigResSlurmdbd: true,
	api.TrigResDatabase: true, api.TrigResFrontEnd: true, api.TrigResOther: true,
}

// checkTrigger refuses a trigger no honest leader proposes.
func checkTrigger(t *api.Trigger) error {
	if !trigResTypes[t.ResType] || len(t.Types) == 0 {
		return badEntry("trigger of resource %q and events %v", t.ResType, t.Types)
	}
	for _, typ := range t.Types {
		if !trigTypes[typ] {
			return badEntry("unknown trigger event %q", typ)
		}
	}
	if !strings.HasPrefix(t.Program, "/") || t.Offset < -32000 || t.Offset > 32000 {
		return badEntry("trigger program %q offset %d", t.Program, t.Offset)
	}
	return nil
}

func (f *FSM) applyTriggerSet(op *TriggerSet) (Result, []uint64) {
	in := op.Trigger
	if err := checkTrigger(&in); err != nil {
		return Result{Err: err}, nil
	}
	if in.UID != 0 && len(f.st.Triggers.All()) >= f.cfg.MaxJobCount {
		return Result{Err: &api.Error{Message: api.ErrTryAgain}}, nil
	}
	t := &Trigger{Trigger: in}
	t.ID, t.Types = 0, slices.Clone(in.Types)
	switch in.ResType {
	case api.TrigResJob:
		id, err := strconv.ParseUint(in.ResID, 10, 64)
		j := f.st.Jobs[id]
		switch {
		case err != nil || j == nil:
			return Result{Err: &api.Error{Message: api.ErrInvalidJobID}}, nil
		case j.State.Final():
			return Result{Err: &api.Error{Message: api.ErrAlreadyDone}}, nil
		}
		t.JobID = id
	case api.TrigResNode:
		if in.ResID != "" && !strings.HasPrefix(in.ResID, "*") {
			names, err := hostlist.Expand(in.ResID)
			if err != nil || len(names) == 0 {
				return Result{Err: &api.Error{Message: api.ErrInvalidNodeName}}, nil
			}
			for _, n := range names {
				if f.st.Nodes[n] == nil {
					return Result{Err: &api.Error{Message: api.ErrInvalidNodeName}}, nil
				}
			}
			t.Nodes = names
		}
	}
	for _, o := range f.st.Triggers.All() {
		if o.Perm == t.Perm && o.ResType == t.ResType && slices.Equal(o.Types, t.Types) && o.Offset == t.Offset &&
			o.UID == t.UID && o.Program == t.Program && o.ResID == t.ResID {
			return Result{Err: &api.Error{Message: api.ErrTriggerDup}}, nil
		}
	}
	ts := f.cloneTriggers()
	t.ID = ts.NextID
	ts.NextID++
	ts.List = append(ts.List, t)
	f.st.Triggers = ts
	return Result{JobID: uint64(t.ID)}, nil
}

// applyTriggerClear removes the triggers that match, as slurmctld does:
// the caller's own, or anyone's for root; nothing matching is ESRCH.
func (f *FSM) applyTriggerClear(op *TriggerClear) (Result, []uint64) {
	c := op.Clear
	if c.ID == 0 && c.JobID == 0 && !c.UserSet {
		return Result{Err: &api.Error{Message: api.ErrInvalidArgument}}, nil
	}
	var errMsg = api.ErrNoSuchProcess
	ts := f.cloneTriggers()
	kept := ts.List[:0:0]
	for _, t := range ts.List {
		match := (c.ID == 0 || c.ID == t.ID) && (c.JobID == 0 || c.JobID == t.JobID) && (!c.UserSet || c.UID == t.UID)
		switch {
		case !match:
		case t.UID != op.UID && op.UID != 0:
			errMsg = api.ErrAccessDenied
		default:
			errMsg = ""
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) != len(ts.List) {
		ts.List = kept
		f.st.Triggers = ts
	}
	if errMsg != "" {
		return Result{Err: &api.Error{Message: errMsg}}, nil
	}
	return Result{}, nil
}

// applyTriggerFired records that the leader runs an event: a trigger
// without PERM leaves, a permanent one waits for the next.
func (f *FSM) applyTriggerFired(op *TriggerFired) (Result, []uint64) {
	ts := f.cloneTriggers()
	i := slices.IndexFunc(ts.List, func(t *Trigger) bool { return t.ID == op.ID })
	if i < 0 {
		return Result{Err: ErrTriggerStale}, nil
	}
	t := ts.List[i]
	pending := t.Event != nil && t.Event.Key == op.Key
	timeKey := t.Event == nil && strings.HasPrefix(op.Key, "t") && t.Has(api.TrigTime) && t.Fired != op.Key
	if !pending && !timeKey {
		return Result{Err: ErrTriggerStale}, nil
	}
	if !t.Perm {
		ts.List = slices.Delete(ts.List, i, i+1)
	} else {
		cp := *t
		cp.Event, cp.Fired = nil, op.Key
		ts.List[i] = &cp
	}
	f.st.Triggers = ts
	return Result{}, nil
}

// TimeLimitEvent is a job's time-limit event as the leader sees it: the
// key that names it and when the limit is reached. As in slurmctld, that
// is the end of a job that ended before its limit (what is left of its
// time is then nothing). ok is false for a job that has not started, or
// runs without a limit.
func TimeLimitEvent(j *api.Job) (key string, at time.Time, ok bool) {
	if j == nil || j.StartTime.IsZero() {
		return "", time.Time{}, false
	}
	switch {
	case j.State.Final():
		at = j.EndTime
	case j.State == api.StateRunning || j.State == api.StateCompleting:
		if j.Spec.TimeLimitMin <= 0 {
			return "", time.Time{}, false
		}
		at = j.StartTime.Add(time.Duration(j.Spec.TimeLimitMin) * time.Minute)
	default:
		return "", time.Time{}, false
	}
	return fmt.Sprintf("t%d@%d", j.ID, j.StartTime.UnixNano()), at, true
}

// triggerNodeBefore is the state of the node an entry changes, before
// Apply changes it: what noteTriggerEvents compares with.
func (f *FSM) triggerNodeBefore(op Op) string {
	if c, ok := op.(*NodeStateChange); ok && len(f.st.Triggers.All()) > 0 {
		if ns := f.st.Nodes[c.Node]; ns != nil {
			return ns.State
		}
	}
	return ""
}

func nodeDown(state string) bool { return state == "DOWN" || state == "ADMIN_DOWN" }

// nodeEvents are the trigger events of a node's change of state.
func nodeEvents(before, after string) map[string]bool {
	ev := map[string]bool{}
	if before == after {
		return ev
	}
	ev[api.TrigReconfig] = true
	ev[api.TrigDown] = nodeDown(after) && !nodeDown(before)
	ev[api.TrigUp] = nodeDown(before) && after == "UP"
	ev[api.TrigDrained] = after == "DRAIN"
	return ev
}

// noteTriggerEvents records the events an applied entry raised for the
// triggers waiting: nodes going down, coming back, draining (and, for
// reconfig, any node state change); jobs ending. Triggers of jobs that
// left the state without their event are dropped, as slurmctld drops
// them. Called by apply, with f.mu held, after the entry's change; before
// is the state of the node it changed (triggerNodeBefore).
func (f *FSM) noteTriggerEvents(op Op, before string) {
	list := f.st.Triggers.All()
	if len(list) == 0 {
		return
	}
	now := entryTime(op)
	var node string
	var nev map[string]bool
	if c, ok := op.(*NodeStateChange); ok && f.st.Nodes[c.Node] != nil {
		node, nev = c.Node, nodeEvents(before, f.st.Nodes[c.Node].State)
	}
	var ts *TriggerState
	for i, t := range list {
		if t.Event != nil {
			continue // one event at a time, as slurmctld
		}
		key, arg, due, drop, ok := f.triggerEvent(t, node, nev, now)
		if !ok && !drop {
			continue
		}
		if ts == nil {
			ts = f.cloneTriggers()
		}
		if drop {
			ts.List[i] = nil
			continue
		}
		if key == "" {
			key = "e" + strconv.FormatUint(ts.NextSeq, 10)
			ts.NextSeq++
		}
		cp := *t
		cp.Event = &TriggerEvent{Key: key, Arg: arg, Due: due.Add(time.Duration(t.Offset) * time.Second)}
		ts.List[i] = &cp
	}
	if ts != nil {
		ts.List = slices.DeleteFunc(ts.List, func(t *Trigger) bool { return t == nil })
		f.st.Triggers = ts
	}
}

// triggerEvent says whether t's event happened: its key ("" for a new
// one), the program's argument and the event's time; drop for a job
// trigger whose job is gone.
func (f *FSM) triggerEvent(t *Trigger, node string, nev map[string]bool, now time.Time) (key, arg string, at time.Time, drop, ok bool) {
	switch t.ResType {
	case api.TrigResNode:
		if node == "" || (t.Nodes != nil && !slices.Contains(t.Nodes, node)) {
			return "", "", now, false, false
		}
		for _, typ := range t.Types {
			if nev[typ] {
				if typ == api.TrigReconfig {
					return "", "reconfig", now, false, true
				}
				return "", node, now, false, true
			}
		}
	case api.TrigResJob:
		j := f.st.Jobs[t.JobID]
		id := strconv.FormatUint(t.JobID, 10)
		if j == nil && t.Fired != "" {
			return "", "", now, true, false // a permanent trigger of a job gone
		}
		if t.Has(api.TrigFini) && (j == nil || j.State.Final()) {
			key = "f" + id
			if j != nil && !j.EndTime.IsZero() {
				now = j.EndTime
				key += "@" + strconv.FormatInt(j.EndTime.UnixNano(), 10)
			}
			if key == t.Fired {
				return "", "", now, false, false // this end was run
			}
			return key, id, now, false, true
		}
		if j == nil {
			return "", "", now, true, false
		}
		if node != "" && j.AllocatedOn(node) && (nev[api.TrigDown] && t.Has(api.TrigDown) || nev[api.TrigUp] && t.Has(api.TrigUp)) {
			return "", id, now, false, true
		}
	}
	return "", "", now, false, false
}
