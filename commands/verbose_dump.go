package commands

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"hpc/cluster/hostlist"
	"hpc/commands/format"
)

// What squeue -v and sinfo -v print before their output: the options as
// the command understood them, one "name = value" line each, in Slurm's
// order and spacing. An unset string prints as Slurm's C library prints a
// null one, "(null)".

const dumpRule = "-----------------------------\n"

func nullable(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}

func tf(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// squeueDump is what squeue -v prints of its options.
type squeueDump struct {
	all, array, federation, local, priority, sibling bool
	format, jobs, names, nodes, partitions, sort     string
	states, steps, users, licenses, reservation      string
	iterate, jobFlag, startFlag, stepFlag, verbose   int
}

func (d squeueDump) write(w io.Writer) {
	var b strings.Builder
	b.WriteString(dumpRule)
	for _, kv := range [][2]string{
		{"all         ", tf(d.all)},
		{"array       ", tf(d.array)},
		{"federation  ", tf(d.federation)},
		{"format      ", nullable(d.format)},
		{"iterate     ", fmt.Sprint(d.iterate)},
		{"job_flag    ", fmt.Sprint(d.jobFlag)},
		{"jobs        ", nullable(d.jobs)},
		{"licenses    ", nullable(d.licenses)},
		{"local       ", tf(d.local)},
		{"names       ", nullable(d.names)},
		{"nodes       ", d.nodes},
		{"partitions  ", nullable(d.partitions)},
		{"priority    ", tf(d.priority)},
		{"reservation ", nullable(d.reservation)},
		{"sibling      ", tf(d.sibling)}, // sic: Slurm's squeue has one space more here
		{"sort        ", nullable(d.sort)},
		{"start_flag  ", fmt.Sprint(d.startFlag)},
		{"states      ", nullable(d.states)},
		{"step_flag   ", fmt.Sprint(d.stepFlag)},
		{"steps       ", nullable(d.steps)},
		{"users       ", nullable(d.users)},
		{"verbose     ", fmt.Sprint(d.verbose)},
	} {
		b.WriteString(kv[0] + "= " + kv[1] + "\n")
	}
	b.WriteString(dumpRule)
	b.WriteString("\n\n")
	io.WriteString(w, b.String())
}

// sinfoDump is what sinfo -v prints of its options.
type sinfoDump struct {
	all, dead, filtering, long, noHeader, nodeField, nodeFlag bool
	partField, responding, summarize, reservation             bool
	exact, iterate, verbose                                   int
	format, nodes, partition, states, sort                    string
	longForm                                                  bool // format is -O's (or a default)
}

// sinfoDefaultFormat is the format sinfo settles on when none was given
// (SINFO_FORMAT included): its -O style default for the view asked for.
// partField and nodeField report the defaults whose column widths sinfo
// sizes to the data.
func sinfoDefaultFormat(summarize, nodeFlag, long, reasons bool) (f string, longForm, partField, nodeField bool) {
	switch {
	case summarize:
		return "partition:9 ,available:.5 ,time:.10 ,nodeaiot:.16 ,nodelist:0", true, true, false
	case nodeFlag && long:
		return "nodelist:0 ,nodes:.6 ,partition:.9 ,statelong:.11 ,cpus:4 ,socketcorethread:.8 ,memory:.6 ,disk:.8 ,weight:.6 ,features:.8 ,reason:20", true, true, true
	case nodeFlag:
		return "nodelist:0 ,nodes:.6 ,partition:.9 ,statecompact:6", true, true, true
	case reasons && long:
		return "reason:20 ,userlong:12 ,timestamp:19 ,statecompact:6 ,nodelist:0", true, false, false
	case reasons:
		return "reason:20 ,user:9 ,timestamp:19 ,nodelist:0", true, false, false
	case long:
		return "partition:9 ,available:.5 ,time:.10 ,size:.10 ,root:.4 ,oversubscribe:.8 ,groups:.10 ,nodes:.6 ,statelong:.11 ,nodelist:0", true, true, false
	}
	return "partition:9 ,available:.5 ,time:.10 ,nodes:.6 ,statecompact:.6 ,nodelist:0", true, true, false
}

// sinfoFlagLines are the match flags sinfo -v lists: the text before the
// value, in Slurm's order and spacing, and the flag's key (reservation is
// the -T option, not a field).
var sinfoFlagLines = [][2]string{
	{"alloc_mem_flag  = ", "alloc_mem"}, {"avail_flag      = ", "avail"},
	{"comment_flag    = ", "comment"}, {"cpus_flag       = ", "cpus"},
	{"default_time_flag =", "default_time"}, {"disk_flag       = ", "disk"},
	{"extra_flag      = ", "extra"}, {"features_flag   = ", "features"},
	{"features_flag_act = ", "features_act"}, {"groups_flag     = ", "groups"},
	{"gres_flag       = ", "gres"}, {"gres_used_flag  = ", "gres_used"},
	{"job_size_flag   = ", "job_size"}, {"max_time_flag   = ", "max_time"},
	{"memory_flag     = ", "memory"}, {"partition_flag  = ", "partition"},
	{"port_flag       = ", "port"}, {"priority_job_factor_flag   = ", "priority_job_factor"},
	{"priority_tier_flag   = ", "priority_tier"}, {"reason_flag     = ", "reason"},
	{"reason_timestamp_flag = ", "reason_timestamp"}, {"reason_user_flag = ", "reason_user"},
	{"reservation_flag = ", "reservation"}, {"root_flag       = ", "root"},
	{"oversubscribe_flag      = ", "oversubscribe"}, {"state_flag      = ", "state"},
	{"statecomplete_flag = ", "statecomplete"}, {"weight_flag     = ", "weight"},
}

// sinfoFieldFlags maps sinfo's -o letters and -O names to the match flag
// each sets (those sinfo -v lists).
var sinfoFieldFlags = map[string]string{
	"a": "avail", "b": "features_act", "c": "cpus", "C": "cpus", "d": "disk", "E": "reason",
	"f": "features", "g": "groups", "G": "gres", "h": "oversubscribe", "H": "reason_timestamp",
	"I": "priority_job_factor", "l": "max_time", "L": "default_time", "m": "memory",
	"p": "priority_tier", "P": "partition", "r": "root", "R": "partition", "s": "job_size",
	"t": "state", "T": "state", "u": "reason_user", "U": "reason_user", "w": "weight",
	"allocmem": "alloc_mem", "available": "avail", "comment": "comment", "cpus": "cpus",
	"cpusstate": "cpus", "defaulttime": "default_time", "disk": "disk", "extra": "extra",
	"features": "features", "features_act": "features_act", "groups": "groups", "gres": "gres",
	"gresused": "gres_used", "memory": "memory", "partition": "partition",
	"partitionname": "partition", "port": "port", "priorityjobfactor": "priority_job_factor",
	"prioritytier": "priority_tier", "reason": "reason", "root": "root", "oversubscribe": "oversubscribe",
	"share": "oversubscribe", "size": "job_size", "statecompact": "state",
	"statecomplete": "statecomplete", "statelong": "state", "time": "max_time",
	"timestamp": "reason_timestamp", "user": "reason_user", "userlong": "reason_user", "weight": "weight",
}

// sinfoFormatFlags is the set of match flags a format sets.
func sinfoFormatFlags(f string, longForm bool) map[string]bool {
	set := map[string]bool{}
	if longForm {
		for _, tok := range strings.Split(f, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(tok), ":")
			if flag, ok := sinfoFieldFlags[strings.ToLower(name)]; ok {
				set[flag] = true
			}
		}
		return set
	}
	if strings.Contains(f, "%all") {
		for k, flag := range sinfoFieldFlags {
			if len(k) == 1 {
				set[flag] = true
			}
		}
		return set
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		k := i + 1
		for k < len(f) && (f[k] == '.' || f[k] == '-' || (f[k] >= '0' && f[k] <= '9')) {
			k++
		}
		if k < len(f) {
			if flag, ok := sinfoFieldFlags[string(f[k])]; ok {
				set[flag] = true
			}
		}
		i = k
	}
	return set
}

