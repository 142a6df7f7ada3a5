package commands

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/commands/format"
)

func TestScontrolShow(t *testing.T) {
	f, e, out, errb := newFake(t)
	for _, c := range []struct {
		args           []string
		stdoutHas      string
		stdout, stderr string
		code           int
	}{
		{args: []string{"scontrol", "show", "job", "15"}, stdoutHas: "JobId=15 JobName=sleeper\n   UserId=root(0)"},
		{args: []string{"scontrol", "show", "jobs"}, stdoutHas: "JobId=14 JobName=wrap\n"},
		{args: []string{"scontrol", "-o", "show", "job", "15"}, stdoutHas: "JobId=15 JobName=sleeper UserId=root(0) "},
		{args: []string{"scontrol", "show", "job", "15", "-o"}, stdoutHas: "JobId=15 JobName=sleeper UserId=root(0) "},
		{args: []string{"scontrol", "sho", "j=15"}, stdoutHas: "JobId=15 "},
		{args: []string{"scontrol", "show", "job", "999999"}, stderr: "slurm_load_jobs error: Invalid job id specified\n", code: 1},
		{args: []string{"scontrol", "show", "job", "abc"}, stderr: "scontrol_print_job error: Invalid job id specified\n", code: 1},
		{args: []string{"scontrol", "show", "job", "15_3"}, stdout: "Job 15_3 not found\n", code: 1},
		{args: []string{"scontrol", "show", "node", "node3"}, stdoutHas: "NodeName=node3 Arch="},
		{args: []string{"scontrol", "show", "node", "node[1-2]"}, stdoutHas: "NodeName=node2 "},
		{args: []string{"scontrol", "-o", "show", "node"}, stdoutHas: "NodeName=node4 "},
		{args: []string{"scontrol", "show", "node", "nosuch"}, stdout: "Node nosuch not found\n", code: 1},
		{args: []string{"scontrol", "show", "partition"}, stdoutHas: "PartitionName=debug\n   AllowGroups=ALL"},
		{args: []string{"scontrol", "show", "partition", "gpu"}, stdoutHas: "PartitionName=gpu\n"},
		{args: []string{"scontrol", "-o", "show", "part", "gpu"}, stdoutHas: "PartitionName=gpu AllowGroups=ALL "},
		{args: []string{"scontrol", "show", "partition", "nosuch"}, stdout: "Partition nosuch not found\n", code: 1},
		{args: []string{"scontrol", "show", "hostnames", "node[1-3],gpu7"}, stdout: "node1\nnode2\nnode3\ngpu7\n"},
		{args: []string{"scontrol", "show", "hostnames"}, stderr: "scontrol: error: host list is empty\n"},
		{args: []string{"scontrol", "show", "hostnames", "node["}, stderr: "Invalid hostlist: node[\n"},
		{args: []string{"scontrol", "show", "hostlist", "node1,node2,node3,node7"}, stdout: "node[1-3,7]\n"},
		{args: []string{"scontrol", "show", "hostlistsorted", "node3,node1,node2"}, stdout: "node[1-3]\n"},
		{args: []string{"scontrol", "show", "hostlist", "node["}, stderr: "Invalid hostlist: node[\n", code: 1},
		{args: []string{"scontrol", "show"}, stderr: "too few arguments for keyword:show\n", code: 1},
		{args: []string{"scontrol", "show", "job", "1", "2"}, stderr: "too many arguments for keyword:show\n", code: 1},
		{args: []string{"scontrol", "show", "bogus"}, stderr: "invalid entity:bogus for keyword:show \n", code: 1},
		{args: []string{"scontrol", "bogus"}, stderr: "invalid keyword: bogus\n", code: 1},
		{args: []string{"scontrol", "reboot"}, stderr: "scontrol: error: reboot: the controller does not support this command yet\n", code: 1},
		{args: []string{"scontrol", "update", "garbage"}, stderr: "Invalid input: garbage\nRequest aborted\n", code: 1},
		{args: []string{"scontrol", "update", "TimeLimit=5"}, stderr: "No valid entity in update command\nInput line must include \"NodeName\", \"PartitionName\", \"Reservation/ReservationName\", \"FrontendName\", \"SuspendExcNodes\", \"SuspendExcParts\", \"SuspendExcStates\", \"JobId\", \"JobName\" or \"StepId\"\n", code: 1},
		{args: []string{"scontrol", "--bogus"}, stderr: "scontrol: unrecognized option '--bogus'\nTry \"scontrol --help\" for more information\n", code: 1},
		{args: []string{"scontrol", "-V"}, stdout: "slurm-wlm 22.05.8\n"},
		{args: []string{"scontrol", "ping"}, stdout: "Slurmctld(primary) at node1 is UP\nSlurmctld(backup1) at node2 is DOWN\nSlurmctld(backup2) at node3 is UP\n" +
			"*****************************************\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n*****************************************\n"},
	} {
		stdout, stderr, code := run(e, out, errb, c.args...)
		ok := stderr == c.stderr && code == c.code
		if c.stdoutHas != "" {
			ok = ok && strings.Contains(stdout, c.stdoutHas)
		} else {
			ok = ok && stdout == c.stdout
		}
		if !ok {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q\nwant exit %d stdout %q%q stderr %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stdoutHas, c.stderr)
		}
	}
	// show hostnames defaults to $SLURM_NODELIST; show hostlist reads a file.
	e.Environ = append(e.Environ, "SLURM_NODELIST=node[2-3]")
	if stdout, _, _ := run(e, out, errb, "scontrol", "show", "hostnames"); stdout != "node2\nnode3\n" {
		t.Errorf("hostnames from env: %q", stdout)
	}
	file := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(file, []byte("node1\nnode2\n\nnode4\n"), 0o644)
	if stdout, _, _ := run(e, out, errb, "scontrol", "show", "hostlist", file); stdout != "node[1-2,4]\n" {
		t.Errorf("hostlist from file: %q", stdout)
	}
	// Every node alive: ping exits 0 with no banner.
	f.status.Members[1].State = "alive"
	if stdout, _, code := run(e, out, errb, "scontrol", "ping"); code != 0 || strings.Contains(stdout, "RESTORE") {
		t.Errorf("ping: %d %q", code, stdout)
	}
}

