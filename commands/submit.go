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
		io.WriteString(e.Stdout, sbatchHelp)
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
		// Nothing is queued: the controller says when and where it would
		// start, as sbatch --test-only prints it.
		r, err := cl.TestOnly(ctx, opts.Spec)
		if err != nil {
			return submitFailed(e, prog, err)
		}
		fmt.Fprintf(e.Stderr, "%s: Job %d to start at %s using %d processors on nodes %s in partition %s\n",
			prog, r.JobID, format.ISOTime(r.Start), r.CPUs, hostlist.Compress(r.Nodes), r.Partition)
		return 0
	}
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
	j, err := cl.Wait(ctx, id)
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
	for {
		id, err := cl.Submit(ctx, spec)
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

const sbatchHelp = `Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]

Parallel run options:
  -a, --array=indexes         job array index values
  -A, --account=name          charge job to specified account
      --begin=time            defer job until HH:MM MM/DD/YY
  -c, --cpus-per-task=ncpus   number of cpus required per task
  -C, --constraint=list       specify a list of constraints
  -d, --dependency=type:jobid[:time] defer job until condition on jobid is satisfied
  -D, --chdir=directory       set working directory for batch script
  -e, --error=err             file for batch script's standard error
      --export[=names]        specify environment variables to export
  -H, --hold                  submit job in held state
  -i, --input=in              file for batch script's standard input
  -J, --job-name=jobname      name of job
      --mail-type=type        notify on state change (recorded; hpc sends no mail)
      --mail-user=user        who to send email notification for job state changes
  -n, --ntasks=ntasks         number of tasks to run
  -N, --nodes=N               number of nodes on which to run (N = min[-max])
  -o, --output=out            file for batch script's standard output
      --open-mode={append|truncate} how to open the output and error files
  -p, --partition=partition   partition requested
      --parsable              outputs only the jobid and cluster name (if present)
  -q, --qos=qos               quality of service
  -Q, --quiet                 quiet mode (suppress informational messages)
      --requeue, --no-requeue whether the job may be requeued
      --signal=[R:]num[@time] send signal when time limit within time seconds
      --switches=max-switches[@max-time-to-wait]
  -t, --time=minutes          time limit
      --time-min=minutes      minimum time limit (if distinct)
  -W, --wait                  wait for completion of submitted job
      --wrap[=command string] wrap command string in a sh script and submit

Constraint options:
      --mem=MB                minimum amount of real memory
      --mem-per-cpu=MB        maximum amount of real memory per allocated cpu
      --mem-per-gpu=MB        real memory per allocated GPU
  -w, --nodelist=hosts...     request a specific list of hosts
  -x, --exclude=hosts...      exclude a specific list of hosts
      --exclusive[=user|mcs]  allocate nodes in exclusive mode

GPU scheduling options:
  -G, --gpus=n                count of GPUs required for the job
      --gpus-per-node=n       number of GPUs required per allocated node
      --gpus-per-task=n       number of GPUs required per spawned task
      --gres=list             required generic resources

Input environment variables SBATCH_ACCOUNT, SBATCH_PARTITION, SBATCH_TIMELIMIT,
... set options between #SBATCH directives and the command line.

Help options:
  -h, --help                  show this help message
      --usage                 display brief usage message

Other options:
  -V, --version               output version information and exit
` + containerHelp

// containerHelp lists the container options sbatch and srun take, as Slurm
// lists its plugins' (pyxis's) options.
const containerHelp = `
Options provided by plugins:
      --container-image=DIR   [pyxis] run in this image: an unpacked root
                              file system or an OCI bundle (read-only)
      --container-mounts=SRC[:DST[:FLAGS]][,SRC:DST...]
                              [pyxis] bind mount[s] inside the container.
                              Mount flags: ro or rw
      --container-workdir=PATH
                              [pyxis] working directory inside the container
`
