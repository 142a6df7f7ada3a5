package commands

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
)

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Aliases:   []string{"scancel"},
		Usage:     "cancel jobs (scancel)",
		ArgsUsage: "JOBID...",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "cancel every job of this user"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}},
		},
		HideHelpCommand: true,
		Action:          runCancel,
	}
}

func runCancel(c *cli.Context) error {
	var ids []uint64
	for _, a := range c.Args().Slice() {
		id, err := strconv.ParseUint(a, 10, 64)
		if err != nil || id == 0 {
			fmt.Fprintf(os.Stderr, "scancel: error: Invalid job id %s\n", a)
			return exit(1)
		}
		ids = append(ids, id)
	}
	who := c.String("user")
	if len(ids) == 0 && who == "" {
		fmt.Fprintln(os.Stderr, "scancel: error: No job identification provided")
		return exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := client(ctx)
	if err != nil {
		return cancelFailed(err)
	}
	if who != "" {
		jobs, err := cl.Jobs(ctx)
		if err != nil {
			return cancelFailed(err)
		}
		for _, j := range jobs {
			if !j.State.Final() && (j.User == who || strconv.FormatUint(uint64(j.UID), 10) == who) {
				ids = append(ids, j.ID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
	}
	results, err := cl.Cancel(ctx, api.CancelRequest{JobIDs: ids})
	if err != nil {
		return cancelFailed(err)
	}
	status := 0
	for _, r := range results {
		if c.Bool("verbose") {
			fmt.Fprintf(os.Stderr, "scancel: Terminating job %d\n", r.JobID)
		}
		if r.Error == "" {
			continue
		}
		// Like scancel, stay quiet about jobs that are unknown or already
		// done unless asked to be verbose; other errors always show.
		quiet := r.Error == api.ErrInvalidJobID || r.Error == api.ErrAlreadyDone
		if !quiet || c.Bool("verbose") {
			fmt.Fprintf(os.Stderr, "scancel: error: Kill job error on job id %d: %s\n", r.JobID, r.Error)
		}
		if !quiet {
			status = 1
		}
	}
	return exit(status)
}

func cancelFailed(err error) error {
	_, msg := errText(err)
	fmt.Fprintf(os.Stderr, "scancel: error: %s\n", msg)
	return exit(1)
}
