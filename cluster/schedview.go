package cluster

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/accounting"
	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/fsm"
	"hpc/cluster/hostlist"
	"hpc/sched"
)

// schedView is the leader's side of scheduling: it turns the replicated
// state into sched's snapshot and keeps the last pass's per-job results
// (priority, pending reason, expected start), which are soft state: a new
// leader recomputes them in its first pass.
type schedView struct {
	mu      sync.Mutex
	results map[uint64]sched.JobResult
	// jobs caches each pending job's request, parsed once from its spec.
	jobs map[uint64]sched.Job
	// usage caches past usage from accounting for fair-share.
	usage     []sched.Usage
	usageIDs  map[uint64]bool // the jobs in usage
	usageTime time.Time
	// planner is the leader's scheduler between passes (planner.go); the
	// leader's loop alone uses it, without mu.
	planner leaderPlanner
}

func newSchedView() *schedView {
	return &schedView{results: map[uint64]sched.JobResult{}, jobs: map[uint64]sched.Job{}}
}

// overlay copies the last pass's view of a job onto it.
func (v *schedView) overlay(j *api.Job) {
	if j.State != api.StatePending {
		return
	}
	if r, ok := v.pending(j.ID, j.Hold, &j.Reason); ok {
		j.Priority = r.Priority
		j.ExpectedStart = r.ExpectedStart
		j.SchedNodes = r.ExpectedNodes
	}
}

// overlayBrief is overlay for the fields a brief carries.
func (v *schedView) overlayBrief(b *api.JobBrief) {
	if b.State != api.StatePending {
		return
	}
	if r, ok := v.pending(b.ID, b.Hold, &b.Reason); ok {
		b.Priority = r.Priority
	}
}

// pending sets a pending job's reason from its hold and the last pass,
// and returns the pass's result for it; false when no pass saw it (held).
func (v *schedView) pending(id uint64, hold string, reason *string) (sched.JobResult, bool) {
	switch hold {
	case "user":
		*reason = sched.ReasonJobHeldUser
	case "admin":
		*reason = sched.ReasonJobHeldAdmin
	case api.HoldRequeue:
		*reason = api.ReasonRequeueHeld
	}
	v.mu.Lock()
	r, ok := v.results[id]
	v.mu.Unlock()
	if ok && r.Reason != "" {
		*reason = r.Reason
	}
	return r, ok
}

// forget drops a job's cached request (its spec changed).
func (v *schedView) forget(id uint64) {
	v.mu.Lock()
	delete(v.jobs, id)
	v.mu.Unlock()
}

func (v *schedView) store(res sched.Result) {
	m := make(map[uint64]sched.JobResult, len(res.Jobs))
	for _, r := range res.Jobs {
		m[r.JobID] = r
	}
	v.mu.Lock()
	v.results = m // replaced whole, never written into: lastResults (metrics.go)
	for id := range v.jobs {
		if _, pending := m[id]; !pending {
			delete(v.jobs, id)
		}
	}
	v.mu.Unlock()
}

// schedConfig maps slurm.conf onto sched's settings.
func schedConfig(cfg *config.Config) sched.Config {
	p := cfg.Priority
	c := sched.Config{
		PriorityMaxAge:        time.Duration(p.MaxAgeMin) * time.Minute,
		PriorityDecayHalfLife: time.Duration(p.DecayHalfLifeMin) * time.Minute,
		PriorityFavorSmall:    p.FavorSmall,
		PriorityCalcPeriod:    time.Duration(p.CalcPeriodMin) * time.Minute,
		DefMemPerCPU:          cfg.DefMemPerCPU,
		PreemptType:           cfg.PreemptType,
		PreemptMode:           sched.PreemptMode(cfg.PreemptMode),
	}
	if p.Type == "priority/multifactor" {
		c.PriorityWeightAge, c.PriorityWeightFairshare = p.WeightAge, p.WeightFairshare
		c.PriorityWeightJobSize, c.PriorityWeightPartition, c.PriorityWeightQOS = p.WeightJobSize, p.WeightPartition, p.WeightQOS
	}
	if v, err := strconv.Atoi(cfg.SchedulerParameters["bf_max_job_test"]); err == nil {
		c.BackfillMaxJobTest = v
	}
	if v, err := strconv.Atoi(cfg.SchedulerParameters["bf_window"]); err == nil {
		c.BackfillWindow = time.Duration(v) * time.Minute
	}
	if v, err := strconv.Atoi(cfg.SchedulerParameters["max_switch_wait"]); err == nil {
		c.MaxSwitchWait = time.Duration(v) * time.Second
	}
	return c
}

