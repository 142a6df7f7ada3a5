package commands

import (
	"fmt"
	"strings"

	"hpc/cluster/jobspec"
)

// The --help and --usage texts of sbatch, srun and salloc, made from one
// table: each option once, with the commands that take it. --usage lists
// every option in brackets ("[-N N] [--mem=MB]"), wrapped under the
// command's name, then what follows the options; --help lists them by
// section, one line each. TestHelpListsOptions checks that each option the
// commands' getopt tables accept is here.

// helpSection is where an option's line goes in --help.
type helpSection int

const (
	secJob helpSection = iota
	secNodes
	secMemGPU
	secPlugins
	secHelp
	secInert // accepted by that command, with no effect on hpc
)

var helpSectionTitles = [...]string{
	secJob:     "Job and step options:",
	secNodes:   "Node, task and CPU options:",
	secMemGPU:  "Memory and GPU options:",
	secPlugins: "Options provided by plugins:",
	secHelp:    "Help options:",
	secInert:   "Accepted for compatibility, no effect on hpc:",
}

// jobOptHelp is one option of sbatch, srun or salloc. progs and inert name
// the commands by letter: b sbatch, r srun, a salloc.
type jobOptHelp struct {
	progs string
	short byte
	long  string
	arg   string // "" none, "=X" required, "[=X]" optional
	sec   helpSection
	inert string // the commands on which it has no effect
	desc  string
}

