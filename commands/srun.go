package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// srun and salloc. srun inside a job (SLURM_JOB_ID set, or --jobid) runs a
// step of that job across its allocation; outside one it first makes an
// allocation (a job whose batch step only holds it), runs the step in it
// and releases it, the job ending with the step's exit code. salloc makes
// such an allocation and runs a shell (or a command) here, with the
// allocation's SLURM_* variables, until it exits.

// runOpts is a parsed srun or salloc command line.
type runOpts struct {
	alloc  []string // the allocation options, as sbatch takes them
	spec   api.JobSpec
	set    map[string]bool // options given, by sbatch's long name
	label  bool
	export string
	jobID  uint64
	quiet  bool
	argv   []string
	// multiProg is --multi-prog: argv is a dispatcher made from the file.
	multiProg bool
	// pty is --pty, input --input, output and errput --output and
	// --error (srun_input.go).
	pty            bool
	input          string
	output, errput string
	name           string
	help           bool
	usage          bool // --usage rather than --help
	version        bool
	// verbose counts -v; given lists the options given, for -v's
	// "defined options" (verbose.go).
	verbose int
	given   []givenOption
	// immediate is --immediate[=secs]: the allocation must start within
	// that many seconds (0: not given).
	immediate int
	// taskProlog and taskEpilog run before and after each task.
	taskProlog, taskEpilog string
	// bell is salloc's --bell ("bell") or --no-bell ("no-bell").
	bell string
	// killBadExit is -K/--kill-on-bad-exit[=1] (or SLURM_KILL_BAD_EXIT=1):
	// the step ends as soon as one task fails.
	killBadExit bool
	// notices are options accepted without effect, said with -v.
	notices []string
}

// allocOptions are the options of srun and salloc that shape an allocation
// (and, for srun, its step); jobspec checks them as sbatch does.
var allocOptions = []jobspec.Opt{
	{Long: "nodes", Short: 'N', Arg: jobspec.RequiredArg},
	{Long: "ntasks", Short: 'n', Arg: jobspec.RequiredArg},
	{Long: "ntasks-per-node", Arg: jobspec.RequiredArg},
	{Long: "cpus-per-task", Short: 'c', Arg: jobspec.RequiredArg},
	{Long: "nodelist", Short: 'w', Arg: jobspec.RequiredArg},
	{Long: "exclude", Short: 'x', Arg: jobspec.RequiredArg},
	{Long: "job-name", Short: 'J', Arg: jobspec.RequiredArg},
	{Long: "chdir", Short: 'D', Arg: jobspec.RequiredArg},
	{Long: "partition", Short: 'p', Arg: jobspec.RequiredArg},
	{Long: "time", Short: 't', Arg: jobspec.RequiredArg},
	{Long: "mem", Arg: jobspec.RequiredArg},
	{Long: "mem-per-cpu", Arg: jobspec.RequiredArg},
	{Long: "account", Short: 'A', Arg: jobspec.RequiredArg},
	{Long: "qos", Short: 'q', Arg: jobspec.RequiredArg},
	{Long: "gres", Arg: jobspec.RequiredArg},
	{Long: "gpus", Short: 'G', Arg: jobspec.RequiredArg},
	{Long: "constraint", Short: 'C', Arg: jobspec.RequiredArg},
	{Long: "exclusive", Arg: jobspec.OptionalArg},
	{Long: "overcommit", Short: 'O', Arg: jobspec.NoArg},
	{Long: "mincpus", Arg: jobspec.RequiredArg},
	{Long: "tmp", Arg: jobspec.RequiredArg},
	{Long: "begin", Short: 'b', Arg: jobspec.RequiredArg},
	{Long: "deadline", Arg: jobspec.RequiredArg},
	{Long: "dependency", Short: 'd', Arg: jobspec.RequiredArg},
	{Long: "use-min-nodes", Arg: jobspec.NoArg},
	{Long: "open-mode", Arg: jobspec.RequiredArg},
}

