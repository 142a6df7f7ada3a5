package commands

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
	"hpc/cluster/openapi"
	"hpc/commands/format"
)

var squeueOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts(
		"accounts,A,:", "all,a", "array,r", "array-unique,,,array-unique", "Format,O,:", "format,o,:",
		"federation", "help", "hide", "iterate,i,:", "jobs,j,::", "local", "long,l", "licenses,L,:",
		"cluster,M,:", "clusters,M,:", "me", "name,n,:", "noconvert", "node,w,:", "nodes,w,:",
		"nodelist,w,:", "noheader,h", "partitions,p,:", "priority,P", "qos,q,:", "reservation,R,:",
		"sib,,,sibling", "sibling,,,sibling", "sort,S,:", "start", "steps,s,::", "states,t,:",
		"usage", "user,u,:", "users,u,:", ",U,:,A", "verbose,v", "version,V", "json", "yaml",
	)
})

// squeueParams is a parsed squeue command line.
type squeueParams struct {
	jobs      []jobRef // -j
	jobFlag   bool
	array     bool     // -r: one line per array task
	steps     []string // -s 12.0,13.batch
	stepFlag  bool
	users     map[uint32]bool
	parts     map[string]bool
	names     map[string]bool
	accounts  map[string]bool
	qos       map[string]bool
	licenses  bool // -L: hpc jobs hold no licenses, so nothing matches
	resv      bool // -R: likewise for reservations
	nodes     []string
	states    map[string]bool // full state names
	allStates bool
	long      bool
	noHeader  bool
	start     bool
	format    string
	formatO   string
	sort      string
	iterate   int
	// anyState shows the jobs named by -j in every state (the hpc queue
	// verb: a friendlier squeue that still finds jobs that have ended).
	anyState bool
	given    givenOpts // the options as given, for -v
	cluster  string    // -M: the cluster's name, printed above the queue
	mime     string    // --json, --yaml: openapi/v0.0.38's jobs, nothing else
}

// squeueMain is squeue.
func squeueMain(e *Env, prog string, args []string) int { return squeueRun(e, prog, args, false) }

// queueVerbMain is `hpc queue`: squeue, except that -j shows the jobs
// named in whatever state they are, as scripts polling for a job's end
// expect.
func queueVerbMain(e *Env, prog string, args []string) int { return squeueRun(e, prog, args, true) }

func squeueRun(e *Env, prog string, args []string, anyState bool) int {
	p := &squeueParams{anyState: anyState}
	rest, code, done := parseOpts(e, prog, squeueOpts(), args, p.option(e, prog))
	if done {
		return code
	}
	if p.mime != "" {
		return squeueMime(e, e.Stdout, p.mime)
	}
	if p.long && p.format != "" {
		fmt.Fprintf(e.Stderr, "%s: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", prog)
		return 1
	}
	if !p.operands(e, prog, rest) {
		return 1
	}
	if p.jobFlag && p.stepFlag {
		if p.jobs == nil {
			e.errorf(prog, "Incompatible options --jobs and --steps")
			return 1
		}
		p.jobFlag = false // steps of the jobs named
	}
	p.fromEnv(e, prog)
	if p.given.count["v"] > 0 {
		p.dump(e).write(e.Stdout)
	}
	p.startDefaults()
	if !p.stepFlag {
		notes, err := format.CheckSqueueSort(p.sort)
		if err != nil {
			e.errorf(prog, "%v", err)
			return 1
		}
		for _, n := range notes {
			fmt.Fprintf(e.Stderr, "%s: %s\n", prog, n)
		}
	}
	p.checkFormats(e, prog)
	for {
		if code := p.show(e, prog); code != 0 || p.iterate == 0 {
			return code
		}
		fmt.Fprintln(e.Stdout)
		time.Sleep(time.Duration(p.iterate) * time.Second)
	}
}

