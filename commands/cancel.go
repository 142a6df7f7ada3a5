package commands

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var scancelOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts(
		"account,A,:", "batch,b", "ctld", "full,f", "help", "hurry,H", "interactive,i",
		"cluster,M,:", "clusters,M,:", "jobname,n,:", "me", "name,n,:", "nodelist,w,:",
		"partition,p,:", "qos,q,:", "quiet,Q", "reservation,R,:", "sibling,,:", "signal,s,:",
		"state,t,:", "usage", "user,u,:", "verbose,v", "version,V", "wckey,,:",
	)
})

// cancelID is one job id of scancel's command line: 12, 12_3 (an array
// task), 12_* (a whole array), 12.0 (a step).
type cancelID struct {
	text  string // as the user wrote it, for messages
	job   uint64
	task  string // "" (none), "*", or a task number
	step  string // "" (the whole job) or a step number
	valid bool   // hpc can tell whether the job exists (no array task or step)
}

// scancelParams is a parsed scancel command line.
type scancelParams struct {
	ids         []cancelID
	account     string
	name        string
	partition   string
	qos         string
	reservation string
	state       string // full state name
	user        string
	uid         uint32
	nodelist    []string
	wckey       string
	signal      int // 0: not given
	batch, full bool
	interactive bool
	verbose     int // -1 with -Q
}

// scancelMain is scancel.
func scancelMain(e *Env, prog string, args []string) int {
	p, code, ok := parseScancel(e, prog, args)
	if !ok {
		return code
	}
	cl, ctx, cancel, err := connect(e)
	if err != nil {
		return cancelFailed(e, prog, err)
	}
	defer cancel()
	if err := resolveArrayTasks(ctx, cl, p.ids); err != nil {
		return cancelFailed(e, prog, err)
	}
	c := &canceller{e: e, prog: prog, p: p, cl: cl, ctx: ctx}
	// Only job ids: send each as it is, as scancel does.
	if !p.filtering() && !p.hasSteps() {
		status := 0
		for _, id := range p.ids {
			status = max(status, c.send(id))
		}
		return status
	}
	return c.cancelSelected()
}

// parseScancel reads scancel's input environment variables, options and
// job ids; ok is false when scancel is done (help, or an error reported)
// and exits with code.
func parseScancel(e *Env, prog string, args []string) (p *scancelParams, code int, ok bool) {
	p, ok = scancelFromEnv(e)
	if !ok {
		return nil, 1, false
	}
	rest, code, done := parseOpts(e, prog, scancelOpts(), args, p.option(e, prog))
	if done {
		return nil, code, false
	}
	for _, word := range rest {
		ids, err := parseCancelIDs(word)
		if err != nil {
			e.errorf(prog, "Invalid job id %s", word)
			return nil, 1, false
		}
		p.ids = append(p.ids, ids...)
	}
	if p.user != "" {
		uid, ok := lookupUID(p.user)
		if !ok {
			e.errorf(prog, "Invalid user name: %s", p.user)
			return nil, 1, false
		}
		p.uid = uid
	}
	if len(p.ids) == 0 && p.account == "" && p.name == "" && p.nodelist == nil && p.partition == "" &&
		p.qos == "" && p.reservation == "" && p.state == "" && p.user == "" && p.wckey == "" {
		e.errorf(prog, "No job identification provided")
		return nil, 1, false
	}
	return p, 0, true
}

// scancelFromEnv starts scancel's parameters from its input environment
// variables; false when SCANCEL_STATE is invalid (reported).
func scancelFromEnv(e *Env) (*scancelParams, bool) {
	p := &scancelParams{}
	if v := e.Getenv("SCANCEL_VERBOSE"); strings.EqualFold(v, "true") || strings.EqualFold(v, "t") {
		p.verbose = 1
	}
	p.account, p.name, p.partition = strings.ToLower(e.Getenv("SCANCEL_ACCOUNT")), e.Getenv("SCANCEL_NAME"), e.Getenv("SCANCEL_PARTITION")
	p.qos, p.user, p.wckey = strings.ToLower(e.Getenv("SCANCEL_QOS")), e.Getenv("SCANCEL_USER"), e.Getenv("SCANCEL_WCKEY")
	if v := e.Getenv("SCANCEL_STATE"); v != "" {
		if p.state = jobStateName(v); p.state == "" {
			fmt.Fprintf(e.Stderr, "Unrecognized SCANCEL_STATE value: %s\nValid job states are PENDING, RUNNING, and SUSPENDED\n", v)
			return nil, false
		}
	}
	return p, true
}

