// Command hpc is a Slurm-style HPC cluster in one binary: every node runs it
// as a daemon, and the same binary is the command line (hpc submit, or
// sbatch, squeue, ... through links).
package main

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"hpc/cluster"
	"hpc/cluster/config"
	"hpc/commands"
	"hpc/exec"
)

func main() {
	// libcontainer re-executes this binary as `hpc init` inside a new
	// container; that must be handled before anything else runs.
	exec.InitIfChild()
	// Run from a job's task (srun in a batch script), this binary is a
	// helper of the job, not its work: the OOM killer should not prefer it.
	exec.ResetOOMScoreAdj()
	switch {
	case os.Getenv("GOGC") != "":
		// The user's choice stands.
	case len(os.Args) < 2 || os.Args[1] != "daemon":
		// A command runs for a moment: collecting garbage as it goes is
		// mostly wasted (decoding a long job list took several cycles);
		// its heap stays small whatever it does.
		debug.SetGCPercent(400)
	default:
		// A daemon runs for weeks beside the jobs: its heap may grow to
		// half again what it holds, not twice. With 5,000 held jobs
		// submitted from a shell a controller's RSS went from 62 to
		// 54 MB, its CPU over the submits not measurably higher.
		debug.SetGCPercent(50)
	}
	os.Exit(commands.Run(os.Args, daemonCommand()))
}

// daemonCommand runs one node in the foreground; `hpc up` starts these.
func daemonCommand() *cli.Command {
	return &cli.Command{
		Name:   "daemon",
		Usage:  "run one node daemon in the foreground (hpc up starts these)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Required: true, Usage: "this node's name in the config"},
			&cli.StringFlag{Name: "dir", Required: true, Usage: "lab directory (node state goes in DIR/NAME)"},
			&cli.StringFlag{Name: "config", Usage: "slurm.conf (default DIR/slurm.conf)"},
			&cli.StringFlag{Name: "key-file", Usage: "cluster key (default DIR/cluster.key)"},
			&cli.StringSliceFlag{Name: "join", Usage: "gossip address to join (host:port); default: every node of the config"},
			&cli.BoolFlag{Name: "plain", Usage: "run steps as plain processes"},
			&cli.BoolFlag{Name: "debug", Usage: "log at debug level"},
		},
		Action: runDaemon,
	}
}

func runDaemon(c *cli.Context) error {
	dir := c.String("dir")
	confPath := c.String("config")
	if confPath == "" {
		confPath = filepath.Join(dir, "slurm.conf")
	}
	keyPath := c.String("key-file")
	if keyPath == "" {
		keyPath = filepath.Join(dir, "cluster.key")
	}
	cfg, err := config.LoadAll(confPath)
	if err != nil {
		return cli.Exit(fmt.Sprintf("hpc daemon: %v", err), 1)
	}
	if cfg.SlurmUser == "" && os.Geteuid() != 0 {
		// A lab of a normal user's: its daemons' user is its SlurmUser.
		if u, err := user.Current(); err == nil {
			cfg.SlurmUser = u.Username
		}
	}
	raw, err := os.ReadFile(keyPath)
	if err != nil {
		return cli.Exit(fmt.Sprintf("hpc daemon: cluster key: %v", err), 1)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		return cli.Exit(fmt.Sprintf("hpc daemon: cluster key %s is not hex: %v", keyPath, err), 1)
	}
	level := slog.LevelInfo
	if c.Bool("debug") {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// A Node: hpc controller add|remove restarts the daemon in its new
	// role within this process.
	d, err := cluster.StartNode(cluster.Options{
		Name:       c.String("name"),
		Config:     cfg,
		Dir:        filepath.Join(dir, c.String("name")),
		Key:        key,
		Join:       c.StringSlice("join"),
		ForcePlain: c.Bool("plain"),
		Logger:     log,
	})
	if err != nil {
		return cli.Exit(fmt.Sprintf("hpc daemon: %v", err), 1)
	}
	log.Info("node up", "name", c.String("name"))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	// SIGTERM stops the daemon as stopping slurmd does: the node's jobs run
	// on, and the next daemon re-attaches to them. SIGINT (Ctrl-C, hpc
	// down) stops the node's jobs too.
	if s := <-sig; s == syscall.SIGTERM {
		log.Info("stopping; running jobs are left running", "signal", s.String())
		d.Stop()
	} else {
		log.Info("shutting down with the node's jobs", "signal", s.String())
		d.Shutdown()
	}
	return nil
}
