package commands

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

// slurmNames maps the Slurm command names this binary answers to onto its
// own verbs: the two are one implementation.
var slurmNames = map[string]string{
	"sbatch":  "submit",
	"squeue":  "queue",
	"sinfo":   "nodes",
	"scancel": "cancel",
	"sacct":   "acct",
}

// Run runs the command line and returns the exit status. Invoked as sbatch,
// squeue, ... (a link to the binary), it acts as that command.
func Run(args []string, extra ...*cli.Command) int {
	if verb, ok := slurmNames[filepath.Base(args[0])]; ok {
		args = append([]string{"hpc", verb}, args[1:]...)
	}
	// Slurm's commands use -h for --noheader; help is --help only.
	cli.HelpFlag = &cli.BoolFlag{Name: "help", Usage: "show help"}
	app := &cli.App{
		Name:  "hpc",
		Usage: "a Slurm-style HPC cluster in one binary",
		Description: "hpc up starts a lab cluster on this machine; submit, queue, nodes, cancel and acct\n" +
			"work like sbatch, squeue, sinfo, scancel and sacct.",
		Commands: []*cli.Command{
			upCommand(), downCommand(), submitCommand(), queueCommand(), nodesCommand(),
			cancelCommand(), acctCommand(), statusCommand(),
		},
		ExitErrHandler: func(c *cli.Context, err error) {},
	}
	app.Commands = append(app.Commands, extra...)
	if err := app.Run(args); err != nil {
		if ec, ok := err.(cli.ExitCoder); ok {
			if msg := ec.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, msg)
			}
			return ec.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "hpc: error:", err)
		return 1
	}
	return 0
}

// exit ends a command with a status and no further message (the command
// has printed what Slurm prints).
func exit(code int) error { return cli.Exit("", code) }
