package fsm

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// Every payload is checked against the state and the config before it
// changes anything: a malformed one (a node the config does not have, a
// negative count, an allocation on nodes the job does not hold...) is
// refused whole with an error in Result, a logged no-op that every
// controller reaches alike. The checks read only the entry, the state and
// the config, as Apply does.

// Bounds on the sizes an entry may ask for: far beyond any real cluster,
// low enough that sums and products of them cannot overflow an int.
const (
	maxTasks       = 1 << 24 // tasks of a job, of a step, or per node
	maxCPUsPerTask = 1 << 16
	maxMemMB       = 1 << 40 // a MiB count: an exbibyte
	maxSwitches    = 1 << 16
	// maxYear keeps an entry's time, and the 121 s a requeue adds to it,
	// inside what a snapshot's JSON can encode (years 0 to 9999). Times
	// inside payloads (a job's --begin) come from JSON, so they are in
	// that range already.
	maxYear = 9000
)

// badEntry is the error of a payload that is refused.
// errMalformed marks the refusal of an entry no honest leader writes: Apply
// logs it.
var errMalformed = errors.New("malformed entry")

func badEntry(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errMalformed}, args...)...)
}

// checkTime refuses a time a snapshot could not encode once a requeue
// delay is added to it.
func checkTime(what string, t time.Time) error {
	if y := t.Year(); y < 0 || y > maxYear {
		return badEntry("%s %s is out of range", what, t.Format(time.RFC3339))
	}
	return nil
}

// validHold says whether h is a job's hold ("" for none).
func validHold(h string) bool {
	switch h {
	case "", "user", "admin", api.HoldRequeue:
		return true
	}
	return false
}

// validNodeState says whether s is a state NodeStateChange may set.
func validNodeState(s string) bool {
	switch s {
	case "UP", "DOWN", "DRAIN", "ADMIN_DOWN":
		return true
	}
	return false
}

// checkSpec refuses a submitted spec whose counts are negative or absurd,
// with the error slurmctld gives for such a request.
func checkSpec(s *api.JobSpec) error {
	unavailable := func(field string, v int64) error {
		return &api.Error{Message: api.ErrConfigUnavailable, Detail: fmt.Sprintf("%s=%d", field, v)}
	}
	counts := []struct {
		field string
		v     int64
		max   int64
	}{
		{"nodes", int64(s.Nodes), config.MaxNodes},
		{"max_nodes", int64(s.MaxNodes), config.MaxNodes},
		{"ntasks", int64(s.NTasks), maxTasks},
		{"ntasks_per_node", int64(s.NTasksPerNode), maxTasks},
		{"cpus_per_task", int64(s.CPUsPerTask), maxCPUsPerTask},
		{"mem_per_node_mb", s.MemPerNodeMB, maxMemMB},
		{"mem_per_cpu_mb", s.MemPerCPUMB, maxMemMB},
		{"mem_per_gpu_mb", s.MemPerGPUMB, maxMemMB},
		{"switches", int64(s.Switches), maxSwitches},
		{"switches_wait_sec", s.SwitchesWaitSec, math.MaxInt32},
		{"time_min_min", s.TimeMinMin, math.MaxInt32},
	}
	for _, c := range counts {
		if c.v < 0 || c.v > c.max {
			return unavailable(c.field, c.v)
		}
	}
	return checkTimeLimit(s.TimeLimitMin)
}

// checkTimeLimit refuses a time limit other than minutes, 0 (the
// default) or -1 (UNLIMITED).
func checkTimeLimit(min int64) error {
	if min < -1 || min > math.MaxInt32 {
		return &api.Error{Message: api.ErrInvalidTimeLimit, Detail: fmt.Sprintf("time_limit_min=%d", min)}
	}
	return nil
}

// checkPartitions refuses partition names ("a" or "a,b") the config does
// not have.
func (f *FSM) checkPartitions(names string) error {
	for _, name := range strings.Split(names, ",") {
		if f.cfg.Partition(strings.TrimSpace(name)) == nil {
			return &api.Error{Message: api.ErrInvalidPartition, Detail: fmt.Sprintf("invalid partition specified: %q", name)}
		}
	}
	return nil
}

// checkAlloc refuses an allocation that names a node the config does not
// have (or one node twice), or gives a node fewer than one CPU or more than
// it has, negative tasks or memory, or GRES devices it does not have.
// Several jobs may share a CPU (cpuids.go), so this is a check of each
// node's share, not of what is free.
func (f *FSM) checkAlloc(alloc []api.NodeAlloc) error {
	seen := make(map[string]bool, len(alloc))
	for i := range alloc {
		a := &alloc[i]
		n := f.cfg.Node(a.Node)
		switch {
		case n == nil:
			return badEntry("allocation on node %q, which is not in the config", a.Node)
		case seen[a.Node]:
			return badEntry("allocation names node %s twice", a.Node)
		case a.CPUs < 1 || a.CPUs > nodeCPUs(n):
			return badEntry("allocation of %d CPUs on node %s, which has %d", a.CPUs, a.Node, nodeCPUs(n))
		case a.Tasks < 0 || a.Tasks > maxTasks:
			return badEntry("allocation of %d tasks on node %s", a.Tasks, a.Node)
		case a.MemMB < 0 || a.MemMB > maxMemMB:
			return badEntry("allocation of %d MB on node %s", a.MemMB, a.Node)
		}
		seen[a.Node] = true
		if err := checkGres(n, a.Gres); err != nil {
			return err
		}
	}
	return nil
}

