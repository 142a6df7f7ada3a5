package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
)

// sattach JOB.STEP attaches to a running srun step's I/O, as Slurm's
// sattach does: the tasks' stdout and stderr from now on come here (one
// task's with --output-filter/--error-filter, labelled with -l), and what
// it reads goes to the tasks' stdin (one task's with --input-filter).
// --layout prints where the step's tasks run and ends. The step's owner or
// root only. The step's launcher hands its output to sattach as it hands
// it to srun; output a slow sattach cannot take is dropped (and said with
// -v), never holding the step back (cluster/sattach.go). Ctrl-C detaches.

// sattachOptions are sattach's options, as Slurm 22.05's sattach takes them.
var sattachOptions = []jobspec.Opt{
	{Long: "help", Short: 'h', Arg: jobspec.NoArg},
	{Long: "label", Short: 'l', Arg: jobspec.NoArg},
	{Long: "quiet", Short: 'Q', Arg: jobspec.NoArg},
	{Long: "usage", Short: 'u', Arg: jobspec.NoArg},
	{Long: "verbose", Short: 'v', Arg: jobspec.NoArg},
	{Long: "version", Short: 'V', Arg: jobspec.NoArg},
	{Long: "layout", Arg: jobspec.NoArg},
	{Long: "debugger-test", Arg: jobspec.NoArg},
	{Long: "input-filter", Arg: jobspec.RequiredArg},
	{Long: "output-filter", Arg: jobspec.RequiredArg},
	{Long: "error-filter", Arg: jobspec.RequiredArg},
	{Long: "pty", Arg: jobspec.NoArg},
}

const sattachUsage = "Usage: sattach [options] <jobid.stepid>\n"

const sattachHelp = sattachUsage +
	"      --input-filter=taskid  send standard input to this task only\n" +
	"      --output-filter=taskid print this task's standard output only\n" +
	"      --error-filter=taskid  print this task's standard error only\n" +
	"  -l, --label                start each line with its task number\n" +
	"      --layout               print where the step's tasks run, and end\n" +
	"      --pty                  accepted (a --pty step's task 0 is on a terminal already)\n" +
	"  -Q, --quiet                print errors only\n" +
	"  -v, --verbose              say more (dropped output, task ends)\n" +
	"  -V, --version              print the version and end\n\n" +
	"Help options:\n" +
	"  -h, --help                 print this help\n" +
	"  -u, --usage                print a short usage line\n"

// sattachOpts is a parsed sattach command line.
type sattachOpts struct {
	label, quiet, layout, pty, debuggerTest bool
	verbose                                 int
	inTask, outTask, errTask                int // -1: all
	job                                     uint64
	step                                    uint32
}

