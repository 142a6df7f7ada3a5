package commands

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
	"hpc/commands/format"
)

func queueCommand() *cli.Command {
	return &cli.Command{
		Name:    "queue",
		Aliases: []string{"squeue"},
		Usage:   "show pending and running jobs (squeue)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "job ids, comma separated"},
			&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "user names or uids, comma separated"},
			&cli.BoolFlag{Name: "me", Usage: "only my jobs"},
			&cli.StringFlag{Name: "partition", Aliases: []string{"p"}},
			&cli.StringFlag{Name: "states", Aliases: []string{"t"}, Usage: "states (PD,R,CD,... or ALL)"},
			&cli.BoolFlag{Name: "long", Aliases: []string{"l"}},
			&cli.BoolFlag{Name: "noheader", Aliases: []string{"h"}},
			&cli.StringFlag{Name: "format", Aliases: []string{"o"}},
		},
		HideHelpCommand: true,
		Action:          runQueue,
	}
}

func runQueue(c *cli.Context) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client(ctx)
	if err == nil {
		var jobs []api.Job
		if jobs, err = cl.Jobs(ctx); err == nil {
			return printQueue(c, jobs)
		}
	}
	_, msg := errText(err)
	fmt.Fprintf(os.Stderr, "slurm_load_jobs error: %s\n", msg)
	return exit(1)
}

func printQueue(c *cli.Context, jobs []api.Job) error {
	if f := c.String("format"); f != "" {
		if _, err := format.ParseSqueueFormat(f); err != nil {
			fmt.Fprintf(os.Stderr, "squeue: error: %v\n", err)
			return exit(1)
		}
	}
	ids := map[uint64]bool{}
	for _, s := range splitList(c.String("jobs")) {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "squeue: error: Invalid job id: %s\n", s)
			return exit(1)
		}
		ids[id] = true
	}
	users := map[string]bool{}
	for _, u := range splitList(c.String("user")) {
		users[u] = true
	}
	if c.Bool("me") {
		if u, err := user.Current(); err == nil {
			users[u.Username] = true
		}
	}
	parts := map[string]bool{}
	for _, p := range splitList(c.String("partition")) {
		parts[p] = true
	}
	states := map[string]bool{}
	for _, s := range splitList(strings.ToUpper(c.String("states"))) {
		states[s] = true
	}
	var out []api.Job
	for _, j := range jobs {
		switch {
		case len(ids) > 0 && !ids[j.ID]:
			continue
		case len(users) > 0 && !users[j.User] && !users[strconv.FormatUint(uint64(j.UID), 10)]:
			continue
		case len(parts) > 0 && !parts[j.Spec.Partition]:
			continue
		case len(states) > 0:
			if !states["ALL"] && !states[j.State.Short()] && !states[string(j.State)] {
				continue
			}
		case len(ids) == 0 && j.State.Final():
			// By default squeue shows jobs that are pending, running or
			// completing; -j shows a job in any state.
			continue
		}
		out = append(out, j)
	}
	if len(ids) > 0 && len(out) == 0 {
		fmt.Fprintf(os.Stderr, "slurm_load_jobs error: %s\n", api.ErrInvalidJobID)
		return exit(1)
	}
	fmt.Print(format.Squeue(out, time.Now(), format.SqueueOptions{
		Format: c.String("format"), Long: c.Bool("long"), NoHeader: c.Bool("noheader"),
	}))
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
