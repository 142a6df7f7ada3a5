package sched

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestQOSLimits(t *testing.T) {
	cases := []struct {
		name   string
		limits Limits
		job    Job
		want   string
	}{
		{"max jobs per user", Limits{MaxJobsPerUser: 1}, Job{}, ReasonQOSMaxJobsPerUserLimit},
		{"max cpu per user", Limits{MaxTRESPerUser: TRES{CPU: 2}}, Job{NTasks: 2}, ReasonQOSMaxCpuPerUserLimit},
		{"max node per user", Limits{MaxTRESPerUser: TRES{Node: 1}}, Job{}, ReasonQOSMaxNodePerUserLimit},
		{"max mem per user", Limits{MaxTRESPerUser: TRES{MemMB: 1500}}, Job{MemPerNodeMB: 1000}, ReasonQOSMaxMemoryPerUser},
		{"max gpu per user", Limits{MaxTRESPerUser: TRES{GPU: 1}}, Job{GPUsPerNode: 1}, ReasonQOSMaxGRESPerUser},
		{"grp jobs", Limits{GrpJobs: 1}, Job{User: "other"}, ReasonQOSGrpJobsLimit},
		{"grp cpu", Limits{GrpTRES: TRES{CPU: 2}}, Job{User: "other", NTasks: 2}, ReasonQOSGrpCpuLimit},
		{"grp mem", Limits{GrpTRES: TRES{MemMB: 1000}}, Job{User: "other", MemPerNodeMB: 1}, ReasonQOSGrpMemLimit},
		{"grp node", Limits{GrpTRES: TRES{Node: 1}}, Job{User: "other"}, ReasonQOSGrpNodeLimit},
		{"grp gpu", Limits{GrpTRES: TRES{GPU: 1}}, Job{User: "other", GPUsPerNode: 1}, ReasonQOSGrpGRES},
		{"max cpu per job", Limits{MaxTRESPerJob: TRES{CPU: 1}}, Job{NTasks: 2}, ReasonQOSMaxCpuPerJobLimit},
		{"max node per job", Limits{MaxTRESPerJob: TRES{Node: 1}}, Job{Nodes: 2}, ReasonQOSMaxNodePerJobLimit},
		{"max mem per job", Limits{MaxTRESPerJob: TRES{MemMB: 10}}, Job{MemPerNodeMB: 11}, ReasonQOSMaxMemoryPerJob},
		{"max gpu per job", Limits{MaxTRESPerJob: TRES{GPU: 1}}, Job{GPUsPerNode: 2}, ReasonQOSMaxGRESPerJob},
		{"max wall", Limits{MaxWall: time.Hour}, Job{TimeLimit: 2 * time.Hour}, ReasonQOSMaxWallDurationPerJob},
		{"max wall unlimited job", Limits{MaxWall: time.Hour}, Job{}, ReasonQOSMaxWallDurationPerJob},
		{"within limits", Limits{MaxJobsPerUser: 2, GrpTRES: TRES{CPU: 4}}, Job{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := gpuLab()
			s.QOS = []QOS{{Name: "normal", Limits: c.limits}}
			s.Running = []RunningJob{{ID: 9, User: "u", Alloc: []Alloc{{Node: "gpu1", CPUs: 1, MemMB: 1000,
				Gres: []GresAlloc{{Name: "gpu", Indices: []int{0}}}}}}}
			j := c.job
			j.ID = 1
			if j.User == "" {
				j.User = "u"
			}
			s.Pending = []Job{j}
			res := Schedule(s)
			if got := res.Jobs[0].Reason; got != c.want {
				t.Fatalf("reason %q, want %q", got, c.want)
			}
			if (c.want == "") != (len(res.Starts) == 1) {
				t.Fatalf("starts %+v", res.Starts)
			}
		})
	}
}

func TestLimitsCountJobsStartedInThePass(t *testing.T) {
	s := lab(4)
	s.QOS = []QOS{{Name: "normal", Limits: Limits{MaxJobsPerUser: 2}}}
	s.Pending = []Job{{ID: 1, User: "u"}, {ID: 2, User: "u"}, {ID: 3, User: "u"}, {ID: 4, User: "v"}}
	res := Schedule(s)
	if len(res.Starts) != 3 || reasons(res)[3] != ReasonQOSMaxJobsPerUserLimit {
		t.Fatalf("starts %+v reasons %v", res.Starts, reasons(res))
	}
	// A job held back by a limit neither waits for resources nor blocks
	// others: job 4 is not "Priority".
	if startOf(res, 4) == nil {
		t.Fatal("job 4 should start")
	}
}

