package commands

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
	"hpc/commands/format"
)

var sstatOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts("allsteps,a", "helpformat,e", "help,h", "pidformat,i", "jobs,j,:", "noheader,n",
		"fields,o,:", "format,o,:", "noconvert", "parsable,p", "parsable2,P", "usage", "verbose,v", "version,V")
})

const sstatUsage = "Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help\n"

const sstatHelp = `sstat [<OPTION>] -j <job(.stepid)>
    Valid <OPTION> values are:
      -a, --allsteps:
                   with a job id alone, show every running step of the job
                   (the batch step included), not only its first one.
      -e, --helpformat:
                   list the field names --format accepts.
     -h, --help:   show this help.
     -i, --pidformat:
                   show the processes of each step on each node
                   (JobId,Nodes,Pids).
     -j, --jobs:
                   <job(.step)>[,...]: the steps to show (required). A job
                   id alone means its lowest numbered running step (or all
                   of them with --allsteps); 'batch' names the batch step.
     -n, --noheader:
                   leave the header out.
     --noconvert:  print sizes in bytes, without units (2048M stays
                   2147483648).
     -o, --format:
                   comma-separated fields to show (see --helpformat).
     -p, --parsable: fields separated by '|', one after the last field too
     -P, --parsable2: fields separated by '|', none after the last field
     --usage:      show a short usage line.
     -v, --verbose:
                   say more about what is asked for.
     -V, --version: show the Slurm version hpc follows.

`

// sstatTarget is one -j entry: a job and maybe a step ("" for none).
type sstatTarget struct {
	job  uint64
	step string
}

// parseSstatJobs reads a -j list: JOB, JOB.STEP or JOB.batch, comma
// separated.
func parseSstatJobs(s string) ([]sstatTarget, error) {
	var out []sstatTarget
	for _, item := range splitList(s) {
		j, st, _ := strings.Cut(item, ".")
		id, err := strconv.ParseUint(j, 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("Invalid job id: %s", item)
		}
		if st != "" && st != "batch" && st != "extern" {
			if _, err := strconv.ParseUint(st, 10, 32); err != nil {
				return nil, fmt.Errorf("Invalid job id: %s", item)
			}
		}
		out = append(out, sstatTarget{job: id, step: st})
	}
	return out, nil
}

// sstatMain is sstat: the live usage of running steps, read on their
// nodes now, one line per step.
func sstatMain(e *Env, prog string, args []string) int {
	var (
		targets  []sstatTarget
		fields   []string
		o        format.SstatOptions
		all, pid bool
		verbose  int
	)
	rest, code, done := parseOpts(e, prog, sstatOpts(), args, func(opt *jobspec.Opt, val string, has bool) error {
		switch opt.ID() {
		case "a":
			all = true
		case "e":
			io.WriteString(e.Stdout, format.SstatHelpFormat())
			return quit{0}
		case "h", "help":
			io.WriteString(e.Stdout, sstatHelp)
			return quit{0}
		case "i":
			pid = true
			fields = append(fields, format.PidSstatFormat)
		case "j":
			t, err := parseSstatJobs(val)
			if err != nil {
				e.errorf(prog, "%v", err)
				return quit{1}
			}
			targets = append(targets, t...)
		case "n":
			o.NoHeader = true
		case "o":
			fields = append(fields, val)
		case "noconvert":
			o.NoConvert = true
		case "p":
			o.ParsableTrailing = true
		case "P":
			o.Parsable = true
		case "v":
			verbose++
		default:
			if handled, err := helpOrVersion(e, opt.ID(), sstatHelp, sstatUsage); handled {
				return err
			}
		}
		return nil
	})
	if done {
		return code
	}
	if len(rest) > 0 {
		t, err := parseSstatJobs(rest[0])
		if err != nil {
			e.errorf(prog, "%v", err)
			return 1
		}
		targets = append(targets, t...)
	}
	if len(targets) == 0 {
		e.errorf(prog, "You didn't give me any jobs to stat.")
		return 1
	}
	if len(fields) == 0 {
		fields = []string{format.DefaultSstatFormat}
	}
	cols, err := format.ParseSstatFields(fields)
	if err != nil {
		e.errorf(prog, "%v", err)
		return 1
	}
	cl, ctx, cancel, err := connect(e)
	if err != nil {
		e.errorf(prog, "%v", err)
		return 1
	}
	defer cancel()
	io.WriteString(e.Stdout, format.SstatHeader(cols, o))
	for _, t := range targets {
		if verbose > 0 {
			fmt.Fprintf(e.Stderr, "%s: debug:  requesting info for job %d%s\n", prog, t.job, dotStep(t.step))
		}
		resp, err := cl.Stat(ctx, api.StatRequest{JobID: t.job, Step: t.step, All: all})
		var ae *api.Error
		if err != nil && !errors.As(err, &ae) {
			e.errorf(prog, "%v", err)
			return 1
		}
		switch {
		case err != nil:
			e.errorf(prog, "couldn't get steps for job %d", t.job)
		case len(resp.Steps) == 0 && t.step == "":
			e.errorf(prog, "No steps running for job %d", t.job)
		case len(resp.Steps) == 0:
			e.errorf(prog, "StepId=%d.%s not found running.", t.job, t.step)
		}
		if err != nil {
			continue
		}
		for _, s := range resp.Steps {
			if s.Error != "" {
				e.errorf(prog, "problem getting step_layout for StepId=%d.%s: %s", s.JobID, s.Step, s.Error)
				continue
			}
			printSstatStep(e.Stdout, s, cols, o, pid)
		}
	}
	return 0
}

func dotStep(s string) string {
	if s == "" {
		return ""
	}
	return "." + s
}

// printSstatStep prints a step's line, or with -i one line per node.
func printSstatStep(w io.Writer, s api.StepStat, cols []format.SstatField, o format.SstatOptions, perNode bool) {
	if !perNode {
		io.WriteString(w, format.SstatLine(s, cols, o))
		return
	}
	nodes := append([]string(nil), s.Nodes...)
	sort.Strings(nodes)
	for _, n := range nodes {
		one := api.StepStat{JobID: s.JobID, Step: s.Step, Nodes: []string{n}}
		for _, t := range s.Tasks {
			if t.Node == n {
				one.Tasks = append(one.Tasks, t)
			}
		}
		io.WriteString(w, format.SstatLine(one, cols, o))
	}
}
