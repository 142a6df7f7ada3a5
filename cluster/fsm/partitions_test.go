package fsm

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

func partNames(c *config.Config) string {
	var names []string
	for _, p := range c.Partitions {
		n := p.Name
		if p.Default {
			n += "*"
		}
		names = append(names, n+"="+p.State)
	}
	return strings.Join(names, " ")
}

func resultErr(t *testing.T, res any) string {
	t.Helper()
	r, ok := res.(Result)
	if !ok {
		t.Fatalf("result %T", res)
	}
	var ae *api.Error
	if errors.As(r.Err, &ae) {
		return ae.Message
	}
	if r.Err != nil {
		return r.Err.Error()
	}
	return ""
}

// Partition changes: create, update (Default moves), delete; refusals
// with Slurm's texts; the live config is what readers see, and a job's
// partition check goes by it.
func TestApplyPartitionChanges(t *testing.T) {
	cfg := testConfig(t)
	f, _ := testFSM(t, cfg)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	short, err := cfg.EditPartition(nil, "short", [][2]string{{"Nodes", "node[1-2]"}, {"MaxTime", "30"}, {"Default", "YES"}})
	if err != nil {
		t.Fatal(err)
	}
	spec := api.JobSpec{Name: "x", Partition: "short", Script: "#!/bin/sh\n", WorkDir: "/tmp"}
	res := applyAll(t, f, []Op{
		&PartitionChange{Time: t0, Action: PartitionCreate, Partition: *short},
		&PartitionChange{Time: t0, Action: PartitionCreate, Partition: *short},
		&Submit{Time: t0, Job: &api.Job{Spec: spec, UID: 1000, User: "ann", Account: "root"}},
		&PartitionChange{Time: t0, Action: PartitionDelete, Partition: config.Partition{Name: "short"}},
		&PartitionChange{Time: t0, Action: PartitionDelete, Partition: config.Partition{Name: "nosuch"}},
		&PartitionChange{Time: t0, Action: PartitionUpdate, Partition: config.Partition{Name: "gpu", Nodes: []string{"node9"}, State: "UP"}},
	}, 1)
	want := []string{"", api.ErrInvalidPartition, "", api.ErrPartitionInUse, api.ErrInvalidPartition, "malformed entry"}
	for i, w := range want {
		if got := resultErr(t, res[i]); !strings.Contains(got, w) || (w == "" && got != "") {
			t.Errorf("entry %d: %q, want %q", i, got, w)
		}
	}
	if got := partNames(f.Config()); got != "debug=UP gpu=UP short*=UP" {
		t.Errorf("partitions %s", got)
	}
	if p := f.Config().Partition("short"); p == nil || p.MaxTimeMin != 30 || !reflect.DeepEqual(p.Nodes, []string{"node1", "node2"}) {
		t.Errorf("short: %+v", p)
	}
	if cfg.Partition("short") != nil || !cfg.Partitions[0].Default {
		t.Error("the daemon's config was changed in place")
	}
	// Cancel the job, then delete; a start in the partition is refused.
	down := *f.Config().Partition("debug")
	down.State = "DOWN"
	res = applyAll(t, f, []Op{
		&Cancel{Time: t0, JobID: 1, UID: 0},
		&PartitionChange{Time: t0, Action: PartitionDelete, Partition: config.Partition{Name: "short"}},
		&Start{Time: t0, Starts: []JobStart{{JobID: 1, Alloc: []api.NodeAlloc{{Node: "node1", CPUs: 1}}, Partition: "short"}}},
		&PartitionChange{Time: t0, Action: PartitionUpdate, Partition: down},
	}, 10)
	for i, w := range []string{"", "", api.ErrInvalidPartition, ""} {
		if got := resultErr(t, res[i]); got != w {
			t.Errorf("second batch entry %d: %q, want %q", i, got, w)
		}
	}
	if got := partNames(f.Config()); got != "debug=DOWN gpu=UP" {
		t.Errorf("after delete: %s", got)
	}
}

