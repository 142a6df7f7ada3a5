package commands

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
	"hpc/cluster/openapi"
	"hpc/commands/format"
	"hpc/internal/words"
)

var scontrolOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts(
		"all,a", "cluster,M,:", "clusters,M,:", "details,d", "federation", "future,F", "help,h",
		"hide", "local", "oneliner,o", "quiet,Q", "sibling", "uid,u,:", "usage,,,h", "verbose,v", "version,V",
	)
})

// scontrol is one scontrol session: its flags and its exit status.
type scontrol struct {
	e        *Env
	prog     string
	oneLiner bool
	details  bool // -d: scontrol show job gives each node's CPU_IDs
	quiet    bool
	status   int
	quitting bool
}

// scontrolMain is scontrol.
func scontrolMain(e *Env, prog string, args []string) int {
	s := &scontrol{e: e, prog: prog}
	rest, code, done := parseOpts(e, prog, scontrolOpts(), args, func(o *jobspec.Opt, val string, _ bool) error {
		switch o.ID() {
		case "d":
			s.details = true
		case "a", "federation", "F", "hide", "local", "sibling", "v":
		case "M":
			return clustersOption(e, prog, val) // hpc runs one cluster: its name or all
		case "h":
			io.WriteString(e.Stdout, scontrolHelp)
			return quit{0}
		case "o":
			s.oneLiner = true
		case "Q":
			s.quiet = true
		case "u":
			return scontrolUID(e, prog, val)
		case "V":
			fmt.Fprintln(e.Stdout, slurmVersion)
			return quit{0}
		}
		return nil
	})
	if done {
		return code
	}
	if len(rest) > 0 {
		s.command(rest)
		return s.status
	}
	// No command: read commands from stdin, as scontrol's prompt does.
	in := bufio.NewScanner(e.Stdin)
	for !s.quitting {
		fmt.Fprint(e.Stdout, "scontrol: ")
		if !in.Scan() {
			fmt.Fprintln(e.Stdout)
			break
		}
		// Quotes (single or double) group words.
		if ws, _ := words.Split(in.Text(), words.Options{SingleQuotes: true}); len(ws) > 0 {
			s.command(ws)
		}
	}
	return s.status
}

// keyword reports whether tag names word: a prefix of it at least min long
// (case ignored), as scontrol matches its keywords.
func keyword(tag, word string, min int) bool {
	return len(tag) >= min && len(tag) <= len(word) && strings.EqualFold(tag, word[:len(tag)])
}

func (s *scontrol) fail(format string, a ...any) {
	s.status = 1
	fmt.Fprintf(s.e.Stderr, format, a...)
}

// command runs one scontrol command.
func (s *scontrol) command(argv []string) {
	tag := argv[0]
	switch {
	case keyword(tag, "show", 3):
		s.show(argv)
	case keyword(tag, "ping", 3):
		if len(argv) > 1 {
			s.fail("too many arguments for keyword:%s\n", tag)
			return
		}
		s.ping()
	case keyword(tag, "oneliner", 1):
		s.oneLiner = true
	case keyword(tag, "details", 1):
		s.details = true
	case keyword(tag, "quiet", 4):
		s.quiet = true
	case keyword(tag, "quit", 4), keyword(tag, "exit", 4):
		s.quitting = true
	case keyword(tag, "help", 2):
		io.WriteString(s.e.Stdout, scontrolHelp)
	case keyword(tag, "version", 4):
		fmt.Fprintln(s.e.Stdout, slurmVersion)
	case strings.EqualFold(tag, "hold"), strings.EqualFold(tag, "holdu"), strings.EqualFold(tag, "uhold"),
		keyword(tag, "release", 3):
		s.jobControl(argv, holdAction(tag))
	case keyword(tag, "requeue", 3) && !keyword(tag, "requeuehold", 8):
		s.jobControl(argv, "requeue")
	case keyword(tag, "update", 1):
		s.update(argv)
	case keyword(tag, "completing", 2):
		if len(argv) > 1 {
			s.fail("too many arguments for keyword:%s\n", tag)
			return
		}
		s.completing()
	case keyword(tag, "takeover", 2):
		s.takeover(argv)
	case keyword(tag, "write", 5):
		s.write(argv)
	case keyword(tag, "create", 2):
		s.create(argv)
	case keyword(tag, "delete", 3):
		s.delete(argv)
	case keyword(tag, "token", 3):
		s.token(argv)
	case keyword(tag, "reconfigure", 3):
		s.reconfigure(argv)
	case keyword(tag, "pidinfo", 3):
		s.pidinfo(argv)
	case keyword(tag, "requeuehold", 8), keyword(tag, "suspend", 2), keyword(tag, "resume", 3),
		keyword(tag, "top", 3), keyword(tag, "notify", 1),
		keyword(tag, "shutdown", 8),
		keyword(tag, "reboot", 3), keyword(tag, "wait_job", 2):
		s.fail("%s: error: %s: the controller does not support this command yet\n", s.prog, strings.ToLower(tag))
	default:
		s.fail("invalid keyword: %s\n", tag)
	}
}