func (d sinfoDump) write(w io.Writer) {
	var b strings.Builder
	nodes, part := d.nodes, d.partition
	if nodes == "" {
		nodes = "n/a"
	}
	if part == "" {
		part = "n/a"
	}
	b.WriteString(dumpRule)
	for _, kv := range [][2]string{
		{"dead        ", tf(d.dead)},
		{"exact       ", fmt.Sprint(d.exact)},
		{"filtering   ", tf(d.filtering)},
		{"format      ", nullable(d.format)},
		{"iterate     ", fmt.Sprint(d.iterate)},
		{"long        ", tf(d.long)},
		{"no_header   ", tf(d.noHeader)},
		{"node_field  ", tf(d.nodeField)},
		{"node_format ", tf(d.nodeFlag)},
		{"nodes       ", nodes},
		{"part_field  ", tf(d.partField)},
		{"partition   ", part},
		{"responding  ", tf(d.responding)},
		{"states      ", nullable(d.states)},
		{"sort        ", nullable(d.sort)},
		{"summarize   ", tf(d.summarize)},
		{"verbose     ", fmt.Sprint(d.verbose)},
	} {
		b.WriteString(kv[0] + "= " + kv[1] + "\n")
	}
	b.WriteString(dumpRule)
	b.WriteString("all_flag        = " + tf(d.all) + "\n")
	flags := sinfoFormatFlags(d.format, d.longForm)
	flags["reservation"] = d.reservation
	for _, l := range sinfoFlagLines {
		b.WriteString(l[0] + tf(flags[l[1]]) + "\n")
	}
	b.WriteString(dumpRule + "\n")
	io.WriteString(w, b.String())
}

