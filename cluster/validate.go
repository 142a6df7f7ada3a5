package cluster

import (
	"fmt"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// validateSpec checks a submission against the config, as slurmctld does
// with EnforcePartLimits=ALL, and fills in the partition and time limit.
// Its errors carry Slurm's texts.
func validateSpec(cfg *config.Config, s *api.JobSpec) error {
	if s.Script == "" {
		return &api.Error{Message: api.ErrEmptyScript}
	}
	var p *config.Partition
	if s.Partition == "" {
		p = cfg.DefaultPartition()
		if p == nil {
			return &api.Error{Message: api.ErrInvalidPartition, Detail: "no partition specified and no default partition"}
		}
		s.Partition = p.Name
	} else if p = cfg.Partition(s.Partition); p == nil {
		return &api.Error{Message: api.ErrInvalidPartition, Detail: "invalid partition specified: " + s.Partition}
	}
	if s.Nodes < 0 || s.NTasks < 0 || s.CPUsPerTask < 0 || s.MemPerNodeMB < 0 {
		return &api.Error{Message: api.ErrConfigUnavailable}
	}

	// Time limit: -1 is UNLIMITED; anything else negative is invalid.
	switch {
	case s.TimeLimitMin < -1:
		return &api.Error{Message: api.ErrInvalidTimeLimit}
	case s.TimeLimitMin == 0:
		s.TimeLimitMin = p.MaxTimeMin
		if p.DefaultTimeMin > 0 {
			s.TimeLimitMin = p.DefaultTimeMin
		}
	}
	if p.MaxTimeMin >= 0 && (s.TimeLimitMin == -1 || s.TimeLimitMin > p.MaxTimeMin) {
		return &api.Error{Message: api.ErrInvalidTimeLimit}
	}

	// Size: what the whole partition could ever give.
	var cpus, maxCPUs int
	var maxMem int64
	for _, name := range p.Nodes {
		if n := cfg.Node(name); n != nil {
			cpus += n.CPUs
			maxCPUs = max(maxCPUs, n.CPUs)
			maxMem = max(maxMem, n.RealMemoryMB)
		}
	}
	if reqCPUs(s) > cpus || max(s.Nodes, 1) > cpus {
		return &api.Error{Message: api.ErrTooManyProcessors}
	}
	if s.Nodes > len(p.Nodes) || (p.MaxNodes >= 0 && s.Nodes > p.MaxNodes) {
		return &api.Error{Message: api.ErrNodeCountInvalid}
	}
	if s.CPUsPerTask > maxCPUs {
		return &api.Error{Message: api.ErrConfigUnavailable}
	}
	if s.MemPerNodeMB > maxMem {
		return &api.Error{Message: api.ErrConfigUnavailable, Detail: api.ErrMemoryUnsatisfied}
	}
	if s.Name == "" {
		s.Name = "sbatch"
	}
	if s.WorkDir == "" || s.WorkDir[0] != '/' {
		return &api.Error{Message: fmt.Sprintf("working directory %q is not an absolute path", s.WorkDir)}
	}
	return nil
}

// nodesView builds the node and partition lists that sinfo shows.
func nodesView(cfg *config.Config, st *state) api.NodesResponse {
	alloc := map[string]*api.NodeAlloc{}
	for _, j := range st.Jobs {
		if j.State != api.StateRunning && j.State != api.StateCompleting {
			continue
		}
		for _, a := range j.Alloc {
			t := alloc[a.Node]
			if t == nil {
				t = &api.NodeAlloc{Node: a.Node}
				alloc[a.Node] = t
			}
			t.CPUs += a.CPUs
			t.MemMB += a.MemMB
		}
	}
	var out api.NodesResponse
	for _, n := range cfg.Nodes {
		v := api.Node{
			Name: n.Name, Addr: n.Addr, CPUs: n.CPUs, MemMB: n.RealMemoryMB,
			Gres: gresString(n.Gres), Partitions: cfg.PartitionsOf(n.Name),
		}
		if a := alloc[n.Name]; a != nil {
			v.AllocCPUs, v.AllocMemMB = a.CPUs, a.MemMB
		}
		ns := st.Nodes[n.Name]
		switch {
		case ns == nil || ns.State == "UNKNOWN":
			v.State = api.NodeUnknown
		case ns.State == "DOWN":
			v.State, v.Reason = api.NodeDown, ns.Reason
		case v.AllocCPUs == 0:
			v.State = api.NodeIdle
		case v.AllocCPUs >= v.CPUs:
			v.State = api.NodeAllocated
		default:
			v.State = api.NodeMixed
		}
		out.Nodes = append(out.Nodes, v)
	}
	for _, p := range cfg.Partitions {
		out.Partitions = append(out.Partitions, api.Partition{
			Name: p.Name, Nodes: p.Nodes, Default: p.Default, MaxTimeMin: p.MaxTimeMin, State: p.State,
		})
	}
	return out
}

func gresString(gs []config.Gres) string {
	out := ""
	for i, g := range gs {
		if i > 0 {
			out += ","
		}
		out += g.Name
		if g.Type != "" {
			out += ":" + g.Type
		}
		out += fmt.Sprintf(":%d", g.Count)
	}
	return out
}