// update is scontrol update JobId=N Key=Value ... or NodeName=LIST
// State=DRAIN|RESUME|DOWN Reason=...
func (s *scontrol) update(argv []string) {
	if len(argv) < 2 {
		s.fail("too few arguments for keyword:%s\n", argv[0])
		return
	}
	if partitionUpdate(argv[1:]) {
		s.updatePartition(argv[1:])
		return
	}
	req := api.UpdateRequest{Set: map[string]string{}}
	for _, arg := range argv[1:] {
		k, v, ok := strings.Cut(arg, "=")
		if !ok {
			s.fail("Invalid input: %s\nRequest aborted\n", arg)
			return
		}
		switch strings.ToLower(k) {
		case "jobid", "job":
			id, ok := s.updateJobID(v)
			if !ok {
				s.fail("Invalid JobId value: %s\n", v)
				return
			}
			req.JobID = id
		case "nodename", "node":
			req.Nodes = append(req.Nodes, v)
		default:
			req.Set[k] = v
		}
	}
	if req.JobID == 0 && len(req.Nodes) == 0 {
		s.fail("No valid entity in update command\nInput line must include \"NodeName\", \"PartitionName\", \"Reservation/ReservationName\", \"FrontendName\", \"SuspendExcNodes\", \"SuspendExcParts\", \"SuspendExcStates\", \"JobId\", \"JobName\" or \"StepId\"\n")
		return
	}
	cl, ctx, cancel, err := connect(s.e)
	if err != nil {
		s.loadErr("slurm_update error", err)
		return
	}
	defer cancel()
	if err := cl.Update(ctx, req); err != nil {
		_, msg := errText(err)
		if req.JobID != 0 {
			s.fail("Job %d update failed: %s\n", req.JobID, msg)
		} else {
			s.fail("slurm_update error: %s\n", msg)
		}
	}
}

// write is scontrol write batch_script JOBID [FILE]: the job's batch
// script into FILE ("-": stdout; by default slurm-JOBID.sh), for its owner,
// root and operators. Slurm 22.05 drops the failure from its exit status;
// here it is 1.
func (s *scontrol) write(argv []string) {
	switch {
	case len(argv) < 2:
		s.fail("too few arguments for keyword:%s\n", argv[0])
		return
	case keyword(argv[1], "config", 6):
		s.writeConfig(argv)
		return
	case !keyword(argv[1], "batch_script", 5):
		s.fail("invalid write argument:%s\n", argv[1])
		return
	case len(argv) > 4:
		s.fail("too many arguments for keyword:%s\n", argv[0])
		return
	case len(argv) == 2:
		s.status = 1 // no job id: Slurm says nothing
		return
	}
	// The job id as atoll reads it: its leading digits.
	id, _ := strconv.ParseUint(leadingDigits(argv[2]), 10, 64)
	name := fmt.Sprintf("slurm-%d.sh", id)
	if len(argv) == 4 {
		name = argv[3]
	}
	out, path := s.e.Stdout, ""
	if name != "-" {
		path = name
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.e.Cwd, path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			s.fail("failed to open file `%s`: %s\n", name, strerror(err))
			return
		}
		defer f.Close()
		out = f
	}
	script, err := s.jobScript(id)
	if err == nil {
		_, err = io.WriteString(out, script)
	}
	if err != nil {
		if path != "" {
			os.Remove(path)
		}
		_, msg := errText(err)
		s.fail("job script retrieval failed: %s\n", msg)
		return
	}
	if path != "" && !s.quiet {
		fmt.Fprintf(s.e.Stdout, "batch script for job %d written to %s\n", id, name)
	}
}

func (s *scontrol) jobScript(id uint64) (string, error) {
	cl, ctx, cancel, err := connect(s.e)
	if err != nil {
		return "", err
	}
	defer cancel()
	return cl.JobScript(ctx, id)
}