func TestAssocLimits(t *testing.T) {
	base := func() Snapshot {
		s := lab(4)
		s.Assocs = []Assoc{
			{Account: "phys"}, {Account: "theory", Parent: "phys"},
			{Account: "theory", User: "u"}, {Account: "theory", User: "w"},
		}
		s.Running = []RunningJob{{ID: 9, User: "w", Account: "theory", Alloc: []Alloc{{Node: "node1", CPUs: 2}}}}
		return s
	}
	cases := []struct {
		name  string
		setup func(s *Snapshot)
		job   Job
		want  string
	}{
		{"grp cpu on a parent account", func(s *Snapshot) { s.Assocs[0].Limits.GrpTRES.CPU = 3 }, Job{NTasks: 2}, ReasonAssocGrpCpuLimit},
		{"grp jobs on the account", func(s *Snapshot) { s.Assocs[1].Limits.GrpJobs = 1 }, Job{}, ReasonAssocGrpJobsLimit},
		{"grp node", func(s *Snapshot) { s.Assocs[1].Limits.GrpTRES.Node = 1 }, Job{}, ReasonAssocGrpNodeLimit},
		{"max jobs inherited from the account", func(s *Snapshot) { s.Assocs[1].Limits.MaxJobsPerUser = 1 }, Job{User: "w"}, ReasonAssocMaxJobsLimit},
		{"max jobs is per user", func(s *Snapshot) { s.Assocs[1].Limits.MaxJobsPerUser = 1 }, Job{}, ""},
		{"max wall", func(s *Snapshot) { s.Assocs[0].Limits.MaxWall = time.Hour }, Job{TimeLimit: 61 * time.Minute}, ReasonAssocMaxWallDurationPerJob},
		{"max cpu per job", func(s *Snapshot) { s.Assocs[2].Limits.MaxTRESPerJob.CPU = 1 }, Job{NTasks: 2}, ReasonAssocMaxCpuPerJobLimit},
		{"max node per job", func(s *Snapshot) { s.Assocs[2].Limits.MaxTRESPerJob.Node = 1 }, Job{Nodes: 2}, ReasonAssocMaxNodePerJobLimit},
		{"qos limit overrides the association's", func(s *Snapshot) {
			s.Assocs[0].Limits.GrpTRES.CPU = 3
			s.QOS = []QOS{{Name: "normal", Limits: Limits{GrpTRES: TRES{CPU: 100}}}}
		}, Job{NTasks: 2}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			c.setup(&s)
			j := c.job
			j.ID = 1
			j.Account = "theory"
			if j.User == "" {
				j.User = "u"
			}
			s.Pending = []Job{j}
			if got := Schedule(s).Jobs[0].Reason; got != c.want {
				t.Fatalf("reason %q, want %q", got, c.want)
			}
		})
	}
}

