package commands

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sprioOpts = opts("jobs,j,:", "user,u,:", "long,l", "norm,n", "weights,w", "noheader,h", "partition,p,:",
	"cluster,M,:", "clusters,M,:", "help", "usage", "version,V")

const sprioUsage = "Usage: sprio [-j jid[s]] [-u user_name[s]] [-w] [-l] [-n] [-h] [-p partition[s]]\n" +
	"             [-M cluster] [--help] [--usage] [-V]\n"

const sprioHelp = `Usage: sprio [OPTIONS]
  -h, --noheader              no header line
  -j, --jobs=job_ids          only these pending jobs (comma-separated)
  -l, --long                  the long listing, with more columns
  -M, --cluster, --clusters=name
                              the cluster to ask (hpc runs one: refused)
  -n, --norm                  the factors normalized to 0..1
  -p, --partition=partitions  only jobs pending in these partitions
  -u, --user=users            only jobs of these users
  -w, --weights               the configured weight of each factor

Help options:
      --help                  print this help
      --usage                 print a short list of the options
  -V, --version               print the Slurm version hpc follows
`

// sprioMain is sprio: each pending job's priority and the weighted (or,
// with -n, normalized) multifactor factors that make it up, from the
// leader's latest scheduling pass.
func sprioMain(e *Env, prog string, args []string) int {
	var long, norm, weights, noHeader bool
	jobs := map[uint64]bool{}
	users := map[string]bool{}
	parts := map[string]bool{}
	_, code, done := parseOpts(e, prog, sprioOpts, args, func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "j":
			for _, s := range splitList(val) {
				id, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					e.errorf(prog, "Invalid job id: %s", s)
					return quit{1}
				}
				jobs[id] = true
			}
		case "u":
			for _, s := range splitList(val) {
				users[s] = true
			}
		case "p":
			for _, s := range splitList(val) {
				parts[s] = true
			}
		case "l":
			long = true
		case "n":
			norm = true
		case "w":
			weights = true
		case "h":
			noHeader = true
		case "M":
			e.errorf(prog, "hpc runs one cluster: -M/--clusters is not supported")
			return quit{1}
		default:
			if handled, err := helpOrVersion(e, o.ID(), sprioHelp, sprioUsage); handled {
				return err
			}
		}
		return nil
	})
	if done {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := e.Client(ctx)
	var resp *api.PriorityResponse
	if err == nil {
		resp, err = cl.Priority(ctx)
	}
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	if resp.Plugin != "priority/multifactor" {
		fmt.Fprintf(e.Stderr, "You are not running a supported priority plugin\n(%s).\nOnly 'priority/multifactor' is supported.\n", resp.Plugin)
		return 1
	}
	fmt.Fprint(e.Stdout, formatSprio(resp, sprioView{jobs: jobs, users: users, parts: parts, long: long, norm: norm, weights: weights, noHeader: noHeader}))
	return 0
}

type sprioView struct {
	jobs                          map[uint64]bool
	users, parts                  map[string]bool
	long, norm, weights, noHeader bool
}

// formatSprio prints sprio's table: "%.15i %9r %.10Y %.10S %.10A %.10F
// %.10J %.10P %.10Q" (with -l also USER and NICE), one line per pending job.
func formatSprio(resp *api.PriorityResponse, v sprioView) string {
	var b strings.Builder
	num := func(x float64) string {
		if v.norm {
			return strconv.FormatFloat(x, 'f', 7, 64)
		}
		return strconv.FormatInt(int64(math.Round(x)), 10)
	}
	line := func(id, part, user, prio, site string, f [5]string, nice string) {
		fmt.Fprintf(&b, "%15s %-9s ", id, trunc(part, 9))
		if v.long {
			fmt.Fprintf(&b, "%8s ", trunc(user, 8))
		}
		fmt.Fprintf(&b, "%10s %10s %10s %10s %10s %10s %10s", prio, site, f[0], f[1], f[2], f[3], f[4])
		if v.long {
			fmt.Fprintf(&b, " %6s", nice)
		}
		b.WriteByte('\n')
	}
	if !v.noHeader {
		line("JOBID", "PARTITION", "USER", "PRIORITY", "SITE", [5]string{"AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS"}, "NICE")
	}
	if v.weights {
		w := resp.Weights
		line("Weights", "", "", "", "1", [5]string{num(w.Age), num(w.Fairshare), num(w.JobSize), num(w.Partition), num(w.QOS)}, "")
	}
	for _, r := range resp.Rows {
		if (len(v.jobs) > 0 && !v.jobs[r.JobID]) || (len(v.users) > 0 && !v.users[r.User]) || (len(v.parts) > 0 && !v.parts[r.Partition]) {
			continue
		}
		f := r.Weighted
		prio := strconv.FormatUint(uint64(r.Priority), 10)
		if v.norm {
			f = r.Normalized
			prio = strconv.FormatFloat(float64(r.Priority)/float64(math.MaxUint32), 'f', 7, 64)
		}
		line(strconv.FormatUint(r.JobID, 10), r.Partition, r.User, prio, "0",
			[5]string{num(f.Age), num(f.Fairshare), num(f.JobSize), num(f.Partition), num(f.QOS)}, strconv.Itoa(r.Nice))
	}
	return b.String()
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
