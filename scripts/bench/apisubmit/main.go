// Command apisubmit submits held `true` jobs through a node's unix socket
// from many goroutines at once, as many scripted clients would, and prints
// the rate at which the controllers committed them (each submit is
// answered once a majority has it on disk). It is the script figure of the
// API's submit throughput (scripts/bench/scale.sh); the Go benchmark is
// cluster's BenchmarkSubmitConcurrent.
//
//	go run ./scripts/bench/apisubmit -socket /path/node1/hpc.sock -n 20000 -c 256
//
// Output: one line `api submit (C concurrent)<TAB>RATE<TAB>jobs/s` on
// stdout, details on stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"hpc/cluster/api"
)

func main() {
	socket := flag.String("socket", os.Getenv("HPC_SOCKET"), "the node's unix socket")
	n := flag.Int("n", 10000, "jobs to submit")
	c := flag.Int("c", 256, "concurrent submitters")
	hold := flag.Bool("hold", true, "submit held (JobHeldUser), so nothing runs")
	flag.Parse()
	if *socket == "" || *n <= 0 || *c <= 0 {
		fmt.Fprintln(os.Stderr, "usage: apisubmit -socket PATH [-n N] [-c C] [-hold=false]")
		os.Exit(2)
	}
	cl := api.NewClient(*socket)
	wd, _ := os.Getwd()
	spec := api.JobSpec{Name: "apisubmit", Script: "#!/bin/sh\ntrue\n", WorkDir: wd, Hold: *hold, TimeLimitMin: 1}
	var next, failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range *c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(*n) {
				if _, err := cl.Submit(context.Background(), spec); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	ok := int64(*n) - failed.Load()
	fmt.Fprintf(os.Stderr, "apisubmit: %d submitted (%d failed) in %.2f s by %d submitters\n", ok, failed.Load(), el.Seconds(), *c)
	if err, _ := firstErr.Load().(error); err != nil {
		fmt.Fprintf(os.Stderr, "apisubmit: first error: %v\n", err)
	}
	fmt.Printf("api submit (%d concurrent)\t%.0f\tjobs/s\n", *c, float64(ok)/el.Seconds())
	if failed.Load() > 0 {
		os.Exit(1)
	}
}
