package cluster

import (
	"errors"
	"testing"

	"hpc/cluster/api"
)

// The errors slurmctld gives for impossible requests (EnforcePartLimits=ALL),
// against the lab config: debug = node[1-3] (2 CPUs, 4000 MB each), gpu =
// node[2-3], MaxTime 1 day.
func TestValidateSpec(t *testing.T) {
	cfg := testConfig(t)
	base := api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp"}
	cases := []struct {
		name   string
		edit   func(*api.JobSpec)
		msg    string
		detail string
	}{
		{"ok", func(s *api.JobSpec) {}, "", ""},
		{"unknown partition", func(s *api.JobSpec) { s.Partition = "nosuch" }, api.ErrInvalidPartition, "invalid partition specified: nosuch"},
		{"too many nodes", func(s *api.JobSpec) { s.Nodes = 10 }, api.ErrTooManyProcessors, ""},
		{"too many nodes in gpu", func(s *api.JobSpec) { s.Partition = "gpu"; s.Nodes = 3 }, api.ErrNodeCountInvalid, ""},
		{"too many tasks", func(s *api.JobSpec) { s.NTasks = 100 }, api.ErrTooManyProcessors, ""},
		{"negative time", func(s *api.JobSpec) { s.TimeLimitMin = -5 }, api.ErrInvalidTimeLimit, ""},
		{"over max time", func(s *api.JobSpec) { s.TimeLimitMin = 2 * 24 * 60 }, api.ErrInvalidTimeLimit, ""},
		{"unlimited over max time", func(s *api.JobSpec) { s.TimeLimitMin = -1 }, api.ErrInvalidTimeLimit, ""},
		{"memory", func(s *api.JobSpec) { s.MemPerNodeMB = 100 * 1024 }, api.ErrConfigUnavailable, api.ErrMemoryUnsatisfied},
		{"cpus per task", func(s *api.JobSpec) { s.CPUsPerTask = 3 }, api.ErrConfigUnavailable, ""},
		{"empty script", func(s *api.JobSpec) { s.Script = "" }, api.ErrEmptyScript, ""},
		{"-O: tasks beyond the CPUs", func(s *api.JobSpec) { s.NTasks = 100; s.Overcommit = true }, "", ""},
		{"-O: still one CPU a node", func(s *api.JobSpec) { s.Nodes = 10; s.NTasks = 100; s.Overcommit = true }, api.ErrTooManyProcessors, ""},
		{"--mincpus over every node", func(s *api.JobSpec) { s.MinCPUs = 3 }, api.ErrConfigUnavailable, ""},
		{"--mincpus", func(s *api.JobSpec) { s.MinCPUs = 2 }, "", ""},
	}
	for _, c := range cases {
		s := base
		c.edit(&s)
		err := validateSpec(cfg, &s)
		if c.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Message != c.msg || ae.Detail != c.detail {
			t.Errorf("%s: got %#v, want %q / %q", c.name, err, c.msg, c.detail)
		}
	}
	s := base
	if err := validateSpec(cfg, &s); err != nil || s.Partition != "debug" || s.TimeLimitMin != 24*60 || s.Name != "sbatch" {
		t.Errorf("defaults not filled in: %+v %v", s, err)
	}
}

// allocShape: -O allocates one task per node; --mincpus raises a lone
// task's CPUs.
func TestAllocShape(t *testing.T) {
	cases := []struct {
		spec                        api.JobSpec
		nodes, ntasks, perNode, cpt int
	}{
		{api.JobSpec{NTasks: 8}, 0, 8, 0, 0},
		{api.JobSpec{NTasks: 8, Overcommit: true}, 0, 0, 0, 0},
		{api.JobSpec{Nodes: 2, NTasks: 8, CPUsPerTask: 2, Overcommit: true}, 2, 0, 0, 2},
		{api.JobSpec{NTasks: 8, NTasksPerNode: 4, Overcommit: true}, 2, 0, 0, 0},
		{api.JobSpec{Nodes: 2, MinCPUs: 2}, 2, 0, 0, 2},
		{api.JobSpec{NTasks: 4, MinCPUs: 2}, 0, 4, 0, 0},
		{api.JobSpec{NTasks: 9, MinCPUs: 2, Overcommit: true}, 0, 0, 0, 2},
	}
	for _, c := range cases {
		n, tk, tpn, cpt := allocShape(&c.spec)
		if n != c.nodes || tk != c.ntasks || tpn != c.perNode || cpt != c.cpt {
			t.Errorf("%+v: got %d %d %d %d, want %d %d %d %d", c.spec, n, tk, tpn, cpt, c.nodes, c.ntasks, c.perNode, c.cpt)
		}
	}
}
