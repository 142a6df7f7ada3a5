package format

import (
	"strings"
	"testing"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

func TestNodeStateNames(t *testing.T) {
	for _, c := range []struct {
		in                     string
		long, compact, complet string
	}{
		{"IDLE", "IDLE", "IDLE", "IDLE"},
		{"idle", "IDLE", "IDLE", "IDLE"},
		{"MIXED", "MIXED", "MIX", "MIXED"},
		{"ALLOCATED", "ALLOCATED", "ALLOC", "ALLOCATED"},
		{"DOWN", "DOWN", "DOWN", "DOWN"},
		{"UNKNOWN", "UNKNOWN", "UNK", "UNKNOWN"},
		{"DOWN*", "DOWN*", "DOWN*", "DOWN+NOT_RESPONDING"},
		{"DOWN+NOT_RESPONDING", "DOWN*", "DOWN*", "DOWN+NOT_RESPONDING"},
		{"IDLE*", "IDLE*", "IDLE*", "IDLE+NOT_RESPONDING"},
		{"UNKNOWN*", "UNKNOWN*", "UNK*", "UNKNOWN+NOT_RESPONDING"},
		{"IDLE+DRAIN", "DRAINED", "DRAIN", "IDLE+DRAIN"},
		{"DRAINED", "DRAINED", "DRAIN", "IDLE+DRAIN"},
		{"ALLOCATED+DRAIN", "DRAINING", "DRNG", "ALLOCATED+DRAIN"},
		{"IDLE+DRAIN+NOT_RESPONDING", "DRAINED*", "DRAIN*", "IDLE+DRAIN+NOT_RESPONDING"},
		{"ALLOCATED+COMPLETING", "ALLOCATED+", "ALLOC+", "ALLOCATED+COMPLETING"},
		{"IDLE+COMPLETING", "COMPLETING", "COMP", "IDLE+COMPLETING"},
		{"IDLE+FAIL", "FAIL", "FAIL", "IDLE+FAIL"},
		{"IDLE+MAINTENANCE", "MAINT", "MAINT", "IDLE+MAINTENANCE"},
		{"DOWN+MAINTENANCE", "DOWN$", "DOWN$", "DOWN+MAINTENANCE"},
		{"IDLE+RESERVED", "RESERVED", "RESV", "IDLE+RESERVED"},
	} {
		st := openapi.ParseNodeState(c.in)
		if got := st.Name(false); got != c.long {
			t.Errorf("%s: long name %q, want %q", c.in, got, c.long)
		}
		if got := st.Name(true); got != c.compact {
			t.Errorf("%s: compact name %q, want %q", c.in, got, c.compact)
		}
		if got := st.Complete(); got != c.complet {
			t.Errorf("%s: complete name %q, want %q", c.in, got, c.complet)
		}
	}
}

func TestEffectiveNodeStateMixed(t *testing.T) {
	n := api.Node{Name: "n1", CPUs: 4, AllocCPUs: 1, State: api.NodeAllocated}
	if got := openapi.EffectiveNodeState(n, true).Name(false); got != "MIXED" {
		t.Errorf("partly used node is %q, want MIXED", got)
	}
	n.AllocCPUs = 4
	if got := openapi.EffectiveNodeState(n, true).Name(false); got != "ALLOCATED" {
		t.Errorf("fully used node is %q, want ALLOCATED", got)
	}
	n.AllocCPUs, n.State = 1, "ALLOCATED+DRAIN"
	if got := openapi.EffectiveNodeState(n, true).Name(false); got != "DRAINING" {
		t.Errorf("sinfo: draining node is %q, want DRAINING", got)
	}
	if got := openapi.EffectiveNodeState(n, false).Complete(); got != "MIXED+DRAIN" {
		t.Errorf("scontrol: draining node is %q, want MIXED+DRAIN", got)
	}
}

func TestSinfoSummaryStates(t *testing.T) {
	nodes := refNodes()
	nodes[0].State, nodes[0].AllocCPUs = api.NodeMixed, 1
	nodes[1].State, nodes[1].Reason = "DOWN*", "Not responding"
	nodes[2].State, nodes[2].AllocCPUs = api.NodeAllocated, 2
	parts := refPartitions()
	parts[1].MaxTimeMin = -1
	parts[1].State = "DOWN"
	parts = append(parts, api.Partition{Name: "empty", MaxTimeMin: 90})
	got := Sinfo(parts, nodes, SinfoOptions{})
	want := `PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
debug*       up 1-00:00:00      1  down* node2
debug*       up 1-00:00:00      1    mix node1
debug*       up 1-00:00:00      1  alloc node3
debug*       up 1-00:00:00      1   idle node4
gpu        down   infinite      1  alloc node3
gpu        down   infinite      1   idle node4
empty        up    1:30:00      0    n/a 
`
	if got != want {
		t.Errorf("sinfo:\n%s\nwant:\n%s", got, want)
	}
}

func TestSinfoGroupsAndWidths(t *testing.T) {
	var nodes []api.Node
	for _, name := range []string{"node10", "node2", "node1", "node3"} {
		nodes = append(nodes, api.Node{Name: name, CPUs: 8, MemMB: 1024, State: api.NodeIdle, Partitions: []string{"interactive"}})
	}
	nodes[3].State = api.NodeDown
	// No Nodes list: membership comes from the nodes' Partitions.
	parts := []api.Partition{{Name: "interactive", Default: true, MaxTimeMin: 60}}
	got := Sinfo(parts, nodes, SinfoOptions{NoHeader: true})
	want := "interactive*    up    1:00:00      3   idle node[1-2,10]\n" +
		"interactive*    up    1:00:00      1   down node3\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}

	got = Sinfo(parts, nodes, SinfoOptions{NodeCentric: true})
	want = "NODELIST   NODES    PARTITION STATE \n" +
		"node1          1 interactive* idle  \n" +
		"node2          1 interactive* idle  \n" +
		"node3          1 interactive* down  \n" +
		"node10         1 interactive* idle  \n"
	if got != want {
		t.Errorf("sinfo -N got\n%q\nwant\n%q", got, want)
	}
}

func TestSinfoLongSummary(t *testing.T) {
	got := Sinfo(refPartitions()[:1], busyNodes(), SinfoOptions{Long: true, Now: at(4, 59, 33)})
	want := "Mon Nov 30 04:59:33 2026\n" +
		"PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST\n" +
		"debug*       up 1-00:00:00 1-infinite   no       NO        all      3   allocated node[1-3]\n" +
		"debug*       up 1-00:00:00 1-infinite   no       NO        all      1        idle node4\n"
	if got != want {
		t.Errorf("sinfo -l got\n%s\nwant\n%s", got, want)
	}
	if got := Sinfo(refPartitions(), busyNodes(), SinfoOptions{Long: true, NoHeader: true, Now: at(4, 59, 33)}); strings.Contains(got, "2026") {
		t.Errorf("-l -h printed the date: %q", got)
	}
}

func TestSinfoNodeLongReason(t *testing.T) {
	nodes := refNodes()[:1]
	nodes[0].State = "IDLE+DRAIN"
	nodes[0].Reason = "disk replacement scheduled today"
	got := Sinfo(refPartitions()[:1], nodes, SinfoOptions{NodeCentric: true, Long: true, NoHeader: true})
	want := "node1          1    debug*     drained 2       1:2:1   4000        0      1   (null) disk replacement sch\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
