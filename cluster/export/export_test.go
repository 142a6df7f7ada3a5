package export

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hpc/cluster/acct"
	"hpc/cluster/api"
	"hpc/cluster/config"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/*/golden")

func ip(n int) *int                                 { return &n }
func i64(n int64) *int64                            { return &n }
func sp(s string) *string                           { return &s }
func edit(op string, names ...string) *api.ListEdit { return &api.ListEdit{Op: op, Names: names} }

// labRecords are sacctmgr records as a running lab would have them: two
// QoS with preemption, an account tree with limits, users with admin
// levels and several associations, made through acct as the FSM makes
// them, and answered as GET /api/acctmgr answers (View).
func labRecords(t *testing.T) *api.AcctmgrState {
	t.Helper()
	st := acct.New()
	for _, req := range []api.AcctmgrRequest{
		{Action: "add", Entity: "qos", Names: []string{"low"}, Set: api.AcctmgrSet{Description: sp("Scavenger jobs"), MaxWallMin: i64(120)}},
		{Action: "add", Entity: "qos", Names: []string{"high"}, Set: api.AcctmgrSet{Priority: ip(100), MaxJobsPerUser: ip(4),
			MaxTRESPerUser: api.TRES{"cpu": 4, "gres/gpu": 2}, Preempt: edit("=", "low"), PreemptMode: sp("REQUEUE")}},
		{Action: "modify", Entity: "qos", Names: []string{"normal"}, Set: api.AcctmgrSet{GrpTRES: api.TRES{"mem": 16000}}},
		{Action: "add", Entity: "account", Names: []string{"physics"}, Set: api.AcctmgrSet{Description: sp("Physics department"),
			Organization: sp("science"), Fairshare: ip(10), GrpTRES: api.TRES{"cpu": 8}, MaxJobs: ip(5),
			QOS: edit("=", "normal", "high", "low"), DefaultQOS: sp("normal")}},
		{Action: "add", Entity: "account", Names: []string{"theory"}, Set: api.AcctmgrSet{Parent: sp("physics"), MaxWallMin: i64(60)}},
		{Action: "add", Entity: "user", Names: []string{"alice"}, Accounts: []string{"theory"}, Set: api.AcctmgrSet{DefaultAccount: sp("theory")}},
		{Action: "add", Entity: "user", Names: []string{"alice"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{MaxJobs: ip(2)}},
		{Action: "modify", Entity: "user", Names: []string{"alice"}, Set: api.AcctmgrSet{AdminLevel: sp("Operator")}},
		{Action: "add", Entity: "user", Names: []string{"bob"}, Accounts: []string{"physics"}, Set: api.AcctmgrSet{DefaultAccount: sp("physics")}},
	} {
		if _, err := st.Apply(&acct.Op{Req: req, UID: 0, User: "root"}, "lab"); err != nil {
			t.Fatalf("%s %s %v: %v", req.Action, req.Entity, req.Names, err)
		}
	}
	v := st.View(api.AcctCluster{Name: "lab"})
	return &v
}

// exportOf exports the slurm.conf (and its gres.conf and topology.conf)
// of a testdata folder.
func exportOf(t *testing.T, dir string, records *api.AcctmgrState) (*config.Config, map[string]string) {
	t.Helper()
	cfg, err := config.LoadAll(filepath.Join("testdata", dir, "slurm.conf"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Slurm(Source{Config: cfg, Records: records, From: "testdata/" + dir + "/slurm.conf", Host: "vm"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		out[f.Name] = f.Text
	}
	return cfg, out
}

// TestExportGolden: the export of the lab (one machine: fake GPUs, a
// topology, multifactor priority, QoS and accounts) and of three machines
// (real addresses, typed GPUs, no records) is the files of testdata/*/golden
// (go test -run TestExportGolden -update rewrites them).
func TestExportGolden(t *testing.T) {
	for _, c := range []struct {
		dir     string
		records *api.AcctmgrState
		want    []string
	}{
		{"lab", labRecords(t), []string{"slurm.conf", "gres.conf", "topology.conf", "cgroup.conf", "sacctmgr.sh", "README"}},
		{"vms", nil, []string{"slurm.conf", "gres.conf", "cgroup.conf", "sacctmgr.sh", "README"}},
	} {
		t.Run(c.dir, func(t *testing.T) {
			_, files := exportOf(t, c.dir, c.records)
			if len(files) != len(c.want) {
				t.Errorf("files %v, want %v", keys(files), c.want)
			}
			for _, name := range c.want {
				golden := filepath.Join("testdata", c.dir, "golden", name)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(files[name]), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if files[name] != string(want) {
					t.Errorf("%s differs from %s:\n%s", name, golden, files[name])
				}
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestExportRoundTrip: hpc reads the exported slurm.conf, gres.conf and
// topology.conf back to the cluster's shape: the same nodes (hardware,
// addresses, GRES, features, weights), partitions, priority, limits and
// switches. A cluster on one machine comes back with one controller, this
// machine, and its nodes' NodeHostname; hpc's own keys come back at their
// defaults (the export leaves them out).
func TestExportRoundTrip(t *testing.T) {
	for _, dir := range []string{"lab", "vms"} {
		t.Run(dir, func(t *testing.T) {
			orig, files := exportOf(t, dir, nil)
			back, err := config.ParseFiles(config.Files{Slurm: files["slurm.conf"], Gres: files["gres.conf"], Topology: files["topology.conf"]})
			if err != nil {
				t.Fatalf("hpc does not read its export back: %v\n%s", err, files["slurm.conf"])
			}
			oneHost := newLayout(Source{Config: orig}).oneHost
			if oneHost != (dir == "lab") {
				t.Fatalf("one machine: %v", oneHost)
			}
			wantNodes := append([]config.Node(nil), orig.Nodes...)
			for i := range wantNodes {
				if oneHost {
					wantNodes[i].Hostname = "vm"
				}
			}
			same := func(what string, got, want any) {
				t.Helper()
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
				}
			}
			same("nodes", back.Nodes, wantNodes)
			same("partitions", back.Partitions, orig.Partitions)
			same("priority", back.Priority, orig.Priority)
			same("gres devices", withFiles(back.GresDevices), withFiles(orig.GresDevices))
			same("topology", back.Topology, orig.Topology)
			for _, x := range [][3]any{
				{"ClusterName", back.ClusterName, orig.ClusterName}, {"DefMemPerCPU", back.DefMemPerCPU, orig.DefMemPerCPU},
				{"KillWait", back.KillWait, orig.KillWait}, {"MinJobAge", back.MinJobAge, orig.MinJobAge},
				{"SlurmdTimeout", back.SlurmdTimeout, orig.SlurmdTimeout}, {"EnforcePartLimits", back.EnforcePartLimits, orig.EnforcePartLimits},
				{"AccountingStorageEnforce", back.AccountingStorageEnforce, orig.AccountingStorageEnforce},
				{"PreemptType", back.PreemptType, orig.PreemptType}, {"PreemptMode", back.PreemptMode, orig.PreemptMode},
				{"SchedulerParameters", back.SchedulerParameters, orig.SchedulerParameters},
				{"MaxJobCount", back.MaxJobCount, orig.MaxJobCount}, {"MaxArraySize", back.MaxArraySize, orig.MaxArraySize},
			} {
				same(x[0].(string), x[1], x[2])
			}
			if oneHost {
				same("controllers", back.ControlHosts, []config.ControlHost{{Name: "vm", Addr: "127.0.0.1"}})
			} else {
				same("controllers", back.ControlHosts, orig.ControlHosts)
			}
			for k := range back.Raw {
				if strings.HasPrefix(strings.ToLower(k), "hpc") {
					t.Errorf("hpc's own key %s in the export", k)
				}
			}
		})
	}
}

// withFiles leaves out the gres.conf lines that give a count only: the
// export adds one for each GRES without device files (mps:200 of the vms),
// so that its slurmd reports the count slurm.conf gives.
func withFiles(d []config.GresDevice) []config.GresDevice {
	var out []config.GresDevice
	for _, x := range d {
		if len(x.Files) > 0 && x.Files[0] != "" {
			out = append(out, x)
		}
	}
	return out
}