// option applies one of squeue's options.
func (p *squeueParams) option(e *Env, prog string) func(o *jobspec.Opt, val string, has bool) error {
	fail := func(format string, a ...any) error {
		e.errorf(prog, format, a...)
		return quit{1}
	}
	return func(o *jobspec.Opt, val string, has bool) error {
		var err error
		p.given.note(o.ID(), val) // for -v
		switch o.ID() {
		case "A":
			p.accounts = lowerSet(val)
		case "r":
			p.array = true
		case "a", "array-unique", "federation", "hide", "local", "noconvert", "P", "sibling", "v":
			// Hidden partitions and federations do not exist in hpc: nothing
			// to change.
		case "O":
			if p.format != "" {
				return fail("-O (--Format) is incompatible with -o (--format)")
			}
			p.formatO = val
		case "o":
			if p.formatO != "" {
				return fail("-o (--format) is incompatible with -O (--Format)")
			}
			p.format = val
		case "help":
			io.WriteString(e.Stdout, squeueHelp)
			return quit{0}
		case "usage":
			io.WriteString(e.Stdout, squeueUsage)
			return quit{0}
		case "i":
			n, _ := strconv.Atoi(val)
			if n <= 0 {
				return fail("--iterate=%s\n", val)
			}
			p.iterate = n
		case "j":
			p.jobFlag = true
			if has {
				if p.jobs, err = parseJobRefs(val); err != nil {
					return fail("%v", err)
				}
			}
		case "l":
			p.long = true
		case "L":
			p.licenses = true
		case "M":
			name, ok := resolveClusters(e, prog, val) // hpc runs one cluster: its name or all
			if !ok {
				return quit{1}
			}
			p.cluster = name
		case "me":
			p.users = map[uint32]bool{uint32(e.UID): true}
		case "n":
			p.names = set(splitList(val))
		case "w":
			names, ok := expandHosts(val)
			if !ok {
				return fail("'%s' invalid entry for --nodelist", val)
			}
			p.nodes = names
		case "h":
			p.noHeader = true
		case "p":
			p.parts = set(splitList(val))
		case "q":
			p.qos = lowerSet(val)
		case "R":
			p.resv = true
		case "S":
			p.sort = val
		case "start":
			p.start = true
		case "s":
			p.stepFlag = true
			if has {
				if p.steps, err = parseStepList(val); err != nil {
					return fail("%v", err)
				}
			}
		case "t":
			if err := p.setStates(val); err != nil {
				e.errorf(prog, "Invalid job state specified: %s", err.Error())
				e.errorf(prog, "Valid job states include: %s\n", jobStateList())
				return quit{1}
			}
		case "u":
			p.users = userSet(e, prog, val)
		case "V":
			fmt.Fprintln(e.Stdout, slurmVersion)
			return quit{0}
		case "json", "yaml":
			p.mime = o.Long
		}
		return nil
	}
}

// operands reads what follows the options: the list of a -j or -s given
// without one; anything else is reported, with the usage. False on error.
func (p *squeueParams) operands(e *Env, prog string, rest []string) bool {
	if len(rest) == 0 {
		return true
	}
	var err error
	switch {
	case p.jobFlag && p.jobs == nil:
		if p.jobs, err = parseJobRefs(rest[0]); err != nil {
			e.errorf(prog, "%v", err)
			return false
		}
		rest = rest[1:]
	case p.stepFlag && p.steps == nil:
		if p.steps, err = parseStepList(rest[0]); err != nil {
			e.errorf(prog, "%v", err)
			return false
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		e.errorf(prog, "Unrecognized option: %s", rest[0])
		io.WriteString(e.Stdout, squeueUsage)
		return false
	}
	return true
}

// startDefaults: --start (of jobs, not steps) lists pending jobs by their
// expected start, unless the command line or environment said otherwise.
func (p *squeueParams) startDefaults() {
	if !p.start || p.stepFlag {
		return
	}
	if p.format == "" && p.formatO == "" {
		p.format = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
	}
	if p.sort == "" {
		p.sort = "S"
	}
	if p.states == nil && !p.allStates {
		p.states = map[string]bool{string(api.StatePending): true}
	}
}

// checkFormats prints squeue's warnings for bad -o/-O fields; the fields
// still print (literally).
func (p *squeueParams) checkFormats(e *Env, prog string) {
	var err error
	switch {
	case p.stepFlag && p.format != "":
		_, err = format.ParseStepFormat(p.format)
	case p.stepFlag && p.formatO != "":
		_, err = format.ParseStepLongFormat(p.formatO)
	case p.format != "":
		_, err = format.ParseSqueueFormat(p.format)
	case p.formatO != "":
		_, err = format.ParseSqueueLongFormat(p.formatO)
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			e.errorf(prog, "%s", line)
		}
	}
}