var jobOptHelps = []jobOptHelp{
	{"bra", 'A', "account", "=name", secJob, "", "charge the job to this account"},
	{"bra", 0, "acctg-freq", "=interval", secJob, "bra", "accounting sampling interval"},
	{"b", 'a', "array", "=indexes", secJob, "", "submit a job array with these task indexes (1-5,9%2)"},
	{"b", 0, "batch", "=features", secJob, "b", "features the batch host must have"},
	{"bra", 0, "bb", "=spec", secJob, "bra", "burst buffer specification"},
	{"bra", 0, "bbf", "=file", secJob, "bra", "file with the burst buffer specification"},
	{"bra", 'b', "begin", "=time", secJob, "", "keep the job pending until this time (16:00, now+1hour, a date)"},
	{"a", 0, "bell", "", secJob, "", "ring the terminal bell once the allocation is granted"},
	{"a", 0, "no-bell", "", secJob, "", "never ring the terminal bell"},
	{"bra", 'D', "chdir", "=path", secJob, "", "working directory of the job (relative to the current one)"},
	{"bra", 'M', "clusters", "=names", secJob, "bra", "clusters to submit to (hpc runs one)"},
	{"b", 0, "cluster", "=names", secJob, "b", "the same as --clusters"},
	{"bra", 0, "comment", "=text", secJob, "bra", "free text kept with the job"},
	{"b", 0, "container", "=path", secJob, "b", "OCI bundle for Slurm's own container support"},
	{"bra", 'd', "dependency", "=type:jobid[:time]", secJob, "", "start only once other jobs reach a state (afterok:12)"},
	{"bra", 0, "deadline", "=time", secJob, "bra", "remove the job if it cannot end before this time"},
	{"bra", 0, "delay-boot", "=minutes", secJob, "bra", "wait this long before rebooting nodes for features"},
	{"ra", 'X', "disable-status", "", secJob, "ra", "make the first Ctrl-C end the step without a status report"},
	{"b", 'e', "error", "=file", secJob, "", "file for the script's standard error (%j: job id)"},
	{"r", 'e', "error", "=all|none|task|file", secJob, "", "which tasks' standard error srun prints, or a file for it"},
	{"bra", 0, "export", "=ALL|NONE|names", secJob, "", "environment variables the job or step gets"},
	{"b", 0, "export-file", "=file", secJob, "b", "file of variables to add to the environment"},
	{"ba", 0, "get-user-env", "[=timeout]", secJob, "ba", "load the user's login environment"},
	{"bra", 0, "gid", "=group", secJob, "bra", "group to submit as (root only)"},
	{"bra", 'H', "hold", "", secJob, "", "submit the job held (scontrol release starts it)"},
	{"ra", 'I', "immediate", "[=secs]", secJob, "", "give up unless the allocation starts within secs"},
	{"b", 0, "ignore-pbs", "", secJob, "b", "ignore #PBS lines in the script"},
	{"b", 'i', "input", "=file", secJob, "", "file for the script's standard input"},
	{"r", 'i', "input", "=all|none|task|file", secJob, "", "which tasks read srun's standard input, or a file they read"},
	{"bra", 'J', "job-name", "=name", secJob, "", "name of the job"},
	{"ra", 0, "jobid", "=id", secJob, "", "run as a step of this existing job"},
	{"r", 'K', "kill-on-bad-exit", "[=0|1]", secJob, "", "end the step when a task fails"},
	{"a", 'K', "kill-command", "[=signal]", secJob, "", "signal the command when the allocation ends (SIGTERM)"},
	{"a", 0, "no-shell", "", secJob, "", "allocate and exit, leaving the allocation to later sruns"},
	{"r", 0, "prolog", "=program", secJob, "", "run this program on srun's host before the step"},
	{"r", 0, "epilog", "=program", secJob, "", "run this program on srun's host after the step"},
	{"r", 0, "accel-bind", "=type", secJob, "r", "bind tasks to accelerators"},
	{"r", 0, "bcast", "[=dest]", secJob, "r", "copy the executable to the nodes first"},
	{"r", 0, "bcast-exclude", "=paths", secJob, "r", "libraries --send-libs leaves out"},
	{"r", 0, "compress", "[=type]", secJob, "r", "compress what --bcast sends"},
	{"r", 0, "cpu-bind", "=type", secJob, "r", "bind tasks to CPUs"},
	{"r", 0, "exact", "", secJob, "r", "give the step only the CPUs it asks for"},
	{"r", 0, "het-group", "=expr", secJob, "r", "components of a heterogeneous job to run in"},
	{"r", 0, "msg-timeout", "=seconds", secJob, "r", "how long to wait for launch messages"},
	{"r", 'E', "preserve-env", "", secJob, "r", "take the node and task counts from the environment"},
	{"r", 'r', "relative", "=n", secJob, "r", "start the step at the allocation's node n"},
	{"r", 0, "resv-ports", "[=count]", secJob, "r", "reserve communication ports for the step"},
	{"r", 0, "send-libs", "[=yes|no]", secJob, "r", "copy the executable's libraries with --bcast"},
	{"ra", 0, "x11", "[=all|first|last]", secJob, "ra", "forward X11 from the nodes"},
	{"b", 0, "kill-on-invalid-dep", "=yes|no", secJob, "b", "cancel the job if its dependency cannot be met"},
	{"ra", 'l', "label", "", secJob, "", "start each output line with its task number"},
	{"bra", 'L', "licenses", "=names", secJob, "bra", "licenses the job needs"},
	{"bra", 0, "mail-type", "=events", secJob, "", "events to mail about (recorded; hpc sends no mail)"},
	{"bra", 0, "mail-user", "=user", secJob, "", "who the mail would go to"},
	{"bra", 0, "mcs-label", "=label", secJob, "bra", "MCS label of the job"},
	{"ra", 0, "mpi", "=type", secJob, "ra", "MPI plugin for the step"},
	{"ra", 0, "multi-prog", "", secJob, "", "the program is a file giving each task its own command line"},
	{"bra", 0, "nice", "[=adjustment]", secJob, "bra", "lower the job's priority by this much"},
	{"bra", 'k', "no-kill", "[=off]", secJob, "bra", "keep the job running when one of its nodes fails"},
	{"b", 0, "no-requeue", "", secJob, "", "never requeue the job"},
	{"b", 0, "requeue", "", secJob, "", "let the job be requeued"},
	{"bra", 'F', "nodefile", "=file", secJob, "bra", "file listing the nodes to use"},
	{"bra", 0, "open-mode", "=append|truncate", secJob, "a", "how the output and error files are opened"},
	{"b", 'o', "output", "=file", secJob, "", "file for the script's standard output (%j: job id)"},
	{"r", 'o', "output", "=all|none|task|file", secJob, "", "which tasks' standard output srun prints, or a file for it"},
	{"ra", 0, "overlap", "", secJob, "ra", "let the step share its resources with other steps"},
	{"b", 0, "parsable", "", secJob, "", "print only the job id"},
	{"bra", 0, "priority", "=value", secJob, "bra", "ask for this priority"},
	{"bra", 0, "profile", "=type", secJob, "bra", "what the profiling plugin gathers"},
	{"br", 0, "propagate", "[=rlimits]", secJob, "br", "resource limits passed on to the job"},
	{"r", 0, "pty", "", secJob, "", "run task 0 on a pseudo-terminal"},
	{"bra", 'q', "qos", "=qos", secJob, "", "quality of service"},
	{"bra", 'Q', "quiet", "", secJob, "", "print errors only"},
	{"bra", 0, "reboot", "", secJob, "bra", "reboot the nodes before the job"},
	{"bra", 0, "reservation", "=name", secJob, "bra", "run in this reservation"},
	{"bra", 0, "signal", "=[B:]num[@time]", secJob, "", "send a signal this many seconds before the time limit"},
	{"r", 0, "slurmd-debug", "=level", secJob, "", "debug level of the node daemons for the step"},
	{"r", 'W', "wait", "=sec", secJob, "", "kill the other tasks this long after the first one ends"},
	{"r", 0, "quit-on-interrupt", "", secJob, "", "end the step at the first Ctrl-C"},
	{"r", 0, "debugger-test", "", secJob, "", "print the tasks' table as a parallel debugger would read it"},
	{"bra", 0, "switches", "=max[@wait]", secJob, "", "most switches the job may span, and how long to wait"},
	{"r", 0, "task-epilog", "=path", secJob, "", "program run after each task ends"},
	{"r", 0, "task-prolog", "=path", secJob, "", "program run before each task starts"},
	{"br", 0, "test-only", "", secJob, "", "say when and where the job would start; submit nothing"},
	{"r", 'T', "threads", "=n", secJob, "r", "threads srun uses to launch the step"},
	{"bra", 't', "time", "=time", secJob, "", "time limit: minutes, MM:SS, HH:MM:SS or D-HH:MM"},
	{"bra", 0, "time-min", "=time", secJob, "", "the least time limit the job accepts"},
	{"bra", 0, "uid", "=user", secJob, "bra", "user to submit as (root only)"},
	{"ra", 'u', "unbuffered", "", secJob, "ra", "pass output on without line buffering"},
	{"bra", 'v', "verbose", "", secJob, "", "say more; give it again for more"},
	{"b", 'W', "wait", "", secJob, "", "return when the job ends, with its exit status"},
	{"ba", 0, "wait-all-nodes", "=0|1", secJob, "ba", "start the script only once every node has booted"},
	{"bra", 0, "wckey", "=key", secJob, "bra", "workload characterization key"},
	{"b", 0, "wrap", "=command", secJob, "", "submit this command line as an sh script"},
	{"r", 'Z', "no-allocate", "", secJob, "r", "run the tasks without an allocation"},

	{"bra", 'C', "constraint", "=list", secNodes, "", "node features the job needs"},
	{"bra", 0, "cluster-constraint", "=list", secNodes, "bra", "features the cluster must have"},
	{"bra", 0, "contiguous", "", secNodes, "bra", "nodes next to each other"},
	{"bra", 'S', "core-spec", "=cores", secNodes, "bra", "cores per node kept for the system"},
	{"bra", 0, "cores-per-socket", "=n", secNodes, "bra", "nodes with at least n cores per socket"},
	{"bra", 0, "cpu-freq", "=min[-max[:gov]]", secNodes, "bra", "CPU frequency for the job"},
	{"bra", 'c', "cpus-per-task", "=n", secNodes, "", "CPUs for each task"},
	{"bra", 'm', "distribution", "=type", secNodes, "bra", "how tasks are laid out over nodes and CPUs"},
	{"bra", 'x', "exclude", "=hosts", secNodes, "", "nodes the job must not use"},
	{"bra", 0, "exclusive", "[=user|mcs]", secNodes, "", "whole nodes, shared with no other job"},
	{"bra", 'B', "extra-node-info", "=S[:C[:T]]", secNodes, "bra", "sockets, cores and threads the nodes need"},
	{"bra", 0, "hint", "=type", secNodes, "bra", "task binding hint"},
	{"bra", 0, "mem-bind", "=type", secNodes, "bra", "memory binding of the tasks"},
	{"bra", 0, "mincpus", "=n", secNodes, "", "at least n CPUs on each node"},
	{"bra", 0, "network", "=type", secNodes, "bra", "network resources"},
	{"bra", 'w', "nodelist", "=hosts", secNodes, "", "nodes the job must have"},
	{"bra", 'N', "nodes", "=N", secNodes, "", "how many nodes: a count or min-max"},
	{"bra", 'n', "ntasks", "=n", secNodes, "", "how many tasks"},
	{"bra", 0, "ntasks-per-core", "=n", secNodes, "bra", "most tasks on one core"},
	{"bra", 0, "ntasks-per-gpu", "=n", secNodes, "bra", "tasks for each GPU"},
	{"bra", 0, "ntasks-per-node", "=n", secNodes, "", "tasks on each node"},
	{"bra", 0, "ntasks-per-socket", "=n", secNodes, "bra", "most tasks on one socket"},
	{"bra", 'O', "overcommit", "", secNodes, "", "allow more tasks than CPUs"},
	{"bra", 's', "oversubscribe", "", secNodes, "bra", "share nodes with other jobs"},
	{"bra", 'p', "partition", "=name", secNodes, "", "partition to run in"},
	{"bra", 0, "power", "=flags", secNodes, "bra", "power management options"},
	{"bra", 0, "prefer", "=list", secNodes, "bra", "node features wanted but not required"},
	{"bra", 0, "sockets-per-node", "=n", secNodes, "bra", "nodes with at least n sockets"},
	{"bra", 0, "spread-job", "", secNodes, "bra", "spread the job over as many nodes as it can"},
	{"bra", 0, "thread-spec", "=n", secNodes, "bra", "threads per node kept for the system"},
	{"bra", 0, "threads-per-core", "=n", secNodes, "bra", "threads to use on each core"},
	{"bra", 0, "tmp", "=MB", secNodes, "a", "temporary disk space each node must have"},
	{"bra", 0, "use-min-nodes", "", secNodes, "bra", "prefer the smaller node count of a min-max range"},

	{"bra", 0, "mem", "=MB", secMemGPU, "", "memory on each node (units K, M, G, T)"},
	{"bra", 0, "mem-per-cpu", "=MB", secMemGPU, "", "memory for each allocated CPU"},
	{"bra", 0, "mem-per-gpu", "=MB", secMemGPU, "", "memory for each allocated GPU"},
	{"bra", 0, "cpus-per-gpu", "=n", secMemGPU, "bra", "CPUs for each allocated GPU"},
	{"bra", 'G', "gpus", "=n", secMemGPU, "", "GPUs for the whole job ([type:]count)"},
	{"bra", 0, "gpus-per-node", "=n", secMemGPU, "", "GPUs on each node"},
	{"bra", 0, "gpus-per-socket", "=n", secMemGPU, "bra", "GPUs on each socket"},
	{"bra", 0, "gpus-per-task", "=n", secMemGPU, "", "GPUs for each task"},
	{"bra", 0, "gpu-bind", "=type", secMemGPU, "bra", "how tasks are bound to GPUs"},
	{"bra", 0, "gpu-freq", "=spec", secMemGPU, "bra", "GPU frequency"},
	{"bra", 0, "gres", "=list", secMemGPU, "", "generic resources on each node (gpu:2)"},
	{"bra", 0, "gres-flags", "=type", secMemGPU, "bra", "how GRES are matched to CPUs"},

	{"bra", 0, "container-image", "=DIR", secPlugins, "", "[pyxis] run in this image: a root file system or an OCI bundle (read-only)"},
	{"bra", 0, "container-mounts", "=SRC[:DST[:ro|rw]][,...]", secPlugins, "", "[pyxis] bind mounts inside the container"},
	{"bra", 0, "container-workdir", "=PATH", secPlugins, "", "[pyxis] working directory inside the container"},

	{"bra", 'h', "help", "", secHelp, "", "print this help"},
	{"bra", 0, "usage", "", secHelp, "", "print a short list of the options"},
	{"bra", 'V', "version", "", secHelp, "", "print the Slurm version hpc follows"},
}