// parseSattach reads sattach's command line; done: the command is over.
func parseSattach(e *Env, prog string, args []string) (o *sattachOpts, code int, done bool) {
	o = &sattachOpts{inTask: -1, outTask: -1, errTask: -1}
	filters := false
	var help, usage, version bool
	g := &jobspec.Getopt{Opts: sattachOptions, Permute: true}
	rest, err := g.Parse(args, func(opt *jobspec.Opt, val string, _ bool) error {
		switch opt.Long {
		case "help":
			help = true
		case "usage":
			usage = true
		case "version":
			version = true
		case "label":
			o.label = true
		case "quiet":
			o.quiet = true
		case "verbose":
			o.verbose++
		case "layout":
			o.layout = true
		case "pty":
			o.pty = true
		case "debugger-test":
			o.debuggerTest = true
		case "input-filter", "output-filter", "error-filter":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return &jobspec.UsageError{Msg: fmt.Sprintf("Invalid task id %q for --%s", val, opt.Long), Code: 1}
			}
			filters = true
			switch opt.Long {
			case "input-filter":
				o.inTask = n
			case "output-filter":
				o.outTask = n
			default:
				o.errTask = n
			}
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
	case help:
		io.WriteString(e.Stdout, sattachHelp)
		return nil, 0, true
	case usage:
		io.WriteString(e.Stdout, sattachUsage)
		return nil, 0, true
	case version:
		fmt.Fprintln(e.Stdout, slurmVersion)
		return nil, 0, true
	}
	if len(rest) != 1 {
		e.errorf(prog, "too many parameters")
		io.WriteString(e.Stdout, sattachUsage)
		return nil, 1, true
	}
	js, ss, ok := strings.Cut(rest[0], ".")
	job, jerr := strconv.ParseUint(js, 10, 64)
	step, serr := strconv.ParseUint(ss, 10, 32)
	if !ok || jerr != nil || serr != nil || job == 0 {
		e.errorf(prog, "Failed to parse stepid from command line options")
		io.WriteString(e.Stdout, sattachUsage)
		return nil, 1, true
	}
	o.job, o.step = job, uint32(step)
	switch {
	case o.quiet && o.verbose > 0:
		e.errorf(prog, "don't specify both --verbose (-v) and --quiet (-Q)")
		return nil, 1, true
	case filters && o.pty:
		e.errorf(prog, "don't specify both --pty and I/O filtering")
		return nil, 1, true
	}
	return o, 0, false
}

// sattachMain is sattach.
func sattachMain(e *Env, prog string, args []string) int {
	o, code, done := parseSattach(e, prog, args)
	if done {
		return code
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			cancel() // detach; the step runs on
		case <-ctx.Done():
		}
	}()
	cl, err := e.Client(ctx)
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	con := &console{out: e.Stdout, err: e.Stderr}
	var lab *labeller
	var final *api.StepDone
	req := api.AttachRequest{JobID: o.job, StepID: o.step, OutTask: o.outTask, ErrTask: o.errTask, Layout: o.layout}
	err = cl.AttachStep(ctx, req, func(ev *api.AttachEvent) error {
		switch {
		case ev.Step != nil && o.layout:
			io.WriteString(e.Stdout, stepLayout(ev.Step))
		case ev.Step != nil:
			lab = newLabeller(con, o.label, ev.Step.NTasks())
			if o.debuggerTest {
				for t, node := range taskNodes(ev.Step) {
					con.printf("%s: task:%d, host:%s, pid:%d, executable:%s\n", prog, t, node, 0, "(unknown)")
				}
			}
			go sattachInput(ctx, e, cl, o)
		case ev.Dropped > 0 && o.verbose > 0:
			con.printf("%s: %d pieces of output dropped: sattach did not keep up\n", prog, ev.Dropped)
		case ev.Stream != 0 && lab != nil:
			lab.write(ev.Task, ev.Stream, ev.Data)
		case ev.Done != nil:
			final = ev.Done
		}
		return nil
	})
	if lab != nil {
		lab.flush()
	}
	switch {
	case ctx.Err() != nil:
		return 0 // detached
	case err != nil:
		_, msg := errText(err)
		e.errorf(prog, "Could not get job step info: %s", msg)
		return 1
	case final != nil && final.Error != "" && !o.quiet:
		e.errorf(prog, "%s", final.Error)
	}
	return 0
}

// sattachInput sends sattach's standard input to the step's tasks (or the
// one --input-filter names), until its end or the step's.
func sattachInput(ctx context.Context, e *Env, cl *api.Client, o *sattachOpts) {
	if e.Stdin == nil || isDevNull(e.Stdin) {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := e.Stdin.Read(buf)
		in := api.AttachInput{StepInput: api.StepInput{JobID: o.job, StepID: o.step}, Task: o.inTask}
		if n > 0 {
			in.Data = append([]byte(nil), buf[:n]...)
			if cl.AttachInput(ctx, in) != nil {
				return
			}
		}
		if err != nil {
			// sattach's end of input is not the tasks': they keep
			// reading from srun.
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// taskNodes is the node of each of a step's tasks, by task.
func taskNodes(s *api.Step) []string {
	var out []string
	for i, node := range s.Nodes {
		for range s.Tasks[i] {
			out = append(out, node)
		}
	}
	return out
}

// stepLayout is sattach --layout's account of a step: its task and node
// counts, then each node's tasks.
func stepLayout(s *api.Step) string {
	var b strings.Builder
	b.WriteString("Job step layout:\n")
	fmt.Fprintf(&b, "\t%d tasks, %d nodes (%s)\n\n", s.NTasks(), len(s.Nodes), hostlist.Compress(s.Nodes))
	first := 0
	for i, node := range s.Nodes {
		fmt.Fprintf(&b, "\tNode %d (%s), %d task(s): ", i, node, s.Tasks[i])
		for t := range s.Tasks[i] {
			fmt.Fprintf(&b, "%d ", first+t)
		}
		b.WriteString("\n")
		first += s.Tasks[i]
	}
	return b.String()
}