// strerror is the C library's text of a system error: Go's, capitalized
// ("Permission denied").
func strerror(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	msg := errno.Error()
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// takeover is scontrol takeover [NODE]: the controller role moves to NODE,
// by default to the node this command talks to.
func (s *scontrol) takeover(argv []string) {
	if len(argv) > 2 {
		s.fail("too many arguments for keyword:%s\n", argv[0])
		return
	}
	cl, ctx, cancel, err := connect(s.e)
	if err != nil {
		s.loadErr("slurm_takeover error", err)
		return
	}
	defer cancel()
	target := ""
	if len(argv) == 2 {
		target = argv[1]
	} else {
		st, err := cl.Status(ctx)
		if err != nil {
			s.loadErr("slurm_takeover error", err)
			return
		}
		target = st.Node
	}
	if err := cl.Takeover(ctx, target); err != nil {
		_, msg := errText(err)
		s.fail("slurm_takeover error: %s\n", msg)
	}
}

func holdAction(tag string) string {
	switch strings.ToLower(tag) {
	case "hold":
		return "hold"
	case "holdu", "uhold":
		return "uhold"
	}
	return "release"
}

// jobControl is scontrol hold, uhold, release and requeue: each argument
// is a job id list ("12,13", "JobId=12") or, for holds and releases, the
// user's jobs of a name ("Name=x", "JobName=x").
func (s *scontrol) jobControl(argv []string, action string) {
	if len(argv) < 2 {
		if !s.quiet {
			s.fail("too few arguments for keyword:%s\n", argv[0])
		}
		s.status = 1
		return
	}
	cl, ctx, cancel, err := connect(s.e)
	if err != nil {
		s.loadErr("slurm_load_jobs error", err)
		return
	}
	defer cancel()
	var jobs []api.Job // loaded for Name= arguments
	for _, arg := range argv[1:] {
		for _, prefix := range []string{"JobID=", "Job="} {
			if len(arg) >= len(prefix) && strings.EqualFold(arg[:len(prefix)], prefix) {
				arg = arg[len(prefix):]
			}
		}
		var ids []uint64
		if name, ok := nameArg(arg); ok && action != "requeue" {
			if jobs == nil {
				if jobs, err = cl.Jobs(ctx); err != nil {
					s.loadErr("slurm_load_jobs error", err)
					return
				}
			}
			for _, j := range jobs {
				if j.Spec.Name == name && int(j.UID) == s.e.UID && !j.State.Final() {
					ids = append(ids, j.ID)
				}
			}
			if len(ids) == 0 {
				s.status = 1
				continue
			}
		} else {
			refs, err := parseJobRefs(arg)
			if err == nil && len(refs) > 0 && hasTask(refs) && jobs == nil {
				jobs, err = cl.Jobs(ctx)
			}
			if err == nil {
				ids, err = refIDs(refs, jobs)
			}
			if err != nil || len(ids) == 0 {
				s.failJob(action, api.ErrInvalidJobID, arg)
				continue
			}
		}
		results, err := cl.JobControl(ctx, api.JobControlRequest{JobIDs: ids, Action: action})
		if err != nil {
			_, msg := errText(err)
			for _, id := range ids {
				s.failJob(action, msg, strconv.FormatUint(id, 10))
			}
			continue
		}
		for _, r := range results {
			if r.Error != "" {
				s.failJob(action, r.Error, strconv.FormatUint(r.JobID, 10))
			}
		}
	}
}

func nameArg(arg string) (string, bool) {
	for _, prefix := range []string{"Name=", "JobName="} {
		if len(arg) >= len(prefix) && strings.EqualFold(arg[:len(prefix)], prefix) {
			return arg[len(prefix):], true
		}
	}
	return "", false
}

// failJob prints a hold/release/requeue error as scontrol does: the error
// for the job, and for holds and releases slurm_perror's line after it.
func (s *scontrol) failJob(action, msg, job string) {
	s.status = 1
	if s.quiet {
		return
	}
	fmt.Fprintf(s.e.Stderr, "%s for job %s\n", msg, job)
	if action != "requeue" {
		fmt.Fprintf(s.e.Stderr, "slurm_suspend error: %s\n", msg)
	}
}

// show is scontrol show ENTITY [ID].
func (s *scontrol) show(argv []string) {
	if len(argv) < 2 {
		if !s.quiet {
			s.fail("too few arguments for keyword:%s\n", argv[0])
		}
		s.status = 1
		return
	}
	if len(argv) > 3 {
		if !s.quiet {
			s.fail("too many arguments for keyword:%s\n", argv[0])
		}
		s.status = 1
		return
	}
	tag, val, hasVal := strings.Cut(argv[1], "=")
	if !hasVal && len(argv) == 3 {
		val, hasVal = argv[2], true
	}
	switch {
	case keyword(tag, "config", 1):
		s.showConfig()
	case keyword(tag, "hostnames", 5):
		if !hasVal {
			val = s.e.Getenv("SLURM_NODELIST")
			if val == "" {
				s.e.errorf(s.prog, "host list is empty")
				return
			}
		}
		names, err := hostlist.Expand(val)
		if err != nil {
			fmt.Fprintf(s.e.Stderr, "Invalid hostlist: %s\n", val)
			return
		}
		for _, n := range names {
			fmt.Fprintln(s.e.Stdout, n)
		}
	case keyword(tag, "hostlist", 5), keyword(tag, "hostlistsorted", 9):
		if !hasVal {
			s.fail("invalid encode argument\n")
			io.WriteString(s.e.Stdout, scontrolHelp)
			return
		}
		s.encodeHostlist(val, keyword(tag, "hostlistsorted", 9))
	case keyword(tag, "jobs", 1), keyword(tag, "jobid", 1):
		s.showJobs(val, hasVal)
	case keyword(tag, "nodes", 1):
		s.showNodes(val, hasVal)
	case keyword(tag, "steps", 2):
		s.showSteps(val, hasVal)
	case keyword(tag, "partitions", 2), keyword(tag, "partitionname", 2):
		s.showPartitions(val, hasVal)
	default:
		if !s.quiet {
			s.fail("invalid entity:%s for keyword:%s \n", tag, argv[0])
		}
		s.status = 1
	}
}

// loadErr reports a failed request as scontrol's slurm_perror does.
func (s *scontrol) loadErr(what string, err error) {
	s.status = 1
	if !s.quiet {
		_, msg := errText(err)
		fmt.Fprintf(s.e.Stderr, "%s: %s\n", what, msg)
	}
}

func (s *scontrol) showJobs(val string, hasVal bool) {
	var id uint64
	task := ""
	if hasVal {
		for _, c := range val {
			if (c < '0' || c > '9') && c != '_' && c != '+' {
				s.loadErr("scontrol_print_job error", &api.Error{Message: api.ErrInvalidJobID})
				return
			}
		}
		digits := leadingDigits(val)
		id, _ = strconv.ParseUint(digits, 10, 64)
		if rest := val[len(digits):]; strings.HasPrefix(rest, "_") {
			// The task index as strtol reads it: "12_" is task 0.
			task = leadingDigits(rest[1:])
			if task == "" {
				task = "0"
			}
		} else if rest != "" {
			task = rest // a heterogeneous component (12+1): hpc has none
		}
	}
	var jobs []api.Job
	var ok bool
	if hasVal {
		jobs, ok = s.loadJob(id) // that job, or its array
	} else {
		jobs, ok = s.loadJobs()
	}
	if !ok {
		return
	}
	jobs = openapi.CollapseArrays(jobs) // an array's pending tasks are one record
	if hasVal && !hasJob(jobs, id) && !hasArray(jobs, id) {
		s.loadErr("slurm_load_jobs error", &api.Error{Message: api.ErrInvalidJobID})
		return
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	now := s.e.Now()
	printed := 0
	for _, j := range jobs {
		if hasVal && !arrayMember(j, id, task) {
			continue
		}
		fmt.Fprint(s.e.Stdout, format.ShowJob(&j, now, s.oneLiner, s.details))
		printed++
	}
	if printed == 0 && !s.quiet {
		if hasVal {
			s.status = 1
			fmt.Fprintf(s.e.Stdout, "Job %s not found\n", val)
		} else {
			fmt.Fprintln(s.e.Stdout, "No jobs in the system")
		}
	} else if printed == 0 && hasVal {
		s.status = 1
	}
}

// hasArray reports whether id is a job array's id (its first task's job id).
func hasArray(jobs []api.Job, id uint64) bool {
	for _, j := range jobs {
		if j.ArrayJobID == id {
			return true
		}
	}
	return false
}

// arrayMember reports whether scontrol show job ID[_TASK] shows j: as the
// controller loads job ID, an array's id stands for all its tasks and a
// task's own job id for that task; TASK then picks the task of that index.
func arrayMember(j api.Job, id uint64, task string) bool {
	if j.ID != id && (j.ArrayJobID == 0 || j.ArrayJobID != id) {
		return false
	}
	switch {
	case task == "":
		return true
	case j.ArrayJobID == 0:
		return false
	}
	n, err := strconv.Atoi(task)
	return err == nil && format.ArrayTaskMatch(&j, n)
}

// loadJobs gets the job list, reporting a failure as scontrol does.
func (s *scontrol) loadJobs() ([]api.Job, bool) {
	return load(s, "slurm_load_jobs error", (*api.Client).Jobs)
}

// loadJob is one job (and its array's tasks, when it is in one), not the
// whole list.
func (s *scontrol) loadJob(id uint64) ([]api.Job, bool) {
	return load(s, "slurm_load_jobs error", func(cl *api.Client, ctx context.Context) ([]api.Job, error) { return cl.Job(ctx, id) })
}

// load asks the controller with get, reporting a failure as scontrol's
// slurm_perror(what) does.
func load[T any](s *scontrol, what string, get func(*api.Client, context.Context) (T, error)) (T, bool) {
	var v T
	cl, ctx, cancel, err := connect(s.e)
	if err == nil {
		defer cancel()
		v, err = get(cl, ctx)
	}
	if err != nil {
		s.loadErr(what, err)
		return v, false
	}
	return v, true
}

// showSteps is scontrol show step [JOBID[_TASK][.STEPID]]: the steps the
// controller knows (each running job's batch step and running srun steps),
// of every job, of one job (an array's id: of all its tasks), or one step.
func (s *scontrol) showSteps(val string, hasVal bool) {
	var id uint64
	task, step := "", ""
	if hasVal {
		digits := leadingDigits(val)
		id, _ = strconv.ParseUint(digits, 10, 64)
		rest := val[len(digits):]
		switch {
		case strings.HasPrefix(rest, "_"):
			task = leadingDigits(rest[1:])
			if task == "" {
				task = "0"
			}
		case strings.HasPrefix(rest, "."):
			step = rest[1:]
			if step != "batch" {
				// strtol's reading: leading digits, 0 without any.
				n, _ := strconv.ParseUint(leadingDigits(step), 10, 32)
				step = strconv.FormatUint(n, 10)
			}
		}
	}
	jobs, ok := s.loadJobs()
	if !ok {
		return
	}
	if hasVal && !hasJob(jobs, id) && !hasArray(jobs, id) {
		s.status = 1
		if !s.quiet {
			fmt.Fprintf(s.e.Stderr, "slurm_get_job_steps error: %s\n", api.ErrInvalidJobID)
		}
		return
	}
	byID := map[uint64]api.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	steps := format.JobSteps(jobs)
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].JobID < steps[b].JobID })
	printed := 0
	for _, st := range steps {
		j := byID[st.JobID]
		if hasVal && (!arrayMember(j, id, task) || (step != "" && st.ID != step)) {
			continue
		}
		fmt.Fprint(s.e.Stdout, format.ShowStep(&j, st, s.oneLiner))
		printed++
	}
	if printed > 0 {
		return
	}
	if !hasVal {
		if !s.quiet {
			fmt.Fprintln(s.e.Stdout, "No job steps in the system")
		}
		return
	}
	s.status = 1
	if !s.quiet {
		name := strconv.FormatUint(id, 10)
		if task != "" {
			name += "_" + task
		}
		fmt.Fprintf(s.e.Stdout, "Job step %s.%s not found\n", name, step)
	}
}

