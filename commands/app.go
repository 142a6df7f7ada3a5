package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
)

// Env is what a command reads, writes and talks to. Run gives commands the
// process's own; tests give them buffers, a fixed clock and a test server.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Environ        []string // KEY=VALUE, like os.Environ
	Now            func() time.Time
	// Client finds a node of the cluster to talk to.
	Client func(ctx context.Context) (*api.Client, error)
	// Executable is the path of this binary (install-links points links
	// at it).
	Executable func() (string, error)
	Cwd        string
	Hostname   string
	UID        int // the caller's real uid (squeue --me, scancel --me)
}

// ProcessEnv is the Env of this process.
func ProcessEnv() *Env {
	cwd, _ := os.Getwd()
	host, _ := os.Hostname()
	return &Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Environ:    os.Environ(),
		Now:        time.Now,
		Client:     client,
		Executable: os.Executable,
		Cwd:        cwd,
		Hostname:   host,
		UID:        os.Getuid(),
	}
}

// Getenv returns the value of an environment variable, "" when unset.
func (e *Env) Getenv(key string) string {
	v, _ := e.LookupEnv(key)
	return v
}

// LookupEnv returns the value of an environment variable and whether it
// is set.
func (e *Env) LookupEnv(key string) (string, bool) {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.Environ[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// errorf prints "<prog>: error: <msg>" on stderr, as Slurm's error() does.
func (e *Env) errorf(prog, format string, args ...any) {
	fmt.Fprintf(e.Stderr, "%s: error: %s\n", prog, fmt.Sprintf(format, args...))
}

// slurmMain is a Slurm-named command: it parses its own arguments (args,
// without the program name), prints as Slurm does and returns the exit
// status. prog is the name it prints in its messages.
type slurmMain func(e *Env, prog string, args []string) int

// slurmCommands are the Slurm commands hpc implements, by name. The hpc
// verbs (submit, queue, nodes, cancel, acct) run the same functions.
var slurmCommands = map[string]slurmMain{
	"sbatch":   sbatchMain,
	"squeue":   squeueMain,
	"sinfo":    sinfoMain,
	"scancel":  scancelMain,
	"sacct":    sacctMain,
	"scontrol": scontrolMain,
	"sacctmgr": sacctmgrMain,
	"srun":     srunMain,
	"salloc":   sallocMain,
	"sprio":    sprioMain,
	"sshare":   sshareMain,
	"sreport":  sreportMain,
	"sdiag":    sdiagMain,
	"sstat":    sstatMain,
	"sbcast":   sbcastMain,
	"sgather":  sgatherMain,
	"strigger": striggerMain,
	"sattach":  sattachMain,
}

// LinkNames are the Slurm command names install-links creates, in the
// order it lists them.
var LinkNames = []string{
	"sbatch", "srun", "salloc", "squeue", "sinfo", "scancel",
	"scontrol", "sacct", "sreport", "sshare", "sacctmgr", "sprio", "sdiag",
	"sstat", "sbcast", "sgather",
	"strigger",
	"sattach",
}

// notImplemented answers for the Slurm names hpc does not implement yet.
func notImplemented(e *Env, prog string, _ []string) int {
	e.errorf(prog, "not implemented yet in hpc")
	return 1
}

// Run runs the command line and returns the exit status. Invoked as sbatch,
// squeue, ... (a link to the binary), it acts as that command.
func Run(args []string, extra ...*cli.Command) int {
	return RunEnv(ProcessEnv(), args, extra...)
}

// RunEnv is Run with the given Env.
func RunEnv(e *Env, args []string, extra ...*cli.Command) int {
	if len(args) == 0 {
		args = []string{"hpc"}
	}
	name := filepath.Base(args[0])
	if m, ok := slurmCommands[name]; ok {
		return m(e, name, args[1:])
	}
	for _, n := range LinkNames {
		if n == name {
			return notImplemented(e, name, args[1:])
		}
	}
	// Slurm's commands use -h for --noheader; help is --help only.
	cli.HelpFlag = &cli.BoolFlag{Name: "help", Usage: "show help"}
	app := &cli.App{
		Name:  "hpc",
		Usage: "a Slurm-style HPC cluster in one binary",
		Description: "hpc up starts a lab cluster on this machine; submit, queue, nodes, cancel and acct\n" +
			"work like sbatch, squeue, sinfo, scancel and sacct (and take their options).\n" +
			"hpc install-links makes sbatch, squeue, ... links to this binary.",
		Writer:    e.Stdout,
		ErrWriter: e.Stderr,
		Commands: []*cli.Command{
			upCommand(), downCommand(), loginCommand(),
			slurmVerb(e, "submit", "sbatch", sbatchMain, "submit a batch script (sbatch)", "[OPTIONS] SCRIPT [ARGS...]"),
			slurmVerb(e, "queue", "squeue", queueVerbMain, "show pending and running jobs (squeue; -j also finds jobs that ended)", "[OPTIONS]"),
			slurmVerb(e, "nodes", "sinfo", sinfoMain, "show partitions and nodes (sinfo)", "[OPTIONS]"),
			slurmVerb(e, "cancel", "scancel", scancelMain, "cancel or signal jobs (scancel)", "[OPTIONS] [JOBID...]"),
			slurmVerb(e, "acct", "sacct", sacctMain, "show accounting records of jobs and steps (sacct)", "[OPTIONS]"),
			slurmVerb(e, "scontrol", "", scontrolMain, "show jobs, nodes, partitions, the config; ping (scontrol)", "[OPTIONS] COMMAND [ARGS]"),
			slurmVerb(e, "sacctmgr", "", sacctmgrMain, "show and change QoS, accounts, users and associations (sacctmgr)", "[OPTIONS] COMMAND ENTITY [SPECS]"),
			slurmVerb(e, "srun", "", srunMain, "run a parallel job step, in a job or in a new allocation (srun)", "[OPTIONS] COMMAND [ARGS...]"),
			slurmVerb(e, "salloc", "", sallocMain, "get an allocation and run a shell (or a command) in it (salloc)", "[OPTIONS] [COMMAND [ARGS...]]"),
			slurmVerb(e, "priority", "sprio", sprioMain, "show pending jobs' priorities and their factors (sprio)", "[OPTIONS]"),
			statusCommand(), controllerCommand(), labCommand(e), exportCommand(),
			installLinksCommand(e),
		},
		ExitErrHandler: func(c *cli.Context, err error) {},
	}
	for _, n := range LinkNames {
		if _, ok := slurmCommands[n]; !ok {
			app.Commands = append(app.Commands, &cli.Command{
				Name: n, Hidden: true, SkipFlagParsing: true,
				Action: func(c *cli.Context) error { return exit(notImplemented(e, n, nil)) },
			})
		}
	}
	app.Commands = append(app.Commands, extra...)
	if err := app.Run(args); err != nil {
		if ec, ok := err.(cli.ExitCoder); ok {
			if msg := ec.Error(); msg != "" {
				fmt.Fprintln(e.Stderr, msg)
			}
			return ec.ExitCode()
		}
		fmt.Fprintln(e.Stderr, "hpc: error:", err)
		return 1
	}
	return 0
}

// slurmVerb is an hpc verb that runs a Slurm command: `hpc queue -u me` is
// `squeue -u me`, and `hpc squeue ...` works too. It parses its own options.
func slurmVerb(e *Env, verb, slurm string, main slurmMain, usage, argsUsage string) *cli.Command {
	name := slurm
	if name == "" {
		name = verb
	}
	c := &cli.Command{
		Name:            verb,
		Usage:           usage,
		ArgsUsage:       argsUsage,
		SkipFlagParsing: true,
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			return exit(main(e, name, c.Args().Slice()))
		},
	}
	if slurm != "" {
		c.Aliases = []string{slurm}
	}
	return c
}

// exit ends a command with a status and no further message (the command
// has printed what Slurm prints).
func exit(code int) error { return cli.Exit("", code) }