// fromEnv applies squeue's input environment variables for what the
// command line left unset.
func (p *squeueParams) fromEnv(e *Env, prog string) {
	if p.format == "" && p.formatO == "" && !p.long && !p.stepFlag && !p.start {
		if v := e.Getenv("SQUEUE_FORMAT"); v != "" {
			p.format = v
		} else if v := e.Getenv("SQUEUE_FORMAT2"); v != "" {
			p.formatO = v
		}
	}
	if p.sort == "" {
		p.sort = e.Getenv("SQUEUE_SORT")
	}
	if p.accounts == nil && e.Getenv("SQUEUE_ACCOUNT") != "" {
		p.accounts = lowerSet(e.Getenv("SQUEUE_ACCOUNT"))
	}
	if p.names == nil && e.Getenv("SQUEUE_NAMES") != "" {
		p.names = set(splitList(e.Getenv("SQUEUE_NAMES")))
	}
	if p.parts == nil && e.Getenv("SQUEUE_PARTITION") != "" {
		p.parts = set(splitList(e.Getenv("SQUEUE_PARTITION")))
	}
	if p.qos == nil && e.Getenv("SQUEUE_QOS") != "" {
		p.qos = lowerSet(e.Getenv("SQUEUE_QOS"))
	}
	if p.states == nil && !p.allStates && e.Getenv("SQUEUE_STATES") != "" {
		if err := p.setStates(e.Getenv("SQUEUE_STATES")); err != nil {
			e.errorf(prog, "Invalid job state specified: %s", err.Error())
		}
	}
	if p.users == nil && e.Getenv("SQUEUE_USERS") != "" {
		p.users = userSet(e, prog, e.Getenv("SQUEUE_USERS"))
	}
}

func (p *squeueParams) setStates(val string) error {
	if strings.EqualFold(val, "all") {
		p.allStates, p.states = true, nil
		return nil
	}
	p.allStates = false
	p.states = map[string]bool{}
	for _, s := range splitList(val) {
		name := jobStateName(s)
		if name == "" {
			return fmt.Errorf("%s", s)
		}
		p.states[name] = true
	}
	return nil
}

// show loads the jobs and prints them (or their steps) once.
func (p *squeueParams) show(e *Env, prog string) int {
	if (p.given.count["v"] > 0 || p.iterate > 0) && !p.noHeader && !p.long {
		fmt.Fprintln(e.Stdout, format.CTime(e.Now()))
	}
	opts := format.SqueueOptions{
		Format: p.format, LongFormat: p.formatO, Long: p.long, NoHeader: p.noHeader, Sort: p.sort,
	}
	cl, ctx, cancel, err := connect(e)
	var jobs []api.Job
	if err == nil {
		defer cancel()
		if !p.stepFlag && format.BriefSuffices(opts) {
			jobs, err = cl.JobsBrief(ctx) // a fraction of whole jobs' text
		} else {
			jobs, err = cl.Jobs(ctx)
		}
	}
	load := "slurm_load_jobs error"
	if p.stepFlag {
		load = "slurm_get_job_steps error"
	}
	if err != nil {
		_, msg := errText(err)
		fmt.Fprintf(e.Stderr, "%s: %s\n", load, msg)
		return 1
	}
	now := e.Now()
	if p.cluster != "" {
		fmt.Fprintf(e.Stdout, "CLUSTER: %s\n", p.cluster)
	}
	if p.given.count["v"] > 0 {
		// What Slurm's squeue prints of the answer it got.
		fmt.Fprintf(e.Stdout, "last_update_time=%d records=%d\n", now.Unix(), len(jobs))
	}
	if p.stepFlag {
		fmt.Fprint(e.Stdout, format.SqueueSteps(p.filterSteps(jobs), now, opts))
		return 0
	}
	// squeue -j with one id asks the controller for that job only, and
	// the controller refuses an id it does not know.
	if !p.array {
		jobs = openapi.CollapseArrays(jobs)
	}
	if len(p.jobs) == 1 && !hasRef(jobs, p.jobs[0]) {
		fmt.Fprintf(e.Stderr, "%s: %s\n", load, api.ErrInvalidJobID)
		return 1
	}
	// Filtered in place, and a job that stays where it is is not copied:
	// a job is a kilobyte, and the list may hold 100,000.
	n := 0
	for i := range jobs {
		if !p.match(&jobs[i]) {
			continue
		}
		if n != i {
			jobs[n] = jobs[i]
		}
		n++
	}
	fmt.Fprint(e.Stdout, format.Squeue(jobs[:n], now, opts))
	return 0
}