// completing is scontrol completing: each COMPLETING job with its nodes
// still completing (and those down).
func (s *scontrol) completing() {
	jobs, ok := s.loadJobs()
	if !ok {
		return
	}
	resp, ok := s.loadNodes()
	if !ok {
		return
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	now := s.e.Now()
	for _, j := range jobs {
		if j.State == api.StateCompleting {
			fmt.Fprint(s.e.Stdout, format.CompletingJob(&j, resp.Nodes, now))
		}
	}
}

func (s *scontrol) loadNodes() (*api.NodesResponse, bool) {
	return load(s, "slurm_load_node error", (*api.Client).Nodes)
}

func (s *scontrol) showNodes(val string, hasVal bool) {
	resp, ok := s.loadNodes()
	if !ok {
		return
	}
	if !hasVal {
		for _, n := range resp.Nodes {
			fmt.Fprint(s.e.Stdout, format.ShowNode(n, s.oneLiner))
		}
		if len(resp.Nodes) == 0 && !s.quiet {
			fmt.Fprintln(s.e.Stdout, "No nodes in the system")
		}
		return
	}
	names, err := hostlist.Expand(val)
	if err != nil {
		names = []string{val}
	}
	for _, name := range names {
		found := false
		for _, n := range resp.Nodes {
			if n.Name == name {
				fmt.Fprint(s.e.Stdout, format.ShowNode(n, s.oneLiner))
				found = true
				break
			}
		}
		if !found {
			s.status = 1
			if !s.quiet {
				fmt.Fprintf(s.e.Stdout, "Node %s not found\n", name)
			}
		}
	}
}

func (s *scontrol) showPartitions(val string, hasVal bool) {
	resp, ok := s.loadNodes()
	if !ok {
		return
	}
	printed := 0
	for _, p := range resp.Partitions {
		if hasVal && p.Name != val {
			continue
		}
		fmt.Fprint(s.e.Stdout, format.ShowPartition(p, resp.Nodes, s.oneLiner))
		printed++
	}
	if printed == 0 {
		if hasVal {
			s.status = 1
			if !s.quiet {
				fmt.Fprintf(s.e.Stdout, "Partition %s not found\n", val)
			}
		} else if !s.quiet {
			fmt.Fprintln(s.e.Stdout, "No partitions in the system")
		}
	}
}

// encodeHostlist is scontrol show hostlist[sorted]: names (or a file of
// them, when the argument starts with '/') folded into a hostlist.
func (s *scontrol) encodeHostlist(val string, sorted bool) {
	list := val
	if strings.HasPrefix(val, "/") {
		b, err := os.ReadFile(val)
		if err != nil {
			s.fail("Can not open %s\n", val)
			return
		}
		list = strings.Join(strings.Fields(strings.ReplaceAll(string(b), ",", " ")), ",")
	}
	names, err := hostlist.Expand(list)
	if err != nil {
		s.fail("Invalid hostlist: %s\n", list)
		return
	}
	if sorted {
		sort.SliceStable(names, func(a, b int) bool { return lessHostName(names[a], names[b]) })
	}
	fmt.Fprintln(s.e.Stdout, hostlist.Compress(names))
}

// lessHostName orders host names by prefix, then numeric suffix.
func lessHostName(a, b string) bool {
	pa, na := splitNumber(a)
	pb, nb := splitNumber(b)
	if pa != pb {
		return pa < pb
	}
	x, errA := strconv.ParseUint(na, 10, 64)
	y, errB := strconv.ParseUint(nb, 10, 64)
	if errA == nil && errB == nil && x != y {
		return x < y
	}
	return na < nb
}

func splitNumber(s string) (string, string) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	return s[:i], s[i:]
}

