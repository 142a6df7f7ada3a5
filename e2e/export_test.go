package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exportRequireEnv makes TestExportRealSlurm fail, not skip, where Debian's
// slurmctld is not installed (CI installs it).
const exportRequireEnv = "HPC_EXPORT_REQUIRE"

// TestExportRealSlurm: `hpc export slurm` of a running lab (fake GPUs, a
// topology, a partition changed by scontrol, QoS, an account and a user
// added with sacctmgr) is a configuration real Slurm 22.05 runs: Debian's
// slurmctld and one slurmd per node start on it on this machine's loopback
// and run a job over two nodes and a GPU step (scripts/export-check.sh).
func TestExportRealSlurm(t *testing.T) {
	needLab(t)
	if _, err := os.Stat("/usr/sbin/slurmctld"); err != nil {
		if os.Getenv(exportRequireEnv) == "1" {
			t.Fatalf("%s=1 but Debian's slurmctld is not installed: %v", exportRequireEnv, err)
		}
		t.Skip("Debian's slurmctld is not installed (apt-get install slurmctld slurmd slurm-client munge); " +
			exportRequireEnv + "=1 makes this a failure")
	}
	l, _ := startLab(t, "hpc-export-", 4, "", func(top string) {
		dev := filepath.Join(top, "fakedev")
		os.Mkdir(dev, 0o755)
		for i := 0; i < 2; i++ {
			os.Symlink("/dev/null", filepath.Join(dev, fmt.Sprintf("nvidia%d", i)))
		}
		os.WriteFile(filepath.Join(top, "gres.conf"), []byte("NodeName=node[3-4] Name=gpu File="+dev+"/nvidia[0-1]\n"), 0o644)
		os.WriteFile(filepath.Join(top, "topology.conf"), []byte("SwitchName=s1 Nodes=node[1-2]\nSwitchName=s2 Nodes=node[3-4]\nSwitchName=top Switches=s[1-2]\n"), 0o644)
	})
	l.mgr("add", "qos", "high", "Priority=100", "MaxWall=2:00:00")
	l.mgr("add", "account", "physics", "Fairshare=10", "QOS=normal,high")
	l.mgr("add", "user", "nobody", "account=physics")
	if out, errs, code := l.run(0, l.top, "scontrol", "update", "PartitionName=gpu", "MaxTime=2:00:00"); code != 0 {
		t.Fatalf("scontrol update: %s%s", out, errs)
	}
	dir := filepath.Join(l.top, "export")
	if out, errs, code := l.run(0, l.top, "export", "slurm", dir); code != 0 {
		t.Fatalf("hpc export slurm: exit %d\n%s%s", code, out, errs)
	}
	conf, mgr := readFileT(t, filepath.Join(dir, "slurm.conf")), readFileT(t, filepath.Join(dir, "sacctmgr.sh"))
	for _, want := range []string{"PartitionName=gpu Nodes=node[3-4] MaxTime=02:00:00", "TopologyPlugin=topology/tree", "Gres=gpu:2"} {
		if !strings.Contains(conf, want) {
			t.Errorf("the exported slurm.conf lacks %q (the live configuration):\n%s", want, conf)
		}
	}
	for _, want := range []string{"add qos high Priority=100 MaxWall=02:00:00", "add account physics Cluster=lab Parent=root Fairshare=10 QOS=high,normal",
		"add user nobody Cluster=lab Account=physics"} {
		if !strings.Contains(mgr, want) {
			t.Errorf("the exported sacctmgr.sh lacks %q:\n%s", want, mgr)
		}
	}
	// The lab is done with: its CPUs go to Slurm's daemons.
	l.run(0, l.top, "down", "--dir", l.dir)
	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, repoPath(t, "scripts", "export-check.sh"), dir).CombinedOutput()
	t.Logf("scripts/export-check.sh (%.1fs):\n%s", time.Since(start).Seconds(), out)
	if err != nil {
		t.Fatalf("real Slurm on the export: %v", err)
	}
}
