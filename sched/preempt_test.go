package sched

import (
	"reflect"
	"testing"
	"time"
)

func preemptLab() Snapshot {
	s := lab(2)
	s.Config.PreemptType = "preempt/qos"
	s.Config.PreemptMode = PreemptRequeue
	s.QOS = []QOS{
		{Name: "normal"},
		{Name: "scavenger", PreemptMode: PreemptCancel},
		{Name: "high", Priority: 10, Preempt: []string{"normal", "scavenger"}},
		{Name: "frozen", PreemptMode: PreemptOff},
	}
	s.Config.PriorityWeightQOS = 1000
	return s
}

func runningJob(id uint64, qos string, age time.Duration, node string, cpus int) RunningJob {
	return RunningJob{ID: id, QOS: qos, StartTime: t0.Add(-age), EndTime: t0.Add(time.Hour),
		Alloc: []Alloc{{Node: node, CPUs: cpus}}}
}

func TestPreemptFewestYoungest(t *testing.T) {
	s := preemptLab()
	s.Running = []RunningJob{
		runningJob(10, "normal", 3*time.Hour, "node1", 2),
		runningJob(11, "normal", 2*time.Hour, "node2", 1),
		runningJob(12, "scavenger", time.Hour, "node2", 1),
	}
	// Two CPUs on one node: node1 costs one victim, node2 two.
	s.Pending = []Job{{ID: 1, QOS: "high", NTasks: 2}}
	res := Schedule(s)
	st := startOf(res, 1)
	if st == nil || st.Alloc[0].Node != "node1" || !reflect.DeepEqual(st.Preempts, []uint64{10}) {
		t.Fatalf("start %+v", st)
	}
	if !reflect.DeepEqual(res.Preempt, []Preemption{{JobID: 10, Mode: PreemptRequeue, For: 1}}) {
		t.Fatalf("preempt %+v", res.Preempt)
	}
	// One CPU: the youngest job goes, cancelled as its QoS says.
	s.Pending = []Job{{ID: 2, QOS: "high"}}
	res = Schedule(s)
	if st := startOf(res, 2); st == nil || st.Alloc[0].Node != "node2" || !reflect.DeepEqual(st.Preempts, []uint64{12}) {
		t.Fatalf("start %+v", st)
	}
	if !reflect.DeepEqual(res.Preempt, []Preemption{{JobID: 12, Mode: PreemptCancel, For: 2}}) {
		t.Fatalf("preempt %+v", res.Preempt)
	}
}

func TestPreemptOnlyWhatTheQOSMay(t *testing.T) {
	s := preemptLab()
	s.Running = []RunningJob{
		runningJob(10, "frozen", time.Hour, "node1", 2),
		runningJob(11, "high", time.Hour, "node2", 2),
	}
	s.Pending = []Job{{ID: 1, QOS: "high", NTasks: 2}, {ID: 2, QOS: "normal"}}
	res := Schedule(s)
	if len(res.Starts) != 0 || len(res.Preempt) != 0 {
		t.Fatalf("got %+v", res)
	}
	// Without preempt/qos nothing is preempted either.
	s.Running[0].QOS = "normal"
	s.Config.PreemptType = ""
	if res := Schedule(s); len(res.Preempt) != 0 {
		t.Fatalf("preempted without PreemptType: %+v", res.Preempt)
	}
	s.Config.PreemptType = "preempt/qos"
	res = Schedule(s)
	if st := startOf(res, 1); st == nil || !reflect.DeepEqual(st.Preempts, []uint64{10}) {
		t.Fatalf("got %+v", res)
	}
	// The normal job does not get the freed room twice.
	if startOf(res, 2) != nil {
		t.Fatal("job 2 started on preempted resources")
	}
}

func TestPreemptMultiNode(t *testing.T) {
	s := preemptLab()
	s.Running = []RunningJob{
		runningJob(10, "normal", time.Hour, "node1", 1),
		runningJob(11, "normal", 2*time.Hour, "node1", 1),
		runningJob(12, "normal", 3*time.Hour, "node2", 2),
	}
	s.Pending = []Job{{ID: 1, QOS: "high", Nodes: 2, NTasks: 3}}
	res := Schedule(s)
	st := startOf(res, 1)
	// node2 costs one victim, node1 two; with both freed, job 11 turns out
	// not to be needed (one task fits where job 10 was).
	if st == nil || !reflect.DeepEqual(st.Preempts, []uint64{10, 12}) || st.Alloc[0].Tasks != 1 || st.Alloc[1].Tasks != 2 {
		t.Fatalf("start %+v reasons %v", st, reasons(res))
	}
	// The limits see the victims go and the job come.
	s.QOS[2].Limits.GrpTRES.CPU = 3
	if res := Schedule(s); startOf(res, 1) == nil {
		t.Fatalf("limits: %v", reasons(res))
	}
}