// controllers lists the SlurmctldHost nodes in configuration order and
// whether gossip sees each alive.
func (s *scontrol) controllers(cfg *config.Config) ([]format.Controller, bool) {
	cl, ctx, cancel, err := connect(s.e)
	var st *api.Status
	if err == nil {
		defer cancel()
		st, err = cl.Status(ctx)
	}
	if err != nil {
		var ctls []format.Controller
		for _, h := range cfg.ControlHosts {
			ctls = append(ctls, format.Controller{Name: h.Name})
		}
		return ctls, false
	}
	if ctls := pingControllers(st.Controllers); len(ctls) > 0 {
		return ctls, true
	}
	alive := map[string]bool{}
	for _, m := range st.Members {
		if m.State == "alive" {
			alive[m.Name] = true
		}
	}
	names := st.Voters
	if cfg != nil && len(cfg.ControlHosts) > 0 {
		names = nil
		for _, h := range cfg.ControlHosts {
			names = append(names, h.Name)
		}
	}
	var ctls []format.Controller
	for _, n := range names {
		ctls = append(ctls, format.Controller{Name: n, Up: alive[n]})
	}
	return ctls, true
}

// pingControllers is what scontrol ping reports of the controllers as
// they answered for themselves (api.Status.Controllers): the SlurmctldHosts
// in slurm.conf's order, so that the first is Slurm's "primary" whichever
// controller leads now (Raft moves the leader; hpc status shows who leads),
// then controllers added at run time. A controller is UP when its daemon
// answers with Raft running, whatever its Raft role. A node still being
// added (no vote yet) is left out.
func pingControllers(states []api.ControllerState) []format.Controller {
	var ctls []format.Controller
	for _, c := range openapi.PingControllers(states) {
		ctls = append(ctls, format.Controller{Name: c.Name, Up: c.Up})
	}
	return ctls
}