// option applies one of scancel's options.
func (p *scancelParams) option(e *Env, prog string) func(o *jobspec.Opt, val string, _ bool) error {
	return func(o *jobspec.Opt, val string, _ bool) error {
		switch o.ID() {
		case "A":
			p.account = strings.ToLower(val)
		case "b":
			p.batch = true
		case "f":
			p.full = true
		case "ctld", "H", "sibling":
		case "help":
			io.WriteString(e.Stdout, scancelHelp)
			return quit{0}
		case "usage":
			io.WriteString(e.Stdout, scancelUsage)
			return quit{0}
		case "i":
			p.interactive = true
		case "M":
			return clustersOption(e, prog, val) // hpc runs one cluster: its name or all
		case "n":
			p.name = val
		case "me":
			p.user = strconv.Itoa(e.UID)
		case "w":
			names, ok := expandHosts(val)
			if !ok {
				e.errorf(prog, "Invalid hostlist: %s", val)
				return quit{1}
			}
			p.nodelist = names
		case "p":
			p.partition = val
		case "q":
			p.qos = strings.ToLower(val)
		case "Q":
			p.verbose = -1
		case "R":
			p.reservation = val
		case "s":
			if p.signal = jobspec.SignalNumber(val); p.signal <= 0 {
				fmt.Fprintf(e.Stderr, "Unknown job signal: %s\n", val)
				return quit{1}
			}
		case "t":
			if p.state = jobStateName(val); p.state == "" {
				fmt.Fprintf(e.Stderr, "Invalid job state specified: %s\nValid job states are PENDING, RUNNING, and SUSPENDED\n", val)
				return quit{1}
			}
		case "u":
			p.user = val
		case "v":
			p.verbose++
		case "V":
			fmt.Fprintln(e.Stdout, slurmVersion)
			return quit{0}
		case "wckey":
			p.wckey = val
		}
		return nil
	}
}

// canceller sends scancel's requests to the controller.
type canceller struct {
	e    *Env
	prog string
	p    *scancelParams
	cl   *api.Client
	ctx  context.Context
}

// send signals or cancels one job and reports its error as scancel does;
// it returns the exit status it calls for.
func (c *canceller) send(id cancelID) int {
	c.announce(id)
	var errMsg string
	if !id.valid {
		// hpc has no job arrays or steps yet: such an id names nothing.
		errMsg = api.ErrInvalidJobID
	} else {
		errMsg = c.request(id.job)
	}
	return c.report(id, errMsg)
}

// announce says, under -v, what is sent for id.
func (c *canceller) announce(id cancelID) {
	e, prog, p := c.e, c.prog, c.p
	if p.verbose <= 0 {
		return
	}
	what := ""
	switch {
	case p.batch:
		what = "batch "
	case p.full:
		what = "full "
	}
	if p.signal == 0 {
		fmt.Fprintf(e.Stderr, "%s: Terminating %sjob %s\n", prog, what, id.text)
	} else {
		fmt.Fprintf(e.Stderr, "%s: Signal %d to %sjob %s\n", prog, p.signal, what, id.text)
	}
}

// report prints a job's error as scancel does and returns the exit status
// it calls for ("" is no error).
func (c *canceller) report(id cancelID, errMsg string) int {
	e, prog, p := c.e, c.prog, c.p
	if errMsg == "" {
		return 0
	}
	ignorable := errMsg == api.ErrInvalidJobID || errMsg == api.ErrAlreadyDone
	if p.verbose > 0 || (!ignorable && p.verbose >= 0) {
		kind := "job id"
		if id.step != "" {
			kind = "job step id"
		}
		e.errorf(prog, "Kill job error on %s %s: %s", kind, id.text, errMsg)
	}
	if ignorable && p.signal == 0 {
		return 0 // the job is gone, as asked
	}
	return 1
}

