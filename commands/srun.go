package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	"hpc/cluster/config"
	"hpc/cluster/jobspec"
	"hpc/cluster/openapi"
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
	// wait is -W/--wait: seconds after the first task ends before the
	// others are killed (0: not given, or unlimited).
	wait int
	// quitOnIntr is --quit-on-interrupt: one Ctrl-C ends the step;
	// noStatus is -X/--disable-status: Ctrl-C forwards SIGINT rather
	// than printing the tasks' states.
	quitOnIntr, noStatus bool
	// debuggerTest is --debugger-test: the tasks' table is printed as a
	// parallel debugger would read it, and they are not run.
	debuggerTest bool
	// execs is each task's program under --multi-prog, where the task
	// count is known.
	execs []string
	// slurmdDebug is --slurmd-debug's level (Slurm's log levels above
	// error: 0 quiet ... 4 debug2), -1 when not given.
	slurmdDebug int
	// tmpMB is --tmp: the temporary disk space each node must have.
	tmpMB int64
	// prolog and epilog are srun's --prolog/--epilog: programs srun runs
	// itself before the step starts and after it ends.
	prolog, epilog string
	// noShell is salloc --no-shell: allocate, and leave the allocation.
	noShell bool
	// killCommand is salloc -K: the signal its command gets when the
	// allocation ends under it (0: SIGHUP, as without -K).
	killCommand int
	// testOnly is srun --test-only: say when and where, run nothing.
	testOnly bool
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
	{Long: "hold", Short: 'H', Arg: jobspec.NoArg},
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
		{Long: "prolog", Arg: jobspec.RequiredArg},
		{Long: "epilog", Arg: jobspec.RequiredArg},
		{Long: "accel-bind", Arg: jobspec.RequiredArg},
		{Long: "bcast", Arg: jobspec.OptionalArg},
		{Long: "bcast-exclude", Arg: jobspec.RequiredArg},
		{Long: "compress", Arg: jobspec.OptionalArg},
		{Long: "cpu-bind", Arg: jobspec.RequiredArg},
		{Long: "exact", Arg: jobspec.NoArg},
		{Long: "het-group", Arg: jobspec.RequiredArg},
		{Long: "msg-timeout", Arg: jobspec.RequiredArg},
		{Long: "preserve-env", Short: 'E', Arg: jobspec.NoArg},
		{Long: "relative", Short: 'r', Arg: jobspec.RequiredArg},
		{Long: "resv-ports", Arg: jobspec.OptionalArg},
		{Long: "send-libs", Arg: jobspec.OptionalArg},
		{Long: "x11", Arg: jobspec.OptionalArg},
		{Long: "no-allocate", Short: 'Z', Arg: jobspec.NoArg},
		{Long: "slurmd-debug", Arg: jobspec.RequiredArg},
		{Long: "task-prolog", Arg: jobspec.RequiredArg},
		{Long: "task-epilog", Arg: jobspec.RequiredArg},
		{Long: "threads", Short: 'T', Arg: jobspec.RequiredArg},
		{Long: "wait", Short: 'W', Arg: jobspec.RequiredArg},
		{Long: "quit-on-interrupt", Arg: jobspec.NoArg},
		{Long: "debugger-test", Arg: jobspec.NoArg},
	}
	sallocOnlyOptions = []jobspec.Opt{
		{Long: "bell", Arg: jobspec.NoArg},
		{Long: "no-bell", Arg: jobspec.NoArg},
		{Long: "no-shell", Arg: jobspec.NoArg},
		{Long: "kill-command", Short: 'K', Arg: jobspec.OptionalArg},
		{Long: "x11", Arg: jobspec.OptionalArg},
	}
)

// inert says why an option srun or salloc accepts does nothing on hpc;
// -v prints it as a notice.
var inert = map[string]string{
	"deadline":      "hpc does not end jobs at a deadline",
	"no-allocate":   "hpc's srun always runs in an allocation",
	"threads":       "hpc's srun talks to one daemon",
	"accel-bind":    "hpc binds no accelerators to tasks",
	"bcast":         "tasks run the executable in place (sbcast copies files)",
	"bcast-exclude": "tasks run the executable in place (sbcast copies files)",
	"compress":      "hpc sends no files with the step",
	"cpu-bind":      "a step's tasks share its CPUs (cpuset), unbound",
	"exact":         "hpc's steps take the CPUs they ask for",
	"het-group":     "hpc has no heterogeneous jobs",
	"msg-timeout":   "hpc's nodes answer over their own connections",
	"preserve-env":  "a step takes SLURM_NNODES and SLURM_NTASKS from the allocation",
	"relative":      "a step's nodes are chosen from the whole allocation",
	"resv-ports":    "hpc reserves no ports for steps",
	"send-libs":     "tasks run the executable in place",
	"x11":           "hpc forwards no X11 connections",
}