func limitMinutes(m int64) time.Duration {
	if m <= 0 {
		return 0 // UNLIMITED / NONE
	}
	return time.Duration(m) * time.Minute
}

func schedPartitions(cfg *config.Config) []sched.Partition {
	out := make([]sched.Partition, 0, len(cfg.Partitions))
	for _, p := range cfg.Partitions {
		sp := sched.Partition{
			Name: p.Name, Nodes: p.Nodes, Default: p.Default,
			MaxTime: limitMinutes(p.MaxTimeMin), DefaultTime: limitMinutes(p.DefaultTimeMin),
			PriorityTier: p.PriorityTier, PriorityJobFactor: p.PriorityJobFactor,
			AllowAccounts: p.AllowAccounts, AllowQOS: p.AllowQos,
		}
		if p.MaxNodes > 0 {
			sp.MaxNodes = p.MaxNodes
		}
		switch p.State {
		case "DOWN":
			sp.State = sched.PartitionDown
		case "DRAIN":
			sp.State = sched.PartitionDrain
		case "INACTIVE":
			sp.State = sched.PartitionInactive
		}
		if p.OverSubscribe == "EXCLUSIVE" {
			sp.OverSubscribe = sched.OverSubscribeExclusive
		}
		out = append(out, sp)
	}
	return out
}

func schedNodes(cfg *config.Config, st *fsm.State) []sched.Node {
	out := make([]sched.Node, 0, len(cfg.Nodes))
	for _, n := range cfg.Nodes {
		sn := sched.Node{Name: n.Name, CPUs: n.CPUs, MemMB: n.RealMemoryMB, Features: n.Features, Weight: n.Weight, State: sched.NodeDown}
		for _, g := range n.Gres {
			sn.Gres = append(sn.Gres, sched.Gres{Name: g.Name, Type: g.Type, Count: g.Count})
		}
		if ns := st.Nodes[n.Name]; ns != nil {
			switch {
			case ns.State == "UP" && ns.NoResp:
				// Not responding: what runs there goes on, nothing new
				// starts there (as on a draining node).
				sn.State = sched.NodeDrain
			case ns.State == "UP":
				sn.State = sched.NodeUp
			case ns.State == "DRAIN":
				sn.State = sched.NodeDrain
			}
		}
		out = append(out, sn)
	}
	return out
}

func schedTopology(cfg *config.Config) []sched.Switch {
	out := make([]sched.Switch, len(cfg.Topology))
	for i, s := range cfg.Topology {
		out[i] = sched.Switch{Name: s.Name, Switches: s.Switches, Nodes: s.Nodes}
	}
	return out
}

func schedAlloc(a []api.NodeAlloc) []sched.Alloc {
	out := make([]sched.Alloc, len(a))
	for i, x := range a {
		out[i] = sched.Alloc{Node: x.Node, CPUs: x.CPUs, Tasks: x.Tasks, MemMB: x.MemMB}
		for _, g := range x.Gres {
			out[i].Gres = append(out[i].Gres, sched.GresAlloc{Name: g.Name, Type: g.Type, Indices: g.Indices})
		}
	}
	return out
}

