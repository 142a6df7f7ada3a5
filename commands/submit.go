package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
	"hpc/commands/format"
)

// sbatchMain is sbatch.
func sbatchMain(e *Env, prog string, args []string) int {
	opts, err := jobspec.Resolve(args, jobspec.Input{
		Cwd: e.Cwd, Env: e.Environ, ReadFile: os.ReadFile, Stdin: e.Stdin, Hostname: e.Hostname, Now: e.Now(),
		Stat: os.Stat,
	})
	if err != nil {
		return usageExit(e, prog, err)
	}
	if opts.Help {
		io.WriteString(e.Stdout, jobHelp(prog, opts.Usage))
		return 0
	}
	if opts.Version {
		fmt.Fprintln(e.Stdout, slurmVersion)
		return 0
	}
	if opts.Verbose > 0 {
		var given []givenOption
		opts.EachGiven(func(opt *jobspec.Opt, val string) { given = addGiven(given, opt, val, val != "") })
		printDefined(e.Stderr, prog, given)
		for _, n := range ignoredNotices(opts.Other) {
			fmt.Fprintf(e.Stderr, "%s: %s\n", prog, n)
		}
	}
	for _, n := range opts.Notices {
		fmt.Fprintf(e.Stderr, "%s: %s\n", prog, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cl, err := e.Client(ctx)
	if err != nil {
		return submitFailed(e, prog, err)
	}
	if opts.TestOnly {
		return testOnly(ctx, e, prog, cl, opts.Spec)
	}
	// The script starts with sbatch's umask and limits (inherit.go).
	opts.Spec.Env = withInheritance(opts.Spec.Env)
	id, err := submitRetrying(ctx, e, prog, cl, opts.Spec)
	if err != nil {
		return submitFailed(e, prog, err)
	}
	switch {
	case opts.Quiet:
	case opts.Parsable:
		fmt.Fprintln(e.Stdout, id)
	default:
		fmt.Fprintf(e.Stdout, "Submitted batch job %d\n", id)
	}
	if !opts.Wait {
		return 0
	}
	j, err := waitShown(ctx, e, cl, id)
	if err != nil {
		e.errorf(prog, "waiting for job %d: %v", id, err)
		return 1
	}
	return jobExitStatus(j)
}

// submitRetrying submits spec as sbatch does: when the controller holds
// MaxJobCount jobs it says so once and tries again, sleeping one second
// more each time, 15 times at most; when the user's submissions came too
// fast it backs off quietly and tries again, as Slurm's client library does.
func submitRetrying(ctx context.Context, e *Env, prog string, cl *api.Client, spec api.JobSpec) (uint64, error) {
	busy, fast := 0, 0
	// One token for the invocation: the client sends a submission whose
	// answer was lost again under it, and the controller makes one job of
	// the copies. A refusal (EAGAIN, the rate limit) remembers nothing.
	token := api.NewSubmitToken()
	for {
		id, err := cl.SubmitToken(ctx, spec, token)
		var ae *api.Error
		if err == nil || !errors.As(err, &ae) {
			return id, err
		}
		var wait time.Duration
		switch {
		case ae.Message == api.ErrTryAgain && busy < maxSubmitRetries:
			if busy == 0 {
				e.errorf(prog, "Slurm temporarily unable to accept job, sleeping and retrying")
			}
			busy++
			wait = time.Duration(busy) * time.Second
		case ae.Message == api.ErrRateLimit && fast < 4*maxSubmitRetries:
			fast++
			wait = min(50*time.Millisecond<<min(fast, 5), time.Second)
		default:
			return id, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(wait):
		}
	}
}

// maxSubmitRetries is sbatch's MAX_RETRIES.
const maxSubmitRetries = 15

// jobExitStatus is what `sbatch --wait` exits with: the job's exit code,
// or 1 when it ended otherwise (cancelled, signalled, node failure).
func jobExitStatus(j *api.Job) int {
	switch {
	case j.State == api.StateCompleted:
		return 0
	case j.ExitCode != 0:
		return j.ExitCode
	}
	return 1
}

// usageExit prints a client-side option error as Slurm does.
func usageExit(e *Env, prog string, err error) int {
	var ue *jobspec.UsageError
	if errors.As(err, &ue) {
		fmt.Fprint(e.Stderr, ue.Format(prog))
		return ue.Code
	}
	e.errorf(prog, "%v", err)
	return 1
}

func submitFailed(e *Env, prog string, err error) int {
	detail, msg := errText(err)
	if detail != "" {
		e.errorf(prog, "%s", detail)
	}
	e.errorf(prog, "Batch job submission failed: %s", msg)
	return 1
}

// testOnly is sbatch's and srun's --test-only: nothing is queued; the
// controller says when and where the job would start.
func testOnly(ctx context.Context, e *Env, prog string, cl *api.Client, spec api.JobSpec) int {
	r, err := cl.TestOnly(ctx, spec)
	if err != nil && prog == "sbatch" {
		return submitFailed(e, prog, err)
	}
	if err != nil {
		detail, msg := errText(err)
		if detail != "" {
			e.errorf(prog, "%s", detail)
		}
		e.errorf(prog, "Unable to allocate resources: %s", msg)
		return 1
	}
	fmt.Fprintf(e.Stderr, "%s: Job %d to start at %s using %d processors on nodes %s in partition %s\n",
		prog, r.JobID, format.ISOTime(r.Start), r.CPUs, hostlist.Compress(r.Nodes), r.Partition)
	return 0
}

// waitShown is sbatch --wait's wait for the job's end. On a terminal
// (stderr) a spinner shows the job's state, its pending reason and the
// time waited, asked of the controller every second while the wait runs;
// elsewhere it is the wait alone, as scripts expect.
func waitShown(ctx context.Context, e *Env, cl *api.Client, id uint64) (*api.Job, error) {
	p := newProgress(e.Stderr, -1, fmt.Sprintf("job %d", id))
	if p == nil {
		return cl.Wait(ctx, id)
	}
	defer p.done()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if jobs, err := cl.Job(ctx, id); err == nil && len(jobs) > 0 {
				d := fmt.Sprintf("job %d %s", id, jobs[0].State)
				if jobs[0].Reason != "" && jobs[0].Reason != "None" {
					d += " (" + jobs[0].Reason + ")"
				}
				p.describe(d)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return cl.Wait(ctx, id)
}