func TestScontrolShowConfig(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.cfg.Raw["MessageTimeout"] = "60"
	f.cfg.Raw["schedulertype"] = "sched/builtin"
	f.cfg.Raw["HpcSomething"] = "x"
	stdout, stderr, code := run(e, out, errb, "scontrol", "show", "config")
	if code != 0 || stderr != "" {
		t.Fatalf("show config: %d %q", code, stderr)
	}
	wantAll(t, "show config", stdout,
		"Configuration data as of 2026-11-30T04:59:33\n",
		"AccountingStorageEnforce = associations,limits,qos\n",
		"AccountingStorageTRES   = cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu\n",
		"ClusterName             = lab\n",
		"DefMemPerCPU            = 1000\n",
		"EnforcePartLimits       = ALL\n",
		"GresTypes               = gpu\n",
		"KillWait                = 30 sec\n",
		"MaxNodeCount            = 4\n",
		"MessageTimeout          = 60 sec\n",
		"MinJobAge               = 300 sec\n",
		"OverTimeLimit           = 0 min\n",
		"PriorityType            = priority/basic\n",
		"PrivateData             = none\n",
		"SchedulerType           = sched/builtin\n",
		"SlurmctldHost[0]        = node1(127.0.1.1)\n",
		"SlurmdTimeout           = 10 sec\n",
		"SLURM_VERSION           = 22.05.8\n",
		"\nCgroup Support Configuration:\nAllowedKmemSpace        = (null)\n",
		"\nhpc Configuration:\nHpcApiPort              = 7817\nHpcGossipPort           = 7819\nHpcRaftPort             = 7818\nHpcSomething            = x\n",
		"\n\nSlurmctld(primary) at node1 is UP\n",
	)
	// Slurm's keys in Slurm's order, then the same sections as Slurm's.
	ref, err := os.ReadFile(filepath.Join("..", "testdata", "parity", "90_scontrol_show_config.txt"))
	if err != nil {
		t.Fatal(err)
	}
	refOut, _, _ := strings.Cut(strings.SplitN(string(ref), "--- stdout ---\n", 2)[1], "--- stderr ---")
	if got, want := configLayout(stdout), configLayout(refOut); !reflect.DeepEqual(got, want) {
		t.Errorf("keys and sections differ from Slurm's:\n got %v\nwant %v", got, want)
	}
}

