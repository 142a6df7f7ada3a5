package commands

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
)

// controllerCommand is hpc controller add|remove NODE: the leader changes
// the Raft voter set, one change at a time, and the change outlives
// restarts (the Raft log holds the voter set, the node its role).
func controllerCommand() *cli.Command {
	sub := func(action, usage string) *cli.Command {
		return &cli.Command{
			Name:            action,
			Usage:           usage,
			ArgsUsage:       "NODE",
			HideHelpCommand: true,
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					fmt.Fprintf(os.Stderr, "hpc: error: hpc controller %s takes one node name\n", action)
					return exit(2)
				}
				return changeController(action, c.Args().First())
			},
		}
	}
	return &cli.Command{
		Name:  "controller",
		Usage: "add a node to the controllers (Raft voters) or remove one (root and SlurmUser)",
		Description: "add makes a running node a controller: it restarts its daemon running Raft\n" +
			"(jobs in containers run on), receives the log, then votes. remove takes a\n" +
			"controller out of the voters; the leader refuses removing the last one, or\n" +
			"one whose removal leaves fewer live controllers than a quorum.",
		HideHelpCommand: true,
		Subcommands: []*cli.Command{
			sub("add", "make NODE a controller"),
			sub("remove", "stop NODE being a controller"),
		},
	}
}

func changeController(action, node string) error {
	// Adding waits for the node to restart and catch up with the log.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := client(ctx)
	if err != nil {
		return statusFailed(err)
	}
	res, err := cl.ControllerChange(ctx, api.ControllerChange{Action: action, Node: node})
	if err != nil {
		return statusFailed(err)
	}
	done := map[string]string{"add": "added to", "remove": "removed from"}[action]
	fmt.Printf("%s %s the controllers.\n", node, done)
	fmt.Printf("Controllers (Raft voters): %s\n", strings.Join(res.Voters, ", "))
	if res.Note != "" {
		fmt.Println("Note: " + res.Note)
	}
	return nil
}
