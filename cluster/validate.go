package cluster

import (
	"fmt"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/fsm"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
	"hpc/cluster/peer"
	"hpc/sched"
)

// validateSpec checks a submission against the config, as slurmctld does
// (partition limits as EnforcePartLimits says), and fills in the partition
// and time limit. A job may name several partitions (-p a,b). Its errors
// carry Slurm's texts.
func validateSpec(cfg *config.Config, s *api.JobSpec) error {
	if err := checkSizes(cfg, s); err != nil {
		return err
	}
	if s.Script == "" {
		return &api.Error{Message: api.ErrEmptyScript}
	}
	if s.Nodes < 0 || s.NTasks < 0 || s.CPUsPerTask < 0 || s.MemPerNodeMB < 0 || s.MemPerCPUMB < 0 || s.MinCPUs < 0 {
		return &api.Error{Message: api.ErrConfigUnavailable}
	}
	if s.TimeLimitMin < -1 {
		return &api.Error{Message: api.ErrInvalidTimeLimit}
	}
	if s.Array != "" {
		if _, err := jobspec.CheckArray(s.Array, cfg.MaxArraySize); err != nil {
			return err
		}
	}
	if !validDependency(s.Dependency) {
		return &api.Error{Message: api.ErrJobDependency}
	}
	gres, err := parseGresRequest(s.Gres)
	if err != nil {
		return err
	}
	for _, list := range []string{s.NodeList, s.Exclude} {
		names, err := hostlist.Expand(list)
		if err != nil {
			return &api.Error{Message: api.ErrInvalidNodeName, Detail: err.Error()}
		}
		for _, n := range names {
			if cfg.Node(n) == nil {
				return &api.Error{Message: api.ErrInvalidNodeName, Detail: "invalid node name " + n}
			}
		}
	}
	var parts []*config.Partition
	if s.Partition == "" {
		p := cfg.DefaultPartition()
		if p == nil {
			return &api.Error{Message: api.ErrInvalidPartition, Detail: "no partition specified and no default partition"}
		}
		parts = append(parts, p)
		s.Partition = p.Name
	} else {
		for _, name := range strings.Split(s.Partition, ",") {
			p := cfg.Partition(strings.TrimSpace(name))
			if p == nil {
				return &api.Error{Message: api.ErrInvalidPartition, Detail: "invalid partition specified: " + name}
			}
			parts = append(parts, p)
		}
	}
	if err := enforcePartLimits(cfg, parts, s, gres); err != nil {
		return err
	}
	if len(parts) == 1 && s.TimeLimitMin == 0 {
		p := parts[0]
		s.TimeLimitMin = p.MaxTimeMin
		if p.DefaultTimeMin > 0 {
			s.TimeLimitMin = p.DefaultTimeMin
		}
	}
	if s.Name == "" {
		s.Name = "sbatch"
	}
	if s.WorkDir == "" || s.WorkDir[0] != '/' {
		return &api.Error{Message: fmt.Sprintf("working directory %q is not an absolute path", s.WorkDir)}
	}
	return jobspec.ValidateContainer(s)
}

