package commands

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
	"hpc/commands/format"
)

var sacctOpts = opts(
	"allusers,a", "accounts,A,:", "allocations,X", "brief,b", "batch-script,B", "completion,c",
	"constraints,C,:", "delimiter,,:", "duplicates,D", "federation", "helpformat,e", "help-fields,e",
	"endtime,E,:", "env-vars", "file,f,:", "flags,F,:", "gid,g,:", "group,g,:", "help,h", "local",
	"name,,:", "nnodes,i,:", "ncpus,I,:", "jobs,j,:", "timelimit-min,k,:", "timelimit-max,K,:",
	"long,l", "allclusters,L", "cluster,M,:", "clusters,M,:", "nodelist,N,:", "noconvert", "units,,:",
	"noheader,n", "fields,o,:", "format,o,:", "parsable,p", "parsable2,P", "qos,q,:", "partition,r,:",
	"reason,R,:", "state,s,:", "starttime,S,:", "truncate,T", "uid,u,:", "use-local-uid", "usage,U",
	"user,u,:", "verbose,v", "version,V", "wckeys,W,:", "whole-hetjob,,::", "associations,x,:", "json", "yaml",
)

// sacct's field sets for -b and -l.
const (
	sacctBriefFields = "jobid,state,exitcode"
	sacctLongFields  = "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss," +
		"maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask," +
		"avecpu,ntasks,alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov," +
		"reqmem,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite," +
		"maxdiskwritenode,maxdiskwritetask,avediskwrite,reqtres,alloctres,tresusageinave,tresusageinmax," +
		"tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot," +
		"tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,tresusageoutave,tresusageouttot"
)

// sacctMain is sacct.
func sacctMain(e *Env, prog string, args []string) int {
	q := api.AcctQuery{}
	var fields []string
	var users map[uint32]bool
	var accounts, names, parts, states map[string]bool
	var nodes []string
	var nnodes, ncpus [2]int
	var start, end time.Time
	parsable, trailing, noHeader, brief, long := false, false, false, false, false
	now := e.Now()
	fail := func(f string, a ...any) error {
		e.errorf(prog, f, a...)
		return quit{1}
	}
	_, code, done := parseOpts(e, prog, sacctOpts, args, func(o *jobspec.Opt, val string, _ bool) error {
		switch o.ID() {
		case "a":
			q.AllUsers = true
		case "A":
			accounts = lowerSet(val)
		case "X":
			q.JobsOnly = true
		case "b":
			brief = true
		case "D", "federation", "local", "L", "noconvert", "T", "use-local-uid", "v", "units":
		case "e":
			printSacctFieldNames(e)
			return quit{0}
		case "E":
			t, err := jobspec.ParseSince(val, now)
			if err != nil {
				return fail("Invalid time specification (pos=0): %s", val)
			}
			end = t
		case "h":
			io.WriteString(e.Stdout, sacctHelp)
			return quit{0}
		case "U":
			io.WriteString(e.Stdout, sacctUsage)
			return quit{0}
		case "name":
			names = set(splitList(val))
		case "i", "I":
			lo, hi, ok := countRange(val)
			if !ok {
				return fail("Invalid node/cpu range: %s", val)
			}
			if o.ID() == "i" {
				nnodes = [2]int{lo, hi}
			} else {
				ncpus = [2]int{lo, hi}
			}
		case "j":
			for _, s := range splitList(val) {
				base, _, _ := strings.Cut(s, ".")
				id, err := strconv.ParseUint(leadingDigits(base), 10, 64)
				if err != nil || id == 0 {
					return fail("Invalid job id: %s", s)
				}
				q.JobIDs = append(q.JobIDs, id)
			}
		case "l":
			long = true
		case "N":
			n, ok := expandHosts(val)
			if !ok {
				return fail("Invalid node list: %s", val)
			}
			nodes = n
		case "n":
			noHeader = true
		case "o":
			fields = append(fields, val)
		case "p":
			trailing = true
		case "P":
			parsable = true
		case "r":
			parts = set(splitList(val))
		case "s":
			states = map[string]bool{}
			for _, s := range splitList(val) {
				name := jobStateName(s)
				if name == "" {
					fmt.Fprintf(e.Stderr, "%s: fatal: unrecognized job state value\n", prog)
					return quit{1}
				}
				states[name] = true
			}
		case "S":
			t, err := jobspec.ParseSince(val, now)
			if err != nil {
				return fail("Invalid time specification (pos=0): %s", val)
			}
			start = t
		case "u":
			if val == "-1" {
				q.AllUsers, users = true, nil
				break
			}
			users = map[uint32]bool{}
			for _, u := range splitList(val) {
				uid, ok := lookupUID(u)
				if !ok {
					return fail("Invalid user id: %s", u)
				}
				users[uid] = true
			}
			q.AllUsers = true
		case "V":
			fmt.Fprintln(e.Stdout, slurmVersion)
			return quit{0}
		default:
			// -B, -c, -C, -f, -F, -g, -k, -K, -M, -q, -R, -W, -x, --env-vars,
			// --delimiter, --whole-hetjob, --json, --yaml
			name := o.Long
			if name == "" {
				name = string(o.Short)
			}
			return fail("--%s is not supported by hpc's accounting yet", name)
		}
		return nil
	})
	if done {
		return code
	}
	if long && len(fields) > 0 {
		fmt.Fprintf(e.Stderr, "%s: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", prog)
		return 1
	}
	switch {
	case len(fields) > 0:
	case brief:
		fields = []string{sacctBriefFields}
	case long:
		fields = []string{sacctLongFields}
	case e.Getenv("SACCT_FORMAT") != "":
		fields = []string{e.Getenv("SACCT_FORMAT")}
	}
	if _, err := format.ParseSacctFields(fields); err != nil {
		e.errorf(prog, "%v", err)
		return 1
	}
	// Without -j or -S sacct shows the jobs of today (since midnight).
	if start.IsZero() && len(q.JobIDs) == 0 {
		y, m, d := now.Date()
		start = time.Date(y, m, d, 0, 0, 0, 0, now.Location())
	}
	if !end.IsZero() && start.After(end) {
		e.errorf(prog, "Start time (%s) requested is after end time (%s).", format.ISOTime(start), format.ISOTime(end))
		return 1
	}
	cl, ctx, cancel, err := connect(e)
	var rows []api.AcctRow
	if err == nil {
		defer cancel()
		rows, err = cl.Acct(ctx, q)
	}
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	// Filters apply to jobs; a job's steps follow it.
	keep := map[uint64]bool{}
	for _, r := range rows {
		if r.Step != "" {
			continue
		}
		ok := (users == nil || users[r.UID]) &&
			(accounts == nil || accounts[strings.ToLower(r.Account)]) &&
			(names == nil || names[r.JobName]) &&
			(parts == nil || parts[r.Partition]) &&
			(states == nil || states[strings.Fields(r.State + " x")[0]]) &&
			(nodes == nil || intersects(nodes, expandOrNone(r.NodeList))) &&
			inRange(acctNodeCount(r), nnodes) && inRange(r.AllocCPUs, ncpus) &&
			(start.IsZero() || r.End.IsZero() || !r.End.Before(start)) &&
			(end.IsZero() || !r.Submit.After(end))
		keep[r.JobID] = ok
	}
	var out []api.AcctRow
	for _, r := range rows {
		if keep[r.JobID] {
			out = append(out, r)
		}
	}
	fmt.Fprint(e.Stdout, format.Sacct(out, format.SacctOptions{
		Fields: fields, Parsable: parsable, ParsableTrailing: trailing, NoHeader: noHeader, Now: now,
	}))
	return 0
}