// runOnlyOptions are srun's and salloc's own options.
var runOnlyOptions = []jobspec.Opt{
	{Long: "label", Short: 'l', Arg: jobspec.NoArg},
	{Long: "export", Arg: jobspec.RequiredArg},
	{Long: "jobid", Arg: jobspec.RequiredArg},
	{Long: "quiet", Short: 'Q', Arg: jobspec.NoArg},
	{Long: "verbose", Short: 'v', Arg: jobspec.NoArg},
	{Long: "unbuffered", Short: 'u', Arg: jobspec.NoArg},
	{Long: "disable-status", Short: 'X', Arg: jobspec.NoArg},
	{Long: "kill-on-bad-exit", Short: 'K', Arg: jobspec.OptionalArg},
	{Long: "overlap", Arg: jobspec.NoArg},
	{Long: "mpi", Arg: jobspec.RequiredArg},
	{Long: "pty", Arg: jobspec.NoArg},
	{Long: "multi-prog", Arg: jobspec.NoArg},
	{Long: "output", Short: 'o', Arg: jobspec.RequiredArg},
	{Long: "error", Short: 'e', Arg: jobspec.RequiredArg},
	{Long: "input", Short: 'i', Arg: jobspec.RequiredArg},
	{Long: "help", Short: 'h', Arg: jobspec.NoArg},
	{Long: "usage", Arg: jobspec.NoArg},
	{Long: "version", Short: 'V', Arg: jobspec.NoArg},
	// pyxis's: the step's tasks run in an image (srun only).
	{Long: "container-image", Arg: jobspec.RequiredArg},
	{Long: "container-mounts", Arg: jobspec.RequiredArg},
	{Long: "container-workdir", Arg: jobspec.RequiredArg},
	{Long: "immediate", Short: 'I', Arg: jobspec.OptionalArg},
}

// srunOnlyOptions and sallocOnlyOptions are the options of one of them.
var (
	srunOnlyOptions = []jobspec.Opt{
		{Long: "no-allocate", Short: 'Z', Arg: jobspec.NoArg},
		{Long: "slurmd-debug", Arg: jobspec.RequiredArg},
		{Long: "task-prolog", Arg: jobspec.RequiredArg},
		{Long: "task-epilog", Arg: jobspec.RequiredArg},
		{Long: "threads", Short: 'T', Arg: jobspec.RequiredArg},
	}
	sallocOnlyOptions = []jobspec.Opt{
		{Long: "bell", Arg: jobspec.NoArg},
		{Long: "no-bell", Arg: jobspec.NoArg},
	}
)

// inert says why an option srun or salloc accepts does nothing on hpc;
// -v prints it as a notice.
var inert = map[string]string{
	"tmp":          "hpc's nodes declare no TmpDisk",
	"deadline":     "hpc does not end jobs at a deadline",
	"no-allocate":  "hpc's srun always runs in an allocation",
	"slurmd-debug": "hpc's daemons log through their own logger",
	"threads":      "hpc's srun talks to one daemon",
}

