package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"hpc/commands/scenario"
)

// labCommand is `hpc lab`: teaching tools for a running lab; today its
// guided scenarios (`hpc lab scenario list|run NAME`, commands/scenario).
func labCommand(e *Env) *cli.Command {
	return &cli.Command{
		Name:  "lab",
		Usage: "teaching tools for a running lab (guided scenarios)",
		Subcommands: []*cli.Command{{
			Name:  "scenario",
			Usage: "guided scenarios: each sets up, runs and explains a workload, then checks itself",
			Subcommands: []*cli.Command{
				{
					Name:   "list",
					Usage:  "list the scenarios",
					Action: func(c *cli.Context) error { return listScenarios(e) },
				},
				{
					Name:      "run",
					Usage:     "run scenarios by name, or all of them (exit 0: all PASS, 1: a FAIL, 2: SKIP)",
					ArgsUsage: "NAME... | all",
					Flags: []cli.Flag{
						&cli.Float64Flag{Name: "scale", Value: 1, Usage: "multiply the jobs' run times (0.1: a quick run)"},
						&cli.BoolFlag{Name: "json", Usage: "print only the verdicts, one JSON object a line"},
						&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the verdicts"},
						&cli.StringFlag{Name: "image", Usage: "the root file system (a directory) the containers scenario runs its job in (default: the first of the lab directory's images/)"},
					},
					Action: func(c *cli.Context) error { return runScenarios(e, c) },
				},
			},
		}},
	}
}

func listScenarios(e *Env) error {
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHAT IT SHOWS\tNEEDS")
	for _, s := range scenario.List() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Title, s.Needs)
	}
	tw.Flush()
	fmt.Fprintln(e.Stdout, "\nRun one on the running lab: hpc lab scenario run NAME (--scale 0.2 for a quick run)")
	return nil
}

func runScenarios(e *Env, c *cli.Context) error {
	names := c.Args().Slice()
	if len(names) == 1 && names[0] == "all" {
		names = nil
		for _, s := range scenario.List() {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return cli.Exit("hpc: error: name a scenario (hpc lab scenario list), or all", 1)
	}
	var run []*scenario.Scenario
	for _, n := range names {
		s := scenario.Find(n)
		if s == nil {
			return cli.Exit(fmt.Sprintf("hpc: error: no scenario %q (hpc lab scenario list)", n), 1)
		}
		run = append(run, s)
	}
	if c.Float64("scale") <= 0 {
		return cli.Exit("hpc: error: --scale must be above 0", 1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cl, err := e.Client(ctx)
	if err != nil {
		detail, msg := errText(err)
		return cli.Exit(strings.TrimSpace("hpc: error: "+msg+"\n"+detail), 1)
	}
	term := isTerminal(e.Stdout)
	o := scenario.Options{Scale: c.Float64("scale"), Terminal: term, Cwd: e.Cwd, Env: e.Environ, Hostname: e.Hostname,
		Lab: findScenarioLab(e), Image: c.String("image")}
	if !c.Bool("json") && !c.Bool("quiet") {
		o.Out = e.Stdout
		if term {
			o.Waiting = func(what string) scenario.Waiter {
				return spinner{newProgress(e.Stdout, -1, "waiting for "+what)}
			}
		}
	}
	code := 0
	for _, s := range run {
		v := scenario.Execute(ctx, cl, s, o)
		if c.Bool("json") {
			b, _ := json.Marshal(v)
			fmt.Fprintln(e.Stdout, string(b))
		} else {
			scenario.Print(e.Stdout, v, term)
		}
		switch {
		case v.Result == scenario.Fail || !v.LabRestored:
			code = 1
		case v.Result == scenario.Skip && code == 0:
			code = 2
		}
		if ctx.Err() != nil {
			break
		}
	}
	return exit(code)
}

// spinner shows a scenario's wait on the terminal (progress.go).
type spinner struct{ p *progress }

func (s spinner) Clear() {
	if s.p != nil {
		_ = s.p.bar.Clear()
	}
}

func (s spinner) Done() { s.p.done() }
