package format

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
)

// The reference capture (../shared/slurm-reference) was taken on
// 2026-11-30; the fixtures below rebuild its cluster and jobs. Times are in
// local time so ISOTime prints the captured wall-clock values whatever the
// test machine's time zone.
func at(h, m, s int) time.Time { return time.Date(2026, 11, 30, h, m, s, 0, time.Local) }

// refPartitions is the lab's slurm.conf: debug (default) on node[1-4] and
// gpu on node[3-4], both with MaxTime=1-00:00:00.
func refPartitions() []api.Partition {
	return []api.Partition{
		{Name: "debug", Nodes: []string{"node[1-4]"}, Default: true, MaxTimeMin: 1440, State: "UP"},
		{Name: "gpu", Nodes: []string{"node3", "node4"}, MaxTimeMin: 1440, State: "UP"},
	}
}

// refNodes returns node1..node4 (2 CPUs, 4000 MB; node3 and node4 hold two
// GPUs), idle.
func refNodes() []api.Node {
	var out []api.Node
	for i := 1; i <= 4; i++ {
		n := api.Node{
			Name:       fmt.Sprintf("node%d", i),
			Addr:       fmt.Sprintf("127.0.0.1:%d", 17000+i),
			CPUs:       2,
			MemMB:      4000,
			Partitions: []string{"debug"},
			State:      api.NodeIdle,
		}
		if i >= 3 {
			n.Gres = "gpu:2"
			n.Partitions = []string{"debug", "gpu"}
		}
		out = append(out, n)
	}
	return out
}

// busyNodes is the node table while jobs 15-19 run: node1-3 full, node4 idle.
func busyNodes() []api.Node {
	nodes := refNodes()
	for i := 0; i < 3; i++ {
		nodes[i].State = api.NodeAllocated
		nodes[i].AllocCPUs = 2
		nodes[i].AllocMemMB = 2000
	}
	return nodes
}

func batchJob(id uint64, name, part string) api.Job {
	return api.Job{
		ID: id,
		Spec: api.JobSpec{
			Name:         name,
			Partition:    part,
			TimeLimitMin: 10,
			WorkDir:      "/tmp/slurm-capture",
			Script:       "#!/bin/sh\nsleep 600\n",
			SubmitHost:   "localhost",
		},
		User:    "root",
		Group:   "root",
		Account: "root",
	}
}

func running(j api.Job, nodes ...string) api.Job {
	j.State = api.StateRunning
	j.Reason = api.ReasonNone
	j.SubmitTime = at(4, 59, 28)
	j.StartTime = at(4, 59, 29)
	j.BatchHost = nodes[0]
	for _, n := range nodes {
		j.Alloc = append(j.Alloc, api.NodeAlloc{Node: n, CPUs: 1, MemMB: 1000})
	}
	j.StdOut = "/tmp/slurm-capture/slurm-" + strconv.FormatUint(j.ID, 10) + ".out"
	return j
}

func pending(j api.Job, reason string) api.Job {
	j.State = api.StatePending
	j.Reason = reason
	j.SubmitTime = at(4, 59, 29)
	return j
}

// busyJobs is the queue of the capture's "busy" phase (files 30-46): R1..R5
// are jobs 15-19, P1..P6 jobs 20-25. Order is scrambled on purpose: Squeue
// must sort.
func busyJobs() []api.Job {
	j18 := batchJob(18, "multi", "debug")
	j18.Spec.Nodes = 2
	j19 := batchJob(19, "gpujob", "gpu")
	j19.Spec.Gres = "gpu:1"
	j21 := batchJob(21, "after", "debug")
	j21.Spec.Dependency = "afterok:15"
	j20 := batchJob(20, "big", "debug")
	j20.Spec.Nodes = 2
	j20.Spec.NTasks = 4
	return []api.Job{
		pending(batchJob(25, "small", "debug"), "Priority"),
		running(j19, "node3"),
		pending(batchJob(22, "held", "debug"), "JobHeldUser"),
		running(batchJob(15, "sleeper", "debug"), "node1"),
		pending(batchJob(24, "gpu2", "gpu"), "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"),
		running(batchJob(16, "sleeper", "debug"), "node1"),
		pending(j20, "Resources"),
		running(j18, "node2", "node3"),
		pending(j21, "Dependency"),
		running(batchJob(17, "sleeper", "debug"), "node2"),
		pending(batchJob(23, "later", "debug"), "BeginTime"),
	}
}

func findJob(jobs []api.Job, id uint64) *api.Job {
	for i := range jobs {
		if jobs[i].ID == id {
			return &jobs[i]
		}
	}
	panic("no job " + strconv.FormatUint(id, 10))
}

// afterCancelJobs is the queue of file 72: job 16 cancelled at 04:59:34
// and completing, job 27 (wrap) submitted meanwhile.
func afterCancelJobs() []api.Job {
	var out []api.Job
	for _, j := range busyJobs() {
		if j.ID == 16 {
			j.State = api.StateCompleting
			j.EndTime = at(4, 59, 34)
			j.CancelRequested = true
		}
		out = append(out, j)
	}
	return append(out, pending(batchJob(27, "wrap", "debug"), "Priority"))
}