func apiAlloc(a []sched.Alloc) []api.NodeAlloc {
	out := make([]api.NodeAlloc, len(a))
	for i, x := range a {
		out[i] = api.NodeAlloc{Node: x.Node, CPUs: x.CPUs, Tasks: x.Tasks, MemMB: x.MemMB}
		for _, g := range x.Gres {
			out[i].Gres = append(out[i].Gres, api.GresAlloc{Name: g.Name, Type: g.Type, Indices: g.Indices})
		}
	}
	return out
}

// jobQOS is the job's QoS name.
func jobQOS(j *api.Job) string {
	if j.Spec.QOS != "" {
		return j.Spec.QOS
	}
	return "normal"
}

func runningJob(j *api.Job) sched.RunningJob {
	r := sched.RunningJob{
		ID: j.ID, User: j.User, Account: j.Account, QOS: jobQOS(j), Partition: j.Spec.Partition,
		StartTime: j.StartTime, Alloc: schedAlloc(j.Alloc),
	}
	if j.Spec.TimeLimitMin > 0 {
		r.EndTime = j.StartTime.Add(time.Duration(j.Spec.TimeLimitMin) * time.Minute)
	}
	return r
}

// request parses a job's spec into sched's request (once per job).
func (v *schedView) request(j *api.Job) sched.Job {
	v.mu.Lock()
	r, ok := v.jobs[j.ID]
	v.mu.Unlock()
	if ok {
		return r
	}
	r = parseRequest(j)
	v.mu.Lock()
	v.jobs[j.ID] = r
	v.mu.Unlock()
	return r
}

// parseRequest turns a job's spec into sched's request.
func parseRequest(j *api.Job) sched.Job {
	s := &j.Spec
	r := sched.Job{
		ID: j.ID, User: j.User, Account: j.Account, QOS: jobQOS(j),
		SubmitTime: j.SubmitTime, BeginTime: s.Begin,
		TimeLimit: limitMinutes(s.TimeLimitMin), Nodes: s.Nodes, NTasks: s.NTasks, NTasksPerNode: s.NTasksPerNode,
		CPUsPerTask: s.CPUsPerTask, MemPerNodeMB: s.MemPerNodeMB, MemPerCPUMB: s.MemPerCPUMB,
		Exclusive: s.Exclusive != "" && s.Exclusive != "oversubscribe", Constraint: s.Constraint,
		Switches: s.Switches, SwitchWait: time.Duration(s.SwitchesWaitSec) * time.Second,
	}
	r.Nodes, r.NTasks, r.NTasksPerNode, r.CPUsPerTask = allocShape(s) // -O, --mincpus
	for _, p := range strings.Split(s.Partition, ",") {
		if p = strings.TrimSpace(p); p != "" {
			r.Partitions = append(r.Partitions, p)
		}
	}
	r.NodeList, _ = hostlist.Expand(s.NodeList)
	r.Exclude, _ = hostlist.Expand(s.Exclude)
	r.Gres, _ = parseGresRequest(s.Gres)
	r.GPUType, r.GPUs = parseGPUCount(s.Gpus)
	_, r.GPUsPerNode = parseGPUCount(s.GpusPerNode)
	_, r.GPUsPerTask = parseGPUCount(s.GpusPerTask)
	return r
}

// parseGresRequest reads --gres: "gpu:2", "gpu:a100:1,gpu" (count 1 by
// default).
func parseGresRequest(s string) ([]sched.GresRequest, error) {
	var out []sched.GresRequest
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		f := strings.Split(item, ":")
		g := sched.GresRequest{Name: f[0], Count: 1}
		switch len(f) {
		case 1:
		case 2:
			if n, err := strconv.Atoi(f[1]); err == nil {
				g.Count = n
			} else {
				g.Type = f[1]
			}
		case 3:
			g.Type = f[1]
			n, err := strconv.Atoi(f[2])
			if err != nil {
				return nil, &api.Error{Message: "Invalid generic resource (gres) specification"}
			}
			g.Count = n
		default:
			return nil, &api.Error{Message: "Invalid generic resource (gres) specification"}
		}
		if g.Name == "" || g.Count < 0 {
			return nil, &api.Error{Message: "Invalid generic resource (gres) specification"}
		}
		out = append(out, g)
	}
	return out, nil
}

