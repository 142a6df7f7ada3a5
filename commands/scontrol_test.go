package commands

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hpc/cluster/api"
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
	f.cfg.Raw["SlurmdTimeout"] = "300"
	f.cfg.Raw["schedulertype"] = "sched/backfill"
	stdout, stderr, code := run(e, out, errb, "scontrol", "show", "config")
	if code != 0 || stderr != "" {
		t.Fatalf("show config: %d %q", code, stderr)
	}
	for _, want := range []string{
		"Configuration data as of 2026-11-30T04:59:33\n",
		"AccountingStorageEnforce = associations,limits,qos\n",
		"ClusterName             = lab\n",
		"DefMemPerCPU            = 1000\n",
		"EnforcePartLimits       = ALL\n",
		"GresTypes               = gpu\n",
		"KillWait                = 30 sec\n",
		"MaxNodeCount            = 4\n",
		"PrivateData             = none\n",
		"SchedulerType           = sched/backfill\n",
		"SlurmctldHost[0]        = node1(127.0.1.1)\n",
		"SlurmdTimeout           = 300 sec\n",
		"SLURM_VERSION           = 22.05.8\n",
		"\n\nSlurmctld(primary) at node1 is UP\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show config lacks %q:\n%s", want, stdout)
		}
	}
	// Keys are sorted as Slurm sorts them, ignoring case.
	if i, j := strings.Index(stdout, "SchedulerType"), strings.Index(stdout, "SLURM_VERSION"); i > j {
		t.Errorf("order: SchedulerType after SLURM_VERSION")
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