func TestSubmitLimit(t *testing.T) {
	s := lab(1)
	s.QOS = []QOS{{Name: "normal"}, {Name: "small", Limits: Limits{MaxSubmitJobsPerUser: 2, GrpSubmitJobs: 3}}}
	s.Assocs = []Assoc{
		{Account: "phys", Limits: Limits{GrpSubmitJobs: 4}}, {Account: "theory", Parent: "phys", Limits: Limits{MaxSubmitJobsPerUser: 2}},
		{Account: "theory", User: "u"}, {Account: "theory", User: "w"}, {Account: "theory", User: "x"},
	}
	s.Running = []RunningJob{{ID: 1, User: "u", Account: "theory", QOS: "small"}}
	s.Pending = []Job{{ID: 2, User: "u", Account: "theory", QOS: "small"}, {ID: 3, User: "w", Account: "theory"}}
	cases := []struct {
		job  Job
		want string
	}{
		{Job{ID: 10, User: "u", Account: "theory", QOS: "small"}, ReasonQOSMaxSubmitJobPerUserLimit},
		{Job{ID: 10, User: "w", Account: "theory", QOS: "small"}, ""},
		{Job{ID: 10, User: "u", Account: "theory"}, ReasonAssocMaxSubmitJobLimit},
		{Job{ID: 10, User: "w", Account: "theory"}, ""},
		{Job{ID: 2, User: "u", Account: "theory", QOS: "small"}, ""}, // resubmitting itself
	}
	for i, c := range cases {
		if got := SubmitLimit(&s, &c.job); got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
	s.Pending = append(s.Pending, Job{ID: 4, User: "w", Account: "theory", QOS: "small"})
	if got := SubmitLimit(&s, &Job{ID: 10, User: "x", Account: "theory", QOS: "small"}); got != ReasonQOSGrpSubmitJobsLimit {
		t.Errorf("grp qos: %q", got)
	}
	if got := SubmitLimit(&s, &Job{ID: 10, User: "x", Account: "theory"}); got != ReasonAssocGrpSubmitJobsLimit {
		t.Errorf("grp assoc: %q", got)
	}
}

// A limit of zero is a real limit (Slurm's MaxJobsPerUser=0,
// GrpTRES=gres/gpu=0, ...): LimitZero allows nothing, where 0 is no limit.
func TestZeroLimits(t *testing.T) {
	cpuJob := Job{}
	gpuJob := Job{GPUsPerNode: 1}
	cases := []struct {
		name   string
		qos    Limits
		assocs func(a []Assoc) // phys, theory (under phys), theory/u
		job    Job
		want   string
	}{
		{"qos max jobs per user 0", Limits{MaxJobsPerUser: LimitZero}, nil, cpuJob, ReasonQOSMaxJobsPerUserLimit},
		{"qos grp jobs 0", Limits{GrpJobs: LimitZero}, nil, cpuJob, ReasonQOSGrpJobsLimit},
		{"qos grp gpu 0 holds gpu jobs", Limits{GrpTRES: TRES{GPU: LimitZero}}, nil, gpuJob, ReasonQOSGrpGRES},
		{"qos grp gpu 0 lets cpu jobs run", Limits{GrpTRES: TRES{GPU: LimitZero}}, nil, cpuJob, ""},
		{"qos max cpu per job 0", Limits{MaxTRESPerJob: TRES{CPU: LimitZero}}, nil, cpuJob, ReasonQOSMaxCpuPerJobLimit},
		{"qos max gpu per user 0", Limits{MaxTRESPerUser: TRES{GPU: LimitZero}}, nil, gpuJob, ReasonQOSMaxGRESPerUser},
		{"qos max wall 0", Limits{MaxWall: -time.Minute}, nil, Job{TimeLimit: time.Minute}, ReasonQOSMaxWallDurationPerJob},
		{"assoc max jobs 0 on the account", Limits{}, func(a []Assoc) { a[1].Limits.MaxJobsPerUser = LimitZero }, cpuJob, ReasonAssocMaxJobsLimit},
		{"assoc max jobs 0 on the user overrides the account's", Limits{}, func(a []Assoc) {
			a[1].Limits.MaxJobsPerUser = 5
			a[2].Limits.MaxJobsPerUser = LimitZero
		}, cpuJob, ReasonAssocMaxJobsLimit},
		{"assoc max jobs 5 on the user overrides the account's 0", Limits{}, func(a []Assoc) {
			a[1].Limits.MaxJobsPerUser = LimitZero
			a[2].Limits.MaxJobsPerUser = 5
		}, cpuJob, ""},
		{"assoc grp jobs 0 on a parent", Limits{}, func(a []Assoc) { a[0].Limits.GrpJobs = LimitZero }, cpuJob, ReasonAssocGrpJobsLimit},
		{"assoc grp gpu 0", Limits{}, func(a []Assoc) { a[0].Limits.GrpTRES.GPU = LimitZero }, gpuJob, ReasonAssocGrpGRES},
		{"assoc grp gpu 0 lets cpu jobs run", Limits{}, func(a []Assoc) { a[0].Limits.GrpTRES.GPU = LimitZero }, cpuJob, ""},
		{"assoc max node per job 0", Limits{}, func(a []Assoc) { a[2].Limits.MaxTRESPerJob.Node = LimitZero }, cpuJob, ReasonAssocMaxNodePerJobLimit},
		{"assoc max wall 0", Limits{}, func(a []Assoc) { a[1].Limits.MaxWall = -1 }, Job{TimeLimit: time.Minute}, ReasonAssocMaxWallDurationPerJob},
		{"a qos limit wins over the association's 0", Limits{MaxJobsPerUser: 3}, func(a []Assoc) { a[1].Limits.MaxJobsPerUser = LimitZero }, cpuJob, ""},
		{"a qos limit of 0 wins over the association's", Limits{GrpTRES: TRES{CPU: LimitZero}}, func(a []Assoc) { a[0].Limits.GrpTRES.CPU = 100 }, cpuJob, ReasonQOSGrpCpuLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := gpuLab()
			s.QOS = []QOS{{Name: "normal", Limits: c.qos}}
			s.Assocs = []Assoc{{Account: "phys"}, {Account: "theory", Parent: "phys"}, {Account: "theory", User: "u"}}
			if c.assocs != nil {
				c.assocs(s.Assocs)
			}
			j := c.job
			j.ID, j.User, j.Account = 1, "u", "theory"
			s.Pending = []Job{j}
			res := Schedule(s)
			if got := res.Jobs[0].Reason; got != c.want {
				t.Fatalf("reason %q, want %q", got, c.want)
			}
			if (c.want == "") != (len(res.Starts) == 1) {
				t.Fatalf("starts %+v", res.Starts)
			}
		})
	}
}

