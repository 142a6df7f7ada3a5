package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/jobspec"
	"hpc/cluster/openapi"
	"hpc/commands/format"
)

var sacctOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts(
		"allusers,a", "accounts,A,:", "allocations,X", "brief,b", "batch-script,B", "completion,c",
		"constraints,C,:", "delimiter,,:", "duplicates,D", "federation", "helpformat,e", "help-fields,e",
		"endtime,E,:", "env-vars", "file,f,:", "flags,F,:", "gid,g,:", "group,g,:", "help,h", "local",
		"name,,:", "nnodes,i,:", "ncpus,I,:", "jobs,j,:", "timelimit-min,k,:", "timelimit-max,K,:",
		"long,l", "allclusters,L", "cluster,M,:", "clusters,M,:", "nodelist,N,:", "noconvert", "units,,:",
		"noheader,n", "fields,o,:", "format,o,:", "parsable,p", "parsable2,P", "qos,q,:", "partition,r,:",
		"reason,R,:", "state,s,:", "starttime,S,:", "truncate,T", "uid,u,:", "use-local-uid", "usage,U",
		"user,u,:", "verbose,v", "version,V", "wckeys,W,:", "whole-hetjob,,::", "associations,x,:", "json", "yaml",
	)
})

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
	jobRefs                        []jobRef // -j: jobs, arrays (all their tasks) and array tasks (12_3)
	fields                         []string
	users                          map[uint32]bool
	accounts, names, parts, states map[string]bool
	nodes                          []string
	nnodes, ncpus                  [2]int
	start, end                     time.Time
	parsable, trailing, noHeader   bool
	brief, long                    bool
	now                            time.Time

	// -q, -g, -k/-K, -C, -R: what rows must have.
	qos, reasons     map[string]bool
	qosNames         []string // -q as given
	gids             map[uint32]bool
	tlMin, tlMax     int64 // minutes; 0: not given
	constraints      []string
	constraintsGiven bool
	// Filters that select nothing in hpc: association ids (-x; hpc's
	// associations have none), wckeys (-W; hpc keeps none: every job's is
	// ""), job flags (-F other than None: hpc records none).
	noMatch bool
	// -M: the clusters asked for; nil: this one.
	clusters []string
	// -c/-f: job completion records (hpc has no jobcomp plugin: none).
	completion bool
	// -B, --env-vars: print the stored batch script or environment.
	script, env bool
	delimiter   string
	mime        string // --json, --yaml: openapi/dbv0.0.38's jobs
	notes       notices
}

// sacctMain is sacct.
func sacctMain(e *Env, prog string, args []string) int {
	p, code, ok := parseSacct(e, prog, args)
	if !ok {
		return code
	}
	opts := format.SacctOptions{
		Fields: p.fields, Parsable: p.parsable, ParsableTrailing: p.trailing, NoHeader: p.noHeader, Now: p.now,
		Delimiter: p.delimiter,
	}
	if p.completion && p.mime == "" {
		// No job completion plugin: no records, as sacct with
		// JobCompType=jobcomp/none prints them.
		fmt.Fprint(e.Stdout, format.Sacct(nil, opts))
		return 0
	}
	rows, err := p.fetch(e)
	if q := (quit{}); errors.As(err, &q) {
		fmt.Fprintf(e.Stderr, "%s: fatal: problem processing qos list\n", prog)
		return 1
	}
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	rows = collapseAcctArrays(p.filter(rows))
	if p.mime != "" {
		name, _ := clusterName(e)
		writeMime(e.Stdout, p.mime, openapi.AcctJobsAnswer(rows, name))
		return 0
	}
	if p.script || p.env {
		fmt.Fprint(e.Stdout, sacctTexts(rows, p.script))
		return 0
	}
	fmt.Fprint(e.Stdout, format.Sacct(rows, opts))
	return 0
}

// fetch reads the rows from the cluster, none when -M names only other
// clusters.
func (p *sacctParams) fetch(e *Env) ([]api.AcctRow, error) {
	if p.clusters != nil {
		own, err := clusterName(e)
		if err != nil {
			return nil, err
		}
		found := false
		for _, c := range p.clusters {
			found = found || strings.EqualFold(c, own)
		}
		if !found {
			return nil, nil
		}
	}
	cl, ctx, cancel, err := connect(e)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if p.qos != nil {
		if err := p.checkQOS(ctx, e, cl); err != nil {
			return nil, err
		}
	}
	return cl.Acct(ctx, p.q)
}