// parseGPUCount reads --gpus style values: "2" or "a100:2".
func parseGPUCount(s string) (typ string, n int) {
	if s == "" {
		return "", 0
	}
	if t, c, ok := strings.Cut(s, ":"); ok {
		typ, s = t, c
	}
	n, _ = strconv.Atoi(s)
	return typ, n
}

// dependencyState evaluates --dependency against the jobs the controller
// holds: after (started), afterany (ended), afterok (COMPLETED), afternotok
// (ended otherwise), singleton (no other running or earlier pending job of
// the same name and user). Items joined with ',' must all hold, with '?'
// any one. Jobs no longer known (purged, or never existed) count as
// satisfied, as slurmctld drops dependencies on unknown jobs.
func dependencyState(j *api.Job, st *fsm.State) sched.DependencyState {
	dep := j.Spec.Dependency
	if dep == "" {
		return sched.DependencyNone
	}
	anyOf := strings.Contains(dep, "?")
	sep := ","
	if anyOf {
		sep = "?"
	}
	allOK, someOK, never := true, false, false
	for _, item := range strings.Split(dep, sep) {
		ok, nv := dependencyItem(item, j, st)
		allOK = allOK && ok
		someOK = someOK || ok
		never = never || nv
		if anyOf && ok {
			return sched.DependencySatisfied
		}
	}
	switch {
	case anyOf && !someOK && never && allNever(dep, j, st):
		return sched.DependencyNever
	case anyOf:
		return sched.DependencyPending
	case never:
		return sched.DependencyNever
	case allOK:
		return sched.DependencySatisfied
	}
	return sched.DependencyPending
}

func allNever(dep string, j *api.Job, st *fsm.State) bool {
	for _, item := range strings.Split(dep, "?") {
		if _, nv := dependencyItem(item, j, st); !nv {
			return false
		}
	}
	return true
}

// dependencyItem says whether one item holds now, and whether it never
// can.
func dependencyItem(item string, j *api.Job, st *fsm.State) (ok, never bool) {
	kind, ids, _ := strings.Cut(strings.TrimSpace(item), ":")
	if kind == "singleton" {
		for _, o := range st.Jobs {
			if o.ID != j.ID && o.UID == j.UID && o.Spec.Name == j.Spec.Name &&
				(o.State == api.StateRunning || (o.State == api.StatePending && o.ID < j.ID)) {
				return false, false
			}
		}
		return true, false
	}
	ok = true
	for _, s := range strings.Split(ids, ":") {
		id, err := strconv.ParseUint(strings.TrimSpace(strings.SplitN(s, "+", 2)[0]), 10, 64)
		if err != nil {
			continue
		}
		o := st.Jobs[id]
		if o == nil {
			continue
		}
		ended := o.State.Final()
		switch kind {
		case "after":
			ok = ok && (o.State != api.StatePending)
		case "afterany":
			ok = ok && ended
		case "afterok":
			ok = ok && o.State == api.StateCompleted
			never = never || (ended && o.State != api.StateCompleted)
		case "afternotok":
			ok = ok && ended && o.State != api.StateCompleted
			never = never || o.State == api.StateCompleted
		}
	}
	return ok && !never, never
}