// givenOpts records the options a command was given, as given: how many
// times each, and the last value.
type givenOpts struct {
	count map[string]int
	value map[string]string
}

func (g *givenOpts) note(id, val string) {
	if g.count == nil {
		g.count, g.value = map[string]int{}, map[string]string{}
	}
	g.count[id]++
	g.value[id] = val
}

// dump is what squeue -v prints: the options as given (or as the
// environment gave them), the node list as a ranged host list.
func (p *squeueParams) dump(e *Env) squeueDump {
	g := p.given
	d := squeueDump{
		all: g.count["a"] > 0, array: p.array, federation: g.count["federation"] > 0,
		local: g.count["local"] > 0, priority: g.count["P"] > 0, sibling: g.count["sibling"] > 0,
		format: p.format, jobs: g.value["j"], names: g.value["n"], partitions: g.value["p"],
		sort: p.sort, states: g.value["t"], steps: g.value["s"], users: g.value["u"],
		licenses: g.value["L"], reservation: g.value["R"], iterate: p.iterate, verbose: g.count["v"],
	}
	if d.jobs == "" && len(p.jobs) > 0 { // given after -j, as its operand
		ids := make([]string, len(p.jobs))
		for i, r := range p.jobs {
			ids[i] = strconv.FormatUint(r.id, 10)
			if r.task >= 0 {
				ids[i] += "_" + strconv.Itoa(r.task)
			}
		}
		d.jobs = strings.Join(ids, ",")
	}
	if d.steps == "" && len(p.steps) > 0 {
		d.steps = strings.Join(p.steps, ",")
	}
	if p.jobFlag || g.count["j"] > 0 {
		d.jobFlag = 1
	}
	if p.start {
		d.startFlag = 1
	}
	if p.stepFlag || g.count["s"] > 0 {
		d.stepFlag = 1
	}
	if g.count["me"] > 0 {
		d.users = strconv.Itoa(e.UID)
	}
	for _, v := range []struct {
		dst *string
		env string
	}{{&d.users, "SQUEUE_USERS"}, {&d.states, "SQUEUE_STATES"}, {&d.partitions, "SQUEUE_PARTITION"}, {&d.names, "SQUEUE_NAMES"}} {
		if *v.dst == "" {
			*v.dst = e.Getenv(v.env)
		}
	}
	if len(p.nodes) > 0 {
		d.nodes = hostlist.Compress(p.nodes)
	}
	return d
}

// sinfoDumpOf is what sinfo -v prints of the options it was given (g) and
// settled (o), after the environment.
func sinfoDumpOf(e *Env, g givenOpts, o format.SinfoOptions, iterate int) sinfoDump {
	d := sinfoDump{
		all: g.count["a"] > 0, dead: g.count["d"] > 0, exact: g.count["e"], long: o.Long,
		noHeader: o.NoHeader, nodeFlag: o.NodeCentric, responding: g.count["r"] > 0,
		summarize: o.Summarize, reservation: g.count["T"] > 0, iterate: iterate, verbose: g.count["v"],
		nodes: g.value["n"], partition: g.value["p"], states: g.value["t"], sort: o.Sort,
	}
	if d.partition == "" && g.count["a"] == 0 {
		d.partition = e.Getenv("SINFO_PARTITION")
	}
	if d.sort == "" {
		d.sort = e.Getenv("SINFO_SORT")
	}
	if d.states == "" && o.ListReasons {
		d.states = "down,fail,drain"
	}
	switch {
	case o.Format != "":
		d.format = o.Format
	case o.LongFormat != "":
		d.format, d.longForm = o.LongFormat, true
	default:
		d.format, d.longForm, d.partField, d.nodeField = sinfoDefaultFormat(o.Summarize, o.NodeCentric, o.Long, o.ListReasons)
	}
	d.filtering = d.dead || d.nodes != "" || d.partition != "" || d.responding || d.states != ""
	return d
}
