package cluster

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hpc/cluster/api"
)

// job3 is a running job on three 2-CPU nodes.
func job3(ntasks, cpt int) *api.Job {
	return &api.Job{
		ID: 7, State: api.StateRunning,
		Spec: api.JobSpec{NTasks: ntasks, CPUsPerTask: cpt},
		Alloc: []api.NodeAlloc{
			{Node: "node1", CPUs: 2}, {Node: "node2", CPUs: 2}, {Node: "node3", CPUs: 2},
		},
	}
}

func TestPlanStep(t *testing.T) {
	cases := []struct {
		name  string
		job   *api.Job
		req   api.StepRequest
		nodes []string
		tasks []int
		cpt   int
		warn  string
		err   string
	}{
		{"job's tasks", job3(6, 0), api.StepRequest{}, []string{"node1", "node2", "node3"}, []int{2, 2, 2}, 1, "", ""},
		{"no -n: the allocation's tasks", job3(0, 0), api.StepRequest{}, []string{"node1", "node2", "node3"}, []int{2, 2, 2}, 1, "", ""},
		{"-n4 block", job3(6, 0), api.StepRequest{NTasks: 4}, []string{"node1", "node2", "node3"}, []int{2, 1, 1}, 1, "", ""},
		{"-n2 fewer than nodes", job3(6, 0), api.StepRequest{NTasks: 2}, []string{"node1", "node2"}, []int{1, 1}, 1, "", ""},
		{"-N2", job3(6, 0), api.StepRequest{Nodes: 2}, []string{"node1", "node2"}, []int{1, 1}, 1, "", ""},
		{"-N2 -n4", job3(6, 0), api.StepRequest{Nodes: 2, NTasks: 4}, []string{"node1", "node2"}, []int{2, 2}, 1, "", ""},
		{"-N3 -n1", job3(6, 0), api.StepRequest{Nodes: 3, NTasks: 1}, []string{"node1"}, []int{1}, 1,
			"can't run 1 processes on 3 nodes, setting nnodes to 1", ""},
		{"--ntasks-per-node", job3(6, 0), api.StepRequest{NTasksPerNode: 2, Nodes: 2}, []string{"node1", "node2"}, []int{2, 2}, 1, "", ""},
		{"-w first", job3(6, 0), api.StepRequest{NodeList: "node3", NTasks: 1}, []string{"node3"}, []int{1}, 1, "", ""},
		{"-w and -N", job3(6, 0), api.StepRequest{NodeList: "node[2-3]", Nodes: 3}, []string{"node2", "node3", "node1"}, []int{1, 1, 1}, 1, "", ""},
		{"-c2", job3(0, 0), api.StepRequest{CPUsPerTask: 2}, []string{"node1", "node2", "node3"}, []int{1, 1, 1}, 2, "", ""},
		{"job's -c", job3(3, 2), api.StepRequest{}, []string{"node1", "node2", "node3"}, []int{1, 1, 1}, 2, "", ""},
		{"too many tasks", job3(6, 0), api.StepRequest{NTasks: 7}, nil, nil, 0, "", api.ErrTooManyProcessors},
		{"-c3 on 2-CPU nodes", job3(0, 0), api.StepRequest{CPUsPerTask: 3}, nil, nil, 0, "", api.ErrTooManyProcessors},
		{"too many nodes", job3(6, 0), api.StepRequest{Nodes: 4}, nil, nil, 0, "", api.ErrConfigUnavailable},
		{"node outside the job", job3(6, 0), api.StepRequest{NodeList: "node9"}, nil, nil, 0, "", api.ErrConfigUnavailable},
		{"--ntasks-per-node over the CPUs", job3(6, 0), api.StepRequest{NTasksPerNode: 3}, nil, nil, 0, "", api.ErrTooManyProcessors},
		{"-N smaller than -w", job3(6, 0), api.StepRequest{NodeList: "node[1-3]", Nodes: 2}, nil, nil, 0, "", api.ErrNodeCountInvalid},
	}
	for _, c := range cases {
		p, err := planStep(c.job, &c.req)
		if c.err != "" {
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Message != c.err {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(p.Nodes, c.nodes) || !reflect.DeepEqual(p.Tasks, c.tasks) || p.CPUsPerTask != c.cpt || p.Warning != c.warn {
			t.Errorf("%s: got %v %v cpt %d warn %q; want %v %v cpt %d warn %q", c.name, p.Nodes, p.Tasks, p.CPUsPerTask, p.Warning, c.nodes, c.tasks, c.cpt, c.warn)
		}
	}
}

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
	d := &Daemon{o: Options{Name: "node2", Socket: "/lab/node2/hpc.sock"}, cfg: testConfig(t)}
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
	d.o.Name = "node1"
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
	for _, k := range []string{"SLURM_NTASKS", "SLURM_STEP_ID", "RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES"} {
		if v, ok := env[k]; ok {
			t.Errorf("batch: %s=%q set", k, v)
		}
	}
	// salloc's shell: the job's variables only.
	env = envMap(t, d.allocEnv(j))
	if env["SLURM_JOB_ID"] != "7" || env["SLURM_JOB_NODELIST"] != "node1" || env["SLURMD_NODENAME"] != "" || env["PATH"] != "" {
		t.Errorf("allocation env %v", env)
	}
}

func TestExpandPath(t *testing.T) {
	j := &api.Job{ID: 42, User: "ann", Spec: api.JobSpec{Name: "train", WorkDir: "/home/ann"}, Alloc: []api.NodeAlloc{{Node: "node3"}}}
	cases := map[string]string{
		"":                    "/home/ann/slurm-42.out",
		"%x-%j.out":           "/home/ann/train-42.out",
		"/o/%u/%N/%A_%a.%s":   "/o/ann/node3/42_4294967294.batch",
		"%t-%n-%J-%%-%5j":     "/home/ann/0-0-42.batch-%-00042",
		"odd%q%":              "/home/ann/odd%q%",
		"%3":                  "/home/ann/%3",
		"rel/dir/%j":          "/home/ann/rel/dir/42",
		"/abs/%2t-%4a-%1j.io": "/abs/00-4294967294-42.io",
	}
	for pat, want := range cases {
		if got := expandPath(pat, j, "slurm-%j.out"); got != want {
			t.Errorf("%q: %q, want %q", pat, got, want)
		}
	}
}

// A real one-node cluster (plain processes): an allocation, a step with
// two tasks streaming their output, a signal, the release.
func TestStepsOneNode(t *testing.T) {
	_, cl := startOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := cl.Submit(ctx, api.JobSpec{Name: "alloc", Script: api.HolderScript, WorkDir: t.TempDir(), NTasks: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := cl.WaitAllocation(ctx, id, nil)
	if err != nil || a.Job.State != api.StateRunning {
		t.Fatalf("allocation %+v %v", a, err)
	}
	if envValue(a.Env, "SLURM_JOB_ID") != strconv.FormatUint(id, 10) || envValue(a.Env, "SLURM_NTASKS") != "2" {
		t.Errorf("allocation env %q", a.Env)
	}
	type out struct {
		task, stream int
		data         string
	}
	var events []out
	var exits []api.TaskExit
	var done *api.StepDone
	err = cl.RunStep(ctx, api.StepRequest{JobID: id, Argv: []string{"sh", "-c", `echo "rank $RANK of $WORLD_SIZE on $SLURMD_NODENAME"; echo err >&2; exit $SLURM_PROCID`}, Env: []string{"PATH=/usr/bin:/bin"}},
		func(ev *api.StepEvent) error {
			switch {
			case ev.Stream != 0:
				events = append(events, out{ev.Task, ev.Stream, string(ev.Data)})
			case ev.Exit != nil:
				exits = append(exits, *ev.Exit)
			case ev.Done != nil:
				done = ev.Done
			}
			return nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range events {
		lines = append(lines, strings.Split(strings.TrimSuffix(e.data, "\n"), "\n")...)
	}
	slices.Sort(lines)
	if want := []string{"err", "err", "rank 0 of 2 on node1", "rank 1 of 2 on node1"}; !reflect.DeepEqual(lines, want) {
		t.Errorf("output %q, want %q", lines, want)
	}
	slices.SortFunc(exits, func(a, b api.TaskExit) int { return a.Task - b.Task })
	if want := []api.TaskExit{{Task: 0, Node: "node1"}, {Task: 1, Node: "node1", ExitCode: 1}}; !reflect.DeepEqual(exits, want) {
		t.Errorf("exits %+v", exits)
	}
	if done == nil || done.ExitCode != 1 || done.State != api.StateFailed {
		t.Errorf("done %+v", done)
	}

	// Ctrl-C reaches the tasks; a second one kills them.
	var mu sync.Mutex
	var stepID uint32
	ready := make(chan struct{})
	var once sync.Once
	errc := make(chan error, 1)
	var final *api.StepDone
	go func() {
		errc <- cl.RunStep(ctx, api.StepRequest{JobID: id, NTasks: 1,
			Argv: []string{"/bin/sh", "-c", `trap 'echo INT' INT; echo up; while :; do sleep 0.05; done`}},
			func(ev *api.StepEvent) error {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case ev.Step != nil:
					stepID = ev.Step.ID
				case ev.Stream != 0 && strings.Contains(string(ev.Data), "up"):
					once.Do(func() { close(ready) })
				case ev.Done != nil:
					final = ev.Done
				}
				return nil
			}, nil)
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("step never started")
	}
	mu.Lock()
	sid := stepID
	mu.Unlock()
	if err := cl.SignalStep(ctx, id, sid, 2); err != nil {
		t.Fatal(err)
	}
	if err := cl.SignalStep(ctx, id, sid, 9); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if final == nil || final.State != api.StateCancelled || final.Signal == 0 {
		t.Errorf("killed step: %+v", final)
	}
	if err := cl.SignalStep(ctx, id, sid, 2); err == nil {
		t.Error("signalling an ended step succeeded")
	}

	// Release: the job ends with the status given.
	if err := cl.Release(ctx, api.ReleaseRequest{JobID: id, ExitCode: 5}); err != nil {
		t.Fatal(err)
	}
	j, err := cl.Wait(ctx, id)
	if err != nil || j.State != api.StateFailed || j.ExitCode != 5 {
		t.Fatalf("released job %+v %v", j, err)
	}
	if len(j.Steps) != 2 || j.Steps[0].State != api.StateFailed || j.Steps[1].State != api.StateCancelled {
		t.Errorf("steps %+v", j.Steps)
	}
	// A step of a job that ended is refused.
	err = cl.RunStep(ctx, api.StepRequest{JobID: id, Argv: []string{"true"}}, func(*api.StepEvent) error { return nil }, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Message != api.ErrAlreadyDone {
		t.Errorf("step of an ended job: %v", err)
	}
}

// envValue finds a variable in an environment list.
func envValue(env []string, name string) string {
	v, _ := lookupVar(env, name)
	return v
}
