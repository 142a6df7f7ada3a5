package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:            "submit",
		Aliases:         []string{"sbatch"},
		Usage:           "submit a batch script (sbatch)",
		ArgsUsage:       "[OPTIONS] SCRIPT [ARGS...]",
		SkipFlagParsing: true,
		Action:          runSubmit,
	}
}

func runSubmit(c *cli.Context) error {
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbatch: error: cannot tell the current directory: %v\n", err)
		return exit(1)
	}
	host, _ := os.Hostname()
	opts, err := jobspec.Resolve(c.Args().Slice(), jobspec.Input{
		Cwd: cwd, Env: os.Environ(), ReadFile: os.ReadFile, Stdin: os.Stdin, Hostname: host,
	})
	if err != nil {
		return usageExit("sbatch", err)
	}
	if opts.Help {
		fmt.Println("Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]")
		return nil
	}
	if opts.Version {
		fmt.Println(versionString)
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cl, err := client(ctx)
	if err != nil {
		return submitFailed(err)
	}
	id, err := cl.Submit(ctx, opts.Spec)
	if err != nil {
		return submitFailed(err)
	}
	if opts.Parsable {
		fmt.Println(id)
	} else {
		fmt.Printf("Submitted batch job %d\n", id)
	}
	if !opts.Wait {
		return nil
	}
	j, err := cl.Wait(ctx, id)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbatch: error: waiting for job %d: %v\n", id, err)
		return exit(1)
	}
	return exit(jobExitStatus(j))
}

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
func usageExit(prog string, err error) error {
	var ue *jobspec.UsageError
	if errors.As(err, &ue) {
		fmt.Fprint(os.Stderr, ue.Format(prog))
		return exit(ue.Code)
	}
	fmt.Fprintf(os.Stderr, "%s: error: %v\n", prog, err)
	return exit(1)
}

func submitFailed(err error) error {
	detail, msg := errText(err)
	if detail != "" {
		fmt.Fprintf(os.Stderr, "sbatch: error: %s\n", detail)
	}
	fmt.Fprintf(os.Stderr, "sbatch: error: Batch job submission failed: %s\n", msg)
	return exit(1)
}

const versionString = "hpc 0.1 (slurm-wlm 22.05.8 compatible)"
