package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadAllGresAndTopology(t *testing.T) {
	dir := t.TempDir()
	text, _ := Lab(4)
	os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte(text), 0o644)
	os.WriteFile(filepath.Join(dir, "gres.conf"), []byte("# fake GPUs\nNodeName=node[3-4] Name=gpu File=/dev/null\\\n"+
		"\nNodeName=node[3-4] Name=gpu File=/dev/null\n"), 0o644)
	if _, err := LoadAll(filepath.Join(dir, "slurm.conf")); err == nil || !strings.Contains(err.Error(), "gres.conf line") {
		t.Fatalf("a device count that does not match Gres= must be refused with its line: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "gres.conf"), []byte("NodeName=node[3-4] Name=gpu File=/dev/fake/nvidia[0-1]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "topology.conf"), []byte("SwitchName=s1 Nodes=node[1-2]\nSwitchName=s2 Nodes=node[3-4]\nSwitchName=top Switches=s[1-2]\n"), 0o644)
	c, err := LoadAll(filepath.Join(dir, "slurm.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.GresDevices) != 2 || c.GresDevices[1].Node != "node4" || c.GresDevices[1].Files[1] != "/dev/fake/nvidia1" {
		t.Errorf("gres devices %+v", c.GresDevices)
	}
	if len(c.Topology) != 3 || c.Topology[2].Switches[1] != "s2" || c.Topology[0].Nodes[1] != "node2" {
		t.Errorf("topology %+v", c.Topology)
	}
	for _, bad := range []string{
		"SwitchName=s1 Nodes=node9\n",
		"SwitchName=a Switches=b\nSwitchName=b Switches=a\n",
		"SwitchName=a Switches=nosuch\n",
		"SwitchName=a Nodes=node1\nSwitchName=a Nodes=node2\n",
		"SwitchName=a Colour=blue\n",
	} {
		if _, err := ParseTopology(strings.NewReader(bad), c); err == nil {
			t.Errorf("topology %q accepted", bad)
		}
	}
	for _, bad := range []string{"NodeName=node1 Name=gpu Count=2\n", "NodeName=node3 File=/dev/null\n", "NodeName=node3 Name=gpu AutoDetect=nvml\n"} {
		if _, err := ParseGres(strings.NewReader(bad), c); err == nil {
			t.Errorf("gres %q accepted", bad)
		}
	}
}