// wantAll reports each of wants that got lacks.
func wantAll(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, got)
		}
	}
}

// configLayout is scontrol show config's keys and section titles in order,
// but for hpc's own section, the controllers' status and all but the first
// SlurmctldHost.
func configLayout(out string) []string {
	var keys []string
	for _, line := range strings.Split(out, "\n") {
		k, _, isKey := strings.Cut(line, " = ")
		switch {
		case line == "hpc Configuration:":
			return keys
		case strings.HasPrefix(line, "Configuration data as of"), strings.HasSuffix(line, ":"):
			keys = append(keys, line[:min(len(line), 25)])
		case isKey && !strings.HasPrefix(k, "SlurmctldHost[") || strings.HasPrefix(k, "SlurmctldHost[0]"):
			keys = append(keys, strings.TrimSpace(k))
		}
	}
	return keys
}

func TestConfigValues(t *testing.T) {
	text, _ := config.Lab(2)
	cfg, err := config.Parse(strings.NewReader(text + "PriorityType=priority/multifactor\nPriorityWeightAge=100\nDefMemPerNode=2000\nMaxMemPerCPU=3000\nSelectTypeParameters=cr_core\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefMemPerCPU = 0
	sc := &servedConfig{Config: *cfg, ConfigInfo: api.ConfigInfo{SlurmConf: "/lab/slurm.conf", NextJobID: 42,
		BootTime: time.Date(2026, 11, 30, 4, 0, 0, 0, time.Local), StateSaveLocation: "/lab/node1"}}
	vals, _ := configValues(sc)
	got := format.ShowConfig(format.ConfigItems(vals), time.Date(2026, 11, 30, 5, 0, 0, 0, time.Local))
	wantAll(t, "show config", got,
		"BOOT_TIME               = 2026-11-30T04:00:00\n",
		"DefMemPerNode           = 2000\n",
		"FairShareDampeningFactor = 1\n",
		"MaxMemPerCPU            = 3000\n",
		"NEXT_JOB_ID             = 42\n",
		"PriorityDecayHalfLife   = 7-00:00:00\nPriorityCalcPeriod      = 00:00:00\n",
		"PriorityType            = priority/multifactor\nPriorityWeightAge       = 100\n",
		"SelectTypeParameters    = CR_CORE\n",
		"SlurmUser               = root(0)\n",
		"SLURM_CONF              = /lab/slurm.conf\n",
		"StateSaveLocation       = /lab/node1\n",
	)
	if strings.Contains(got, "MaxMemPerNode") || strings.Contains(got, "DefMemPerCPU") {
		t.Errorf("both of a pair printed:\n%s", got)
	}
}

func TestScontrolShowStep(t *testing.T) {
	f, e, out, errb := newFake(t)
	for i := range f.jobs {
		if f.jobs[i].ID == 18 {
			f.jobs[i].Steps = []api.Step{{ID: 0, Name: "hostname", Nodes: []string{"node2", "node3"}, Tasks: []int{1, 1},
				CPUsPerTask: 1, Launcher: "node2", State: api.StateRunning, Start: at(4, 59, 30)}}
		}
	}
	step0 := "StepId=18.0 UserId=0 StartTime=2026-11-30T04:59:30 TimeLimit=UNLIMITED\n" +
		"   State=RUNNING Partition=debug NodeList=node[2-3]\n" +
		"   Nodes=2 CPUs=2 Tasks=2 Name=hostname Network=(null)\n" +
		"   TRES=cpu=2,mem=2000M,node=2\n" +
		"   ResvPorts=(null)\n" +
		"   CPUFreqReq=Default Dist=Block\n" +
		"   SrunHost:Pid=node2:0\n\n"
	batch := "StepId=18.batch UserId=0 StartTime=2026-11-30T04:59:29 TimeLimit=UNLIMITED\n" +
		"   State=RUNNING Partition=debug NodeList=node2\n" +
		"   Nodes=1 CPUs=1 Tasks=1 Name=batch Network=(null)\n" +
		"   TRES=cpu=1,mem=1000M,node=1\n" +
		"   ResvPorts=(null)\n" +
		"   CPUFreqReq=Default\n" +
		"   SrunHost:Pid=(null):0\n\n"
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{args: []string{"scontrol", "show", "step", "18.0"}, stdout: step0},
		{args: []string{"scontrol", "show", "steps", "18"}, stdout: batch + step0},
		{args: []string{"scontrol", "show", "step", "18.batch"}, stdout: batch},
		{args: []string{"scontrol", "-o", "show", "step", "18.0"}, stdout: "StepId=18.0 UserId=0 StartTime=2026-11-30T04:59:30 TimeLimit=UNLIMITED " +
			"State=RUNNING Partition=debug NodeList=node[2-3] Nodes=2 CPUs=2 Tasks=2 Name=hostname Network=(null) " +
			"TRES=cpu=2,mem=2000M,node=2 ResvPorts=(null) CPUFreqReq=Default Dist=Block SrunHost:Pid=node2:0\n"},
		{args: []string{"scontrol", "show", "step", "18.5"}, stdout: "Job step 18.5 not found\n", code: 1},
		{args: []string{"scontrol", "show", "step", "14"}, stdout: "Job step 14. not found\n", code: 1},
		{args: []string{"scontrol", "show", "step", "999"}, stderr: "slurm_get_job_steps error: Invalid job id specified\n", code: 1},
	} {
		stdout, stderr, code := run(e, out, errb, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q\nwant exit %d stdout %q stderr %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
	}
	// Without an id: every running job's batch step and srun steps.
	stdout, _, code := run(e, out, errb, "scontrol", "show", "step")
	if code != 0 || strings.Count(stdout, "StepId=") != 6 || !strings.Contains(stdout, "StepId=15.batch ") || !strings.Contains(stdout, step0) {
		t.Errorf("show step: %d\n%s", code, stdout)
	}
	f.jobs = nil
	if stdout, _, code := run(e, out, errb, "scontrol", "show", "step"); code != 0 || stdout != "No job steps in the system\n" {
		t.Errorf("no steps: %d %q", code, stdout)
	}
}

func TestScontrolCompleting(t *testing.T) {
	f, e, out, errb := newFake(t)
	if stdout, stderr, code := run(e, out, errb, "scontrol", "completing"); stdout != "" || stderr != "" || code != 0 {
		t.Errorf("none completing: %d %q %q", code, stdout, stderr)
	}
	for i := range f.jobs {
		switch f.jobs[i].ID {
		case 17:
			f.jobs[i].State = api.StateCompleting
		case 18:
			f.jobs[i].State, f.jobs[i].EndTime = api.StateCompleting, at(4, 58, 3)
		}
	}
	f.nodes.Nodes[2].State = api.NodeDown
	stdout, stderr, code := run(e, out, errb, "scontrol", "comp")
	want := "JobId=17 EndTime=2026-11-30T04:59:33 CompletingTime=00:00:00 Nodes(COMPLETING)=node2 \n" +
		"JobId=18 EndTime=2026-11-30T04:58:03 CompletingTime=00:01:30 Nodes(COMPLETING)=node2 Nodes(DOWN)=node3 \n"
	if stdout != want || stderr != "" || code != 0 {
		t.Errorf("completing: %d\n%q\nwant\n%q\n%q", code, stdout, want, stderr)
	}
	if _, stderr, code := run(e, out, errb, "scontrol", "completing", "x"); stderr != "too many arguments for keyword:completing\n" || code != 1 {
		t.Errorf("completing x: %d %q", code, stderr)
	}
}

func TestScontrolShowArrayJob(t *testing.T) {
	f, e, out, errb := newFake(t)
	base := len(f.jobs)
	for i, id := range []uint64{40, 41, 42, 43} {
		j := pendingFor(refJob(id, "arr", "debug"), "Priority")
		j.ArrayJobID, j.ArrayTaskID = 40, i+1
		j.Spec.Array = "1-4%2"
		f.jobs = append(f.jobs, j)
	}
	// Task 2 has started: a record of its own. Task 4 was cancelled before
	// it started: Slurm only drops it from the array's record.
	started, cancelled := &f.jobs[base+1], &f.jobs[base+3]
	started.State, started.StartTime = api.StateRunning, started.SubmitTime.Add(time.Second)
	cancelled.State, cancelled.EndTime = api.StateCancelled, cancelled.SubmitTime.Add(time.Second)
	first := func(s string) []string {
		var ids []string
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "JobId=") {
				ids = append(ids, strings.Fields(line)[0])
			}
		}
		return ids
	}
	for _, c := range []struct {
		arg  string
		ids  []string
		code int
	}{
		{"40", []string{"JobId=40", "JobId=41"}, 0},
		{"40_3", []string{"JobId=40"}, 0}, // the array's record holds task 3
		{"40_2", []string{"JobId=41"}, 0},
		{"41", []string{"JobId=41"}, 0},
		{"41_2", []string{"JobId=41"}, 0},
		{"40_4", nil, 1}, // cancelled before it started: no record
		{"40_7", nil, 1},
	} {
		stdout, stderr, code := run(e, out, errb, "scontrol", "show", "job", c.arg)
		if got := first(stdout); !reflect.DeepEqual(got, c.ids) || code != c.code || stderr != "" {
			t.Errorf("show job %s: %d %v %q", c.arg, code, got, stderr)
		}
		if c.code == 1 && stdout != "Job "+c.arg+" not found\n" {
			t.Errorf("show job %s: %q", c.arg, stdout)
		}
	}
	// Tasks that have not started are not records of their own.
	if _, stderr, code := run(e, out, errb, "scontrol", "show", "job", "42"); code != 1 || stderr != "slurm_load_jobs error: Invalid job id specified\n" {
		t.Errorf("show job 42: %d %q", code, stderr)
	}
	stdout, _, _ := run(e, out, errb, "scontrol", "show", "job", "40_3")
	if !strings.HasPrefix(stdout, "JobId=40 ArrayJobId=40 ArrayTaskId=1,3%2 ArrayTaskThrottle=2 JobName=arr\n") ||
		!strings.Contains(stdout, "StdOut=/tmp/w/slurm-40_4294967294.out\n") {
		t.Errorf("array record: %q", stdout)
	}
	if stdout, _, _ := run(e, out, errb, "scontrol", "show", "job", "40_2"); !strings.HasPrefix(stdout, "JobId=41 ArrayJobId=40 ArrayTaskId=2 ArrayTaskThrottle=2 JobName=arr\n") ||
		!strings.Contains(stdout, "StdOut=/tmp/w/slurm-40_2.out\n") {
		t.Errorf("array task record: %q", stdout)
	}
	// scontrol hold A_T holds that task alone; an unknown task is refused.
	f.controls = nil
	if _, stderr, code := run(e, out, errb, "scontrol", "hold", "40_3"); code != 0 || len(f.controls) != 1 ||
		!reflect.DeepEqual(f.controls[0].JobIDs, []uint64{42}) {
		t.Errorf("scontrol hold 40_3: %d %q %+v", code, stderr, f.controls)
	}
	if _, _, code := run(e, out, errb, "scontrol", "hold", "40_9"); code != 1 {
		t.Errorf("scontrol hold 40_9: %d", code)
	}
	// scancel A_T cancels that task's job.
	f.cancels = nil
	if _, stderr, code := run(e, out, errb, "scancel", "40_3"); code != 0 || stderr != "" || len(f.cancels) != 1 ||
		!reflect.DeepEqual(f.cancels[0].JobIDs, []uint64{42}) {
		t.Errorf("scancel 40_3: %d %q %+v", code, stderr, f.cancels)
	}
}

