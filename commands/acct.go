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

// sacctParams is a parsed sacct command line.
type sacctParams struct {
	q                              api.AcctQuery
	fields                         []string
	users                          map[uint32]bool
	accounts, names, parts, states map[string]bool
	nodes                          []string
	nnodes, ncpus                  [2]int
	start, end                     time.Time
	parsable, trailing, noHeader   bool
	brief, long                    bool
	now                            time.Time
}

// sacctMain is sacct.
func sacctMain(e *Env, prog string, args []string) int {
	p, code, ok := parseSacct(e, prog, args)
	if !ok {
		return code
	}
	cl, ctx, cancel, err := connect(e)
	var rows []api.AcctRow
	if err == nil {
		defer cancel()
		rows, err = cl.Acct(ctx, p.q)
	}
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	fmt.Fprint(e.Stdout, format.Sacct(p.filter(rows), format.SacctOptions{
		Fields: p.fields, Parsable: p.parsable, ParsableTrailing: p.trailing, NoHeader: p.noHeader, Now: p.now,
	}))
	return 0
}

// parseSacct reads sacct's options and settles the fields and the time
// window; ok is false when sacct is done (help, or an error reported) and
// exits with code.
func parseSacct(e *Env, prog string, args []string) (p *sacctParams, code int, ok bool) {
	p = &sacctParams{now: e.Now()}
	_, code, done := parseOpts(e, prog, sacctOpts, args, p.option(e, prog))
	if done {
		return nil, code, false
	}
	if p.long && len(p.fields) > 0 {
		fmt.Fprintf(e.Stderr, "%s: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", prog)
		return nil, 1, false
	}
	switch {
	case len(p.fields) > 0:
	case p.brief:
		p.fields = []string{sacctBriefFields}
	case p.long:
		p.fields = []string{sacctLongFields}
	case e.Getenv("SACCT_FORMAT") != "":
		p.fields = []string{e.Getenv("SACCT_FORMAT")}
	}
	if _, err := format.ParseSacctFields(p.fields); err != nil {
		e.errorf(prog, "%v", err)
		return nil, 1, false
	}
	// Without -j or -S sacct shows the jobs of today (since midnight).
	if p.start.IsZero() && len(p.q.JobIDs) == 0 {
		y, m, d := p.now.Date()
		p.start = time.Date(y, m, d, 0, 0, 0, 0, p.now.Location())
	}
	if !p.end.IsZero() && p.start.After(p.end) {
		e.errorf(prog, "Start time (%s) requested is after end time (%s).", format.ISOTime(p.start), format.ISOTime(p.end))
		return nil, 1, false
	}
	return p, 0, true
}