// cancelBatch is how many jobs one request of a filtered scancel carries.
const cancelBatch = 1000

// cancelMany cancels jobs (no signal: nothing to retry) in requests of
// cancelBatch, as slurmctld takes a filtered scancel in one message, and
// reports each job's result; it returns the exit status.
func (c *canceller) cancelMany(ids []cancelID) int {
	status := 0
	for len(ids) > 0 {
		n := min(len(ids), cancelBatch)
		chunk := ids[:n]
		ids = ids[n:]
		req := api.CancelRequest{}
		for _, id := range chunk {
			c.announce(id)
			req.JobIDs = append(req.JobIDs, id.job)
		}
		results, err := c.cl.Cancel(c.ctx, req)
		if err != nil {
			_, msg := errText(err)
			for _, id := range chunk {
				status = max(status, c.report(id, msg))
			}
			continue
		}
		errs := map[uint64]string{}
		for _, r := range results {
			errs[r.JobID] = r.Error
		}
		for _, id := range chunk {
			status = max(status, c.report(id, errs[id.job]))
		}
	}
	return status
}

// request asks the controller to signal or cancel job; it returns the
// error message, "" if none.
func (c *canceller) request(job uint64) string {
	p := c.p
	sig := p.signal
	if sig == 0 && (p.batch || p.full) {
		sig = 9 // Slurm's default signal is SIGKILL
	}
	req := api.CancelRequest{JobIDs: []uint64{job}, Signal: sig}
	switch {
	case p.full:
		req.Scope = api.SignalFull
	case p.batch:
		req.Scope = api.SignalBatch
	}
	// A job that cannot take the request yet (a signal before it starts)
	// is asked again, as Slurm's scancel does: up to 10 times, 5 s, 6 s,
	// ... apart.
	for i := 0; ; i++ {
		results, err := c.cl.Cancel(c.ctx, req)
		if err != nil {
			_, errMsg := errText(err)
			return errMsg
		}
		if len(results) == 0 {
			return ""
		}
		if results[0].Error != api.ErrTransitionState || i+1 == cancelRetries {
			return results[0].Error
		}
		if p.verbose > 0 {
			fmt.Fprintf(c.e.Stderr, "%s: Job is in transitional state, retrying\n", c.prog)
		}
		select {
		case <-time.After(cancelRetryWait(i)):
		case <-c.ctx.Done():
			return results[0].Error
		}
	}
}

// scancel's retries of a job in a transitional state, and the wait before
// retry i (a variable for tests).
const cancelRetries = 10

var cancelRetryWait = func(i int) time.Duration { return time.Duration(5+i) * time.Second }

// cancelSelected loads the job list and sends to the live jobs that the
// ids and filters select, pending ones first (asking first with -i).
func (c *canceller) cancelSelected() int {
	e, prog, p := c.e, c.prog, c.p
	jobs, err := c.cl.Jobs(c.ctx)
	if err != nil {
		_, msg := errText(err)
		fmt.Fprintf(e.Stderr, "slurm_load_jobs error: %s\n", msg)
		return 1
	}
	targets, status := c.liveTargets(jobs)
	// The jobs the filters select, pending ones first.
	var matched []api.Job
	for _, j := range jobs {
		if !p.selects(j) {
			continue
		}
		if len(p.ids) > 0 && !targetsJob(targets, j.ID) {
			continue
		}
		matched = append(matched, j)
	}
	if len(matched) == 0 && len(p.ids) == 0 && p.verbose > 0 {
		if f := p.filterText(); f != "" {
			e.errorf(prog, "No active jobs match ALL job filters, including: %s", f)
		}
	}
	in := bufio.NewReader(e.Stdin)
	var many []cancelID // plain cancels: sent together
	for _, pending := range []bool{true, false} {
		for _, j := range matched {
			if (j.State == api.StatePending) != pending {
				continue
			}
			if p.interactive && !confirm(e, in, j) {
				continue
			}
			id := cancelID{text: strconv.FormatUint(j.ID, 10), job: j.ID, valid: true}
			if p.signal == 0 && !p.batch && !p.full {
				many = append(many, id)
				continue
			}
			status = max(status, c.send(id))
		}
	}
	return max(status, c.cancelMany(many))
}

