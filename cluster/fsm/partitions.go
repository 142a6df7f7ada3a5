package fsm

import (
	"fmt"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// The live configuration. The FSM's cfg is the configuration every reader
// of the replicated state goes by: the one the daemon started with (boot),
// or the one the last scontrol reconfigure carried (State.Conf), with the
// partitions scontrol create/update/delete partition made (State.
// Partitions). Apply replaces cfg whole, under the lock, and never changes
// one in place, so a reader may keep the pointer Config returns.

// Partition change actions.
const (
	PartitionCreate = "create"
	PartitionUpdate = "update"
	PartitionDelete = "delete"
)

// PartitionChange is scontrol create, update or delete partition, planned
// on the leader: Partition is the whole record after the change (for
// delete, only its Name counts).
type PartitionChange struct {
	Time      time.Time        `json:"time"`
	UID       uint32           `json:"uid"`
	Action    string           `json:"action"`
	Partition config.Partition `json:"partition"`
}

// Reconfigure is scontrol reconfigure: the configuration files the leader
// read and checked. Every controller parses the same texts.
type Reconfigure struct {
	Time  time.Time    `json:"time"`
	UID   uint32       `json:"uid"`
	Files config.Files `json:"files"`
}

func (*PartitionChange) Type() Type { return TypePartition }
func (*Reconfigure) Type() Type     { return TypeReconfigure }

// Config returns the live configuration. It never changes: a change
// replaces it. It takes no lock, so it may be called anywhere, inside View
// too (a second read lock there would wait behind a waiting Apply).
func (f *FSM) Config() *config.Config { return f.live.Load() }

// setConfig replaces the live configuration (under the write lock).
func (f *FSM) setConfig(c *config.Config) {
	f.cfg = c
	f.live.Store(c)
}

// ViewConfig is View with the live configuration of the same moment.
func (f *FSM) ViewConfig(fn func(cfg *config.Config, st *State)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.cfg, &f.st)
}

// liveConfig builds the live configuration of st from boot, the
// configuration the daemon started with.
func liveConfig(boot *config.Config, st *State) (*config.Config, error) {
	c := boot
	if st.Conf != nil {
		parsed, err := config.ParseFiles(*st.Conf)
		if err != nil {
			return nil, err
		}
		parsed.KeepRestartKeys(boot)
		c = parsed
	}
	if st.Partitions != nil {
		c = c.WithPartitions(st.Partitions)
	}
	if parts, changed := knownNodesOnly(c); changed {
		c = c.WithPartitions(parts)
	}
	return c, nil
}

// knownNodesOnly returns c's partitions without the nodes c does not have
// (partitions of a snapshot or a reconfigure from before a restart that
// removed nodes), and whether there were any.
func knownNodesOnly(c *config.Config) ([]config.Partition, bool) {
	var out []config.Partition
	for i, p := range c.Partitions {
		keep := make([]string, 0, len(p.Nodes))
		for _, n := range p.Nodes {
			if c.Node(n) != nil {
				keep = append(keep, n)
			}
		}
		if len(keep) != len(p.Nodes) {
			if out == nil {
				out = append([]config.Partition{}, c.Partitions...)
			}
			out[i].Nodes = keep
		}
	}
	return out, out != nil
}

func partitionIndex(parts []config.Partition, name string) int {
	for i := range parts {
		if parts[i].Name == name {
			return i
		}
	}
	return -1
}

// partitionInUse reports whether a pending or running job is in the
// partition (or names it among others).
func partitionInUse(st *State, name string) bool {
	for _, j := range st.Jobs {
		if j.State != api.StatePending && j.State != api.StateRunning && j.State != api.StateCompleting {
			continue
		}
		for _, p := range strings.Split(j.Spec.Partition, ",") {
			if strings.TrimSpace(p) == name {
				return true
			}
		}
	}
	return false
}

func invalidPartition(format string, args ...any) Result {
	return Result{Err: &api.Error{Message: api.ErrInvalidPartition, Detail: fmt.Sprintf(format, args...)}}
}

