package format

import (
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

func TestSinfoSummarize(t *testing.T) {
	nodes := busyNodes()
	nodes[3].State, nodes[3].Reason = "IDLE+DRAIN", "bad disk"
	got := Sinfo(refPartitions(), nodes, SinfoOptions{Summarize: true})
	want := "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n" +
		"debug*       up 1-00:00:00          3/0/1/4 node[1-4]\n" +
		"gpu          up 1-00:00:00          1/0/1/2 node[3-4]\n"
	if got != want {
		t.Errorf("sinfo -s:\n%s\nwant:\n%s", got, want)
	}
}

func TestSinfoListReasons(t *testing.T) {
	nodes := refNodes()
	nodes[1].State, nodes[1].Reason = "DOWN*", "Not responding"
	nodes[3].State, nodes[3].Reason = "IDLE+DRAIN", "bad disk"
	nodes[2].State, nodes[2].Reason = "DOWN*", "Not responding"
	var listed []api.Node
	for _, n := range nodes {
		if ok, _ := NodeStateMatches(n, ReasonStates); ok {
			listed = append(listed, n)
		}
	}
	got := Sinfo(refPartitions(), listed, SinfoOptions{ListReasons: true})
	want := "REASON               USER      TIMESTAMP           NODELIST\n" +
		"Not responding       Unknown   Unknown             node[2-3]\n" +
		"bad disk             Unknown   Unknown             node4\n"
	if got != want {
		t.Errorf("sinfo -R:\n%s\nwant:\n%s", got, want)
	}
	got = Sinfo(refPartitions(), listed, SinfoOptions{ListReasons: true, Long: true, NoHeader: true})
	want = "Not responding       Unknown      Unknown             down*  node[2-3]\n" +
		"bad disk             Unknown      Unknown             drain  node4\n"
	if got != want {
		t.Errorf("sinfo -R -l:\n%q\nwant:\n%q", got, want)
	}
}

func TestSinfoFormats(t *testing.T) {
	nodes := busyNodes()
	// Without a state column nodes of one partition share a line; without
	// a partition column partitions that print alike merge.
	got := Sinfo(refPartitions(), nodes, SinfoOptions{Format: "%P %D %c"})
	want := "PARTITION NODES CPUS\ndebug* 4 2\ngpu 2 2\n"
	if got != want {
		t.Errorf("-o %%P %%D %%c:\n%q\nwant\n%q", got, want)
	}
	got = Sinfo(refPartitions(), nodes, SinfoOptions{Format: "%.6D %t|%N", NoHeader: true})
	want = "     3 alloc|node[1-3]\n     1 idle|node4\n"
	if got != want {
		t.Errorf("-o %%.6D %%t|%%N:\n%q\nwant\n%q", got, want)
	}
	got = Sinfo(refPartitions(), nodes, SinfoOptions{LongFormat: "partition:8,statelong:.10 ,nodelist"})
	want = "PARTITIO     STATE NODELIST            \n" +
		"debug*   allocated node[1-3]           \n" +
		"debug*        idle node4               \n" +
		"gpu      allocated node3               \n" +
		"gpu           idle node4               \n"
	if got != want {
		t.Errorf("-O:\n%q\nwant\n%q", got, want)
	}
	if _, err := ParseSinfoFormat("%P %Q"); err == nil || err.Error() != "Invalid node format specification: Q" {
		t.Errorf("bad letter: %v", err)
	}
	if _, err := ParseSinfoLongFormat("partition,bogus"); err == nil || err.Error() != "Invalid node format specification: bogus" {
		t.Errorf("bad name: %v", err)
	}
	// A partition left without nodes by the caller's filter still shows,
	// as in sinfo -t.
	got = Sinfo(append(refPartitions(), api.Partition{Name: "empty"}), nodes[:1], SinfoOptions{NoHeader: true})
	want = "debug*       up 1-00:00:00      1  alloc node1\n" +
		"gpu          up 1-00:00:00      0    n/a \n" +
		"empty        up       0:00      0    n/a \n"
	if got != want {
		t.Errorf("filtered:\n%q\nwant\n%q", got, want)
	}
}

func TestNodeStateMatches(t *testing.T) {
	for _, c := range []struct {
		state string
		cpus  int
		names []string
		want  bool
	}{
		{"IDLE", 0, []string{"idle"}, true},
		{"IDLE", 0, []string{"alloc", "down"}, false},
		{"ALLOCATED", 1, []string{"mix"}, true},
		{"ALLOCATED", 2, []string{"ALLOC"}, true},
		{"DOWN*", 0, []string{"down"}, true},
		{"DOWN*", 0, []string{"no_respond"}, true},
		{"IDLE+DRAIN", 0, []string{"drain"}, true},
		{"IDLE+DRAIN", 0, []string{"drained"}, true},
		{"IDLE+DRAIN", 0, []string{"draining"}, false},
		{"ALLOCATED+DRAIN", 2, []string{"draining"}, true},
	} {
		n := api.Node{Name: "n", CPUs: 2, AllocCPUs: c.cpus, State: c.state}
		got, err := NodeStateMatches(n, c.names)
		if err != nil || got != c.want {
			t.Errorf("%s %v: %v %v, want %v", c.state, c.names, got, err, c.want)
		}
	}
	if _, err := NodeStateMatches(api.Node{State: "IDLE"}, []string{"sleepy"}); err == nil {
		t.Error("unknown state accepted")
	}
}

func TestSqueueLongFormat(t *testing.T) {
	fields, err := ParseSqueueLongFormat("jobid:.10 ,name:20,State,bogus:5x")
	if err == nil || err.Error() != "Invalid job format specification: bogus" {
		t.Errorf("error %v", err)
	}
	if len(fields) != 4 || fields[0].Name != "jobid" || fields[0].Width != 10 || !fields[0].Right || fields[0].Text != " " ||
		fields[2].Width != 20 || fields[3].Name != "" || fields[3].Text != "x" {
		t.Errorf("fields %+v", fields)
	}
	// squeue's default output, written as the -O string Slurm itself uses.
	def := "jobarrayid:.18 ,partition:.9 ,name:.8 ,username:.8 ,statecompact:.2 ,timeused:.10 ,numnodes:.6 ,reasonlist:0"
	now := at(4, 59, 33)
	if a, b := Squeue(busyJobs(), now, SqueueOptions{LongFormat: def}), Squeue(busyJobs(), now, SqueueOptions{}); a != b {
		t.Errorf("-O default differs:\n%s\n%s", a, b)
	}
	j := *findJob(busyJobs(), 19)
	got := Squeue([]api.Job{j}, now, SqueueOptions{LongFormat: "jobid:6,numtasks:6,exit_code:10,tres-per-node:16,stdout", NoHeader: true})
	if want := "19    1     0:0       gres:gpu:1      /tmp/slurm-capture/s"; strings.TrimRight(got, "\n") != want {
		t.Errorf("-O fields: %q, want %q", got, want)
	}
}

func TestSqueueSort(t *testing.T) {
	now := at(4, 59, 33)
	ids := func(jobs []api.Job) string {
		var s []string
		for _, j := range jobs {
			s = append(s, jobID(&j))
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct{ spec, want string }{
		{"i", "15 16 17 18 19 20 21 22 23 24 25"},
		{"-i", "25 24 23 22 21 20 19 18 17 16 15"},
		{"P,i", "15 16 17 18 20 21 22 23 25 19 24"},
		{"-D,i", "18 20 15 16 17 19 21 22 23 24 25"},
		{"j,-i", "21 20 24 19 22 23 18 17 16 15 25"},
		{"t,i", "20 21 22 23 24 25 15 16 17 18 19"},
		{"", "20 21 23 25 22 15 16 17 18 24 19"},
	} {
		var jobs []api.Job
		for _, j := range sortedJobs(busyJobs(), c.spec, now) {
			jobs = append(jobs, *j)
		}
		if got := ids(jobs); got != c.want {
			t.Errorf("-S %q: %s, want %s", c.spec, got, c.want)
		}
	}
	if _, err := CheckSqueueSort("P,-y"); err == nil || err.Error() != "Invalid sort specification: y" {
		t.Errorf("bad sort: %v", err)
	}
	if notes, err := CheckSqueueSort("b,i"); err != nil || len(notes) != 1 {
		t.Errorf("b sort: %v %v", notes, err)
	}
}

func TestSqueueSteps(t *testing.T) {
	now := at(4, 59, 33)
	jobs := busyJobs()
	for i := range jobs {
		if jobs[i].ID == 18 {
			jobs[i].Steps = []api.Step{
				{ID: 0, Name: "sleep", Nodes: []string{"node2", "node3"}, Tasks: []int{1, 1}, State: api.StateRunning, Start: at(4, 59, 29)},
				{ID: 1, Name: "done", Nodes: []string{"node2"}, Tasks: []int{1}, State: api.StateCompleted, Start: at(4, 59, 29)},
			}
		}
	}
	steps := JobSteps(jobs)
	one := BatchSteps([]api.Job{*findJob(busyJobs(), 15)})
	got := SqueueSteps(steps, now, SqueueOptions{})
	// Slurm's listing 34, to the letter.
	want := "         STEPID     NAME PARTITION     USER      TIME NODELIST\n" +
		"       15.batch    batch     debug     root      0:04 node1\n" +
		"       16.batch    batch     debug     root      0:04 node1\n" +
		"       17.batch    batch     debug     root      0:04 node2\n" +
		"           18.0    sleep     debug     root      0:04 node[2-3]\n" +
		"       18.batch    batch     debug     root      0:04 node2\n" +
		"       19.batch    batch       gpu     root      0:04 node3\n"
	if got != want {
		t.Errorf("squeue -s:\n%s\nwant:\n%s", got, want)
	}
	got = SqueueSteps(one, now, SqueueOptions{Format: "%i %A %l %Q", NoHeader: true})
	if got != "15.batch 1 UNLIMITED %Q\n" {
		t.Errorf("-s -o: %q", got)
	}
	if _, err := ParseStepFormat("%i %Q"); err == nil || err.Error() != "Invalid job step format specification: Q" {
		t.Errorf("bad step letter: %v", err)
	}
	got = SqueueSteps(one, now, SqueueOptions{LongFormat: "stepid:10,numcpus:.4", NoHeader: true})
	if got != "15.batch     1\n" {
		t.Errorf("-s -O: %q", got)
	}
	if h := SqueueSteps(nil, now, SqueueOptions{}); h != "         STEPID     NAME PARTITION     USER      TIME NODELIST\n" {
		t.Errorf("no steps: %q", h)
	}
	// A pending job has no batch step.
	if s := BatchSteps([]api.Job{*findJob(busyJobs(), 20)}); len(s) != 0 {
		t.Errorf("pending job steps: %+v", s)
	}
	_ = time.Second
}

func TestShowJobCarriedOptions(t *testing.T) {
	no := false
	j := *findJob(busyJobs(), 20)
	j.Spec.Dependency = "afterok:15"
	j.Reason = "Dependency"
	j.Spec.NodeList = "node[1-2]"
	j.Spec.Exclude = "node4"
	j.Spec.Constraint = "fast"
	j.Spec.Exclusive = "exclusive"
	j.Spec.Requeue = &no
	j.Spec.TimeMinMin = 5
	j.Spec.QOS = "high"
	j.Spec.NTasksPerNode = 2
	j.Spec.MemPerCPUMB = 500
	j.Spec.MailType = "end"
	j.Spec.Gpus = "2"
	got := ShowJob(&j, at(4, 59, 33), true, false)
	for _, want := range []string{
		" QOS=high ", " Dependency=afterok:15(unfulfilled) ", " Requeue=0 ", " TimeMin=00:05:00 ",
		" ReqNodeList=node[1-2] ExcNodeList=node4 ", " NtasksPerN:B:S:C=2:0:*:* ",
		" MinMemoryCPU=500M ", " Features=fast ", " OverSubscribe=NO ", " TRES=cpu=4,mem=2000M,",
		" Power= TresPerJob=gres:gpu:2 MailUser=root MailType=END \n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("show job lacks %q:\n%s", want, got)
		}
	}
}

func TestShowPartitionOneLiner(t *testing.T) {
	got := ShowPartition(refPartitions()[1], refNodes(), true)
	want := "PartitionName=gpu AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=NO QoS=N/A " +
		"DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO MaxNodes=UNLIMITED " +
		"MaxTime=1-00:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=node[3-4] PriorityJobFactor=1 " +
		"PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP " +
		"TotalCPUs=4 TotalNodes=2 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED " +
		"MaxMemPerNode=UNLIMITED TRES=cpu=4,mem=8000M,node=2,billing=4,gres/gpu=4\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestShowConfigAndPing(t *testing.T) {
	got := ShowConfig([]ConfigItem{{"ClusterName", "lab"}, {"AccountingStorageBackupHost", "(null)"}}, at(4, 59, 43))
	want := "Configuration data as of 2026-11-30T04:59:43\n" +
		"ClusterName             = lab\n" +
		"AccountingStorageBackupHost = (null)\n\n"
	if got != want {
		t.Errorf("ShowConfig:\n%q\nwant\n%q", got, want)
	}
	if got := PingLines([]Controller{{"vm", true}}, true); got != "Slurmctld(primary) at vm is UP\n" {
		t.Errorf("ping 1: %q", got)
	}
	if got := PingLines([]Controller{{"a", true}, {"b", false}}, false); got != "Slurmctld(primary) at a is UP\nSlurmctld(backup) at b is DOWN\n" {
		t.Errorf("ping 2: %q", got)
	}
	got = PingLines([]Controller{{"a", false}, {"b", true}, {"c", true}}, true)
	if !strings.HasPrefix(got, "Slurmctld(primary) at a is DOWN\nSlurmctld(backup1) at b is UP\nSlurmctld(backup2) at c is UP\n****") {
		t.Errorf("ping 3: %q", got)
	}
}

func TestControllerSchedulingView(t *testing.T) {
	now := at(4, 59, 33)
	j := *findJob(busyJobs(), 20)
	j.Priority = 1234
	j.ExpectedStart = at(5, 9, 29)
	j.SchedNodes = []string{"node4", "node1"}
	got := Squeue([]api.Job{j}, now, SqueueOptions{Format: "%Q %S %Y", NoHeader: true})
	if got != "1234 2026-11-30T05:09:29 node[1,4]\n" {
		t.Errorf("squeue: %q", got)
	}
	show := ShowJob(&j, now, true, false)
	if !strings.Contains(show, " Priority=1234 ") || !strings.Contains(show, " StartTime=2026-11-30T05:09:29 EndTime=2026-11-30T05:19:29 ") {
		t.Errorf("show job: %s", show)
	}
	j.Hold, j.Restarts = "user", 2
	if show := ShowJob(&j, now, true, false); !strings.Contains(show, " Priority=0 ") || !strings.Contains(show, " Restarts=2 ") {
		t.Errorf("held: %s", show)
	}
}

func TestDependencyString(t *testing.T) {
	j := *findJob(busyJobs(), 21)
	for _, c := range []struct{ dep, reason, want string }{
		{"afterok:15", "Dependency", "afterok:15(unfulfilled)"},
		{"afterok:15:16,afterany:17", "Dependency", "afterok:15(unfulfilled),afterok:16(unfulfilled),afterany:17(unfulfilled)"},
		{"afterok:15?afternotok:16", "DependencyNeverSatisfied", "afterok:15(failed)?afternotok:16(failed)"},
		{"singleton", "Dependency", "singleton(unfulfilled)"},
		{"afterok:15", "Priority", "afterok:15"},
		{"", "Priority", "(null)"},
	} {
		j.Spec.Dependency, j.Reason = c.dep, c.reason
		if got := openapi.DependencyString(&j); got != c.want {
			t.Errorf("%q %s: %q, want %q", c.dep, c.reason, got, c.want)
		}
	}
	j.Spec.Dependency, j.State = "afterok:15", api.StateRunning
	if got := openapi.DependencyString(&j); got != "(null)" {
		t.Errorf("running: %q", got)
	}
}

func TestCPUTimeString(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "00:00.000"}, {6 * time.Millisecond, "00:00.006"}, {83*time.Second + 450*time.Millisecond, "01:23.450"},
		{59*time.Minute + 59*time.Second + 999*time.Millisecond, "59:59.999"}, {time.Hour + 2*time.Second, "01:00:02"},
		{49 * time.Hour, "2-01:00:00"},
	} {
		if got := CPUTimeString(c.d); got != c.want {
			t.Errorf("CPUTimeString(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