// servedConfig is GET /api/config's answer: the parsed slurm.conf and what
// the daemon adds to it.
type servedConfig struct {
	config.Config
	api.ConfigInfo
}

func (s *scontrol) loadConfig() (*servedConfig, error) {
	cl, ctx, cancel, err := connect(s.e)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var cfg servedConfig
	if err := cl.Config(ctx, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// ping is scontrol ping.
func (s *scontrol) ping() {
	cfg, err := s.loadConfig()
	if err != nil {
		s.loadErr("slurm_load_ctl_conf error", err)
		return
	}
	ctls, _ := s.controllers(&cfg.Config)
	fmt.Fprint(s.e.Stdout, format.PingLines(ctls, s.e.UID == 0))
	s.status = 1
	for _, c := range ctls {
		if c.Up {
			s.status = 0
		}
	}
}

// showConfig is scontrol show config: Slurm's every key, the cgroup
// section, hpc's own keys, and the controllers' status.
func (s *scontrol) showConfig() {
	cfg, err := s.loadConfig()
	if err != nil {
		s.loadErr("slurm_load_ctl_conf error", err)
		return
	}
	vals, own := configValues(cfg)
	fmt.Fprint(s.e.Stdout, format.ShowConfig(format.ConfigItems(vals), s.e.Now(), format.CgroupConfig(),
		format.ConfigSection{Title: "hpc Configuration", Items: own}))
	ctls, _ := s.controllers(&cfg.Config)
	fmt.Fprint(s.e.Stdout, format.PingLines(ctls, s.e.UID == 0))
}

// hpcConfigDefaults are how hpc works where Slurm makes it a choice hpc
// does not offer; slurm.conf's value is printed instead when it has one.
var hpcConfigDefaults = map[string]string{
	// hpc keeps accounting itself (sacct, sacctmgr), as slurmdbd would.
	"AccountingStorageType": "accounting_storage/slurmdbd",
	"AccountingStorageUser": "N/A",
	"AccountingStoragePort": "6819",
	// Steps run in cgroups that confine them to their cores and memory;
	// their usage is read from those cgroups.
	"JobAcctGatherType":    "jobacct_gather/cgroup",
	"TaskPlugin":           "task/cgroup",
	"SelectType":           "select/cons_tres",
	"SelectTypeParameters": "CR_CORE_MEMORY",
}

// configValues is what scontrol show config prints for the cluster (keys
// as format.ConfigItems takes them; missing keys print Slurm's defaults):
// hpc's own behaviour, then slurm.conf's keys hpc keeps but does not
// interpret, then the settings hpc interprets. own lists hpc's ports and
// the slurm.conf keys Slurm does not print, sorted.
func configValues(cfg *servedConfig) (map[string]string, []format.ConfigItem) {
	vals := map[string]string{}
	for k, v := range hpcConfigDefaults {
		vals[k] = v
	}
	var own []format.ConfigItem
	for k, v := range cfg.Raw {
		name, ok := format.SlurmConfigKey(k)
		if !ok {
			own = append(own, format.ConfigItem{Key: k, Value: v})
			continue
		}
		switch name {
		case "SelectTypeParameters":
			v = strings.ToUpper(v)
		case "SlurmdUser":
			v = userWithID(v)
		}
		vals[name] = v
	}
	if vals["AccountingStorageTRES"] == "" {
		// Slurm's default TRES, and each GRES type's.
		tres := "cpu,mem,energy,node,billing,fs/disk,vmem,pages"
		for _, g := range strings.Split(vals["GresTypes"], ",") {
			if g = strings.TrimSpace(g); g != "" {
				tres += ",gres/" + g
			}
		}
		vals["AccountingStorageTRES"] = tres
	}
	vals["ClusterName"] = cfg.ClusterName
	if cfg.DefMemPerCPU > 0 {
		vals["DefMemPerCPU"] = strconv.FormatInt(cfg.DefMemPerCPU, 10)
	}
	vals["EnforcePartLimits"] = cfg.EnforcePartLimits
	vals["AccountingStorageEnforce"] = cfg.AccountingStorageEnforce.String()
	vals["PrivateData"] = cfg.PrivateData.String()
	vals["KillWait"] = strconv.Itoa(cfg.KillWait)
	vals["MinJobAge"] = strconv.Itoa(cfg.MinJobAge)
	vals["SlurmdTimeout"] = strconv.Itoa(cfg.SlurmdTimeout)
	vals["Prolog"] = cfg.Prolog
	vals["Epilog"] = cfg.Epilog
	vals["PrologEpilogTimeout"] = strconv.Itoa(cfg.PrologEpilogTimeout)
	vals["PreemptType"] = cfg.PreemptType
	vals["PreemptMode"] = cfg.PreemptMode
	vals["MaxJobCount"] = strconv.Itoa(cfg.MaxJobCount)
	vals["MaxArraySize"] = strconv.Itoa(cfg.MaxArraySize)
	if vals["MaxDBDMsgs"] == "" {
		vals["MaxDBDMsgs"] = strconv.Itoa(max(10000, 2*cfg.MaxJobCount+4*len(cfg.Nodes)))
	}
	vals["MaxNodeCount"] = strconv.Itoa(len(cfg.Nodes))
	if len(cfg.Topology) > 0 {
		vals["TopologyPlugin"] = "topology/tree"
	}
	slurmUser := cfg.SlurmUser
	if slurmUser == "" {
		slurmUser = "root"
	}
	vals["SlurmUser"] = userWithID(slurmUser)
	for i, h := range cfg.ControlHosts {
		v := h.Name
		if h.Addr != "" && h.Addr != h.Name {
			v += "(" + h.Addr + ")"
		}
		vals[fmt.Sprintf("SlurmctldHost[%d]", i)] = v
	}
	priorityValues(vals, cfg.Priority)
	if !cfg.BootTime.IsZero() {
		vals["BOOT_TIME"] = format.ISOTime(cfg.BootTime)
	}
	if cfg.NextJobID != 0 {
		vals["NEXT_JOB_ID"] = strconv.FormatUint(cfg.NextJobID, 10)
	}
	vals["SLURM_CONF"] = cfg.SlurmConf
	vals["StateSaveLocation"] = cfg.StateSaveLocation
	vals["SLURM_VERSION"] = openapi.SlurmVersion

	own = append(own, format.ConfigItem{Key: "HpcApiPort", Value: strconv.Itoa(cfg.APIPort)},
		format.ConfigItem{Key: "HpcRaftPort", Value: strconv.Itoa(cfg.RaftPort)},
		format.ConfigItem{Key: "HpcGossipPort", Value: strconv.Itoa(cfg.GossipPort)})
	for i, h := range cfg.SubmitHosts {
		own = append(own, format.ConfigItem{Key: fmt.Sprintf("HpcSubmitHost[%d]", i), Value: h.Name + "(" + h.Addr + ")"})
	}
	sort.Slice(own, func(a, b int) bool {
		x, y := strings.ToLower(own[a].Key), strings.ToLower(own[b].Key)
		if x != y {
			return x < y
		}
		return own[a].Key < own[b].Key
	})
	return vals, own
}

// priorityValues adds PriorityType and, for priority/multifactor, the keys
// Slurm prints with it.
func priorityValues(vals map[string]string, p config.Priority) {
	vals["PriorityType"] = p.Type
	if p.Type == "" || p.Type == "priority/basic" {
		return
	}
	vals["FairShareDampeningFactor"] = "1"
	vals["PriorityDecayHalfLife"] = format.ConfigMinutes(p.DecayHalfLifeMin)
	vals["PriorityCalcPeriod"] = format.ConfigMinutes(p.CalcPeriodMin)
	vals["PriorityFavorSmall"] = "No"
	if p.FavorSmall {
		vals["PriorityFavorSmall"] = "Yes"
	}
	vals["PriorityFlags"] = "(null)"
	vals["PriorityMaxAge"] = format.ConfigMinutes(p.MaxAgeMin)
	vals["PriorityUsageResetPeriod"] = "NONE"
	vals["PriorityWeightAge"] = strconv.FormatUint(uint64(p.WeightAge), 10)
	vals["PriorityWeightAssoc"] = "0"
	vals["PriorityWeightFairShare"] = strconv.FormatUint(uint64(p.WeightFairshare), 10)
	vals["PriorityWeightJobSize"] = strconv.FormatUint(uint64(p.WeightJobSize), 10)
	vals["PriorityWeightPartition"] = strconv.FormatUint(uint64(p.WeightPartition), 10)
	vals["PriorityWeightQOS"] = strconv.FormatUint(uint64(p.WeightQOS), 10)
	vals["PriorityWeightTRES"] = "(null)"
}

// userWithID is a user as scontrol show config prints one: "slurm(64030)".
func userWithID(name string) string {
	if uid, ok := lookupUID(name); ok {
		return name + "(" + strconv.FormatUint(uint64(uid), 10) + ")"
	}
	return name
}

const scontrolHelp = `scontrol [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -a or --all: equivalent to "all" command
     -d or --details: equivalent to "details" command
     -F or --future: also show nodes in the FUTURE state
     -h or --help: equivalent to "help" command
     --hide: show only the partitions you may use (the default)
     -M or --clusters, --cluster: the cluster to talk to (hpc runs one)
     -o or --oneliner: equivalent to "oneliner" command
     -Q or --quiet: equivalent to "quiet" command
     -u or --uid: the user to act as (no effect on hpc)
     --usage: a short form of this help
     -v or --verbose: say more
     -V or --version: equivalent to "version" command
     --federation, --local, --sibling: federation scope (hpc runs one cluster)

  <keyword> may be omitted from the execute line and scontrol will execute
  in interactive mode. It will process commands as entered until explicitly
  terminated.

    Valid <COMMAND> values are:
     completing               display jobs in completing state along with
                              their completing or down nodes
     exit                     terminate scontrol
     help                     print this description of use.
     oneliner                 report output one record per line.
     hold <job_list>          prevent specified job from starting.
     ping                     print status of slurmctld daemons.
     quiet                    print no messages other than error messages.
     quit                     terminate this command.
     release <job_list>       permit specified job to start (see hold).
     requeue <job_id>         re-queue a batch job.
     show <ENTITY> [<ID>]     display state of identified entity, default
                              is all records.
     uhold <job_list>         place user hold on specified job (see hold).
     version                  display tool version number.
     write batch_script <job_id> <optional filename>
                              Write the batch script for a given job to a
                              local file. Default is slurm-<job_id>.sh if
                              the (optional) filename is not given.

  <ENTITY> may be "config", "hostnames", "hostlist", "hostlistsorted",
       "job", "node", "partition" or "step".

  <ID> may be a configuration parameter name, job id (an array's id or
       id_task for its tasks), job step id (job.step), node name or
       partition name; for hostnames and hostlist, a node list
       ("node[1-4]", or a file name starting with '/' for hostlist).

  update JobId= (TimeLimit, Partition, NumNodes, JobName) and NodeName= (State=DRAIN|RESUME|DOWN Reason=)
  are supported; takeover [NODE] moves the controller role (default: this node).

  create PartitionName=<name> <key>=<value>..., update PartitionName=<name>
  <key>=<value>... and delete PartitionName=<name> change partitions (keys as
  slurm.conf's PartitionName lines take them); reconfigure re-reads slurm.conf;
  write config [<file>] writes the running configuration; pidinfo <pid> names
  the job of a process of this node.

  Not in hpc yet (refused with an error): requeuehold, suspend, resume, top,
  notify, shutdown, reboot and wait_job.
`

// updateJobID reads update's JobId: a job's id, or an array task's (12_3),
// which names that task alone.
func (s *scontrol) updateJobID(v string) (uint64, bool) {
	refs, err := parseJobRefs(v)
	if err != nil || len(refs) != 1 {
		return 0, false
	}
	if want := strconv.FormatUint(refs[0].id, 10); refs[0].task >= 0 {
		want += "_" + strconv.Itoa(refs[0].task)
		if v != want {
			return 0, false
		}
	} else if v != want {
		return 0, false
	}
	var jobs []api.Job
	if refs[0].task >= 0 {
		if jobs, err = s.loadJobsQuiet(); err != nil {
			return 0, false
		}
	}
	ids, err := refIDs(refs, jobs)
	if err != nil {
		return 0, false
	}
	return ids[0], true
}

// loadJobsQuiet is the job list, its error returned rather than printed.
func (s *scontrol) loadJobsQuiet() ([]api.Job, error) {
	cl, ctx, cancel, err := connect(s.e)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return cl.Jobs(ctx)
}

// token is scontrol token [lifespan=SECONDS] [username=NAME]: a token of
// Slurm's JWT scheme for the REST API and the dashboard, printed as
// SLURM_JWT=... for the shell to export.
func (s *scontrol) token(argv []string) {
	var req api.TokenRequest
	for _, arg := range argv[1:] {
		k, v, _ := strings.Cut(arg, "=")
		switch {
		case keyword(k, "lifespan", 1):
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				s.fail("Invalid lifespan value: %s\n", v)
				return
			}
			req.Lifespan = n
		case keyword(k, "username", 1):
			req.User = v
		default:
			s.fail("Invalid parameter %s for token\n", arg)
			return
		}
	}
	cl, ctx, cancel, err := connect(s.e)
	if err != nil {
		s.loadErr("slurm_request_token error", err)
		return
	}
	defer cancel()
	tok, err := cl.Token(ctx, req)
	if err != nil {
		s.loadErr("slurm_request_token error", err)
		return
	}
	fmt.Fprintf(s.e.Stdout, "SLURM_JWT=%s\n", tok)
}
