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