// acctRows rebuilds the accounting of jobs 1-29 (files 80-84). Each line:
// id[.step] name partition cpus state exit:signal cancelled nodes seconds.
func acctRows() []api.AcctRow {
	const table = `
1 wrap debug 1 COMPLETED 0:0 - node1 0
1.batch batch debug 1 COMPLETED 0:0 - node1 0
2 wrap debug 1 COMPLETED 0:0 - node1 0
2.batch batch debug 1 COMPLETED 0:0 - node1 0
3 wrap debug 1 COMPLETED 0:0 - node2 0
3.batch batch debug 1 COMPLETED 0:0 - node2 0
4 envdump debug 4 COMPLETED 0:0 - node[1-2] 0
4.batch batch debug 2 COMPLETED 0:0 - node1 0
5 stepdump debug 4 COMPLETED 0:0 - node[1-2] 0
5.batch batch debug 2 COMPLETED 0:0 - node1 0
5.0 bash debug 4 COMPLETED 0:0 - node[1-2] 0
6 bash debug 4 COMPLETED 0:0 - node[1-2] 1
6.0 bash debug 4 COMPLETED 0:0 - node[1-2] 1
7 bash debug 4 COMPLETED 0:0 - node[1-2] 0
7.0 bash debug 4 COMPLETED 0:0 - node[1-2] 0
8 wrap gpu 1 COMPLETED 0:0 - node3 0
8.batch batch gpu 1 COMPLETED 0:0 - node3 0
9 bash gpu 1 COMPLETED 0:0 - node3 0
9.0 bash gpu 1 COMPLETED 0:0 - node3 0
10 hostname debug 2 COMPLETED 0:0 - node[1-2] 0
10.0 hostname debug 2 COMPLETED 0:0 - node[1-2] 0
11 false debug 1 FAILED 1:0 - node1 0
11.0 false debug 1 FAILED 1:0 - node1 0
12 bash debug 2 FAILED 3:0 - node[1-2] 0
12.0 bash debug 2 FAILED 3:0 - node[1-2] 0
13 wrap debug 1 FAILED 3:0 - node1 0
13.batch batch debug 1 FAILED 3:0 - node1 0
14 wrap debug 1 COMPLETED 0:0 - node1 0
14.batch batch debug 1 COMPLETED 0:0 - node1 0
15 sleeper debug 1 CANCELLED 0:0 0 node1 6
15.batch batch debug 1 CANCELLED 0:15 - node1 6
16 sleeper debug 1 CANCELLED 0:0 0 node1 5
16.batch batch debug 1 CANCELLED 0:15 - node1 5
17 sleeper debug 1 CANCELLED 0:0 0 node2 6
17.batch batch debug 1 CANCELLED 0:15 - node2 6
18 multi debug 2 CANCELLED 0:0 0 node[2-3] 6
18.batch batch debug 1 CANCELLED 0:15 - node2 6
18.0 sleep debug 2 CANCELLED 0:15 - node[2-3] 6
19 gpujob gpu 1 CANCELLED 0:0 0 node3 6
19.batch batch gpu 1 CANCELLED 0:15 - node3 6
20 big debug 4 CANCELLED 0:0 0 - 0
24 gpu2 gpu 1 CANCELLED 0:0 0 - 0
25 small debug 1 CANCELLED 0:0 0 - 0
26 wrap debug 1 FAILED 1:0 - - 0
27 wrap debug 1 CANCELLED 0:0 0 - 0
29 wrap gpu 1 FAILED 1:0 - - 0
`
	var rows []api.AcctRow
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		f := strings.Fields(line)
		id, step, _ := strings.Cut(f[0], ".")
		r := api.AcctRow{JobName: f[1], Partition: f[2], Account: "root", User: "root", Step: step, State: f[4]}
		r.JobID, _ = strconv.ParseUint(id, 10, 64)
		r.AllocCPUs, _ = strconv.Atoi(f[3])
		code, sig, _ := strings.Cut(f[5], ":")
		r.ExitCode, _ = strconv.Atoi(code)
		r.Signal, _ = strconv.Atoi(sig)
		if f[6] != "-" {
			uid := uint32(0)
			r.CancelledBy = &uid
		}
		r.Submit = at(4, 59, 0)
		if f[7] != "-" {
			r.NodeList = f[7]
			secs, _ := strconv.Atoi(f[8])
			r.Start = at(4, 59, 1)
			r.End = r.Start.Add(time.Duration(secs) * time.Second)
		} else {
			r.End = at(4, 59, 40)
		}
		rows = append(rows, r)
	}
	return rows
}

func jobRowsOnly(rows []api.AcctRow) []api.AcctRow {
	var out []api.AcctRow
	for _, r := range rows {
		if r.Step == "" {
			out = append(out, r)
		}
	}
	return out
}