// parseRun parses srun's or salloc's arguments; done reports that the
// command is over (help, or an error already printed) with status code.
func parseRun(e *Env, prog string, args []string) (o *runOpts, code int, done bool) {
	o = &runOpts{}
	isAlloc := map[string]bool{}
	g := &jobspec.Getopt{}
	for _, opt := range allocOptions {
		isAlloc[opt.Long] = true
		g.Opts = append(g.Opts, opt)
	}
	g.Opts = append(g.Opts, runOnlyOptions...)
	if prog == "salloc" {
		g.Opts = append(g.Opts, sallocOnlyOptions...)
	} else {
		g.Opts = append(g.Opts, srunOnlyOptions...)
	}
	rest, err := g.Parse(args, func(opt *jobspec.Opt, val string, has bool) error {
		o.given = addGiven(o.given, opt, val, has)
		if why := inert[opt.Long]; why != "" {
			o.notices = append(o.notices, fmt.Sprintf("--%s is accepted and ignored: %s", opt.Long, why))
		}
		if isAlloc[opt.Long] {
			w := "--" + opt.Long
			if has {
				w += "=" + val
			}
			o.alloc = append(o.alloc, w)
			return nil
		}
		switch opt.Long {
		case "label":
			o.label = true
		case "export":
			o.export = val
		case "jobid":
			id, err := strconv.ParseUint(val, 10, 64)
			if err != nil || id == 0 {
				return &jobspec.UsageError{Msg: fmt.Sprintf("Invalid job id %s", val), Code: 1}
			}
			o.jobID = id
		case "quiet":
			o.quiet = true
		case "verbose":
			o.verbose++
		case "immediate":
			o.immediate = 1 // Slurm's DEFAULT_IMMEDIATE
			if has {
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					return &jobspec.UsageError{Msg: fmt.Sprintf("Invalid numeric value %q for --immediate.", val), Code: 1}
				}
				o.immediate = max(n, 1)
			}
		case "task-prolog":
			o.taskProlog = val
		case "task-epilog":
			o.taskEpilog = val
		case "bell", "no-bell":
			o.bell = opt.Long
		case "kill-on-bad-exit":
			o.killBadExit = !has || val != "0"
		case "multi-prog":
			o.multiProg = true
		case "pty", "input", "output", "error":
			if prog == "salloc" {
				return &jobspec.UsageError{Msg: fmt.Sprintf("--%s is not supported by hpc's salloc: give it to srun", opt.Long), Code: 1}
			}
			if val == "" && opt.Long != "pty" {
				return &jobspec.UsageError{Msg: fmt.Sprintf("--%s takes all, none, a task number or a file name", opt.Long), Code: 1}
			}
			switch opt.Long {
			case "pty":
				o.pty = true
			case "input":
				if ioFile(val) && jobspec.Uses(val, "tnN") {
					return &jobspec.UsageError{Msg: "--input=" + val + ": hpc's srun reads one input file for all tasks (no %t, %n or %N)", Code: 1}
				}
				o.input = val
			case "output":
				o.output = val
			default:
				o.errput = val
			}
		case "container-image", "container-mounts", "container-workdir":
			o.alloc = append(o.alloc, "--"+opt.Long+"="+val) // jobspec checks them as sbatch's
		case "help", "usage":
			if !o.help {
				o.help, o.usage = true, opt.Long == "usage"
			}
		case "version":
			o.version = true
		}
		return nil
	})
	var ge *jobspec.GetoptError
	switch {
	case errors.As(err, &ge):
		fmt.Fprintf(e.Stderr, "%s: %s\n%s\n", prog, ge.Msg, jobspec.TryHelp(prog))
		return nil, 1, true
	case err != nil:
		return nil, usageExit(e, prog, err), true
	}
	if o.help {
		io.WriteString(e.Stdout, jobHelp(prog, o.usage))
		return nil, 0, true
	}
	if o.version {
		fmt.Fprintln(e.Stdout, slurmVersion)
		return nil, 0, true
	}
	parsed, err := jobspec.ParseArgs(o.alloc)
	if err != nil {
		return nil, usageExit(e, prog, err), true
	}
	if err := parsed.ResolveBegin(e.Now()); err != nil {
		return nil, usageExit(e, prog, err), true
	}
	o.spec, o.set = parsed.Spec, parsed.Set
	if o.spec.WorkDir == "" {
		o.spec.WorkDir = e.Cwd
	} else if !filepath.IsAbs(o.spec.WorkDir) {
		o.spec.WorkDir = filepath.Join(e.Cwd, o.spec.WorkDir)
	}
	if err := jobspec.ResolveContainer(&o.spec, e.Cwd); err != nil {
		return nil, usageExit(e, prog, err), true
	}
	if err := jobspec.CheckContainerPaths(&o.spec, os.Stat, os.ReadFile); err != nil {
		return nil, usageExit(e, prog, err), true
	}
	o.argv = rest
	if o.multiProg {
		if len(rest) != 1 {
			fmt.Fprintf(e.Stderr, "%s: fatal: --multi-prog takes exactly one configuration file\n", prog)
			return nil, 1, true
		}
		argv, err := multiProg(rest[0], e.Cwd)
		if err != nil {
			e.errorf(prog, "%v", err)
			return nil, 1, true
		}
		o.argv = argv
		if o.name == "" {
			o.name = filepath.Base(rest[0])
		}
	}
	return o, 0, false
}

// console serialises what srun writes.
type console struct {
	mu       sync.Mutex
	out, err io.Writer
}

func (c *console) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.err, format, args...)
}

