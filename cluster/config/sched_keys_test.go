package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestSchedulingKeys(t *testing.T) {
	text := `ClusterName=lab
SlurmctldHost=node1(127.0.1.1)
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=100
PriorityWeightPartition=1000
PriorityWeightQOS=5000
PriorityMaxAge=1-00:00:00
PriorityDecayHalfLife=7-0
PriorityFavorSmall=YES
PriorityCalcPeriod=5
PreemptType=preempt/qos
PreemptMode=REQUEUE
SchedulerParameters=bf_max_job_test=200,bf_continue
NodeName=node[1-2] CPUs=2 RealMemory=1000
PartitionName=short Nodes=ALL Default=YES PriorityTier=2 PriorityJobFactor=10 OverSubscribe=EXCLUSIVE AllowAccounts=physics,chem AllowQos=ALL
PartitionName=long Nodes=node2
`
	c, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := Priority{Type: "priority/multifactor", WeightAge: 1000, WeightFairshare: 10000, WeightJobSize: 100,
		WeightPartition: 1000, WeightQOS: 5000, MaxAgeMin: 24 * 60, DecayHalfLifeMin: 7 * 24 * 60, FavorSmall: true, CalcPeriodMin: 5}
	if c.Priority != want {
		t.Errorf("priority %+v, want %+v", c.Priority, want)
	}
	if c.PreemptType != "preempt/qos" || c.PreemptMode != "REQUEUE" {
		t.Errorf("preempt %s %s", c.PreemptType, c.PreemptMode)
	}
	if c.SchedulerParameters["bf_max_job_test"] != "200" {
		t.Errorf("scheduler parameters %v", c.SchedulerParameters)
	}
	short, long := c.Partition("short"), c.Partition("long")
	if short.PriorityTier != 2 || short.PriorityJobFactor != 10 || short.OverSubscribe != "EXCLUSIVE" ||
		!reflect.DeepEqual(short.AllowAccounts, []string{"physics", "chem"}) || short.AllowQos != nil {
		t.Errorf("short %+v", short)
	}
	if long.PriorityTier != 1 || long.PriorityJobFactor != 1 || long.OverSubscribe != "NO" || long.AllowAccounts != nil {
		t.Errorf("long defaults %+v", long)
	}
	for _, bad := range []string{"PriorityWeightAge=lots", "PriorityCalcPeriod=soon", "PreemptType=preempt/partition_prio", "PriorityFavorSmall=maybe"} {
		if _, err := Parse(strings.NewReader(strings.Replace(text, "PriorityType=priority/multifactor", bad, 1))); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := Parse(strings.NewReader(strings.Replace(text, "OverSubscribe=EXCLUSIVE", "OverSubscribe=FORCE:4", 1))); err == nil {
		t.Error("OverSubscribe=FORCE accepted without support")
	}
}