// sbatchShared are the options srun and salloc take as sbatch does, beyond
// allocOptions: they go to jobspec with the allocation's (what hpc does
// not act on is recorded there, and said with -v). sallocShared and
// srunShared are those only one of them takes.
var (
	sbatchShared = []string{
		"acctg-freq", "bb", "bbf", "cluster-constraint", "clusters", "comment", "contiguous",
		"core-spec", "cores-per-socket", "cpu-freq", "cpus-per-gpu", "delay-boot", "distribution",
		"extra-node-info", "gid", "gpu-bind", "gpu-freq", "gpus-per-node", "gpus-per-socket",
		"gpus-per-task", "gres-flags", "hint", "licenses", "mail-type", "mail-user", "mcs-label",
		"mem-bind", "mem-per-gpu", "network", "nice", "no-kill", "nodefile", "ntasks-per-core",
		"ntasks-per-gpu", "ntasks-per-socket", "oversubscribe", "power", "prefer", "priority",
		"profile", "reboot", "reservation", "signal", "sockets-per-node", "spread-job", "switches",
		"thread-spec", "threads-per-core", "time-min", "uid", "wckey",
	}
	sallocShared = []string{"get-user-env", "wait-all-nodes"}
	srunShared   = []string{"propagate", "test-only"}
)

// runGetopt is srun's or salloc's option table, and which of its options
// shape the allocation.
func runGetopt(prog string) (*jobspec.Getopt, map[string]bool) {
	isAlloc := map[string]bool{}
	g := &jobspec.Getopt{}
	for _, opt := range allocOptions {
		isAlloc[opt.Long] = true
		g.Opts = append(g.Opts, opt)
	}
	shared := sbatchShared
	if prog == "salloc" {
		shared = append(slices.Clone(shared), sallocShared...)
	} else {
		shared = append(slices.Clone(shared), srunShared...)
	}
	for _, name := range shared {
		if opt, ok := jobspec.SbatchOption(name); ok {
			isAlloc[name] = true
			g.Opts = append(g.Opts, opt)
		}
	}
	for _, opt := range runOnlyOptions {
		if prog == "salloc" && opt.Long == "kill-on-bad-exit" {
			continue // srun's; salloc's -K is --kill-command
		}
		g.Opts = append(g.Opts, opt)
	}
	if prog == "salloc" {
		g.Opts = append(g.Opts, sallocOnlyOptions...)
	} else {
		g.Opts = append(g.Opts, srunOnlyOptions...)
	}
	return g, isAlloc
}