// forwarded are the signals srun passes on to its tasks (SIGINT has its
// own handling).
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// srunMain is srun.
func srunMain(e *Env, prog string, args []string) int {
	o, code, done := parseRun(e, prog, args)
	if done {
		return code
	}
	if len(o.argv) == 0 {
		fmt.Fprintf(e.Stderr, "%s: fatal: No command given to execute.\n", prog)
		return 1
	}
	o.sayOptions(e, prog)
	con := &console{out: e.Stdout, err: e.Stderr}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, append([]os.Signal{os.Interrupt}, forwarded...)...)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := e.Client(ctx)
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	jobID := o.jobID
	if jobID == 0 {
		if s := e.Getenv("SLURM_JOB_ID"); s != "" {
			jobID, _ = strconv.ParseUint(s, 10, 64)
		}
	}
	if jobID != 0 {
		if o.verbose > 0 {
			// The allocation it runs in, as srun looks it up.
			lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
			if a, err := cl.WaitAllocation(lctx, jobID, nil); err == nil {
				con.printf("%s", jobLine(prog, &a.Job))
			}
			lcancel()
		}
		rc, _ := runStep(e, prog, con, cl, o, jobID, sigs)
		return rc
	}

	// Outside a job: an allocation first.
	spec := o.spec
	spec.Script = api.HolderScript
	spec.SubmitHost = e.Hostname
	if !o.set["job-name"] {
		spec.Name = filepath.Base(o.argv[0])
		if o.name != "" {
			spec.Name = o.name
		}
	}
	a, code, ok := allocate(ctx, e, prog, con, cl, spec, o, sigs)
	if !ok {
		return code
	}
	if o.verbose > 0 {
		con.printf("%s", jobLine(prog, &a.Job))
	}
	rc, end := runStep(e, prog, con, cl, o, a.Job.ID, sigs)
	req := exitRelease(a.Job.ID, rc)
	if end != nil {
		req.ExitCode, req.Signal = end.ExitCode, end.Signal
		req.OOM = end.State == api.StateOutOfMemory
	}
	release(e, prog, cl, req)
	return rc
}

// allocate submits an allocation and waits until it runs. Ctrl-C while it
// waits withdraws it; so does --immediate when it has not started in time.
func allocate(ctx context.Context, e *Env, prog string, con *console, cl *api.Client, spec api.JobSpec, o *runOpts, sigs <-chan os.Signal) (*api.Allocation, int, bool) {
	quiet := o.quiet || o.immediate > 0
	id, err := cl.Submit(ctx, spec)
	if err != nil {
		detail, msg := errText(err)
		if detail != "" {
			e.errorf(prog, "%s", detail)
		}
		e.errorf(prog, "Unable to allocate resources: %s", msg)
		return nil, 1, false
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if o.immediate > 0 {
		// hpc schedules a pass after each submission: a job that can
		// start at once has started within a moment.
		wctx, stop = context.WithTimeout(wctx, max(time.Duration(o.immediate)*time.Second, 2*time.Second))
		defer stop()
	}
	interrupted := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			close(interrupted)
			stop()
		case <-wctx.Done():
		}
	}()
	waited := false
	a, err := cl.WaitAllocation(wctx, id, func(*api.Job) {
		waited = true
		if !quiet {
			con.printf("%s: job %d queued and waiting for resources\n", prog, id)
		}
	})
	select {
	case <-interrupted:
		_ = cl.Release(context.Background(), api.ReleaseRequest{JobID: id, ExitCode: 1})
		con.printf("%s: Job allocation %d has been revoked.\n", prog, id)
		return nil, 1, false
	default:
	}
	if err != nil && o.immediate > 0 && ctx.Err() == nil {
		_ = cl.Release(context.Background(), api.ReleaseRequest{JobID: id, ExitCode: 1})
		e.errorf(prog, "Unable to allocate resources: %s", msgNodesBusy)
		return nil, immediateExit(e), false
	}
	if err != nil {
		e.errorf(prog, "waiting for job %d: %v", id, err)
		return nil, 1, false
	}
	if a.Job.State != api.StateRunning {
		e.errorf(prog, "Unable to allocate resources: job %d ended %s before it started", id, a.Job.State)
		return nil, 1, false
	}
	if waited && !quiet {
		con.printf("%s: job %d has been allocated resources\n", prog, id)
	}
	return a, 0, true
}

// release ends an allocation and waits (a little) for the job to be over,
// so that what follows sees it ended.
func release(e *Env, prog string, cl *api.Client, req api.ReleaseRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Release(ctx, req); err != nil {
		_, msg := errText(err)
		e.errorf(prog, "releasing job %d: %s", req.JobID, msg)
		return
	}
	_, _ = cl.Wait(ctx, req.JobID)
}

// exitRelease is the release of an allocation whose command ended with
// shell status rc.
func exitRelease(id uint64, rc int) api.ReleaseRequest {
	if rc > 128 {
		return api.ReleaseRequest{JobID: id, Signal: rc - 128}
	}
	return api.ReleaseRequest{JobID: id, ExitCode: rc}
}