// Partitions and a reconfigure's files survive a snapshot and restore,
// and a log replayed on a fresh FSM gives the same live config.
func TestPartitionsSnapshotRestore(t *testing.T) {
	cfg := testConfig(t)
	f, _ := testFSM(t, cfg)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	text := strings.Replace(cfg.Text, "KillWait=30", "KillWait=45", 1) + "PartitionName=long Nodes=node3 MaxTime=2-00:00:00\n"
	extra, _ := cfg.EditPartition(nil, "extra", [][2]string{{"Nodes", "ALL"}})
	ops := []Op{
		&PartitionChange{Time: t0, Action: PartitionCreate, Partition: *extra},
		&Reconfigure{Time: t0, Files: config.Files{Slurm: text}},
		&PartitionChange{Time: t0, Action: PartitionCreate, Partition: *extra},
	}
	for i, r := range applyAll(t, f, ops, 1) {
		if e := resultErr(t, r); e != "" {
			t.Fatalf("entry %d: %s", i, e)
		}
	}
	// The reconfigure dropped scontrol's partition (slurm.conf's are read
	// again), kept what needs a restart, and took KillWait.
	live := f.Config()
	if got := partNames(live); got != "debug*=UP gpu=UP long=UP extra=UP" {
		t.Errorf("partitions %s", got)
	}
	if live.KillWait != 45 || live.Node("node2") == nil || live.APIPort != cfg.APIPort {
		t.Errorf("reconfigured config: KillWait %d", live.KillWait)
	}

	g, _ := testFSM(t, cfg)
	if err := g.Restore(io.NopCloser(strings.NewReader(string(persisted(t, f))))); err != nil {
		t.Fatal(err)
	}
	h, _ := testFSM(t, cfg)
	applyAll(t, h, ops, 1)
	for name, other := range map[string]*FSM{"restored": g, "replayed": h} {
		c := other.Config()
		if !reflect.DeepEqual(c.Partitions, live.Partitions) || c.KillWait != 45 {
			t.Errorf("%s: partitions %s, KillWait %d", name, partNames(c), c.KillWait)
		}
	}
}

// ReconfigFlags=KeepPartInfo keeps scontrol's partitions; KeepPartState
// keeps only their states.
func TestReconfigureKeepsPartitions(t *testing.T) {
	cfg := testConfig(t)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct{ flag, want string }{
		{"KeepPartInfo", "debug*=DOWN gpu=UP extra=UP long=UP"},
		{"KeepPartState", "debug*=DOWN gpu=UP long=UP"},
	} {
		f, _ := testFSM(t, cfg)
		extra, _ := cfg.EditPartition(nil, "extra", [][2]string{{"Nodes", "node1"}})
		down, _ := cfg.EditPartition(cfg.Partition("debug"), "debug", [][2]string{{"State", "DOWN"}})
		text := cfg.Text + "ReconfigFlags=" + c.flag + "\nPartitionName=long Nodes=node3\n"
		for i, r := range applyAll(t, f, []Op{
			&PartitionChange{Time: t0, Action: PartitionCreate, Partition: *extra},
			&PartitionChange{Time: t0, Action: PartitionUpdate, Partition: *down},
			&Reconfigure{Time: t0, Files: config.Files{Slurm: text}},
		}, 1) {
			if e := resultErr(t, r); e != "" {
				t.Fatalf("%s entry %d: %s", c.flag, i, e)
			}
		}
		if got := partNames(f.Config()); got != c.want {
			t.Errorf("%s: %s, want %s", c.flag, got, c.want)
		}
	}
	// A file that does not parse is refused; the config stays.
	f, _ := testFSM(t, cfg)
	res := applyAll(t, f, []Op{&Reconfigure{Time: t0, Files: config.Files{Slurm: "Bogus Line"}}}, 1)
	if e := resultErr(t, res[0]); !strings.Contains(e, "malformed") || f.Config() != cfg {
		t.Errorf("bad file: %q", e)
	}
}

// A snapshot's partitions naming nodes the restarted daemon's config no
// longer has lose those nodes.
func TestRestoreDropsUnknownNodes(t *testing.T) {
	cfg := testConfig(t)
	f, _ := testFSM(t, cfg)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	all, _ := cfg.EditPartition(nil, "all", [][2]string{{"Nodes", "ALL"}})
	applyAll(t, f, []Op{&PartitionChange{Time: t0, Action: PartitionCreate, Partition: *all}}, 1)
	small, err := config.LabConfig(2)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := testFSM(t, small)
	if err := g.Restore(io.NopCloser(strings.NewReader(string(persisted(t, f))))); err != nil {
		t.Fatal(err)
	}
	if p := g.Config().Partition("all"); p == nil || !reflect.DeepEqual(p.Nodes, []string{"node1", "node2"}) {
		t.Errorf("restored: %+v", p)
	}
}