// checkQOS resolves -q's names against the QOS sacctmgr knows, as
// slurmdb_addto_qos_char_list does: an unknown name is fatal.
func (p *sacctParams) checkQOS(ctx context.Context, e *Env, cl *api.Client) error {
	st, err := cl.Acctmgr(ctx)
	if err != nil {
		return err
	}
	var names []string
	known := map[string]bool{}
	for _, q := range st.QOS {
		names = append(names, q.Name)
		known[strings.ToLower(q.Name)] = true
	}
	for _, q := range p.qosNames {
		if !known[strings.ToLower(strings.TrimLeft(q, "+-"))] {
			e.errorf("sacct", "You gave a bad qos '%s'. Valid QOS's are %s", q, strings.Join(names, ","))
			return quit{1}
		}
	}
	return nil
}

// sacctTexts prints -B (script) or --env-vars for each job row, as sacct
// does: "NONE" where the store has none (not kept, or not the caller's
// to see).
func sacctTexts(rows []api.AcctRow, script bool) string {
	const rule = "--------------------------------------------------------------------------------"
	var b strings.Builder
	for _, r := range rows {
		if r.Step != "" {
			continue
		}
		text := "NONE\n"
		if script {
			if r.Script != nil {
				text = *r.Script
			}
			fmt.Fprintf(&b, "Batch Script for %d\n%s\n%s\n", r.JobID, rule, text)
			continue
		}
		if r.Env != nil {
			text = strings.Join(r.Env, "\n") + "\n"
		}
		fmt.Fprintf(&b, "Environment used for %d (must be batch to display)\n%s\n%s\n", r.JobID, rule, text)
	}
	return b.String()
}

// parseSacct reads sacct's options and settles the fields and the time
// window; ok is false when sacct is done (help, or an error reported) and
// exits with code.
func parseSacct(e *Env, prog string, args []string) (p *sacctParams, code int, ok bool) {
	p = &sacctParams{now: e.Now()}
	_, code, done := parseOpts(e, prog, sacctOpts(), args, p.option(e, prog))
	if done {
		return nil, code, false
	}
	p.notes.flush(e, prog)
	if (p.script || p.env) && len(p.q.JobIDs) == 0 {
		what := "job scripts"
		if p.env {
			what = "job environment"
		}
		fmt.Fprintf(e.Stderr, "%s: fatal: When requesting %s you must also request specific jobs with the '-j' option.\n", prog, what)
		return nil, 1, false
	}
	if p.script && p.env {
		fmt.Fprintf(e.Stderr, "%s: fatal: Options --batch-script and --env-vars are mutually exclusive\n", prog)
		return nil, 1, false
	}
	if p.script || p.env {
		p.q.JobsOnly = true
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
		case "D", "federation", "local", "L", "noconvert", "T", "use-local-uid", "units":
		case "v":
			p.notes.verbose++
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
			return p.selector(e, prog, o, val, fail)
		}
		return nil
	}
}

// selector applies sacct's other options: -q, -g, -k/-K, -C, -R, -x, -W,
// -F, -M, -c/-f, -B, --env-vars, --delimiter, --whole-hetjob, --json and
// --yaml.
func (p *sacctParams) selector(e *Env, prog string, o *jobspec.Opt, val string, fail func(string, ...any) error) error {
	switch o.ID() {
	case "q":
		p.qos, p.qosNames = lowerSet(val), splitList(val)
	case "g":
		return p.setGroups(val, fail)
	case "k", "K":
		m, err := config.ParseTime(val)
		if err != nil || (m <= 0 && m != config.Unlimited) {
			fmt.Fprintf(e.Stderr, "%s: fatal: Invalid time limit specification\n", prog)
			return quit{1}
		}
		if m == config.Unlimited {
			m = math.MaxInt64
		}
		if o.ID() == "k" {
			p.tlMin = m
		} else {
			p.tlMax = m
		}
	case "C":
		p.constraints, p.constraintsGiven = append(p.constraints, strings.Split(val, ",")...), true
	case "R":
		if p.reasons == nil {
			p.reasons = map[string]bool{}
		}
		for _, r := range splitList(val) {
			p.reasons[strings.ToLower(r)] = true
		}
	case "x":
		p.noMatch = true
		p.notes.add("--associations: hpc's associations have no ids; no job matches")
	case "W":
		for _, w := range splitList(val) {
			p.noMatch = p.noMatch || w != ""
		}
		p.notes.add("--wckeys: hpc keeps no wckeys (every job's is empty); no job matches")
	case "F":
		return p.setFlags(e, prog, val)
	case "M":
		if strings.EqualFold(val, "all") || val == "-1" {
			p.clusters = nil
		} else {
			p.clusters = append(p.clusters, splitList(val)...)
		}
	case "f":
		if fi, err := os.Stat(val); err != nil || !fi.Mode().IsRegular() {
			fmt.Fprintf(e.Stderr, "%s is not a valid file\n", val)
			return quit{1}
		}
		p.completion = true
		p.notes.add("--file: hpc has no job completion plugin (JobCompType=jobcomp/none): no completion records")
	case "c":
		p.completion = true
		p.notes.add("--completion: hpc has no job completion plugin (JobCompType=jobcomp/none): no completion records")
	case "B":
		p.script = true
	case "env-vars":
		p.env = true
	case "delimiter":
		p.delimiter = val
	case "whole-hetjob":
		switch strings.ToLower(val) {
		case "", "yes", "y", "no", "n":
			p.notes.add("--whole-hetjob: hpc runs no heterogeneous jobs; no effect")
		default:
			return fail("Invalid --whole-hetjob value \"%s\". Valid values: [yes|no].", val)
		}
	default: // --json, --yaml
		p.mime = o.Long
	}
	return nil
}