// runStep runs a step of job jobID and returns srun's exit status (the
// highest task exit code, 128+signal for a task a signal killed) and the
// step's end.
func runStep(e *Env, prog string, con *console, cl *api.Client, o *runOpts, jobID uint64, sigs <-chan os.Signal) (int, *api.StepDone) {
	req := newStepRequest(e, o, jobID)
	taskWrap(o, &req)
	containerStep(e, o, &req)
	restoreTerm := stepInput(e, prog, o, &req) // srun_input.go
	defer restoreTerm()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	files := &stepFiles{job: stepJob(ctx, e, cl, o, jobID), cwd: e.Cwd, workDir: req.WorkDir}
	var in io.Reader = e.Stdin
	if !files.openInput(con, prog, o, &in) {
		return 1, nil
	}
	var output *taskOutput
	defer func() { output.close() }()
	var mu sync.Mutex
	var step *api.Step
	// Signals: Ctrl-C forwards SIGINT, a second one kills the step; the
	// others are forwarded. Before the step exists they abort.
	sigDone := make(chan struct{})
	defer close(sigDone)
	go func() {
		interrupts := 0
		for {
			var sig os.Signal
			select {
			case sig = <-sigs:
			case <-sigDone:
				return
			}
			mu.Lock()
			s := step
			mu.Unlock()
			if s == nil {
				cancel()
				continue
			}
			n := int(sig.(syscall.Signal))
			if sig == os.Interrupt {
				interrupts++
				if interrupts == 1 {
					con.printf("%s: sending Ctrl-C to StepId=%d.%d\n", prog, jobID, s.ID)
				} else {
					con.printf("%s: forcing job termination\n", prog)
					n = int(syscall.SIGKILL)
				}
			}
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := cl.SignalStep(sctx, jobID, s.ID, n); err != nil {
				_, msg := errText(err)
				con.printf("%s: error: signalling StepId=%d.%d: %s\n", prog, jobID, s.ID, msg)
				if n == int(syscall.SIGKILL) {
					// Its node's daemon is away: srun stops waiting, and
					// the step, its launcher gone, ends on the nodes.
					cancel()
				}
			}
			scancel()
		}
	}()

	var lab *labeller
	var exits []api.TaskExit
	var final *api.StepDone
	err := cl.RunStep(ctx, req, func(ev *api.StepEvent) error {
		switch {
		case ev.Step != nil && lab != nil:
			// Attached again after the node's daemon was restarted:
			// as under Slurm, a daemon's restart goes unnoticed.
		case ev.Step != nil:
			mu.Lock()
			step = ev.Step
			mu.Unlock()
			if ev.Warning != "" && !o.quiet {
				con.printf("%s: Warning: %s\n", prog, ev.Warning)
			}
			files.step = ev.Step
			files.openInput(con, prog, o, &in)
			go forwardInput(ctx, e, cl, &req, ev.Step.ID, in)
			output = openOutput(con, prog, o, files)
			lab = newLabeller(con, o.label, ev.Step.NTasks())
			lab.output = output
			if o.verbose > 0 {
				con.printf("%s", launchLines(prog, jobID, ev.Step))
			}
		case ev.Stream != 0 && lab != nil:
			lab.write(ev.Task, ev.Stream, ev.Data)
		case ev.Exit != nil:
			// Once per task, also where a restarted daemon's stream
			// repeats it.
			if k := slices.IndexFunc(exits, func(x api.TaskExit) bool { return x.Task == ev.Exit.Task }); k >= 0 {
				exits[k] = *ev.Exit
			} else {
				exits = append(exits, *ev.Exit)
				if o.verbose > 0 && lab != nil {
					con.printf("%s", exitLines(prog, jobID, step.ID, ev.Exit))
				}
			}
		case ev.Done != nil:
			final = ev.Done
		}
		return nil
	}, nil)
	if lab != nil {
		lab.flush()
	}
	mu.Lock()
	started := step != nil
	mu.Unlock()
	if err != nil && final == nil {
		_, msg := errText(err)
		if !started {
			if ctx.Err() != nil {
				msg = "Job/step already completing or completed"
			}
			e.errorf(prog, "Unable to create step for job %d: %s", jobID, msg)
		} else {
			e.errorf(prog, "%s", msg)
		}
		return 1, nil
	}
	rc := reportExits(con, prog, exits)
	if final.Error != "" {
		for _, m := range strings.Split(final.Error, "; ") {
			con.printf("%s: error: %s\n", prog, m)
		}
		rc = max(rc, 1)
	}
	return rc, final
}