// parseRun parses srun's or salloc's arguments; done reports that the
// command is over (help, or an error already printed) with status code.
func parseRun(e *Env, prog string, args []string) (o *runOpts, code int, done bool) {
	o = &runOpts{slurmdDebug: -1}
	if prog == "srun" {
		args = append(srunEnvArgs(e), args...)
	}
	g, isAlloc := runGetopt(prog)
	rest, err := g.Parse(args, o.option(prog, isAlloc))
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
	o.spec, o.set, o.testOnly = parsed.Spec, parsed.Set, parsed.TestOnly
	o.notices = append(o.notices, ignoredNotices(parsed.Other)...)
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
		if err == nil && o.set["ntasks"] {
			o.execs, err = multiProgExecs(rest[0], e.Cwd, o.spec.NTasks)
		}
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

// option applies one of srun's or salloc's options: those that shape the
// allocation (isAlloc) are kept for jobspec, which reads them as sbatch's.
func (o *runOpts) option(prog string, isAlloc map[string]bool) func(opt *jobspec.Opt, val string, has bool) error {
	return func(opt *jobspec.Opt, val string, has bool) error {
		o.given = addGiven(o.given, opt, val, has)
		if why := inert[opt.Long]; why != "" {
			o.notices = append(o.notices, fmt.Sprintf("--%s is accepted and ignored: %s", opt.Long, why))
		}
		if opt.Long == "tmp" {
			o.tmpMB, _ = config.ParseMem(val) // jobspec checks it
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
			return o.immediateOption(val, has)
		case "prolog":
			o.prolog = val
		case "epilog":
			o.epilog = val
		case "no-shell":
			o.noShell = true
		case "kill-command":
			o.killCommand = int(syscall.SIGTERM)
			if has {
				if o.killCommand = jobspec.SignalNumber(val); o.killCommand <= 0 {
					return &jobspec.UsageError{Msg: fmt.Sprintf("Invalid signal name: %s", val), Code: 1}
				}
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
		case "wait", "quit-on-interrupt", "disable-status", "debugger-test", "slurmd-debug":
			return o.stepControlOption(opt.Long, val)
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
	}
}

// immediateOption reads --immediate[=secs].
func (o *runOpts) immediateOption(val string, has bool) error {
	o.immediate = 1 // Slurm's DEFAULT_IMMEDIATE
	if has {
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return &jobspec.UsageError{Msg: fmt.Sprintf("Invalid numeric value %q for --immediate.", val), Code: 1}
		}
		o.immediate = max(n, 1)
	}
	return nil
}

// stepControlOption reads the options that say how srun watches its step
// (-W, --quit-on-interrupt, -X, --debugger-test, --slurmd-debug).
func (o *runOpts) stepControlOption(name, val string) error {
	switch name {
	case "wait":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return &jobspec.UsageError{Msg: fmt.Sprintf("Invalid numeric value %q for --wait.", val), Code: 1}
		}
		o.wait = n
	case "quit-on-interrupt":
		o.quitOnIntr = true
	case "disable-status":
		o.noStatus = true
	case "debugger-test":
		o.debuggerTest = true
	case "slurmd-debug":
		n, ok := slurmdDebugLevel(val)
		if !ok {
			return &jobspec.UsageError{Msg: fmt.Sprintf("Invalid slurmd debug level %q", val), Code: 1}
		}
		o.slurmdDebug = n
	}
	return nil
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
	if !checkTmp(e, prog, o) {
		return 1
	}
	if o.testOnly {
		return testOnly(ctx, e, prog, cl, spec)
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
	defer func() { // the epilog runs even after a failed prolog, as srun's
		if rc := srunScript(e, o.epilog, "epilog_srun", o, jobID); rc != 0 {
			e.errorf(prog, "srun epilog failed status=%d", rc)
		}
	}()
	if rc := srunScript(e, o.prolog, "prolog_srun", o, jobID); rc != 0 {
		e.errorf(prog, "srun prolog failed rc = %d. Aborting step.", rc)
		return 1, nil
	}
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
	w := &stepWatch{con: con, prog: prog, cl: cl, jobID: jobID, o: o, cancel: cancel, exited: map[int]api.TaskExit{}}
	defer w.stop()
	sigDone := make(chan struct{})
	defer close(sigDone)
	go w.signals(sigs, sigDone)

	var lab *labeller
	var exits []api.TaskExit
	var final *api.StepDone
	waited := false
	err := cl.RunStep(ctx, req, func(ev *api.StepEvent) error {
		switch {
		case ev.Step == nil && ev.Warning != "":
			// Waiting for CPUs other steps hold (--exclusive).
			waited = true
			if !o.quiet {
				con.printf("%s: %s\n", prog, ev.Warning)
			}
		case ev.Step != nil && lab != nil:
			// Attached again after the node's daemon was restarted:
			// as under Slurm, a daemon's restart goes unnoticed.
		case ev.Step != nil:
			if ev.Warning != "" && !o.quiet {
				con.printf("%s: Warning: %s\n", prog, ev.Warning)
			}
			if waited && !o.quiet {
				con.printf("%s: Step created for StepId=%d.%d\n", prog, jobID, ev.Step.ID)
			}
			files.step = ev.Step
			if perTaskInput(o) {
				go forwardTaskInputs(ctx, con, prog, cl, files, o, ev.Step)
			} else {
				files.openInput(con, prog, o, &in)
				go forwardInput(ctx, e, cl, &req, ev.Step.ID, in)
			}
			output = openOutput(con, prog, o, files)
			lab = newLabeller(con, o.label, ev.Step.NTasks())
			lab.output = output
			if o.verbose > 0 {
				con.printf("%s", launchLines(prog, jobID, ev.Step))
			}
			w.setStep(ev.Step)
			if o.debuggerTest {
				con.printf("%s", procTable(prog, o, ev.Step))
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
					con.printf("%s", exitLines(prog, jobID, w.current().ID, ev.Exit))
				}
			}
			w.taskExit(*ev.Exit)
		case ev.Done != nil:
			final = ev.Done
		}
		return nil
	}, nil)
	if lab != nil {
		lab.flush()
	}
	started := w.current() != nil
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
	if final.State == api.StateCancelled && !w.killedByUs() {
		// Cancelled from outside (scancel, the job's end), as srun
		// hears of its step's abort.
		con.printf("%s: Job step aborted: Waiting up to %d seconds for job step to finish.\n", prog, stepAbortWait)
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
	req.Exclusive = o.set["exclusive"] || hasGiven(o.given, "exact")
	if o.slurmdDebug >= 0 {
		// The nodes read srun's SLURMD_DEBUG as --slurmd-debug's level.
		req.Env = slices.DeleteFunc(req.Env, func(kv string) bool { return strings.HasPrefix(kv, "SLURMD_DEBUG=") })
		req.Env = append(req.Env, "SLURMD_DEBUG="+strconv.Itoa(o.slurmdDebug))
	}
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
		con.printf("%s: error: %s: %s %s: %s\n", prog, g.node, word, openapi.IntRanges(g.tasks), g.what)
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

// srunInputEnv are the variables srun reads as options, as Slurm's srun
// does; the command line overrides them. Those that shape an allocation
// (the task and node counts, the time limit) are read only where srun
// makes its own: inside a job, hpc's steps take the job's layout by
// default, which the job's own SLURM_NTASKS and SLURM_JOB_NUM_NODES
// describe already.
var srunInputEnv = []struct {
	name, option string
	ownAlloc     bool // read only outside a job
}{
	{"SLURM_NPROCS", "ntasks", true},
	{"SLURM_NTASKS", "ntasks", true}, // after SLURM_NPROCS: it wins
	{"SLURM_JOB_NUM_NODES", "nodes", true},
	{"SLURM_TIMELIMIT", "time", true},
	{"SLURM_OVERCOMMIT", "overcommit", false},
	{"SLURM_STDINMODE", "input", false},
	{"SLURM_STDOUTMODE", "output", false},
	{"SLURM_STDERRMODE", "error", false},
	{"SLURM_LABELIO", "label", false},
	{"SLURM_UNBUFFEREDIO", "unbuffered", false},
	{"SLURM_DISABLE_STATUS", "disable-status", false},
	{"SLURM_WAIT", "wait", false},
	{"SLURM_TASK_PROLOG", "task-prolog", false},
	{"SLURM_TASK_EPILOG", "task-epilog", false},
	{"SLURMD_DEBUG", "slurmd-debug", false},
	{"SLURM_DEBUG", "verbose", false},
}

// srunEnvArgs turns srun's input variables into options, put before the
// command line's.
func srunEnvArgs(e *Env) []string {
	inJob := e.Getenv("SLURM_JOB_ID") != ""
	flags := map[string]bool{"overcommit": true, "label": true, "unbuffered": true, "disable-status": true}
	var args []string
	for _, v := range srunInputEnv {
		val, ok := e.LookupEnv(v.name)
		if !ok || val == "" || (v.ownAlloc && inJob) {
			continue
		}
		switch {
		case v.option == "verbose":
			// SLURM_DEBUG=N: -v N times.
			n, _ := strconv.Atoi(val)
			for range min(max(n, 0), 9) {
				args = append(args, "--verbose")
			}
		case flags[v.option]:
			if val != "0" {
				args = append(args, "--"+v.option)
			}
		default:
			args = append(args, "--"+v.option+"="+val)
		}
	}
	return args
}

// logLevels are Slurm's log level names, by number.
var logLevels = []string{"quiet", "fatal", "error", "info", "verbose", "debug", "debug2", "debug3", "debug4", "debug5"}

// slurmdDebugLevel reads --slurmd-debug's level, a number or a level's
// name; srun raises the nodes' level above error by at most 4 (to debug2).
func slurmdDebugLevel(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil {
		n = slices.Index(logLevels, strings.ToLower(v))
	}
	if n < 0 || n >= len(logLevels) {
		return 0, false
	}
	return min(n, 4), true
}

// checkTmp refuses an allocation whose --tmp no node can give: hpc's
// nodes declare no temporary disk (TmpDisk=0, as scontrol shows them), so
// any space asked for is a configuration no node has, as slurmctld says.
func checkTmp(e *Env, prog string, o *runOpts) bool {
	if o.tmpMB <= 0 {
		return true
	}
	e.errorf(prog, "Unable to allocate resources: %s", api.ErrConfigUnavailable)
	return false
}

// stepAbortWait is how long srun says it waits for a step aborted from
// outside: Slurm's STEP_ABORT_TIME (2 s) and the default KillWait (30 s).
const stepAbortWait = 32

// stepWatch follows a running step for srun, as Slurm's srun follows it:
// which tasks run and how the others ended (the status a Ctrl-C prints),
// -W's timer from the first task's end, and the signals srun passes on.
type stepWatch struct {
	con    *console
	prog   string
	cl     *api.Client
	jobID  uint64
	o      *runOpts
	cancel context.CancelFunc

	mu       sync.Mutex
	step     *api.Step
	exited   map[int]api.TaskExit
	pending  []syscall.Signal // forwarded once the step exists
	timer    *time.Timer      // -W
	lastIntr time.Time
	forced   int // how many times srun forced the step's end
}

// setStep records the step once it runs and passes on the signals that
// came before it, as Slurm's srun, which blocks them until its step is
// launched.
func (w *stepWatch) setStep(s *api.Step) {
	w.mu.Lock()
	w.step = s
	pending := w.pending
	w.pending = nil
	w.mu.Unlock()
	if len(pending) > 0 {
		go func() {
			for _, sig := range pending {
				w.signal(int(sig))
			}
		}()
	}
}

func (w *stepWatch) current() *api.Step {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.step
}

// killedByUs reports whether srun itself ended the step (Ctrl-C, -W).
func (w *stepWatch) killedByUs() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.forced > 0
}

func (w *stepWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// taskExit records a task's end; with -W the first one starts the time
// the others have left.
func (w *stepWatch) taskExit(x api.TaskExit) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, seen := w.exited[x.Task]
	w.exited[x.Task] = x
	if seen || w.o.wait <= 0 || w.timer != nil || w.step == nil {
		return
	}
	if w.o.verbose > 0 {
		w.con.printf("%s: First task exited. Terminating job in %ds\n", w.prog, w.o.wait)
	}
	w.timer = time.AfterFunc(time.Duration(w.o.wait)*time.Second, w.waitOver)
}

// waitOver ends the step -W's time after its first task ended, saying
// which tasks were still running.
func (w *stepWatch) waitOver() {
	w.mu.Lock()
	if len(w.exited) >= w.step.NTasks() {
		w.mu.Unlock()
		return
	}
	w.con.printf("%s: First task exited %ds ago\n", w.prog, w.o.wait)
	w.printStatus()
	w.forced++
	s := w.step
	w.mu.Unlock()
	w.con.printf("%s: Terminating StepId=%d.%d\n", w.prog, w.jobID, s.ID)
	w.signal(int(syscall.SIGKILL))
}

// printStatus prints the tasks' states, one line for each state some
// tasks are in, as Slurm's srun does on Ctrl-C. Called with w.mu held.
func (w *stepWatch) printStatus() {
	if w.step == nil {
		return
	}
	var running, abnormal, normal []int
	for t := range w.step.NTasks() {
		x, ok := w.exited[t]
		switch {
		case !ok:
			running = append(running, t)
		case x.ExitCode != 0 || x.Signal != 0:
			abnormal = append(abnormal, t)
		default:
			normal = append(normal, t)
		}
	}
	for _, g := range []struct {
		tasks []int
		what  string
	}{{running, "running"}, {abnormal, "exited abnormally"}, {normal, "exited"}} {
		if len(g.tasks) == 0 {
			continue
		}
		word := "task"
		if len(g.tasks) > 1 {
			word = "tasks"
		}
		w.con.printf("%s: StepId=%d.%d %s %s: %s\n", w.prog, w.jobID, w.step.ID, word, openapi.IntRanges(g.tasks), g.what)
	}
}

// signals handles the signals srun gets while its step runs. Ctrl-C
// prints the tasks' states, and a second one within a second (or the
// first with --quit-on-interrupt) ends the step; with -X it is passed on.
// The others are forwarded. Before the step exists, SIGUSR1 and SIGUSR2
// wait for it and the others abort srun.
func (w *stepWatch) signals(sigs <-chan os.Signal, done <-chan struct{}) {
	for {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		n, _ := sig.(syscall.Signal)
		w.mu.Lock()
		started := w.step != nil
		if !started && (n == syscall.SIGUSR1 || n == syscall.SIGUSR2) {
			w.pending = append(w.pending, n)
		}
		w.mu.Unlock()
		switch {
		case !started && (n == syscall.SIGUSR1 || n == syscall.SIGUSR2):
		case !started:
			w.cancel()
		case sig == os.Interrupt:
			w.interrupt()
		default:
			w.signal(int(n))
		}
	}
}

// interrupt is a Ctrl-C while the step runs.
func (w *stepWatch) interrupt() {
	w.mu.Lock()
	now := time.Now()
	again := !w.lastIntr.IsZero() && now.Sub(w.lastIntr) < time.Second
	if !w.o.quitOnIntr && !again {
		w.lastIntr = now
		if !w.o.noStatus {
			w.con.printf("%s: interrupt (one more within 1 sec to abort)\n", w.prog)
			w.printStatus()
			w.mu.Unlock()
			return
		}
	}
	s := w.step
	w.mu.Unlock()
	w.con.printf("%s: sending Ctrl-C to StepId=%d.%d\n", w.prog, w.jobID, s.ID)
	w.signal(int(syscall.SIGINT))
	if w.o.quitOnIntr || again {
		w.forceTermination()
	}
}

// forceTermination kills the step; asked again, it says the abort is
// under way and tries once more.
func (w *stepWatch) forceTermination() {
	w.mu.Lock()
	w.forced++
	n := w.forced
	w.mu.Unlock()
	if n == 1 {
		w.con.printf("%s: forcing job termination\n", w.prog)
	} else {
		w.con.printf("%s: job abort in progress\n", w.prog)
		if n > 2 {
			return
		}
	}
	w.signal(int(syscall.SIGKILL))
}

// signal sends a signal to the step's tasks through its launcher. If the
// launcher cannot be reached to kill the step, srun stops waiting for it:
// the step, its launcher gone, ends on the nodes.
func (w *stepWatch) signal(n int) {
	s := w.current()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.cl.SignalStep(ctx, w.jobID, s.ID, n); err != nil {
		_, msg := errText(err)
		w.con.printf("%s: error: signalling StepId=%d.%d: %s\n", w.prog, w.jobID, s.ID, msg)
		if n == int(syscall.SIGKILL) {
			w.cancel()
		}
	}
}

// procTable is --debugger-test's table of the step's tasks, as a parallel
// debugger reads it from srun (MPIR_proctable): each task's node and
// program. hpc's tasks are not held for a debugger, so no pid is known.
func procTable(prog string, o *runOpts, s *api.Step) string {
	var b strings.Builder
	task := 0
	for i, node := range s.Nodes {
		for range s.Tasks[i] {
			exe := o.argv[0]
			if task < len(o.execs) {
				exe = o.execs[task]
			}
			fmt.Fprintf(&b, "%s: task:%d, host:%s, pid:%d, executable:%s\n", prog, task, node, 0, exe)
			task++
		}
	}
	return b.String()
}

// srunScript runs srun's --prolog or --epilog program, as srun does on its
// own host: with the step's command line as its arguments and srun's
// environment plus SLURM_JOB_ID and SLURM_SCRIPT_CONTEXT. It returns the
// exit status ("" and "none" run nothing; a program that cannot start is
// status 127).
func srunScript(e *Env, path, context string, o *runOpts, jobID uint64) int {
	if path == "" || path == "none" {
		return 0
	}
	cmd := exec.Command(path, o.argv...)
	cmd.Dir = e.Cwd
	cmd.Env = append(slices.Clone(e.Environ), "SLURM_JOB_ID="+strconv.FormatUint(jobID, 10), "SLURM_SCRIPT_CONTEXT="+context)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, e.Stdout, e.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			return ee.ExitCode()
		}
		return 127
	}
	return 0
}
