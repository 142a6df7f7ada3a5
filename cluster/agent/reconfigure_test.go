package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hpc/cluster/config"
)

// scontrol reconfigure reaches every node: the agent re-reads its
// slurm.conf, and refuses (keeping what it has) a file whose nodes,
// controllers or ports changed.
func TestAgentReconfigure(t *testing.T) {
	text, err := config.Lab(2)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "slurm.conf")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(text)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ag := New(Options{Name: "node1", Config: cfg, ConfigPath: path})
	if ag.conf().KillWait != 30 || ag.conf().Prolog != "" {
		t.Fatalf("start: KillWait %d Prolog %q", ag.conf().KillWait, ag.conf().Prolog)
	}
	write(strings.Replace(text, "KillWait=30", "KillWait=5\nProlog=/etc/hpc/prolog", 1))
	if err := ag.Reconfigure(); err != nil {
		t.Fatal(err)
	}
	if ag.conf().KillWait != 5 || ag.conf().Prolog != "/etc/hpc/prolog" {
		t.Errorf("after reconfigure: KillWait %d Prolog %q", ag.conf().KillWait, ag.conf().Prolog)
	}
	write(strings.Replace(text, "HpcApiPort=7817", "HpcApiPort=7917", 1))
	if err := ag.Reconfigure(); err == nil || ag.conf().KillWait != 5 || ag.conf().APIPort != 7817 {
		t.Errorf("a port change: %v, KillWait %d, port %d", err, ag.conf().KillWait, ag.conf().APIPort)
	}
	write("NodeName=broken[")
	if err := ag.Reconfigure(); err == nil || ag.conf().KillWait != 5 {
		t.Errorf("a broken file: %v", err)
	}
}
