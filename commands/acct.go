package commands

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
	"hpc/commands/format"
)

func acctCommand() *cli.Command {
	return &cli.Command{
		Name:    "acct",
		Aliases: []string{"sacct"},
		Usage:   "show accounting records of jobs and steps (sacct)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "jobs", Aliases: []string{"j"}},
			&cli.BoolFlag{Name: "allusers", Aliases: []string{"a"}},
			&cli.BoolFlag{Name: "allocations", Aliases: []string{"X"}},
			&cli.BoolFlag{Name: "parsable2", Aliases: []string{"P"}},
			&cli.BoolFlag{Name: "noheader", Aliases: []string{"n"}},
			&cli.StringFlag{Name: "format", Aliases: []string{"o"}},
		},
		HideHelpCommand: true,
		Action:          runAcct,
	}
}

func runAcct(c *cli.Context) error {
	q := api.AcctQuery{AllUsers: c.Bool("allusers"), JobsOnly: c.Bool("allocations")}
	for _, s := range splitList(c.String("jobs")) {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sacct: error: Invalid job id: %s\n", s)
			return exit(1)
		}
		q.JobIDs = append(q.JobIDs, id)
	}
	var fields []string
	if f := c.String("format"); f != "" {
		fields = strings.Split(f, ",")
	}
	if _, err := format.ParseSacctFields(fields); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client(ctx)
	var rows []api.AcctRow
	if err == nil {
		rows, err = cl.Acct(ctx, q)
	}
	if err != nil {
		_, msg := errText(err)
		fmt.Fprintf(os.Stderr, "sacct: error: %s\n", msg)
		return exit(1)
	}
	fmt.Print(format.Sacct(rows, format.SacctOptions{Fields: fields, Parsable: c.Bool("parsable2"), NoHeader: c.Bool("noheader")}))
	return nil
}
