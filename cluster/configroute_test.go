package cluster

import (
	"context"
	"path/filepath"
	"testing"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// TestConfigRoute: GET /api/config answers the parsed slurm.conf and, in
// the same object, what scontrol show config adds (api.ConfigInfo).
func TestConfigRoute(t *testing.T) {
	d, cl := startOne(t)
	var got struct {
		config.Config
		api.ConfigInfo
	}
	if err := cl.Config(context.Background(), &got); err != nil {
		t.Fatal(err)
	}
	if got.ClusterName != "lab" || len(got.Nodes) != 1 || got.KillWait != d.cfg.KillWait {
		t.Errorf("config: %+v", got.Config)
	}
	if want := filepath.Join(filepath.Dir(d.o.Dir), "slurm.conf"); got.SlurmConf != want {
		t.Errorf("SlurmConf %q, want %q", got.SlurmConf, want)
	}
	if got.StateSaveLocation != d.o.Dir || got.NextJobID != 1 || got.BootTime.IsZero() {
		t.Errorf("info: %+v", got.ConfigInfo)
	}
}