// liveTargets returns the ids that name a live job, and reports the
// others first (status 1 if any).
func (c *canceller) liveTargets(jobs []api.Job) (targets []cancelID, status int) {
	for _, id := range c.p.ids {
		if id.valid && liveJob(jobs, id.job) != nil {
			targets = append(targets, id)
			continue
		}
		status = 1
		if c.p.verbose >= 0 {
			if id.step != "" {
				c.e.errorf(c.prog, "Kill job error on job step id %s: %s", id.text, api.ErrInvalidJobID)
			} else {
				c.e.errorf(c.prog, "Kill job error on job id %s: %s", id.text, api.ErrInvalidJobID)
			}
		}
	}
	return targets, status
}

// filtering reports whether any option narrows the jobs (scancel then
// loads the job list and filters it).
func (p *scancelParams) filtering() bool {
	return p.account != "" || p.batch || p.interactive || p.name != "" || p.partition != "" || p.qos != "" ||
		p.reservation != "" || p.signal != 0 || p.state != "" || p.user != "" || p.wckey != "" || p.nodelist != nil
}

func (p *scancelParams) hasSteps() bool {
	for _, id := range p.ids {
		if id.step != "" {
			return true
		}
	}
	return false
}

// selects is scancel's filter: live jobs (pending, running, suspended)
// that match every filter given.
func (p *scancelParams) selects(j api.Job) bool {
	if j.State != api.StatePending && j.State != api.StateRunning {
		return false
	}
	switch {
	case p.account != "" && !strings.EqualFold(accountOf(&j), p.account):
	case p.name != "" && j.Spec.Name != p.name:
	case p.partition != "" && j.Spec.Partition != p.partition:
	case p.qos != "" && !strings.EqualFold(qosOf(&j), p.qos):
	case p.reservation != "":
	case p.state != "" && string(j.State) != p.state:
	case p.user != "" && j.UID != p.uid:
	case p.nodelist != nil && !intersects(p.nodelist, j.NodeNames()):
	case p.wckey != "":
	default:
		return true
	}
	return false
}

// filterText is the "account=... job_name=..." part of scancel's message
// when nothing matches.
func (p *scancelParams) filterText() string {
	var b strings.Builder
	add := func(k, v string) {
		if v != "" {
			b.WriteString(k + "=" + v + " ")
		}
	}
	add("account", p.account)
	add("job_name", p.name)
	if p.nodelist != nil {
		add("nodelist", strings.Join(p.nodelist, ","))
	}
	add("partition", p.partition)
	add("qos", p.qos)
	add("reservation", p.reservation)
	add("state", p.state)
	add("user_name", p.user)
	add("wckey", p.wckey)
	return b.String()
}

func liveJob(jobs []api.Job, id uint64) *api.Job {
	for i := range jobs {
		if jobs[i].ID == id && !jobs[i].State.Final() {
			return &jobs[i]
		}
	}
	return nil
}

func targetsJob(ids []cancelID, job uint64) bool {
	for _, id := range ids {
		if id.job == job {
			return true
		}
	}
	return false
}

// confirm asks scancel -i's question and reads the answer.
func confirm(e *Env, in *bufio.Reader, j api.Job) bool {
	fmt.Fprintf(e.Stdout, "Cancel job_id=%d name=%s partition=%s [y/n]? ", j.ID, j.Spec.Name, j.Spec.Partition)
	line, _ := in.ReadString('\n')
	line = strings.TrimSpace(line)
	return line == "y" || line == "Y"
}