// killOnBadExit is -K/--kill-on-bad-exit[=1] or SLURM_KILL_BAD_EXIT=1:
// the step's launcher kills it when a task fails.
func killOnBadExit(e *Env, o *runOpts) bool {
	return o.killBadExit || e.Getenv("SLURM_KILL_BAD_EXIT") == "1"
}

// newStepRequest is the step srun asks for in job jobID: its command,
// environment (with srun's umask and limits, inherit.go), name, and the
// layout options given on the command line.
func newStepRequest(e *Env, o *runOpts, jobID uint64) api.StepRequest {
	req := api.StepRequest{
		JobID:   jobID,
		Name:    o.name,
		Argv:    o.argv,
		Env:     withInheritance(e.Environ),
		Export:  o.export,
		WorkDir: o.spec.WorkDir,
	}
	if o.set["job-name"] {
		req.Name = o.spec.Name
	}
	// -O, or SLURM_OVERCOMMIT (which Slurm sets in an -O job).
	req.Overcommit = o.spec.Overcommit || e.Getenv("SLURM_OVERCOMMIT") != ""
	req.KillOnBadExit = killOnBadExit(e, o)
	if o.set["nodes"] {
		req.Nodes = o.spec.Nodes
	}
	if o.set["ntasks"] {
		req.NTasks = o.spec.NTasks
	}
	if o.set["ntasks-per-node"] {
		req.NTasksPerNode = o.spec.NTasksPerNode
	}
	if o.set["cpus-per-task"] {
		req.CPUsPerTask = o.spec.CPUsPerTask
	}
	if o.set["nodelist"] {
		req.NodeList = o.spec.NodeList
	}
	return req
}

// containerStep passes srun's container options on to the step's nodes
// (see jobspec.EnvContainerImage): given ones replace those srun
// inherited. A step that runs in an image gets its command through the
// image's shell, which finds it with the tasks' PATH in the image (the
// node would look for it on the host otherwise), and fails as slurmstepd's
// execve() does when it is not there.
func containerStep(e *Env, o *runOpts, req *api.StepRequest) {
	if o.set["container-image"] {
		vars := []string{jobspec.EnvContainerImage, jobspec.EnvContainerMounts, jobspec.EnvContainerWorkDir}
		env := req.Env[:0:0]
		for _, kv := range req.Env {
			k, _, _ := strings.Cut(kv, "=")
			if !slices.Contains(vars, k) {
				env = append(env, kv)
			}
		}
		req.Env = append(env,
			jobspec.EnvContainerImage+"="+o.spec.ContainerImage,
			jobspec.EnvContainerMounts+"="+o.spec.ContainerMounts,
			jobspec.EnvContainerWorkDir+"="+o.spec.ContainerWorkDir)
	} else if e.Getenv(jobspec.EnvContainerImage) == "" {
		return // on the host
	}
	if req.Name == "" {
		req.Name = filepath.Base(o.argv[0])
	}
	req.Argv = append([]string{"/bin/sh", "-c", imageCommand}, o.argv...)
}

// imageCommand runs "$0" "$@" as execvp would in the image.
const imageCommand = `command -v "$0" >/dev/null 2>&1 || { printf 'slurmstepd: error: execve(): %s: No such file or directory\n' "$0" >&2; exit 2; }; exec "$0" "$@"`

// reportExits prints srun's line for the tasks that failed, grouped by
// node and outcome as srun groups them ("node2: tasks 2-3: Exited with
// exit code 3"), and returns the exit status.
func reportExits(con *console, prog string, exits []api.TaskExit) int {
	type group struct {
		node, what string
		tasks      []int
	}
	var groups []*group
	find := map[string]*group{}
	rc := 0
	for _, x := range exits {
		var what string
		switch {
		case x.Signal != 0:
			what = signalText(x.Signal)
			rc = max(rc, (128+x.Signal)&0xff) // SigOOM: 125, as Slurm's srun
		case x.ExitCode != 0:
			what = fmt.Sprintf("Exited with exit code %d", x.ExitCode)
			rc = max(rc, x.ExitCode)
		default:
			continue
		}
		k := x.Node + "\x00" + what
		g := find[k]
		if g == nil {
			g = &group{node: x.Node, what: what}
			find[k] = g
			groups = append(groups, g)
		}
		g.tasks = append(g.tasks, x.Task)
	}
	for _, g := range groups {
		sort.Ints(g.tasks)
		word := "task"
		if len(g.tasks) > 1 {
			word = "tasks"
		}
		con.printf("%s: error: %s: %s %s: %s\n", prog, g.node, word, intRanges(g.tasks), g.what)
	}
	return rc
}