// checkGres refuses GRES devices a node does not have: each name's devices
// are numbered 0 to its count-1 over all its types, as the scheduler
// numbers them, and none is given twice.
func checkGres(n *config.Node, gres []api.GresAlloc) error {
	used := map[string][]bool{}
	for _, g := range gres {
		count := n.GresCount(g.Name)
		if count == 0 {
			return badEntry("allocation of GRES %q on node %s, which has none", g.Name, n.Name)
		}
		if used[g.Name] == nil {
			used[g.Name] = make([]bool, count)
		}
		for _, i := range g.Indices {
			if i < 0 || i >= count || used[g.Name][i] {
				return badEntry("allocation of %s device %d on node %s, which has %d", g.Name, i, n.Name, count)
			}
			used[g.Name][i] = true
		}
	}
	return nil
}

// nodeCPUs is the number of CPUs of a node, as CPU ids count them.
func nodeCPUs(n *config.Node) int {
	return max(n.CPUs, 1)
}

// checkStart refuses a start of a job that never existed, or on a
// malformed allocation. A start of a job that is no longer pending (or
// was purged) passes: applyStart skips it, as a leader may decide on a
// job cancelled meanwhile.
func (f *FSM) checkStart(s *JobStart) error {
	if s.JobID == 0 || s.JobID >= f.st.NextJobID {
		return badEntry("start of job %d, which was never submitted", s.JobID)
	}
	if err := f.checkAlloc(s.Alloc); err != nil {
		return fmt.Errorf("job %d: %w", s.JobID, err)
	}
	if s.Partition != "" {
		if err := f.checkPartitions(s.Partition); err != nil {
			return err
		}
	}
	return checkTimeLimit(s.TimeLimitMin)
}

// checkSubmit refuses a submitted job whose spec or hold is malformed, or
// that carries what only Apply gives a job (an allocation, steps).
func checkSubmit(j *api.Job) error {
	if err := checkSpec(&j.Spec); err != nil {
		return err
	}
	switch {
	case !validHold(j.Hold):
		return badEntry("unknown hold %q", j.Hold)
	case len(j.Alloc) > 0 || j.BatchHost != "":
		return badEntry("a submitted job carries an allocation")
	case len(j.Steps) > 0 || j.NextStepID != 0:
		return badEntry("a submitted job carries steps")
	}
	return nil
}

// submitted is the record of a new job as a Submit gives it: what the
// submission says (spec, owner, account, hold), nothing of a run.
func submitted(j *api.Job) api.Job {
	return api.Job{Spec: j.Spec, UID: j.UID, GID: j.GID, User: j.User, Group: j.Group, Account: j.Account, Hold: j.Hold}
}

// checkUpdate refuses an update to a negative node count, a malformed time
// limit or a partition the config does not have.
func (f *FSM) checkUpdate(u *JobUpdate) error {
	if u.Nodes < 0 || u.Nodes > config.MaxNodes {
		return &api.Error{Message: api.ErrNodeCountInvalid, Detail: fmt.Sprintf("nodes=%d", u.Nodes)}
	}
	if err := checkTimeLimit(u.TimeLimitMin); err != nil {
		return err
	}
	if u.Partition != "" {
		return f.checkPartitions(u.Partition)
	}
	return nil
}

// checkStep refuses a new step of job j whose nodes and task counts do not
// pair up, that names a node outside the job's allocation (or one twice),
// or whose counts are negative or absurd.
func checkStep(j *api.Job, s *api.Step) error {
	if j.NextStepID == math.MaxUint32 {
		return badEntry("job %d has no step id left", j.ID)
	}
	if len(s.Nodes) == 0 || len(s.Nodes) != len(s.Tasks) {
		return badEntry("step of job %d with %d nodes and %d task counts", j.ID, len(s.Nodes), len(s.Tasks))
	}
	if s.CPUsPerTask < 0 || s.CPUsPerTask > maxCPUsPerTask {
		return badEntry("step of job %d with %d CPUs per task", j.ID, s.CPUsPerTask)
	}
	total := 0
	seen := make(map[string]bool, len(s.Nodes))
	for i, n := range s.Nodes {
		t := s.Tasks[i]
		switch {
		case !j.AllocatedOn(n):
			return badEntry("step of job %d on node %q, which the job does not hold", j.ID, n)
		case seen[n]:
			return badEntry("step of job %d names node %s twice", j.ID, n)
		case t < 1 || t > maxTasks:
			return badEntry("step of job %d with %d tasks on node %s", j.ID, t, n)
		}
		seen[n] = true
		total += t
	}
	if total > maxTasks {
		return badEntry("step of job %d with %d tasks", j.ID, total)
	}
	return nil
}

// entryTime is the time an entry carries in its Time field (every
// operation that has one calls it so), or the zero time.
func entryTime(op Op) time.Time {
	v := reflect.ValueOf(op)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return time.Time{}
	}
	f := v.Elem().FieldByName("Time")
	if !f.IsValid() {
		return time.Time{}
	}
	t, _ := f.Interface().(time.Time)
	return t
}