// option applies one of sacct's options.
func (p *sacctParams) option(e *Env, prog string) func(o *jobspec.Opt, val string, _ bool) error {
	fail := func(f string, a ...any) error {
		e.errorf(prog, f, a...)
		return quit{1}
	}
	return func(o *jobspec.Opt, val string, _ bool) error {
		switch o.ID() {
		case "a":
			p.q.AllUsers = true
		case "A":
			p.accounts = lowerSet(val)
		case "X":
			p.q.JobsOnly = true
		case "b":
			p.brief = true
		case "D", "federation", "local", "L", "noconvert", "T", "use-local-uid", "v", "units":
		case "e":
			printSacctFieldNames(e)
			return quit{0}
		case "E", "S":
			t, err := jobspec.ParseSince(val, p.now)
			if err != nil {
				return fail("Invalid time specification (pos=0): %s", val)
			}
			if o.ID() == "E" {
				p.end = t
			} else {
				p.start = t
			}
		case "h":
			io.WriteString(e.Stdout, sacctHelp)
			return quit{0}
		case "U":
			io.WriteString(e.Stdout, sacctUsage)
			return quit{0}
		case "name":
			p.names = set(splitList(val))
		case "i", "I":
			lo, hi, ok := countRange(val)
			if !ok {
				return fail("Invalid node/cpu range: %s", val)
			}
			if o.ID() == "i" {
				p.nnodes = [2]int{lo, hi}
			} else {
				p.ncpus = [2]int{lo, hi}
			}
		case "j":
			return p.addJobs(val, fail)
		case "l":
			p.long = true
		case "N":
			n, ok := expandHosts(val)
			if !ok {
				return fail("Invalid node list: %s", val)
			}
			p.nodes = n
		case "n":
			p.noHeader = true
		case "o":
			p.fields = append(p.fields, val)
		case "p":
			p.trailing = true
		case "P":
			p.parsable = true
		case "r":
			p.parts = set(splitList(val))
		case "s":
			return p.setStates(e, prog, val)
		case "u":
			return p.setUsers(val, fail)
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
	}
}

// addJobs applies -j: job ids, a step's (12.0) standing for its job's.
func (p *sacctParams) addJobs(val string, fail func(string, ...any) error) error {
	for _, s := range splitList(val) {
		base, _, _ := strings.Cut(s, ".")
		id, err := strconv.ParseUint(leadingDigits(base), 10, 64)
		if err != nil || id == 0 {
			return fail("Invalid job id: %s", s)
		}
		p.q.JobIDs = append(p.q.JobIDs, id)
	}
	return nil
}

// setStates applies -s: job state names.
func (p *sacctParams) setStates(e *Env, prog, val string) error {
	p.states = map[string]bool{}
	for _, s := range splitList(val) {
		name := jobStateName(s)
		if name == "" {
			fmt.Fprintf(e.Stderr, "%s: fatal: unrecognized job state value\n", prog)
			return quit{1}
		}
		p.states[name] = true
	}
	return nil
}

// setUsers applies -u: users by name or uid, -1 for all.
func (p *sacctParams) setUsers(val string, fail func(string, ...any) error) error {
	if val == "-1" {
		p.q.AllUsers, p.users = true, nil
		return nil
	}
	p.users = map[uint32]bool{}
	for _, u := range splitList(val) {
		uid, ok := lookupUID(u)
		if !ok {
			return fail("Invalid user id: %s", u)
		}
		p.users[uid] = true
	}
	p.q.AllUsers = true
	return nil
}

// filter keeps the rows of the jobs that pass the filters: filters apply
// to jobs; a job's steps follow it.
func (p *sacctParams) filter(rows []api.AcctRow) []api.AcctRow {
	keep := map[uint64]bool{}
	for _, r := range rows {
		if r.Step != "" {
			continue
		}
		ok := (p.users == nil || p.users[r.UID]) &&
			(p.accounts == nil || p.accounts[strings.ToLower(r.Account)]) &&
			(p.names == nil || p.names[r.JobName]) &&
			(p.parts == nil || p.parts[r.Partition]) &&
			(p.states == nil || p.states[strings.Fields(r.State + " x")[0]]) &&
			(p.nodes == nil || intersects(p.nodes, expandOrNone(r.NodeList))) &&
			inRange(acctNodeCount(r), p.nnodes) && inRange(r.AllocCPUs, p.ncpus) &&
			(p.start.IsZero() || r.End.IsZero() || !r.End.Before(p.start)) &&
			(p.end.IsZero() || !r.Submit.After(p.end))
		keep[r.JobID] = ok
	}
	var out []api.AcctRow
	for _, r := range rows {
		if keep[r.JobID] {
			out = append(out, r)
		}
	}
	return out
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

Valid <OPTION> values are:
  -a, --allusers:         jobs of every user, not only yours
  -A, --accounts:         only jobs charged to these accounts (comma-separated)
  -b, --brief:            the fields jobid, state and exitcode
  -B, --batch-script:     print the job's batch script (not on hpc yet)
  -c, --completion:       completion records (not on hpc yet)
  -C, --constraints:      jobs that asked for these features (not on hpc yet)
      --delimiter:        the separator of -p and -P (not on hpc yet)
  -D, --duplicates:       every record of a requeued job (no effect on hpc)
  -e, --helpformat, --help-fields:
                          list the fields -o accepts
  -E, --endtime:          only jobs in a state before this time
      --env-vars:         print the batch script's environment (not on hpc yet)
  -f, --file:             read records from this file (not on hpc yet)
  -F, --flags:            query flags (not on hpc yet)
  -g, --gid, --group:     only jobs of these groups (not on hpc yet)
  -h, --help:             print this help
  -i, --nnodes:           only jobs that ran on this many nodes (N or N-M)
  -I, --ncpus:            only jobs that had this many CPUs (N or N-M)
  -j, --jobs:             only these jobs and steps (job[.step], comma-separated)
  -k, --timelimit-min:    jobs with at least this time limit (not on hpc yet)
  -K, --timelimit-max:    jobs with at most this time limit (not on hpc yet)
  -l, --long:             the long list of fields
  -L, --allclusters:      jobs of every cluster (no effect: hpc runs one)
  -M, --clusters, --cluster:
                          clusters to report on (not on hpc: it runs one)
      --name:             only jobs with these names
  -n, --noheader:         no header lines
  -N, --nodelist:         only jobs that ran on these nodes
      --noconvert:        sizes without unit prefixes (no effect on hpc)
      --units:            sizes in this unit (no effect on hpc)
  -o, --format, --fields: the fields to print (see -e), name%width to size them
  -p, --parsable:         fields separated by '|', with a '|' at the end
  -P, --parsable2:        fields separated by '|', nothing at the end
  -q, --qos:              only jobs of these QOS (not on hpc yet)
  -r, --partition:        only jobs in these partitions
  -R, --reason:           jobs pending for these reasons (not on hpc yet)
  -s, --state:            only jobs in these states (CD, F, R, PD, CA, TO...)
  -S, --starttime:        only jobs in a state after this time (default:
                          midnight today, unless -j is given)
  -T, --truncate:         clip times to the -S/-E window (no effect on hpc)
  -u, --uid, --user:      only jobs of these users
      --use-local-uid:    resolve user names locally (no effect on hpc)
  -U, --usage:            print a short list of the options
  -v, --verbose:          say more (no effect on hpc)
  -V, --version:          print the Slurm version hpc follows
  -W, --wckeys:           only jobs with these wckeys (not on hpc yet)
      --whole-hetjob:     every part of a heterogeneous job (not on hpc yet)
  -x, --associations:     jobs of these association ids (not on hpc yet)
  -X, --allocations:      the jobs' allocations only, not their steps
      --federation:       jobs of the federation (no effect on hpc)
      --local:            jobs of this cluster only (no effect on hpc)
      --json, --yaml:     records as JSON or YAML (not on hpc yet)

valid start/end time formats are...
  HH:MM[:SS][AM|PM]  MMDD[YY]  MM/DD[/YY]  MM.DD[.YY]  YYYY-MM-DD[THH:MM[:SS]]
  now[{+|-}count[seconds|minutes|hours|days|weeks]]  today  midnight  noon
`
