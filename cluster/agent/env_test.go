package agent

import (
	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/exec"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestExportEnv(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/h", "FOO=1", "SLURM_JOB_ID=5"}
	cases := []struct {
		export string
		want   []string
	}{
		{"", env},
		{"ALL", env},
		{"NONE", []string{"SLURM_JOB_ID=5"}},
		{"FOO", []string{"SLURM_JOB_ID=5", "FOO=1"}},
		{"FOO,BAR=2,MISSING", []string{"SLURM_JOB_ID=5", "FOO=1", "BAR=2"}},
		{"ALL,FOO=9", []string{"PATH=/bin", "HOME=/h", "FOO=9", "SLURM_JOB_ID=5"}},
	}
	for _, c := range cases {
		if got := exportEnv(c.export, env); !reflect.DeepEqual(got, c.want) {
			t.Errorf("--export=%s: %q, want %q", c.export, got, c.want)
		}
	}
}

// envMap turns an environment into a map, failing on duplicates.
func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := m[k]; dup {
			t.Errorf("%s set twice", k)
		}
		m[k] = v
	}
	return m
}

// The variables of rank 3 of `srun -N2 -n4` in a job of two 2-CPU nodes,
// as ../shared/slurm-reference/16 shows them, plus PyTorch's.
func TestStepEnv(t *testing.T) {
	cfg, err := config.LabConfig(3)
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Name: "node2", Socket: "/lab/node2/hpc.sock", Config: cfg})
	j := &api.Job{
		ID: 7, UID: 0, GID: 0, User: "root", Account: "root",
		Spec: api.JobSpec{Name: "bash", Partition: "debug", NTasks: 4, WorkDir: "/tmp/slurm-capture", SubmitHost: "vm"},
		Alloc: []api.NodeAlloc{
			{Node: "node1", CPUs: 2, MemMB: 2000}, {Node: "node2", CPUs: 2, MemMB: 2000, Gres: []api.GresAlloc{{Name: "gpu", Indices: []int{1, 0}}}},
		},
	}
	s := &api.Step{ID: 0, Name: "bash", Nodes: []string{"node1", "node2"}, Tasks: []int{2, 2}, CPUsPerTask: 1, Launcher: "node1"}
	base := []string{"HOME=/root", "SLURM_JOB_ID=99", "SLURM_MEM_PER_CPU=1000", "MASTER_PORT=1"}
	env := envMap(t, d.stepEnv(j, base, envSlot{
		step: s, nodeIndex: 1, procID: 3, localID: 1, gtids: []int{2, 3},
		masterAddr: "127.0.1.1", masterPort: 10007, launcher: "node1", tmpDir: "/lab/node2/tmp/job7", scratch: "/lab/scratch/root",
	}))
	want := map[string]string{
		"SLURMD_NODENAME": "node2", "SLURM_CLUSTER_NAME": "lab", "SLURM_CPUS_ON_NODE": "2",
		"SLURM_GTIDS": "2,3", "SLURM_JOBID": "7", "SLURM_JOB_ID": "7", "SLURM_JOB_ACCOUNT": "root",
		"SLURM_JOB_CPUS_PER_NODE": "2(x2)", "SLURM_JOB_GID": "0", "SLURM_JOB_NAME": "bash",
		"SLURM_JOB_NODELIST": "node[1-2]", "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_PARTITION": "debug",
		"SLURM_JOB_QOS": "normal", "SLURM_JOB_UID": "0", "SLURM_JOB_USER": "root",
		"SLURM_LAUNCH_NODE_IPADDR": "127.0.1.1", "SLURM_LOCALID": "1", "SLURM_NNODES": "2", "SLURM_NODEID": "1",
		"SLURM_NODELIST": "node[1-2]", "SLURM_NPROCS": "4", "SLURM_NTASKS": "4", "SLURM_PRIO_PROCESS": "0",
		"SLURM_PROCID": "3", "SLURM_SRUN_COMM_HOST": "127.0.1.1", "SLURM_STEPID": "0", "SLURM_STEP_ID": "0",
		"SLURM_STEP_NODELIST": "node[1-2]", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NUM_TASKS": "4",
		"SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_SUBMIT_DIR": "/tmp/slurm-capture", "SLURM_SUBMIT_HOST": "vm",
		"SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_TOPOLOGY_ADDR": "node2", "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
		"MASTER_ADDR": "127.0.1.1", "MASTER_PORT": "10007", "WORLD_SIZE": "4", "RANK": "3",
		"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "TMPDIR": "/lab/node2/tmp/job7", "SCRATCH": "/lab/scratch/root",
		"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_STEP_GPUS": "0,1", "SLURM_GPUS_ON_NODE": "2",
		"HOME": "/root", "SLURM_MEM_PER_CPU": "1000", "HPC_SOCKET": "/lab/node2/hpc.sock",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if env["PATH"] != defaultPath {
		t.Errorf("PATH=%q", env["PATH"])
	}

	// The batch step of a job without -n: reference 12's variables, its
	// submitter's SLURM_* left out, no ranks.
	j.Spec.NTasks = 0
	j.Alloc = j.Alloc[:1]
	j.Alloc[0].CPUs = 1
	d.name, d.self = "node1", cfg.Node("node1")
	env = envMap(t, d.stepEnv(j, []string{"PATH=/usr/bin", "SLURM_NTASKS=9"}, envSlot{masterAddr: "127.0.1.1", masterPort: 10007}))
	for k, v := range map[string]string{
		"SLURM_NODELIST": "node1", "SLURM_NNODES": "1", "SLURM_TASKS_PER_NODE": "1", "SLURM_GTIDS": "0",
		"SLURM_NODE_ALIASES": "(null)", "SLURM_MEM_PER_CPU": "1000", "SLURM_CPUS_ON_NODE": "1", "PATH": "/usr/bin",
		"MASTER_ADDR": "127.0.1.1", "MASTER_PORT": "10007",
	} {
		if env[k] != v {
			t.Errorf("batch: %s=%q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"SLURM_NTASKS", "SLURM_STEP_ID", "RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES", "SLURM_RESTART_COUNT"} {
		if v, ok := env[k]; ok {
			t.Errorf("batch: %s=%q set", k, v)
		}
	}
	// A requeued job's second run knows it is one (Slurm's
	// SLURM_RESTART_COUNT), the first run does not (reference 12).
	rerun := *j
	rerun.Restarts = 1
	env = envMap(t, d.stepEnv(&rerun, nil, envSlot{}))
	if env["SLURM_RESTART_COUNT"] != "1" {
		t.Errorf("requeued once: SLURM_RESTART_COUNT=%q, want 1", env["SLURM_RESTART_COUNT"])
	}
	// salloc's shell: the job's variables only.
	env = envMap(t, d.AllocEnv(j))
	if env["SLURM_JOB_ID"] != "7" || env["SLURM_JOB_NODELIST"] != "node1" || env["SLURMD_NODENAME"] != "" || env["PATH"] != "" {
		t.Errorf("allocation env %v", env)
	}
}

// What tasks take from their submitter: the umask and the soft limits
// slurm.conf propagates; the SLURM_RLIMIT_* variables never reach them.
func TestInherited(t *testing.T) {
	text, _ := config.Lab(2)
	cfg, err := config.Parse(strings.NewReader(text + "PropagateResourceLimitsExcept=CPU\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Name: "node1", Socket: "/lab/node1/hpc.sock", Config: cfg})
	in, rest := d.inherited([]string{"A=1", "SLURM_UMASK=0023", "SLURM_RLIMIT_CPU=5", "SLURM_RLIMIT_CORE=U1024",
		"SLURM_RLIMIT_NOFILE=1016", "SLURM_RLIMIT_STACK=bad", "SLURM_RLIMIT_AS=18446744073709551615"})
	if in.umask == nil || *in.umask != 0o023 {
		t.Errorf("umask %v", in.umask)
	}
	want := []exec.Rlimit{{Resource: unix.RLIMIT_CORE, Soft: 1024}, {Resource: unix.RLIMIT_NOFILE, Soft: 1016}, {Resource: unix.RLIMIT_AS, Soft: unix.RLIM_INFINITY}}
	if !reflect.DeepEqual(in.limits, want) {
		t.Errorf("limits %v, want %v", in.limits, want)
	}
	if !reflect.DeepEqual(rest, []string{"A=1", "SLURM_UMASK=0023"}) {
		t.Errorf("environment %q", rest)
	}
	var spec exec.StepSpec
	in.apply(&spec)
	if spec.PidEnv != "SLURM_TASK_PID" || spec.Umask != in.umask || len(spec.Rlimits) != 3 {
		t.Errorf("spec %+v", spec)
	}
	if in, _ := d.inherited([]string{"SLURM_UMASK=9"}); in.umask != nil || in.limits != nil {
		t.Errorf("nothing to inherit: %+v", in)
	}
}