func hasJob(jobs []api.Job, id uint64) bool {
	return hasRef(jobs, jobRef{id: id, task: -1})
}

// hasRef reports whether a job of jobs is one ref names.
func hasRef(jobs []api.Job, ref jobRef) bool {
	for i := range jobs {
		if ref.matches(&jobs[i]) {
			return true
		}
	}
	return false
}

// match is squeue's job filter.
func (p *squeueParams) match(j *api.Job) bool {
	if p.jobs != nil && !anyRef(p.jobs, j) {
		return false
	}
	if p.licenses || p.resv {
		return false
	}
	if p.accounts != nil && !p.accounts[strings.ToLower(accountOf(j))] {
		return false
	}
	if p.qos != nil && !p.qos[strings.ToLower(qosOf(j))] {
		return false
	}
	switch {
	case p.allStates:
	case p.states != nil:
		if !p.states[string(j.State)] {
			return false
		}
	case p.anyState && p.jobs != nil:
	default:
		if j.State.Final() {
			return false
		}
	}
	if p.nodes != nil && !intersects(p.nodes, j.NodeNames()) {
		return false
	}
	if p.users != nil && !p.users[j.UID] {
		return false
	}
	if p.parts != nil && !p.parts[j.Spec.Partition] {
		return false
	}
	if p.names != nil && !p.names[j.Spec.Name] {
		return false
	}
	return true
}