// setGroups applies -g: groups by name or gid.
func (p *sacctParams) setGroups(val string, fail func(string, ...any) error) error {
	if p.gids == nil {
		p.gids = map[uint32]bool{}
	}
	for _, g := range splitList(val) {
		gid, ok := lookupGID(g)
		if !ok {
			return fail("Invalid group id: %s", g)
		}
		p.gids[gid] = true
	}
	return nil
}

// setFlags applies -F: None selects the jobs without scheduler flags
// (every job of hpc, which records none); SchedSubmit, SchedMain,
// SchedBackfill and StartRecieved select jobs that have one (none).
func (p *sacctParams) setFlags(e *Env, prog, val string) error {
	for _, f := range strings.Split(val, ",") {
		l := strings.ToLower(f)
		switch {
		case strings.Contains(l, "none"):
		case strings.Contains(l, "schedsubmit"), strings.Contains(l, "schedmain"),
			strings.Contains(l, "schedbackfill"), strings.Contains(l, "startrecieved"):
			p.noMatch = true
		default:
			e.errorf(prog, "str_2_job_flags: Invalid job flag %s", f)
			return quit{1}
		}
	}
	p.notes.add("--flags: hpc records no scheduler flags on jobs (every job's are None)")
	return nil
}

// lookupGID resolves a group name or number to a gid.
func lookupGID(name string) (uint32, bool) {
	if g, err := user.LookupGroup(name); err == nil {
		if id, err := strconv.ParseUint(g.Gid, 10, 32); err == nil {
			return uint32(id), true
		}
	}
	if id, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(id), true
	}
	return 0, false
}

// timeLimitOK is -k/-K as slurmdbd applies them: with -k alone the limit
// must be exactly it; with both, within [k, K]; -K alone does nothing.
func (p *sacctParams) timeLimitOK(min int64) bool {
	if p.tlMin == 0 {
		return true
	}
	if min < 0 {
		min = math.MaxInt64
	}
	if p.tlMax == 0 {
		return min == p.tlMin
	}
	return min >= p.tlMin && min <= p.tlMax
}

// constraintsOK is -C as slurmdbd applies it: every name given is part
// of the job's constraints; an empty name selects jobs without any.
func (p *sacctParams) constraintsOK(c string) bool {
	if !p.constraintsGiven {
		return true
	}
	for _, want := range p.constraints {
		if (want == "" && c != "") || !strings.Contains(c, want) {
			return false
		}
	}
	return true
}

// addJobs applies -j: job ids, a step's (12.0) standing for its job's.
func (p *sacctParams) addJobs(val string, fail func(string, ...any) error) error {
	for _, s := range splitList(val) {
		base, _, _ := strings.Cut(s, ".")
		refs, err := parseJobRefs(base)
		if err != nil || len(refs) != 1 {
			return fail("Invalid job id: %s", s)
		}
		p.q.JobIDs = append(p.q.JobIDs, refs[0].id)
		p.jobRefs = append(p.jobRefs, refs[0])
	}
	return nil
}

