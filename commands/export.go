package commands

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/config"
	"hpc/cluster/export"
)

// exportCommand is `hpc export slurm DIR`: the files of a production Slurm
// 22.05 cluster of the same shape (cluster/export), from the running
// cluster's live configuration and sacctmgr records, or from a slurm.conf
// (--config) when no cluster runs.
func exportCommand() *cli.Command {
	return &cli.Command{
		Name:            "export",
		Usage:           "write the configuration of a real Slurm cluster of the same shape",
		HideHelpCommand: true,
		Subcommands: []*cli.Command{{
			Name:      "slurm",
			Usage:     "slurm.conf, gres.conf, topology.conf, cgroup.conf, sacctmgr.sh and a README for Slurm 22.05, into DIR",
			ArgsUsage: "DIR",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "config", Usage: "export this slurm.conf (with the gres.conf and topology.conf beside it) instead of the running cluster's"},
				&cli.StringFlag{Name: "host", Usage: "this machine's name, for a cluster whose hosts are all on loopback addresses (default: the host name)"},
			},
			HideHelpCommand: true,
			Action:          runExportSlurm,
		}},
	}
}

func runExportSlurm(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("hpc: error: give the directory to write into: hpc export slurm DIR", 2)
	}
	dir := c.Args().First()
	src, err := exportSource(c.String("config"))
	if err != nil {
		return cli.Exit("hpc: error: "+err.Error(), 1)
	}
	src.Host = c.String("host")
	if src.Host == "" {
		h, _ := os.Hostname()
		src.Host, _, _ = strings.Cut(h, ".")
	}
	files, err := export.Slurm(src)
	if err == nil {
		err = export.Write(dir, files)
	}
	if err != nil {
		return cli.Exit("hpc: error: "+err.Error(), 1)
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	fmt.Printf("Wrote %s into %s\n", strings.Join(names, ", "), dir)
	fmt.Printf("Read %s for what to set up (munge, slurmdbd, SlurmUser) before starting Slurm.\n", filepath.Join(dir, "README"))
	return nil
}

// exportSource reads what to export: the slurm.conf at path, or, when path
// is "", the running cluster's live configuration (scontrol's partition
// changes and reconfigure included) and its sacctmgr records, asked of its
// daemon as the other commands ask.
func exportSource(path string) (export.Source, error) {
	if path != "" {
		cfg, err := config.LoadAll(path)
		if err != nil {
			return export.Source{}, err
		}
		return export.Source{Config: cfg, From: path}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client(ctx)
	if err != nil {
		detail, msg := errText(err)
		return export.Source{}, fmt.Errorf("%s %s; to export a slurm.conf instead, give --config FILE", msg, detail)
	}
	// The leader's slurm.conf, with the partitions as they are now (a
	// node other than the leader may not have applied the latest change
	// yet); gres.conf's devices and topology.conf's switches, which only a
	// restart or reconfigure changes, from the node asked.
	file, err := cl.ConfigFile(ctx)
	if err != nil {
		return export.Source{}, fmt.Errorf("reading the cluster's configuration: %w", err)
	}
	cfg, err := config.Parse(strings.NewReader(file.Text))
	if err != nil {
		return export.Source{}, fmt.Errorf("reading the cluster's configuration: %w", err)
	}
	var local config.Config
	if err := cl.Config(ctx, &local); err != nil {
		return export.Source{}, fmt.Errorf("reading the cluster's configuration: %w", err)
	}
	cfg.GresDevices, cfg.Topology = local.GresDevices, local.Topology
	records, err := cl.Acctmgr(ctx)
	if err != nil {
		return export.Source{}, fmt.Errorf("reading the cluster's sacctmgr records: %w", err)
	}
	return export.Source{Config: cfg, Records: records, From: "the running cluster " + cfg.ClusterName}, nil
}