func TestScontrolInteractive(t *testing.T) {
	_, e, out, errb := newFake(t)
	e.Stdin = stringsReader("show hostlist node1,node2\noneliner\nshow partition gpu\nquit\nshow job 15\n")
	stdout, _, code := run(e, out, errb, "scontrol")
	if code != 0 || !strings.HasPrefix(stdout, "scontrol: node[1-2]\nscontrol: scontrol: PartitionName=gpu AllowGroups") ||
		strings.Contains(stdout, "JobId") {
		t.Errorf("interactive: %d %q", code, stdout)
	}
}

func TestScontrolHoldRelease(t *testing.T) {
	f, e, out, errb := newFake(t)
	for _, c := range []struct {
		args   []string
		stderr string
		code   int
		sent   []api.JobControlRequest
	}{
		{[]string{"scontrol", "hold", "20,25"}, "", 0, []api.JobControlRequest{{JobIDs: []uint64{20, 25}, Action: "hold"}}},
		{[]string{"scontrol", "uhold", "JobId=20"}, "", 0, []api.JobControlRequest{{JobIDs: []uint64{20}, Action: "uhold"}}},
		{[]string{"scontrol", "release", "20", "25"}, "", 0, []api.JobControlRequest{{JobIDs: []uint64{20}, Action: "release"}, {JobIDs: []uint64{25}, Action: "release"}}},
		{[]string{"scontrol", "hold", "Name=big"}, "", 0, []api.JobControlRequest{{JobIDs: []uint64{20}, Action: "hold"}}},
		{[]string{"scontrol", "requeue", "15"}, "", 0, []api.JobControlRequest{{JobIDs: []uint64{15}, Action: "requeue"}}},
		{[]string{"scontrol", "hold", "999"}, "Invalid job id specified for job 999\nslurm_suspend error: Invalid job id specified\n", 1,
			[]api.JobControlRequest{{JobIDs: []uint64{999}, Action: "hold"}}},
		{[]string{"scontrol", "release", "15"}, "Job is no longer pending execution for job 15\nslurm_suspend error: Job is no longer pending execution\n", 1,
			[]api.JobControlRequest{{JobIDs: []uint64{15}, Action: "release"}}},
		{[]string{"scontrol", "hold", "abc"}, "Invalid job id specified for job abc\nslurm_suspend error: Invalid job id specified\n", 1, nil},
		{[]string{"scontrol", "hold"}, "too few arguments for keyword:hold\n", 1, nil},
	} {
		f.controls = nil
		stdout, stderr, code := run(e, out, errb, c.args...)
		if stdout != "" || stderr != c.stderr || code != c.code || !reflect.DeepEqual(f.controls, c.sent) {
			t.Errorf("%v: %d %q %q sent %+v", c.args, code, stdout, stderr, f.controls)
		}
	}
}

// scontrol update JobId=A_T changes that task alone.
func TestScontrolUpdateArrayTask(t *testing.T) {
	f, e, out, errb := newFake(t)
	for i, id := range []uint64{50, 51, 52} {
		j := pendingFor(refJob(id, "arr", "debug"), "Priority")
		j.ArrayJobID, j.ArrayTaskID = 50, i
		f.jobs = append(f.jobs, j)
	}
	for _, c := range []struct {
		arg  string
		code int
	}{{"JobId=50_2", 0}, {"JobId=50_7", 1}, {"JobId=50x", 1}, {"JobId=51", 0}} {
		_, stderr, code := run(e, out, errb, "scontrol", "update", c.arg, "TimeLimit=5")
		if code != c.code {
			t.Errorf("update %s: %d %q", c.arg, code, stderr)
		}
	}
	if len(f.updates) != 2 || f.updates[0].JobID != 52 || f.updates[1].JobID != 51 {
		t.Errorf("updates sent %+v", f.updates)
	}
}