// validDependency checks --dependency syntax at submit time.
func validDependency(dep string) bool {
	if dep == "" {
		return true
	}
	for _, item := range strings.FieldsFunc(dep, func(r rune) bool { return r == ',' || r == '?' }) {
		kind, ids, has := strings.Cut(item, ":")
		switch kind {
		case "singleton":
			if has {
				return false
			}
			continue
		case "after", "afterany", "afterok", "afternotok":
		default:
			return false
		}
		if ids == "" {
			return false
		}
		for _, s := range strings.Split(ids, ":") {
			if _, err := strconv.ParseUint(strings.SplitN(s, "+", 2)[0], 10, 64); err != nil {
				return false
			}
		}
	}
	return true
}

// usageFor is past usage for fair-share: the ended jobs in accounting,
// read again at most every 30 seconds, and the ended jobs the state still
// holds that accounting did not have then (ended lists them). Without the
// second, a job ending between two reads would count neither as running
// nor as past, and the accounts' usage would stand still for 30 seconds.
func (v *schedView) usageFor(acct *accounting.Store, now time.Time, halfLife time.Duration, ended []sched.Usage) []sched.Usage {
	v.mu.Lock()
	defer v.mu.Unlock()
	if acct != nil && now.Sub(v.usageTime) >= 30*time.Second {
		if rows, err := pastUsage(acct, now, halfLife); err == nil {
			v.usage, v.usageIDs, v.usageTime = rows, usageJobs(rows), now
		}
	}
	return withEnded(v.usage, v.usageIDs, ended)
}

// usageJobs is the set of jobs a usage list is of.
func usageJobs(rows []sched.Usage) map[uint64]bool {
	ids := make(map[uint64]bool, len(rows))
	for _, u := range rows {
		ids[u.JobID] = true
	}
	return ids
}

// withEnded adds to past (whose jobs are ids) the ended jobs it lacks,
// leaving past itself as it was: capped at its length, past's array is
// copied by the first append, never written.
func withEnded(past []sched.Usage, ids map[uint64]bool, ended []sched.Usage) []sched.Usage {
	out := past[:len(past):len(past)]
	for _, u := range ended {
		if !ids[u.JobID] {
			out = append(out, u)
		}
	}
	return out
}

// endedUsage is the usage of a job that ran and has ended, for
// fair-share; ok is false for any other job.
func endedUsage(j *api.Job) (sched.Usage, bool) {
	if !j.State.Final() || j.StartTime.IsZero() || j.EndTime.IsZero() {
		return sched.Usage{}, false
	}
	cpus := j.AllocCPUs()
	if cpus == 0 {
		return sched.Usage{}, false
	}
	return sched.Usage{JobID: j.ID, Account: j.Account, User: j.User, CPUs: cpus, Start: j.StartTime, End: j.EndTime}, true
}

// priorities lists the last pass's priorities of the pending jobs (sprio),
// in job id order.
func (v *schedView) priorities(cfg *config.Config, jobs map[uint64]*api.Job) api.PriorityResponse {
	p := cfg.Priority
	out := api.PriorityResponse{Plugin: p.Type}
	if p.Type == "priority/multifactor" {
		out.Weights = api.PriorityFactors{Age: float64(p.WeightAge), Fairshare: float64(p.WeightFairshare),
			JobSize: float64(p.WeightJobSize), Partition: float64(p.WeightPartition), QOS: float64(p.WeightQOS)}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for id, r := range v.results {
		j := jobs[id]
		if j == nil {
			continue
		}
		f := func(x sched.Factors) api.PriorityFactors {
			return api.PriorityFactors{Age: x.Age, Fairshare: x.Fairshare, JobSize: x.JobSize, Partition: x.Partition, QOS: x.QOS}
		}
		out.Rows = append(out.Rows, api.PriorityRow{JobID: id, User: j.User, Partition: j.Spec.Partition,
			Priority: r.Priority, Weighted: f(r.Weighted), Normalized: f(r.Factors), Nice: r.Factors.Nice})
	}
	sort.Slice(out.Rows, func(a, b int) bool { return out.Rows[a].JobID < out.Rows[b].JobID })
	return out
}
