package fsm

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"hpc/cluster/api"
)

// TestCPUIDs: a starting job gets the lowest CPUs of its nodes that no
// running job holds; an ended job's CPUs are free again; a job that needs
// more than is free shares the least used ones.
func TestCPUIDs(t *testing.T) {
	cfg := testConfig(t) // two CPUs per node
	f, _ := testFSM(t, cfg)
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	spec := api.JobSpec{Name: "wrap", Partition: "debug", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp"}
	var cmds []Op
	for i := 0; i < 4; i++ {
		cmds = append(cmds, &Submit{Time: t0, Job: &api.Job{Spec: spec, UID: 1000, GID: 1000, User: "ann", Group: "ann", Account: "ann"}})
	}
	start := func(id uint64, cpus int, nodes ...string) Op {
		var a []api.NodeAlloc
		for _, n := range nodes {
			a = append(a, api.NodeAlloc{Node: n, CPUs: cpus, MemMB: 100})
		}
		return &Start{Time: t0, Starts: []JobStart{{JobID: id, Alloc: a, StdOut: "/dev/null", StdErr: "/dev/null"}}}
	}
	ids := func(id uint64) string {
		var out string
		f.View(func(st *State) {
			for _, a := range st.Jobs[id].Alloc {
				out += fmt.Sprintf("%s:%v ", a.Node, a.CPUIDs)
			}
		})
		return out
	}
	applyAll(t, f, append(cmds,
		&NodeStateChange{Time: t0, Node: "node1", State: "UP"},
		&NodeStateChange{Time: t0, Node: "node2", State: "UP"},
		start(1, 1, "node1"),
		start(2, 1, "node1", "node2"),
	), 1)
	if got := ids(1) + ids(2); got != "node1:[0] node1:[1] node2:[0] " {
		t.Fatalf("first two jobs: %q", got)
	}
	applyAll(t, f, []Op{
		&End{Time: t0.Add(time.Second), End: api.JobEnd{JobID: 1, Node: "node1"}},
		start(3, 1, "node1"),
	}, 100)
	if got := ids(3); got != "node1:[0] " {
		t.Errorf("after job 1 ended: %q", got)
	}
	applyAll(t, f, []Op{start(4, 2, "node2")}, 200)
	if got := ids(4); got != "node2:[0 1] " {
		t.Errorf("over-full node: %q", got)
	}
	// Every controller picks the same: a second FSM fed the same log.
	g, _ := testFSM(t, cfg)
	applyAll(t, g, append(cmds,
		&NodeStateChange{Time: t0, Node: "node1", State: "UP"},
		&NodeStateChange{Time: t0, Node: "node2", State: "UP"},
		start(1, 1, "node1"), start(2, 1, "node1", "node2")), 1)
	var a, b []int
	f.View(func(st *State) { a = slices.Clone(st.Jobs[2].Alloc[0].CPUIDs) })
	g.View(func(st *State) { b = slices.Clone(st.Jobs[2].Alloc[0].CPUIDs) })
	if !slices.Equal(a, b) {
		t.Errorf("controllers disagree: %v %v", a, b)
	}
}