func printSacctFieldNames(e *Env) {
	var b strings.Builder
	for i, n := range format.SacctFieldNames() {
		switch {
		case i&3 != 0:
			b.WriteString(" ")
		case i > 0:
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%-19s", n)
	}
	b.WriteString("\n")
	fmt.Fprint(e.Stdout, b.String())
}

// countRange reads "N" or "N-M" (M 0: no upper bound).
func countRange(s string) (int, int, bool) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := strconv.Atoi(lo)
	if err != nil || a < 0 {
		return 0, 0, false
	}
	if !isRange {
		return a, a, true
	}
	b, err := strconv.Atoi(hi)
	if err != nil || b < a {
		return 0, 0, false
	}
	return a, b, true
}

func inRange(v int, r [2]int) bool {
	if r == [2]int{} {
		return true
	}
	return v >= r[0] && (r[1] == 0 || v <= r[1])
}

func expandOrNone(list string) []string {
	names, ok := expandHosts(list)
	if !ok {
		return nil
	}
	return names
}

func acctNodeCount(r api.AcctRow) int {
	return len(expandOrNone(r.NodeList))
}

const sacctUsage = `Usage: sacct [-a] [-A accounts] [-b] [-e] [-E end] [-h] [-j jobs] [-l] [-n]
             [-N nodes] [-o fields] [-p|-P] [-r partitions] [-s states]
             [-S start] [-u users] [-V] [-X] [--name=names]
`

const sacctHelp = `sacct [<OPTION>]
  -a, --allusers       Display jobs for all users.
  -A, --accounts       Use this comma separated list of accounts to select jobs.
  -b, --brief          Equivalent to '--format=jobid,state,exitcode'.
  -e, --helpformat     List the fields that can be specified with --format.
  -E, --endtime        Select jobs eligible before this time.
  -h, --help           Print this description of use.
  -i, --nnodes=N[-M]   Only jobs that ran on this many nodes.
  -I, --ncpus=N[-M]    Only jobs that had this many CPUs.
  -j, --jobs           Format is <job(.step)>; comma separated list.
  -l, --long           Equivalent to the long field list.
  -n, --noheader       No header will be added to the beginning of output.
  -N, --nodelist       Display jobs that ran on any of these nodes.
      --name           Display jobs that have any of these name(s).
  -o, --format         Comma separated list of fields (use "--helpformat" for a list).
  -p, --parsable       Output will be '|' delimited with a '|' at the end.
  -P, --parsable2      Output will be '|' delimited without a '|' at the end.
  -r, --partition      Comma separated list of partitions to select jobs from.
  -s, --state          Select jobs based on their state during the time period.
  -S, --starttime      Select jobs eligible after this time (default: midnight, unless -j).
  -u, --user           Use this comma separated list of users to select jobs.
  -U, --usage          Display brief usage message.
  -V, --version        Print version.
  -X, --allocations    Only show statistics relevant to the job allocation itself.
`