// enforcePartLimits applies slurm.conf's EnforcePartLimits to a job and
// the partitions it names: ALL (hpc's default) refuses it when it exceeds
// the limits of any of them, ANY when it fits none, NO never (it pends
// instead, with PartitionTimeLimit, PartitionNodeLimit or PartitionConfig).
func enforcePartLimits(cfg *config.Config, parts []*config.Partition, s *api.JobSpec, gres []sched.GresRequest) error {
	if cfg.EnforcePartLimits == "NO" {
		return nil
	}
	var first error
	for _, p := range parts {
		err := fitsPartition(cfg, p, s, gres)
		if err == nil && cfg.EnforcePartLimits == "ANY" {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// fitsPartition says whether the partition could ever run the job.
func fitsPartition(cfg *config.Config, p *config.Partition, s *api.JobSpec, gres []sched.GresRequest) error {
	if p.MaxTimeMin >= 0 && (s.TimeLimitMin == -1 || s.TimeLimitMin > p.MaxTimeMin) {
		return &api.Error{Message: api.ErrInvalidTimeLimit}
	}
	var cpus, maxCPUs int
	var maxMem int64
	maxGres := map[string]int{}
	for _, name := range p.Nodes {
		n := cfg.Node(name)
		if n == nil {
			continue
		}
		cpus += n.CPUs
		maxCPUs = max(maxCPUs, n.CPUs)
		maxMem = max(maxMem, n.RealMemoryMB)
		for _, g := range n.Gres {
			maxGres[g.Name] = max(maxGres[g.Name], n.GresCount(g.Name))
		}
	}
	// With -O the job asks one task's CPUs per node (ReqCPUs), however
	// many tasks it runs.
	if s.ReqCPUs() > cpus || max(s.Nodes, 1) > cpus {
		return &api.Error{Message: api.ErrTooManyProcessors}
	}
	if s.Nodes > len(p.Nodes) || (p.MaxNodes >= 0 && s.Nodes > p.MaxNodes) {
		return &api.Error{Message: api.ErrNodeCountInvalid}
	}
	if s.CPUsPerTask > maxCPUs || s.MinCPUs > maxCPUs {
		return &api.Error{Message: api.ErrConfigUnavailable}
	}
	if s.MemPerNodeMB > maxMem || s.MemPerCPUMB*int64(max(s.CPUsPerTask, 1)) > maxMem {
		return &api.Error{Message: api.ErrConfigUnavailable, Detail: api.ErrMemoryUnsatisfied}
	}
	for _, g := range gres {
		if g.Count > maxGres[g.Name] {
			return &api.Error{Message: api.ErrConfigUnavailable}
		}
	}
	if _, n := parseGPUCount(s.GpusPerNode); n > maxGres["gpu"] {
		return &api.Error{Message: api.ErrConfigUnavailable}
	}
	return nil
}

// allocShape is the node count, task count, tasks per node and CPUs per
// task the scheduler allocates a job for. Most jobs ask what they say;
// with -O/--overcommit the job is allocated as if it ran one task per
// node (its -n tasks then share those CPUs), as Slurm allocates it; and
// where each node holds one task, --mincpus raises that task's CPUs to
// the node's floor.
func allocShape(s *api.JobSpec) (nodes, ntasks, perNode, cpt int) {
	nodes, ntasks, perNode, cpt = s.Nodes, s.NTasks, s.NTasksPerNode, s.CPUsPerTask
	if s.Overcommit {
		if nodes == 0 && ntasks > 0 && perNode > 0 {
			nodes = (ntasks + perNode - 1) / perNode
		}
		ntasks, perNode = 0, 0
	}
	oneEach := perNode == 1 || (perNode == 0 && (ntasks == 0 || ntasks == nodes))
	if s.MinCPUs > 0 && oneEach {
		cpt = max(cpt, s.MinCPUs)
	}
	return nodes, ntasks, perNode, cpt
}

// nodesView builds the node and partition lists that sinfo shows.
func nodesView(cfg *config.Config, st *fsm.State) api.NodesResponse {
	alloc := map[string]*api.NodeAlloc{}
	for j := range st.NotPending() {
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
		if ns != nil && ns.Reason != "" {
			v.ReasonTime, v.ReasonUser = ns.Since, "slurm"
			if ns.By >= 0 {
				v.ReasonUser = peer.LookupIdentity(uint32(ns.By), 0).User
			}
		}
		switch {
		case ns == nil || ns.State == "UNKNOWN":
			v.State = api.NodeUnknown
		case ns.State == "DOWN" || ns.State == "ADMIN_DOWN":
			v.State, v.Reason = api.NodeDown, ns.Reason
		case ns.State == "DRAIN":
			v.State, v.Reason = api.NodeIdle+"+DRAIN", ns.Reason
			if v.AllocCPUs >= v.CPUs {
				v.State = api.NodeAllocated + "+DRAIN"
			} else if v.AllocCPUs > 0 {
				v.State = api.NodeMixed + "+DRAIN"
			}
		case v.AllocCPUs == 0:
			v.State = api.NodeIdle
		case v.AllocCPUs >= v.CPUs:
			v.State = api.NodeAllocated
		default:
			v.State = api.NodeMixed
		}
		if ns != nil && ns.NoResp {
			v.State += "*" // not responding, as sinfo marks it
		}
		out.Nodes = append(out.Nodes, v)
	}
	for _, p := range cfg.Partitions {
		out.Partitions = append(out.Partitions, api.Partition{
			Name: p.Name, Nodes: p.Nodes, Default: p.Default, MaxTimeMin: p.MaxTimeMin, State: p.State,
			Limits: &api.PartitionLimits{DefaultTimeMin: p.DefaultTimeMin, MaxNodes: p.MaxNodes,
				PriorityTier: p.PriorityTier, PriorityJobFactor: p.PriorityJobFactor, OverSubscribe: p.OverSubscribe,
				AllowAccounts: p.AllowAccounts, AllowQos: p.AllowQos},
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
