package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// EditPartition applies a partition line's keys to a new partition or a
// copy of one; Line prints a partition that parses back to itself; and
// WithPartitionLines puts the live partitions in place of a file's.
func TestEditPartitionAndLine(t *testing.T) {
	c, err := LabConfig(4)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.EditPartition(nil, "short", [][2]string{{"Nodes", "node[1-2]"}, {"MaxTime", "30"}, {"DefaultTime", "10"},
		{"MaxNodes", "2"}, {"PriorityTier", "3"}, {"AllowAccounts", "a,b"}, {"MinNodes", "1"}, {"State", "DRAIN"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Partition{Name: "short", Nodes: []string{"node1", "node2"}, MaxTimeMin: 30, DefaultTimeMin: 10, MaxNodes: 2,
		State: "DRAIN", PriorityTier: 3, PriorityJobFactor: 1, OverSubscribe: "NO", AllowAccounts: []string{"a", "b"}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("created %+v", p)
	}
	base := c.Partition("debug")
	q, err := c.EditPartition(base, "debug", [][2]string{{"State", "DOWN"}, {"Nodes", "node4"}})
	if err != nil || q.State != "DOWN" || !reflect.DeepEqual(q.Nodes, []string{"node4"}) || !q.Default || q.MaxTimeMin != 1440 {
		t.Errorf("updated %+v %v", q, err)
	}
	if base.State != "UP" || len(base.Nodes) != 4 {
		t.Errorf("the base changed: %+v", base)
	}
	all, _ := c.EditPartition(nil, "all", [][2]string{{"Nodes", "ALL"}})
	if len(all.Nodes) != 4 {
		t.Errorf("Nodes=ALL: %v", all.Nodes)
	}
	if _, err := c.EditPartition(nil, "x", [][2]string{{"Nodes", "node9"}}); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
	for _, kv := range [][2]string{{"MaxTime", "soon"}, {"State", "HALF"}, {"Bogus", "1"}} {
		if _, err := c.EditPartition(nil, "x", [][2]string{kv}); err == nil {
			t.Errorf("%v accepted", kv)
		}
	}

	text := WithPartitionLines(c.Text+"PartitionName=old \\\n  Nodes=node1\n# after\n", []Partition{*c.Partition("debug"), *p})
	if strings.Contains(text, "PartitionName=gpu") || strings.Contains(text, "PartitionName=old") || strings.Contains(text, "  Nodes=node1") ||
		!strings.Contains(text, "\n"+p.Line()+"\n") || !strings.HasSuffix(text, "# after\n") {
		t.Errorf("file:\n%s", text)
	}
	back, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Partitions, []Partition{*c.Partition("debug"), *p}) {
		t.Errorf("parsed back: %+v", back.Partitions)
	}
}

// A reconfigure's files parse as LoadAll's; NeedsRestart sees node and
// port changes; KeepRestartKeys keeps the running ones.
func TestParseFilesAndRestartKeys(t *testing.T) {
	c, _ := LabConfig(2)
	next, err := ParseFiles(Files{Slurm: strings.Replace(c.Text, "KillWait=30", "KillWait=5", 1)})
	if err != nil || next.KillWait != 5 || next.NeedsRestart(c) {
		t.Fatalf("%v %+v", err, next)
	}
	moved, _ := ParseFiles(Files{Slurm: strings.Replace(c.Text, "RealMemory=4000", "RealMemory=2000", 1)})
	if !moved.NeedsRestart(c) {
		t.Error("a node change does not need a restart")
	}
	moved.KeepRestartKeys(c)
	if moved.NeedsRestart(c) || moved.Node("node1").RealMemoryMB != 4000 {
		t.Error("KeepRestartKeys")
	}
}
