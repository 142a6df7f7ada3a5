package commands

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
	"hpc/commands/format"
)

var sinfoOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts(
		"all,a", "dead,d", "exact,e", "federation", "help", "hide", "iterate,i,:", "local", "long,l",
		"cluster,M,:", "clusters,M,:", "nodes,n,:", "noconvert", "noheader,h", "Node,N", "format,o,:",
		"Format,O,:", "partition,p,:", "responding,r", "list-reasons,R", "summarize,s", "sort,S,:",
		"states,t,:", "reservation,T", "usage", "verbose,v", "version,V", "json", "yaml",
	)
})

// sinfoStateList is sinfo's list of node states, for its -t error.
const sinfoStateList = "unknown,down,idle,allocated,error,mixed,future,drain,drained,draining," +
	"no_respond,reserved,perfctrs,cloud,completing,powering_down,powered_down,power_down," +
	"powering_up,fail,maint,reboot_requested,reboot_issued,planned"

// sinfoMain is sinfo.
func sinfoMain(e *Env, prog string, args []string) int {
	var o format.SinfoOptions
	var parts map[string]bool
	var nodes []string
	var states []string
	allStates, dead, responding, resv := false, false, false, false
	aSet, pSet := false, false
	iterate := 0
	cluster := "" // -M: this cluster's name
	fail := func(f string, a ...any) error {
		e.errorf(prog, f, a...)
		return quit{1}
	}
	var given givenOpts // for -v
	mime := ""          // --json, --yaml: openapi/v0.0.38's nodes, nothing else
	rest, code, done := parseOpts(e, prog, sinfoOpts(), args, func(opt *jobspec.Opt, val string, _ bool) error {
		given.note(opt.ID(), val)
		switch opt.ID() {
		case "a":
			aSet, parts = true, nil
		case "d":
			dead = true
		case "e", "federation", "hide", "local", "noconvert", "v":
		case "help":
			io.WriteString(e.Stdout, sinfoHelp)
			return quit{0}
		case "usage":
			io.WriteString(e.Stdout, sinfoUsage)
			return quit{0}
		case "i":
			n, _ := strconv.Atoi(val)
			if n <= 0 {
				return fail("Error: invalid entry for --iterate=%s", val)
			}
			iterate = n
		case "l":
			o.Long = true
		case "M":
			name, ok := resolveClusters(e, prog, val)
			if !ok {
				return quit{1}
			}
			cluster = name
		case "n":
			names, ok := expandHosts(val)
			if !ok {
				return fail("'%s' invalid entry for --nodes", val)
			}
			nodes = names
		case "h":
			o.NoHeader = true
		case "N":
			o.NodeCentric = true
		case "o":
			o.Format, o.LongFormat = val, ""
		case "O":
			o.LongFormat, o.Format = val, ""
		case "p":
			pSet = true
			parts = set(splitList(val))
		case "r":
			responding = true
		case "R":
			o.ListReasons = true
		case "s":
			o.Summarize = true
		case "S":
			o.Sort = val
		case "t":
			if strings.EqualFold(val, "all") {
				allStates, states = true, nil
				break
			}
			for _, s := range splitList(val) {
				if _, err := format.NodeStateMatches(api.Node{}, []string{s}); err != nil {
					e.errorf(prog, "Bad state string: \"%s\"", s)
					return fail("valid states: %s", sinfoStateList)
				}
			}
			states = splitList(val)
		case "T":
			resv = true
		case "V":
			fmt.Fprintln(e.Stdout, slurmVersion)
			return quit{0}
		case "json", "yaml":
			mime = opt.Long
		}
		return nil
	})
	if done {
		return code
	}
	if mime != "" {
		return sinfoMime(e, e.Stdout, mime)
	}
	_ = rest // sinfo ignores operands; so does hpc
	if o.Long && (o.Format != "" || o.LongFormat != "") {
		fmt.Fprintf(e.Stderr, "%s: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", prog)
		return 1
	}
	if aSet && pSet {
		e.errorf(prog, "Conflicting options, -a and -p, specified. Please choose one or the other.")
		return 1
	}
	if parts == nil && !aSet {
		if v := e.Getenv("SINFO_PARTITION"); v != "" {
			parts = set(splitList(v))
		}
	}
	if o.Format == "" && o.LongFormat == "" && !o.Summarize && !o.NodeCentric && !o.ListReasons {
		o.Format = e.Getenv("SINFO_FORMAT")
	}
	if o.Format != "" {
		if _, err := format.ParseSinfoFormat(o.Format); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				e.errorf(prog, "%s", line)
			}
		}
	}
	if o.LongFormat != "" {
		if _, err := format.ParseSinfoLongFormat(o.LongFormat); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				e.errorf(prog, "%s", line)
			}
		}
	}
	if o.ListReasons && states == nil && !allStates {
		states = format.ReasonStates
	}
	if given.count["v"] > 0 {
		sinfoDumpOf(e, given, o, iterate).write(e.Stdout)
	}
	for {
		if !o.NoHeader && (iterate > 0 || given.count["v"] > 0) && !o.Long {
			fmt.Fprintln(e.Stdout, format.CTime(e.Now()))
		}
		if cluster != "" && !o.NoHeader {
			fmt.Fprintf(e.Stdout, "CLUSTER: %s\n", cluster)
		}
		code := sinfoOnce(e, o, parts, nodes, states, dead, responding, resv)
		if code != 0 || iterate == 0 {
			return code
		}
		fmt.Fprintln(e.Stdout)
		time.Sleep(time.Duration(iterate) * time.Second)
	}
}