// jobProgLetter is a command's letter in jobOptHelp's progs and inert.
func jobProgLetter(prog string) string {
	switch prog {
	case "srun":
		return "r"
	case "salloc":
		return "a"
	}
	return "b"
}

// jobHelpSynopsis is what follows the command's name in --help's first line
// and at the end of --usage.
func jobHelpSynopsis(prog string) (help, usage string) {
	switch prog {
	case "srun":
		return "[OPTIONS...] executable [args...]", "executable [args...]"
	case "salloc":
		return "[OPTIONS...] [command [args...]]", "[command [args...]]"
	}
	return "[OPTIONS...] script [args...]", "executable [args...]"
}

// jobHelp is --help (or, with usage, --usage) of sbatch, srun or salloc.
func jobHelp(prog string, usage bool) string {
	letter := jobProgLetter(prog)
	var rows []jobOptHelp
	for _, h := range jobOptHelps {
		if strings.Contains(h.progs, letter) {
			if strings.Contains(h.inert, letter) {
				h.sec = secInert
			}
			rows = append(rows, h)
		}
	}
	helpSyn, usageSyn := jobHelpSynopsis(prog)
	if usage {
		items := make([]string, 0, len(rows)+1)
		for _, h := range rows {
			items = append(items, usageItem(h.short, h.long, h.arg))
		}
		return wrapUsage("Usage: "+prog, append(items, usageSyn))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s %s\n", prog, helpSyn)
	for sec := range helpSectionTitles {
		first := true
		for _, h := range rows {
			if h.sec != helpSection(sec) {
				continue
			}
			if first {
				fmt.Fprintf(&b, "\n%s\n", helpSectionTitles[sec])
				first = false
			}
			b.WriteString(helpLine(h.short, h.long+h.arg, h.desc))
		}
		if helpSection(sec) == secMemGPU && prog == "sbatch" {
			b.WriteString("\nSBATCH_* variables (" + sbatchEnvExamples() + ", ...)\n" +
				"take precedence over #SBATCH lines, and the command line over both.\n")
		}
	}
	return b.String()
}

// sbatchEnvExamples names a few of the variables sbatch reads.
func sbatchEnvExamples() string {
	var names []string
	for _, v := range jobspec.InputEnv {
		if len(names) < 3 && strings.HasPrefix(v.Var, "SBATCH_") {
			names = append(names, v.Var)
		}
	}
	return strings.Join(names, ", ")
}

// usageItem is one option of a --usage line: [-N N], [-H], [--mem=MB],
// [--exclusive[=user|mcs]], [-I[secs]].
func usageItem(short byte, long, arg string) string {
	if short == 0 {
		return "[--" + long + arg + "]"
	}
	switch {
	case arg == "":
		return "[-" + string(short) + "]"
	case strings.HasPrefix(arg, "[="):
		return "[-" + string(short) + "[" + arg[2:] + "]"
	}
	return "[-" + string(short) + " " + arg[1:] + "]"
}

// wrapUsage joins items after head, wrapping before 80 columns with the
// continuation lines indented under the first item.
func wrapUsage(head string, items []string) string {
	var b strings.Builder
	indent := strings.Repeat(" ", len(head)+1)
	b.WriteString(head)
	col := len(head)
	for _, it := range items {
		if col+1+len(it) > 79 && col > len(head) {
			b.WriteString("\n" + indent[:len(indent)-1])
			col = len(head)
		}
		b.WriteString(" " + it)
		col += 1 + len(it)
	}
	b.WriteString("\n")
	return b.String()
}

// helpLine is one option of a --help text: "  -N, --nodes=N   what it does",
// the description on a line of its own when the synopsis is long.
func helpLine(short byte, synopsis, desc string) string {
	opt := "    "
	if short != 0 {
		opt = "-" + string(short) + ", "
	}
	opt += "--" + synopsis
	pad := strings.Repeat(" ", 32)
	// The description wraps at 80 columns, under itself.
	var lines []string
	line := ""
	for _, w := range strings.Fields(desc) {
		if line != "" && len(pad)+len(line)+1+len(w) > 80 {
			lines, line = append(lines, line), ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	lines = append(lines, line)
	text := strings.Join(lines, "\n"+pad) + "\n"
	if len(opt) > 28 {
		return "  " + opt + "\n" + pad + text
	}
	return fmt.Sprintf("  %-29s %s", opt, text)
}