// signalText is strsignal(3)'s text (glibc) for the signals tasks die
// of, which srun prints.
func signalText(sig int) string {
	switch syscall.Signal(sig) {
	case syscall.SIGHUP:
		return "Hangup"
	case syscall.SIGINT:
		return "Interrupt"
	case syscall.SIGQUIT:
		return "Quit"
	case syscall.SIGILL:
		return "Illegal instruction"
	case syscall.SIGABRT:
		return "Aborted"
	case syscall.SIGBUS:
		return "Bus error"
	case syscall.SIGFPE:
		return "Floating point exception"
	case syscall.SIGKILL:
		return "Killed"
	case syscall.SIGUSR1:
		return "User defined signal 1"
	case syscall.SIGSEGV:
		return "Segmentation fault"
	case syscall.SIGUSR2:
		return "User defined signal 2"
	case syscall.SIGPIPE:
		return "Broken pipe"
	case syscall.SIGALRM:
		return "Alarm clock"
	case syscall.SIGTERM:
		return "Terminated"
	case syscall.SIGXCPU:
		return "CPU time limit exceeded"
	case api.SigOOM:
		return "Out Of Memory"
	}
	return fmt.Sprintf("Signal %d", sig)
}

// intRanges writes sorted numbers as "0-2,5".
func intRanges(v []int) string {
	var parts []string
	for i := 0; i < len(v); {
		k := i
		for k+1 < len(v) && v[k+1] == v[k]+1 {
			k++
		}
		if k > i {
			parts = append(parts, fmt.Sprintf("%d-%d", v[i], v[k]))
		} else {
			parts = append(parts, strconv.Itoa(v[i]))
		}
		i = k + 1
	}
	return strings.Join(parts, ",")
}

// labeller writes the tasks' output: as it comes, or with -l line by line
// with each line prefixed by its task number ("3: ", padded to the widest
// task number).
type labeller struct {
	con    *console
	output *taskOutput // where a task's output goes, if not to srun's
	label  bool
	width  int
	part   map[[2]int][]byte // unfinished lines, by task and stream
}

func newLabeller(con *console, label bool, ntasks int) *labeller {
	return &labeller{con: con, label: label, width: len(strconv.Itoa(max(ntasks-1, 0))), part: map[[2]int][]byte{}}
}

func (l *labeller) dst(task, stream int) io.Writer {
	if w := l.output.writer(task, stream); w != nil {
		return w
	}
	if stream == api.StreamStderr {
		return l.con.err
	}
	return l.con.out
}

func (l *labeller) write(task, stream int, data []byte) {
	l.con.mu.Lock()
	defer l.con.mu.Unlock()
	w := l.dst(task, stream)
	if !l.label {
		_, _ = w.Write(data)
		return
	}
	k := [2]int{task, stream}
	buf := append(l.part[k], data...)
	var out []byte
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		out = append(out, fmt.Sprintf("%*d: ", l.width, task)...)
		out = append(out, buf[:i+1]...)
		buf = buf[i+1:]
	}
	if len(out) > 0 {
		_, _ = w.Write(out)
	}
	if len(buf) > 0 {
		l.part[k] = append([]byte(nil), buf...)
	} else {
		delete(l.part, k)
	}
}

// flush writes the unfinished lines left at the end.
func (l *labeller) flush() {
	l.con.mu.Lock()
	defer l.con.mu.Unlock()
	keys := make([][2]int, 0, len(l.part))
	for k := range l.part {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		return keys[a][0] < keys[b][0] || (keys[a][0] == keys[b][0] && keys[a][1] < keys[b][1])
	})
	for _, k := range keys {
		fmt.Fprintf(l.dst(k[0], k[1]), "%*d: %s\n", l.width, k[0], l.part[k])
	}
	l.part = map[[2]int][]byte{}
}