func sinfoOnce(e *Env, o format.SinfoOptions, parts map[string]bool, nodes, states []string, dead, responding, resv bool) int {
	cl, ctx, cancel, err := connect(e)
	var resp *api.NodesResponse
	if err == nil {
		defer cancel()
		resp, err = cl.Nodes(ctx)
	}
	if err != nil {
		_, msg := errText(err)
		fmt.Fprintf(e.Stderr, "slurm_load_partitions: %s\n", msg)
		return 1
	}
	if resv {
		// hpc has no reservations: sinfo -T's header and nothing.
		if !o.NoHeader {
			fmt.Fprintf(e.Stdout, "%-9s  %8s  %19s  %19s  %11s  %s\n", "RESV_NAME", "STATE", "START_TIME", "END_TIME", "DURATION", "NODELIST")
		}
		return 0
	}
	var ps []api.Partition
	for _, p := range resp.Partitions {
		if parts == nil || parts[p.Name] {
			ps = append(ps, p)
		}
	}
	var ns []api.Node
	for _, n := range resp.Nodes {
		if nodes != nil && !containsString(nodes, n.Name) {
			continue
		}
		notResponding := strings.HasSuffix(n.State, "*") || strings.Contains(strings.ToUpper(n.State), "NOT_RESPONDING")
		if (dead && !notResponding) || (responding && notResponding) {
			continue
		}
		if states != nil {
			if ok, _ := format.NodeStateMatches(n, states); !ok {
				continue
			}
		}
		ns = append(ns, n)
	}
	o.Now = e.Now()
	fmt.Fprint(e.Stdout, format.Sinfo(ps, ns, o))
	return 0
}

const sinfoUsage = `Usage: sinfo [-adelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]
             [-S fields] [-o format] [-O Format]
`

const sinfoHelp = `Usage: sinfo [OPTIONS]
  -a, --all                  show all partitions (hpc hides none)
  -d, --dead                 show only non-responding nodes
  -e, --exact                group nodes only on exact match of configuration
  -h, --noheader             no headers on output
  -i, --iterate=seconds      specify an iteration period
  -l, --long                 long output - displays more information
  -n, --nodes=NODES          report on specific node(s)
  -N, --Node                 Node-centric format
  -o, --format=format        format specification (%P %a %l %D %t %N ...)
  -O, --Format=format        long format specification (partition,nodes:10,...)
  -p, --partition=PARTITION  report on specific partition
  -r, --responding           report only responding nodes
  -R, --list-reasons         list reason nodes are down or drained
  -s, --summarize            report state summary only
  -t, --states=node_state    specify the what states of nodes to view
  -T, --reservation          show only reservation information
  -v, --verbose              verbosity level
  -V, --version              output version information and exit
  -S, --sort=fields          sort by these -o letters ('-' descending, '#P'
                             partitions in slurm.conf's order)
      --noconvert            accepted, no effect
  -M, --cluster, --clusters  the cluster to ask (hpc runs one: its name or all)
      --federation, --local, --hide
                             accepted, no effect (one cluster, nothing hidden)
      --json, --yaml         the nodes as slurmrestd's openapi/v0.0.38 gives them

Help options:
  --help                     show this help message
  --usage                    display brief usage message
`
