package format

import (
	"strings"
	"testing"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

func TestArrayTaskString(t *testing.T) {
	many := make([]int, 0, 40)
	for i := 0; i < 80; i += 2 {
		many = append(many, i, i+1)
	}
	long := openapi.IntRanges([]int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 50})
	for _, c := range []struct {
		tasks, spec, env, want string
	}{
		{"0-7", "0-7", "", "0-7"},
		{"0-7", "0-7%2", "", "0-7%2"},
		{"1,3-5", "1-5", "", "1,3-5"},
		{"0,3,6,9,12,15", "0-15:3", "", "0-15:3"},  // stepped: >5 ids over >10
		{"0,3,6,9,12", "0-12:3", "", "0,3,6,9,12"}, // 5 ids: ranges
		{"0,2,4,6,8,10", "0-10:2", "", "0,2,4,6,8,10"},
		{openapi.IntRanges(many), "0-79", "", "0-79"},
		{long, "1-50", "", long[:60] + "..."},
		{long, "1-50", "0", long},
		{long, "1-50", "20", long[:16] + "..."},
	} {
		t.Setenv("SLURM_BITSTR_LEN", c.env)
		j := api.Job{ID: 7, ArrayJobID: 7, ArrayTasks: c.tasks, Spec: api.JobSpec{Array: c.spec}}
		if got := openapi.ArrayTaskString(&j); got != c.want {
			t.Errorf("%s (%s, SLURM_BITSTR_LEN=%q): %q, want %q", c.tasks, c.spec, c.env, got, c.want)
		}
		if got := jobID(&j); got != "7_["+c.want+"]" {
			t.Errorf("jobID: %q", got)
		}
	}
	if len(long) <= 64 || strings.Count(long, ",") < 20 {
		t.Fatalf("the long case is not long: %q", long)
	}
}

// scontrol show partition prints the partition's own limits (slurm.conf's,
// or scontrol update's), Slurm's defaults without them.
func TestShowPartitionLimits(t *testing.T) {
	p := api.Partition{Name: "long", Nodes: []string{"node1"}, MaxTimeMin: 600, State: "UP",
		Limits: &api.PartitionLimits{DefaultTimeMin: 90, MaxNodes: 2, PriorityTier: 3, PriorityJobFactor: 5,
			OverSubscribe: "exclusive", AllowAccounts: []string{"phys", "chem"}}}
	out := ShowPartition(p, []api.Node{{Name: "node1", CPUs: 2, MemMB: 1000}}, true)
	for _, want := range []string{"AllowAccounts=phys,chem AllowQos=ALL", "DefaultTime=01:30:00 ", "MaxNodes=2 MaxTime=10:00:00 ",
		"PriorityJobFactor=5 PriorityTier=3 ", "OverSubscribe=EXCLUSIVE"} {
		if !strings.Contains(out, want) {
			t.Errorf("show partition lacks %q:\n%s", want, out)
		}
	}
	p.Limits = nil
	out = ShowPartition(p, nil, true)
	for _, want := range []string{"AllowAccounts=ALL AllowQos=ALL", "DefaultTime=NONE ", "MaxNodes=UNLIMITED ", "PriorityJobFactor=1 PriorityTier=1 ", "OverSubscribe=NO"} {
		if !strings.Contains(out, want) {
			t.Errorf("show partition (defaults) lacks %q:\n%s", want, out)
		}
	}
}