// named reports whether -j names a job's row (all rows without -j): a job
// by its id, every task of an array by the array's, a task as A_T.
func (p *sacctParams) named(r api.AcctRow) bool {
	if len(p.jobRefs) == 0 {
		return true
	}
	for _, ref := range p.jobRefs {
		switch {
		case ref.task < 0 && (r.JobID == ref.id || r.ArrayJobID == ref.id):
			return true
		case ref.task >= 0 && r.ArrayJobID == ref.id && r.ArrayTaskID == ref.task:
			return true
		}
	}
	return false
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
			(p.end.IsZero() || !r.Submit.After(p.end)) &&
			p.selected(r) && p.named(r)
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

// selected applies -q, -g, -k/-K, -C, -R and the filters nothing passes.
func (p *sacctParams) selected(r api.AcctRow) bool {
	reason := r.Reason
	if reason == "" {
		reason = "None"
	}
	return !p.noMatch &&
		(p.qos == nil || p.qos[strings.ToLower(r.QOS)]) &&
		(p.gids == nil || p.gids[r.GID]) &&
		(p.reasons == nil || p.reasons[strings.ToLower(reason)]) &&
		p.timeLimitOK(r.TimeLimitMin) && p.constraintsOK(r.Constraints)
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
  -B, --batch-script:     print the jobs' batch scripts (-j needed; kept where
                          AccountingStoreFlags has job_script)
  -c, --completion:       completion records (hpc has no jobcomp plugin: none)
  -C, --constraints:      jobs whose constraints hold all of these
      --delimiter:        the separator of -p and -P (default '|')
  -D, --duplicates:       every record of a requeued job (no effect on hpc)
  -e, --helpformat, --help-fields:
                          list the fields -o accepts
  -E, --endtime:          only jobs in a state before this time
      --env-vars:         print the jobs' environments (-j needed; kept where
                          AccountingStoreFlags has job_env)
  -f, --file:             completion records of this file (hpc: none)
  -F, --flags:            jobs with these scheduler flags (hpc records none:
                          only None selects jobs)
  -g, --gid, --group:     only jobs of these groups
  -h, --help:             print this help
  -i, --nnodes:           only jobs that ran on this many nodes (N or N-M)
  -I, --ncpus:            only jobs that had this many CPUs (N or N-M)
  -j, --jobs:             only these jobs and steps (job[.step], comma-separated)
  -k, --timelimit-min:    jobs with this time limit (the least, with -K)
  -K, --timelimit-max:    with -k, the greatest time limit
  -l, --long:             the long list of fields
  -L, --allclusters:      jobs of every cluster (no effect: hpc runs one)
  -M, --clusters, --cluster:
                          clusters to report on (hpc runs one; all: it)
      --name:             only jobs with these names
  -n, --noheader:         no header lines
  -N, --nodelist:         only jobs that ran on these nodes
      --noconvert:        sizes without unit prefixes (no effect on hpc)
      --units:            sizes in this unit (no effect on hpc)
  -o, --format, --fields: the fields to print (see -e), name%width to size them
  -p, --parsable:         fields separated by '|', with a '|' at the end
  -P, --parsable2:        fields separated by '|', nothing at the end
  -q, --qos:              only jobs of these QOS
  -r, --partition:        only jobs in these partitions
  -R, --reason:           jobs that waited last for these reasons
  -s, --state:            only jobs in these states (CD, F, R, PD, CA, TO...)
  -S, --starttime:        only jobs in a state after this time (default:
                          midnight today, unless -j is given)
  -T, --truncate:         clip times to the -S/-E window (no effect on hpc)
  -u, --uid, --user:      only jobs of these users
      --use-local-uid:    resolve user names locally (no effect on hpc)
  -U, --usage:            print a short list of the options
  -v, --verbose:          say which options mean nothing in hpc
  -V, --version:          print the Slurm version hpc follows
  -W, --wckeys:           only jobs with these wckeys (hpc keeps none)
      --whole-hetjob:     every part of a heterogeneous job (hpc runs none)
  -x, --associations:     jobs of these association ids (hpc's have none)
  -X, --allocations:      the jobs' allocations only, not their steps
      --federation:       jobs of the federation (no effect on hpc)
      --local:            jobs of this cluster only (no effect on hpc)
      --json, --yaml:     the jobs as slurmrestd's openapi/dbv0.0.38 gives them

valid start/end time formats are...
  HH:MM[:SS][AM|PM]  MMDD[YY]  MM/DD[/YY]  MM.DD[.YY]  YYYY-MM-DD[THH:MM[:SS]]
  now[{+|-}count[seconds|minutes|hours|days|weeks]]  today  midnight  noon
`

// collapseAcctArrays shows an array's tasks that have not started as one
// row, as sacct does ("10_[3-7]", PENDING), in the place of the first.
func collapseAcctArrays(rows []api.AcctRow) []api.AcctRow {
	waiting := func(r api.AcctRow) bool {
		return r.ArrayJobID != 0 && r.Step == "" && r.Start.IsZero() && strings.HasPrefix(r.State, string(api.StatePending))
	}
	tasks := map[uint64][]int{}
	for _, r := range rows {
		if waiting(r) {
			tasks[r.ArrayJobID] = append(tasks[r.ArrayJobID], r.ArrayTaskID)
		}
	}
	out := rows[:0:0]
	for _, r := range rows {
		if !waiting(r) {
			out = append(out, r)
			continue
		}
		ids, ok := tasks[r.ArrayJobID]
		if !ok {
			continue // merged into the first
		}
		delete(tasks, r.ArrayJobID)
		slices.Sort(ids)
		r.ArrayTasks = openapi.IntRanges(ids)
		out = append(out, r)
	}
	return out
}
