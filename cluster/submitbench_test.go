package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hpc/cluster/api"
)

// threeCtlConf: three controllers that also run jobs, as `hpc up` makes.
const threeCtlConf = `ClusterName=t
SlurmctldHost=node1(NET.1)
SlurmctldHost=node2(NET.2)
SlurmctldHost=node3(NET.3)
MaxJobCount=1000000
HpcApiPort=26837
HpcRaftPort=26838
HpcGossipPort=26839
NodeName=node[1-3] NodeAddr=NET.[1-3] CPUs=2 RealMemory=1000
PartitionName=debug Nodes=node[1-3] Default=YES MaxTime=60
`

// BenchmarkSubmitConcurrent measures the API's submit throughput: 64
// submitters (HPC_BENCH_SUBMITTERS) post held jobs on the leader's unix socket of a three
// controller cluster, each submit answered only once a majority has it on
// disk (Raft over TCP, BoltDB with fsync). It reports jobs/s.
//
//	go test -run '^$' -bench SubmitConcurrent -benchtime 5000x ./cluster/
func BenchmarkSubmitConcurrent(b *testing.B) {
	l := newCtlLab(b, threeCtlConf)
	for _, n := range []string{"node1", "node2", "node3"} {
		l.start(n)
	}
	var leader string
	waitUntil(b, 30*time.Second, "a leader", func() (bool, string) {
		st, err := l.client("node1").Status(context.Background())
		if err != nil || st.Leader == "" {
			return false, fmt.Sprint(err)
		}
		leader = st.Leader
		return true, ""
	})
	cl := l.client(leader)
	spec := api.JobSpec{Name: "bench", Script: "#!/bin/sh\ntrue\n", WorkDir: "/tmp", Hold: true, TimeLimitMin: 1}
	if _, err := cl.Submit(context.Background(), spec); err != nil {
		b.Fatal(err)
	}
	submitters := 64
	if n, err := strconv.Atoi(os.Getenv("HPC_BENCH_SUBMITTERS")); err == nil && n > 0 {
		submitters = n
	}
	var next atomic.Int64
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := cl.Submit(context.Background(), spec); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
}
