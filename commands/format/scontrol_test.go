package format

import (
	"strings"
	"testing"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

func TestShowNodeDownWithReason(t *testing.T) {
	n := api.Node{Name: "c7", Addr: "10.0.0.7", CPUs: 16, MemMB: 65536, State: "DOWN*",
		Reason: "Not responding\nsecond line"}
	got := ShowNode(n, false)
	for _, want := range []string{
		"NodeName=c7 Arch=" + openapi.NodeArch() + " CoresPerSocket=16 \n   CPUAlloc=0 CPUEfctv=16 CPUTot=16 CPULoad=N/A\n",
		"   Gres=(null)\n   NodeAddr=10.0.0.7 NodeHostName=c7 Version=22.05.8\n",
		"   RealMemory=65536 AllocMem=0 FreeMem=N/A Sockets=1 Boards=1\n",
		"   State=DOWN+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n   BootTime=None",
		"   CfgTRES=cpu=16,mem=64G,billing=16\n   AllocTRES=\n",
		"ExtSensorsTemp=n/s\n   Reason=Not responding\n          second line\n\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("show node lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Partitions=") || strings.Contains(got, "Port=") {
		t.Errorf("show node printed Partitions or Port it has not got:\n%s", got)
	}
}

func TestShowNodeMixedOneLiner(t *testing.T) {
	n := api.Node{Name: "n1", Addr: "[fe80::1]:7000", CPUs: 4, MemMB: 8000, State: api.NodeAllocated,
		AllocCPUs: 1, AllocMemMB: 500, Partitions: []string{"a", "b"}}
	got := ShowNode(n, true)
	if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "ExtSensorsTemp=n/s\n") {
		t.Errorf("one-liner is not one line: %q", got)
	}
	for _, want := range []string{" NodeAddr=fe80::1 NodeHostName=n1 Port=7000 Version=", " State=MIXED ",
		" Partitions=a,b  BootTime=", " AllocTRES=cpu=1,mem=500M "} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q: %q", want, got)
		}
	}
}

func TestShowJobVariants(t *testing.T) {
	now := at(5, 0, 0)

	done := running(batchJob(40, "train model", "gpu"), "node3", "node4")
	done.State = api.StateFailed
	done.Reason = "NonZeroExitCode"
	done.ExitCode, done.Signal = 0, 9
	done.EndTime = at(4, 59, 59)
	done.StdErr = "/scratch/err-40.txt"
	got := ShowJob(&done, now, false, false)
	for _, want := range []string{
		"JobId=40 JobName=train model\n",
		"   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n",
		"ExitCode=0:9\n   RunTime=00:00:30 TimeLimit=00:10:00 TimeMin=N/A\n",
		"   StartTime=2026-11-30T04:59:29 EndTime=2026-11-30T04:59:59 Deadline=N/A\n",
		"   NodeList=node[3-4]\n   BatchHost=node3\n",
		"   StdErr=/scratch/err-40.txt\n   StdIn=/dev/null\n   StdOut=/tmp/slurm-capture/slurm-40.out\n   Power=\n   \n\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("failed job lacks %q:\n%s", want, got)
		}
	}

	wait := pending(batchJob(41, "big", "debug"), "Nodes required for job are DOWN")
	wait.Spec.MemPerNodeMB = 2048
	wait.Spec.TimeLimitMin = -1
	wait.Spec.Nodes = 3
	wait.Spec.CPUsPerTask = 2
	wait.Spec.Script = "" // an srun/salloc job: no batch script
	got = ShowJob(&wait, now, false, false)
	for _, want := range []string{
		"Reason=Nodes_required_for_job_are_DOWN Dependency",
		"BatchFlag=0",
		"RunTime=00:00:00 TimeLimit=UNLIMITED",
		"StartTime=Unknown EndTime=Unknown",
		"   NodeList=\n   NumNodes=3 NumCPUs=6 NumTasks=3 CPUs/Task=2 ReqB:S:C:T=0:0:*:*\n",
		"   TRES=cpu=6,mem=6G,node=3,billing=6\n",
		"   MinCPUsNode=2 MinMemoryNode=2G MinTmpDiskNode=0\n",
		"   WorkDir=/tmp/slurm-capture\n   Power=\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("pending job lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "StdOut=") || strings.Contains(got, "BatchHost=") {
		t.Errorf("non-batch pending job shows StdOut or BatchHost:\n%s", got)
	}

	dep := pending(batchJob(42, "after", "debug"), "Dependency")
	got = ShowJob(&dep, now, true, false)
	if !strings.Contains(got, " EligibleTime=Unknown AccrueTime=Unknown ") {
		t.Errorf("dependent job is eligible: %s", got)
	}
	if !strings.Contains(got, " StdErr=/tmp/slurm-capture/slurm-42.out StdIn=/dev/null StdOut=/tmp/slurm-capture/slurm-42.out Power= \n") {
		t.Errorf("default output paths wrong: %s", got)
	}
}

func TestShowPartition(t *testing.T) {
	nodes := []api.Node{
		{Name: "g2", CPUs: 8, MemMB: 2048, Gres: "gpu:a100:4,mps:100"},
		{Name: "g1", CPUs: 8, MemMB: 2048, Gres: "gpu:2"},
		{Name: "other", CPUs: 1, MemMB: 1},
	}
	p := api.Partition{Name: "big", Nodes: []string{"g[1-2]"}, MaxTimeMin: -1, State: "drain"}
	got := ShowPartition(p, nodes, false)
	for _, want := range []string{
		"PartitionName=big\n   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n   AllocNodes=ALL Default=NO QoS=N/A\n",
		"   MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED\n   Nodes=g[1-2]\n",
		"   State=DRAIN TotalCPUs=16 TotalNodes=2 SelectTypeParameters=NONE\n",
		"   TRES=cpu=16,mem=4G,node=2,billing=16,gres/gpu=6,gres/mps=100\n\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("show partition lacks %q:\n%s", want, got)
		}
	}
	empty := ShowPartition(api.Partition{Name: "none", Default: true, MaxTimeMin: 30}, nodes, false)
	for _, want := range []string{"Default=YES", "MaxTime=00:30:00", "Nodes=(null)", "State=UP TotalCPUs=0 TotalNodes=0",
		"TRES=(null)\n\n"} {
		if !strings.Contains(empty, want) {
			t.Errorf("empty partition lacks %q:\n%s", want, empty)
		}
	}
}

func TestConvertMB(t *testing.T) {
	for mb, want := range map[int64]string{0: "0", 1000: "1000M", 1024: "1G", 1536: "1536M", 16000: "16000M",
		1 << 20: "1T", 3 << 30: "3P"} {
		if got := openapi.ConvertMB(mb); got != want {
			t.Errorf("convertMB(%d) = %q, want %q", mb, got, want)
		}
	}
}