// parseCancelIDs reads one command-line word of job ids as scancel does:
// "12", "12_3", "12_[1-3]", "12_*", "12.0", and several of them separated
// by commas ("12,13").
func parseCancelIDs(word string) ([]cancelID, error) {
	var out []cancelID
	rest := word
	for rest != "" {
		digits := leadingDigits(rest)
		job, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || job == 0 {
			return nil, fmt.Errorf("invalid job id %q", word)
		}
		rest = rest[len(digits):]
		id := cancelID{job: job, valid: true}
		switch {
		case strings.HasPrefix(rest, "_["):
			end := strings.IndexByte(rest, ']')
			if end < 0 || end != len(rest)-1 {
				return nil, fmt.Errorf("invalid job id %q", word)
			}
			tasks, ok := expandHosts("t" + rest[1:])
			if !ok {
				return nil, fmt.Errorf("invalid job id %q", word)
			}
			for _, t := range tasks {
				out = append(out, cancelID{text: digits + "_" + t[1:], job: job, task: t[1:]})
			}
			return out, nil
		case strings.HasPrefix(rest, "_*"):
			id.task, rest = "*", rest[2:]
		case strings.HasPrefix(rest, "_"):
			t := leadingDigits(rest[1:])
			if t == "" {
				return nil, fmt.Errorf("invalid job id %q", word)
			}
			id.task, id.valid, rest = t, false, rest[1+len(t):]
		}
		if strings.HasPrefix(rest, ".") {
			s := leadingDigits(rest[1:])
			if s == "" {
				return nil, fmt.Errorf("invalid job id %q", word)
			}
			id.step, id.valid, rest = s, false, rest[1+len(s):]
		}
		id.text = digits
		if id.task != "" {
			id.text += "_" + id.task
		}
		if id.step != "" {
			id.text += "." + id.step
		}
		out = append(out, id)
		switch {
		case rest == "":
		case rest[0] == ',':
			rest = rest[1:]
		default:
			return nil, fmt.Errorf("invalid job id %q", word)
		}
	}
	return out, nil
}

func cancelFailed(e *Env, prog string, err error) int {
	_, msg := errText(err)
	e.errorf(prog, "%s", msg)
	return 1
}

const scancelUsage = `Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]
               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]
               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]
               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey]
               [job_id[_array_id][.step_id]]
`

const scancelHelp = `Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]
  -A, --account=account           act only on jobs charging this account
  -b, --batch                     signal batch shell for specified job
  -f, --full                      signal batch shell and all steps for specified job
  -i, --interactive               require response from user for each job
  -n, --name=job_name             act only on jobs with this name
      --me                        act only on your own jobs
  -p, --partition=partition       act only on jobs in this partition
  -Q, --quiet                     disable warnings
  -q, --qos=qos                   act only on jobs with this quality of service
  -s, --signal=name | integer     signal to send to job, default is SIGKILL
  -t, --state=states              act only on jobs in this state (PENDING, RUNNING)
  -u, --user=user_name            act only on jobs of this user
  -V, --version                   output version information and exit
  -v, --verbose                   verbosity level
  -w, --nodelist                  act only on jobs on these nodes
  -H, --hurry                     accepted, no effect
  -R, --reservation=name          act only on jobs in this reservation
      --wckey=wckey               act only on jobs with this wckey
      --jobname=job_name          the same as -n/--name
  -M, --cluster, --clusters       the cluster to act on (hpc runs one: its
                                  name or all)
      --ctld, --sibling           accepted, no effect

Help options:
  --help                          show this help message
  --usage                         display brief usage message
`

// resolveArrayTasks turns array task ids (12_3) into the tasks' job ids;
// 12_* is the array's own id, which stands for all its tasks.
func resolveArrayTasks(ctx context.Context, cl *api.Client, ids []cancelID) error {
	need := false
	for _, id := range ids {
		need = need || (id.task != "" && id.step == "")
	}
	if !need {
		return nil
	}
	jobs, err := cl.Jobs(ctx)
	if err != nil {
		return err
	}
	for i := range ids {
		id := &ids[i]
		if id.task == "" || id.step != "" {
			continue
		}
		for _, j := range jobs {
			if j.ArrayJobID != id.job {
				continue
			}
			if id.task == "*" || strconv.Itoa(j.ArrayTaskID) == id.task {
				if id.task != "*" {
					id.job = j.ID
				}
				id.valid = true
				break
			}
		}
	}
	return nil
}