// filterSteps lists the steps of running jobs that pass the filters (-s
// ids, -j jobs, -u, -p, -w).
func (p *squeueParams) filterSteps(jobs []api.Job) []format.Step {
	var out []format.Step
	for _, s := range format.JobSteps(jobs) {
		if p.steps != nil && !containsString(p.steps, s.StepID()) {
			continue
		}
		if p.jobs != nil && !anyRefID(p.jobs, s.JobID) {
			continue
		}
		if p.users != nil && !p.users[s.UID] {
			continue
		}
		if p.parts != nil && !p.parts[s.Partition] {
			continue
		}
		if p.nodes != nil && !intersects(p.nodes, s.Nodes) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func accountOf(j *api.Job) string {
	if j.Account != "" {
		return j.Account
	}
	return j.Spec.Account
}

func qosOf(j *api.Job) string {
	if j.Spec.QOS != "" {
		return j.Spec.QOS
	}
	return "normal"
}

func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func set(items []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range items {
		m[s] = true
	}
	return m
}

func lowerSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, x := range splitList(s) {
		m[strings.ToLower(x)] = true
	}
	return m
}

// userSet resolves -u's names and uids; unknown ones are reported and
// match nothing, as in squeue.
func userSet(e *Env, prog, val string) map[uint32]bool {
	m := map[uint32]bool{}
	for _, u := range splitList(val) {
		if uid, ok := lookupUID(u); ok {
			m[uid] = true
		} else {
			e.errorf(prog, "Invalid user: %s\n", u)
		}
	}
	return m
}

// jobRef is a job named on a command line: 12 (a job, or all the tasks of
// array 12) or 12_3 (a task of array 12).
type jobRef struct {
	id   uint64
	task int // -1: no task named
}

// matches reports whether j (a job, a task or an array's record) is one
// the reference names.
func (r jobRef) matches(j *api.Job) bool {
	if r.task < 0 {
		return j.ID == r.id || j.ArrayJobID == r.id
	}
	return j.ArrayJobID == r.id && format.ArrayTaskMatch(j, r.task)
}

func anyRef(refs []jobRef, j *api.Job) bool {
	for _, r := range refs {
		if r.matches(j) {
			return true
		}
	}
	return false
}

// anyRefID is anyRef for a step's job, known by its id only.
func anyRefID(refs []jobRef, id uint64) bool {
	for _, r := range refs {
		if r.id == id {
			return true
		}
	}
	return false
}

// parseJobRefs reads -j's "5,6,7_2".
func parseJobRefs(s string) ([]jobRef, error) {
	refs := []jobRef{}
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		base, task, isTask := strings.Cut(item, "_")
		id, err := strconv.ParseUint(leadingDigits(base), 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("Invalid job id: %s", item)
		}
		r := jobRef{id: id, task: -1}
		if isTask {
			if r.task, err = strconv.Atoi(task); err != nil || r.task < 0 {
				return nil, fmt.Errorf("Invalid job id: %s", item)
			}
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// hasTask reports whether a reference names an array task (12_3).
func hasTask(refs []jobRef) bool {
	for _, r := range refs {
		if r.task >= 0 {
			return true
		}
	}
	return false
}

// refIDs turns references into the job ids the controller knows: a job's
// or array's id as it is, an array task (12_3) as its task's own id, found
// in jobs.
func refIDs(refs []jobRef, jobs []api.Job) ([]uint64, error) {
	ids := make([]uint64, 0, len(refs))
	for _, r := range refs {
		if r.task < 0 {
			ids = append(ids, r.id)
			continue
		}
		k := slices.IndexFunc(jobs, func(j api.Job) bool { return j.ArrayJobID == r.id && j.ArrayTaskID == r.task })
		if k < 0 {
			return nil, fmt.Errorf("%s: %d_%d", api.ErrInvalidJobID, r.id, r.task)
		}
		ids = append(ids, jobs[k].ID)
	}
	return ids, nil
}

// parseStepList reads -s's "5.0,6.batch".
func parseStepList(s string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		job, step, ok := strings.Cut(item, ".")
		id, err := strconv.ParseUint(leadingDigits(job), 10, 64)
		if !ok {
			return nil, fmt.Errorf("Invalid job_step id: %s.??", job)
		}
		if err != nil || id == 0 || step == "" || strings.HasPrefix(step, "-") {
			return nil, fmt.Errorf("Invalid job_step id: %s.%s", job, step)
		}
		out = append(out, strconv.FormatUint(id, 10)+"."+step)
	}
	return out, nil
}

// leadingDigits is the number at the start of s, as strtol reads it.
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

const squeueUsage = `Usage: squeue [-A account] [-i seconds] [--job jobid] [-n name] [-o format]
              [-O format] [-p partitions] [--qos qos] [--sort fields] [--start]
              [--steps step_id] [-t states] [-u user_name] [--usage]
              [-w nodes] [-ahjlrsv]
`

const squeueHelp = `Usage: squeue [OPTIONS]
  -A, --account=account(s)        comma separated list of accounts to view
  -a, --all                       display jobs in hidden partitions (hpc has none)
  -h, --noheader                  no headers on output
  -i, --iterate=seconds           repeat the listing every so many seconds
  -j, --jobs=job(s)               comma separated list of jobs IDs to view
  -l, --long                      long report
  -L, --licenses=names            jobs using these licenses (hpc jobs use none)
  -n, --name=job_name(s)          comma separated list of job names to view
      --me                        equivalent to --user=<my uid>
  -o, --format=format             format specification (%i %P %j %u %t %M %D %R ...)
  -O, --Format=format             long format specification (jobid,name:20,...)
  -p, --partition=partition(s)    comma separated list of partitions to view
  -q, --qos=qos(s)                comma separated list of qos's to view
  -r, --array                     one job array element per line
  -S, --sort=fields               comma separated list of fields to sort on
      --start                     print expected start times of pending jobs
  -s, --steps=step(s)             comma separated list of job steps to view
  -t, --states=states             comma separated list of states to view ('all' for all)
  -u, --user=user_name(s)         comma separated list of users to view
  -v, --verbose                   verbosity level
  -V, --version                   output version information and exit
  -w, --nodelist=hostlist         list of nodes to view
  -P, --priority                  accepted, no effect (one partition per job)
  -R, --reservation=name          only jobs in this reservation
      --array-unique              accepted, no effect
      --noconvert                 accepted, no effect

Other names and options:
  --accounts, -U                  the same as -A/--account
  --partitions                    the same as -p/--partition
  --users                         the same as -u/--user
  --nodes, --node                 the same as -w/--nodelist
  -M, --clusters=cluster_name     this cluster's name (or all): hpc runs one
  --federation, --local, --sib, --sibling, --hide
                                  accepted, no effect (one cluster, no hidden
                                  partitions)
  --json, --yaml                  the jobs as slurmrestd's openapi/v0.0.38 gives them

Help options:
  --help                          show this help message
  --usage                         display a brief summary of squeue options
`