// applyPartition creates, changes or deletes a partition. A partition
// made the default takes that from the others.
func (f *FSM) applyPartition(op *PartitionChange) (Result, []uint64) {
	p := op.Partition
	cur := f.cfg.Partitions
	at := partitionIndex(cur, p.Name)
	switch op.Action {
	case PartitionCreate:
		if p.Name == "" || strings.EqualFold(p.Name, "DEFAULT") || strings.ContainsAny(p.Name, ",[] \t") {
			return invalidPartition("invalid partition name %q", p.Name), nil
		}
		if at >= 0 {
			return invalidPartition("partition %s exists", p.Name), nil
		}
	case PartitionUpdate, PartitionDelete:
		if at < 0 {
			return invalidPartition("no partition %s", p.Name), nil
		}
	default:
		return Result{Err: badEntry("unknown partition action %q", op.Action)}, nil
	}
	if op.Action == PartitionDelete {
		if partitionInUse(&f.st, p.Name) {
			return Result{Err: &api.Error{Message: api.ErrPartitionInUse, Detail: "jobs are pending or running in partition " + p.Name}}, nil
		}
	} else if err := f.checkPartition(&p); err != nil {
		return Result{Err: err}, nil
	}
	next := make([]config.Partition, 0, len(cur)+1)
	for i, q := range cur {
		switch {
		case i == at && op.Action == PartitionDelete:
			continue
		case i == at:
			q = p
		case p.Default && op.Action != PartitionDelete:
			q.Default = false
		}
		next = append(next, q)
	}
	if op.Action == PartitionCreate {
		next = append(next, p)
	}
	f.st.Partitions = next
	f.setConfig(f.cfg.WithPartitions(next))
	return Result{}, nil
}

// checkPartition refuses a partition record the leader could not have
// made: unknown nodes, or values outside slurm.conf's.
func (f *FSM) checkPartition(p *config.Partition) error {
	for _, n := range p.Nodes {
		if f.cfg.Node(n) == nil {
			return badEntry("partition %s names node %q, which is not in the config", p.Name, n)
		}
	}
	switch p.State {
	case "UP", "DOWN", "DRAIN", "INACTIVE":
	default:
		return badEntry("partition %s has state %q", p.Name, p.State)
	}
	if p.MaxTimeMin < config.Unlimited || p.DefaultTimeMin < config.Unlimited || p.MaxNodes < -1 {
		return badEntry("partition %s has negative limits", p.Name)
	}
	return nil
}

// applyReconfigure makes the files the live configuration; what only a
// restart changes (nodes, controllers, ports) stays as the daemon started.
// The partitions become slurm.conf's, unless ReconfigFlags says
// KeepPartInfo (scontrol's partitions are kept, slurm.conf's new ones
// added) or KeepPartState (slurm.conf's, with the States they had).
// Jobs are not touched: running ones go on.
func (f *FSM) applyReconfigure(op *Reconfigure) (Result, []uint64) {
	st := State{Conf: &op.Files}
	next, err := liveConfig(f.boot, &st)
	if err != nil {
		return Result{Err: badEntry("reconfigure: %v", err)}, nil
	}
	var parts []config.Partition
	flags := strings.ToLower(next.RawValue("ReconfigFlags"))
	switch {
	case strings.Contains(flags, "keeppartinfo"):
		parts = append(parts, f.cfg.Partitions...)
		for _, p := range next.Partitions {
			if partitionIndex(parts, p.Name) < 0 {
				p.Default = false // the kept default stays the default
				parts = append(parts, p)
			}
		}
	case strings.Contains(flags, "keeppartstate"):
		parts = append(parts, next.Partitions...)
		for i := range parts {
			if at := partitionIndex(f.cfg.Partitions, parts[i].Name); at >= 0 {
				parts[i].State = f.cfg.Partitions[at].State
			}
		}
	}
	f.st.Conf = &op.Files
	f.st.Partitions = parts
	if parts != nil {
		next = next.WithPartitions(parts)
	}
	f.setConfig(next)
	return Result{}, nil
}
