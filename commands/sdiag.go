package commands

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sdiagOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts("all,a", "reset,r", "sort-by-id,i", "sort-by-time,t", "sort-by-time2,T", "cluster,M,:", "clusters,M,:",
		"help,h", "usage", "version,V")
})

const sdiagUsage = "Usage: sdiag [-M cluster] [-aritT] [--help] [--usage] [-V]\n"

const sdiagHelp = `Usage: sdiag [OPTIONS]
  -a, --all             all statistics (the default)
  -r, --reset           start the counters over (root and operators)
  -i, --sort-by-id      RPCs sorted by message type
  -t, --sort-by-time    RPCs sorted by total time
  -T, --sort-by-time2   RPCs sorted by average time
  -M, --cluster, --clusters=name
                        the cluster to ask (hpc runs one: its name or all)

Help options:
  -h, --help            print this help
      --usage           print a short list of the options
  -V, --version         print the Slurm version hpc follows
`

// sdiagMain is sdiag: the controller's scheduling and request statistics,
// in Slurm's layout, or -r to start them over (root and operators).
func sdiagMain(e *Env, prog string, args []string) int {
	reset := false
	sortBy := "count"
	_, code, done := parseOpts(e, prog, sdiagOpts(), args, func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "r":
			reset = true
		case "i":
			sortBy = "id"
		case "t":
			sortBy = "time"
		case "T":
			sortBy = "time2"
		case "M":
			return clustersOption(e, prog, val)
		case "h":
			io.WriteString(e.Stdout, sdiagHelp)
			return quit{0}
		default:
			if handled, err := helpOrVersion(e, o.ID(), sdiagHelp, sdiagUsage); handled {
				return err
			}
		}
		return nil
	})
	if done {
		return code
	}
	ctx := context.Background()
	cl, err := e.Client(ctx)
	if err != nil {
		e.errorf(prog, "%v", err)
		return 1
	}
	if reset {
		if err := cl.DiagReset(ctx); err != nil {
			_, msg := errText(err)
			e.errorf(prog, "%s", msg)
			return 1
		}
		fmt.Fprintln(e.Stdout, "Reset scheduling statistics")
		return 0
	}
	d, err := cl.Diag(ctx)
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	printDiag(e.Stdout, d, sortBy)
	return 0
}

// printDiag prints d as sdiag 22.05 lays it out.
func printDiag(w io.Writer, d *api.Diag, sortBy string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	ct := func(t time.Time) string { return t.Local().Format("Mon Jan 02 15:04:05 2006") }
	p("*******************************************************\n")
	p("sdiag output at %s (%d)\n", ct(d.Time), d.Time.Unix())
	p("Data since      %s (%d)\n", ct(d.Since), d.Since.Unix())
	p("*******************************************************\n")
	p("Server thread count:  %d\n", 1)
	p("Agent queue size:     %d\n", 0)
	p("Agent count:          %d\n", 0)
	p("Agent thread count:   %d\n", 0)
	p("DBD Agent queue size: %d\n\n", 0)
	p("Jobs submitted: %d\n", d.JobsSubmitted)
	p("Jobs started:   %d\n", d.JobsStarted)
	p("Jobs completed: %d\n", d.JobsCompleted)
	p("Jobs canceled:  %d\n", d.JobsCanceled)
	p("Jobs failed:    %d\n\n", d.JobsFailed)
	p("Job states ts:  %s (%d)\n", ct(d.Time), d.Time.Unix())
	p("Jobs pending:   %d\n", d.JobsPending)
	p("Jobs running:   %d\n", d.JobsRunning)
	p("\nMain schedule statistics (microseconds):\n")
	p("\tLast cycle:   %d\n", d.CycleLast)
	p("\tMax cycle:    %d\n", d.CycleMax)
	p("\tTotal cycles: %d\n", d.Cycles)
	if d.Cycles > 0 {
		p("\tMean cycle:   %d\n", d.CycleSum/d.Cycles)
		p("\tMean depth cycle:  %d\n", d.QueueLen)
	}
	if span := d.Time.Sub(d.Since); span > time.Minute {
		p("\tCycles per minute: %d\n", uint64(float64(d.Cycles)/(span.Minutes())))
	}
	p("\tLast queue length: %d\n", d.QueueLen)
	p("\nBackfilling stats\n")
	p("\tTotal backfilled jobs (since last slurm start): %d\n", d.BackfilledJobs)
	p("\tTotal backfilled jobs (since last stats cycle start): %d\n", d.BackfilledJobs)
	p("\tTotal backfilled heterogeneous job components: %d\n", 0)
	p("\tTotal cycles: %d\n", d.BackfillCycles)
	if !d.BackfillWhen.IsZero() {
		p("\tLast cycle when: %s (%d)\n", ct(d.BackfillWhen), d.BackfillWhen.Unix())
	} else {
		p("\tLast cycle when: N/A\n")
	}
	p("\tLast cycle: %d\n", d.BackfillLast)
	p("\tMax cycle:  %d\n", d.BackfillMax)
	if d.BackfillCycles > 0 {
		p("\tMean cycle: %d\n", d.BackfillSum/d.BackfillCycles)
	}
	p("\tLast depth cycle: %d\n", d.QueueLen)
	p("\tLast depth cycle (try sched): %d\n", d.QueueLen)
	p("\tLast queue length: %d\n", d.QueueLen)
	p("\tLast table size: %d\n", 0)
	p("\nLatency for 1000 calls to gettimeofday(): %d microseconds\n", gettimeofdayLatency())
	ave := func(r api.DiagRPC) uint64 {
		if r.Count == 0 {
			return 0
		}
		return r.TotalMicros / r.Count
	}
	sortRPCs := func(rs []api.DiagRPC) {
		sort.SliceStable(rs, func(a, b int) bool {
			switch sortBy {
			case "id":
				return rs[a].ID < rs[b].ID
			case "time":
				return rs[a].TotalMicros > rs[b].TotalMicros
			case "time2":
				return ave(rs[a]) > ave(rs[b])
			}
			return rs[a].Count > rs[b].Count
		})
	}
	sortRPCs(d.ByType)
	sortRPCs(d.ByUser)
	p("\nRemote Procedure Call statistics by message type\n")
	for _, r := range d.ByType {
		p("\t%-40s(%5d) count:%-6d ave_time:%-6d total_time:%d\n", r.Name, r.ID, r.Count, ave(r), r.TotalMicros)
	}
	p("\nRemote Procedure Call statistics by user\n")
	for _, r := range d.ByUser {
		p("\t%-16s(%8d) count:%-6d ave_time:%-6d total_time:%d\n", r.Name, r.ID, r.Count, ave(r), r.TotalMicros)
	}
	p("\nPending RPC statistics\n\tNo pending RPCs\n")
}

// gettimeofdayLatency is how long 1000 clock reads take here, in
// microseconds, as sdiag measures it.
func gettimeofdayLatency() int64 {
	start := time.Now()
	var t time.Time
	for range 1000 {
		t = time.Now()
	}
	return t.Sub(start).Microseconds()
}