// Zero limits hold their jobs back whatever runs, so a Planner that
// re-checks jobs only where counters changed still agrees with a fresh
// pass.
func TestPlannerZeroLimits(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		spec := smallSpec(rng)
		s := generate(spec, seed)
		more := generate(spec, seed+1000).Pending
		s.Config.PriorityCalcPeriod = 5 * time.Minute
		s.QOS[2].Limits.MaxJobsPerUser = LimitZero
		s.QOS[1].Limits.GrpTRES.GPU = LimitZero
		if len(s.Assocs) > 0 {
			s.Assocs[len(s.Assocs)-1].Limits.MaxJobsPerUser = LimitZero
		}
		pl := NewPlanner(s)
		nextID := uint64(5_000_000)
		for step := 0; step < 15; step++ {
			got := pl.Plan()
			diffResults(t, fmt.Sprintf("seed %d step %d", seed, step), got, Schedule(pl.Snapshot()))
			for _, st := range got.Starts {
				for _, j := range pl.Snapshot().Pending {
					if j.ID == st.JobID && j.QOS == "low" {
						t.Fatalf("seed %d: job %d of QoS low started under MaxJobsPerUser=0", seed, j.ID)
					}
				}
			}
			var d Delta
			d, more = plannerStep(rng, pl, got, more, &nextID)
			pl.Apply(d)
		}
	}
}

// TestSubmitLimitZero: a submit limit of zero (LimitZero) refuses every
// submission, on a QoS or an association; no limit (0) refuses none.
func TestSubmitLimitZero(t *testing.T) {
	for _, c := range []struct {
		name   string
		qos    Limits
		assocs func(a []Assoc) // phys, theory (under phys), theory/u
		want   string
	}{
		{"no limits", Limits{}, nil, ""},
		{"qos max submit 0", Limits{MaxSubmitJobsPerUser: LimitZero}, nil, ReasonQOSMaxSubmitJobPerUserLimit},
		{"qos grp submit 0", Limits{GrpSubmitJobs: LimitZero}, nil, ReasonQOSGrpSubmitJobsLimit},
		{"assoc max submit 0", Limits{}, func(a []Assoc) { a[2].Limits.MaxSubmitJobsPerUser = LimitZero }, ReasonAssocMaxSubmitJobLimit},
		{"assoc grp submit 0 on a parent", Limits{}, func(a []Assoc) { a[0].Limits.GrpSubmitJobs = LimitZero }, ReasonAssocGrpSubmitJobsLimit},
	} {
		s := lab(1)
		s.QOS = []QOS{{Name: "normal", Limits: c.qos}}
		s.Assocs = []Assoc{{Account: "phys"}, {Account: "theory", Parent: "phys"}, {Account: "theory", User: "u"}}
		if c.assocs != nil {
			c.assocs(s.Assocs)
		}
		if got := SubmitLimit(&s, &Job{ID: 1, User: "u", Account: "theory"}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
