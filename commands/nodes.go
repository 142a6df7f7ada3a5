package commands

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
	"hpc/commands/format"
)

func nodesCommand() *cli.Command {
	return &cli.Command{
		Name:    "nodes",
		Aliases: []string{"sinfo"},
		Usage:   "show partitions and nodes (sinfo)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "Node", Aliases: []string{"N"}, Usage: "one line per node"},
			&cli.BoolFlag{Name: "long", Aliases: []string{"l"}},
			&cli.StringFlag{Name: "partition", Aliases: []string{"p"}},
			&cli.BoolFlag{Name: "noheader", Aliases: []string{"h"}},
			&cli.BoolFlag{Name: "version", Aliases: []string{"V"}},
		},
		HideHelpCommand: true,
		Action:          runNodes,
	}
}

func runNodes(c *cli.Context) error {
	if c.Bool("version") {
		fmt.Println("slurm-wlm 22.05.8")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client(ctx)
	var resp *api.NodesResponse
	if err == nil {
		resp, err = cl.Nodes(ctx)
	}
	if err != nil {
		_, msg := errText(err)
		fmt.Fprintf(os.Stderr, "slurm_load_partitions: %s\n", msg)
		return exit(1)
	}
	parts := resp.Partitions
	if want := splitList(c.String("partition")); len(want) > 0 {
		keep := map[string]bool{}
		for _, p := range want {
			keep[p] = true
		}
		parts = parts[:0]
		for _, p := range resp.Partitions {
			if keep[p.Name] {
				parts = append(parts, p)
			}
		}
	}
	fmt.Print(format.Sinfo(parts, resp.Nodes, format.SinfoOptions{
		NodeCentric: c.Bool("Node"), Long: c.Bool("long"), NoHeader: c.Bool("noheader"), Now: time.Now(),
	}))
	return nil
}
