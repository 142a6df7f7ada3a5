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
	{"b", 0, "acctg-freq", "=interval", secJob, "b", "accounting sampling interval"},
	{"b", 'a', "array", "=indexes", secJob, "", "submit a job array with these task indexes (1-5,9%2)"},
	{"b", 0, "batch", "=features", secJob, "b", "features the batch host must have"},
	{"b", 0, "bb", "=spec", secJob, "b", "burst buffer specification"},
	{"b", 0, "bbf", "=file", secJob, "b", "file with the burst buffer specification"},
	{"bra", 'b', "begin", "=time", secJob, "", "keep the job pending until this time (16:00, now+1hour, a date)"},
	{"a", 0, "bell", "", secJob, "", "ring the terminal bell once the allocation is granted"},
	{"a", 0, "no-bell", "", secJob, "", "never ring the terminal bell"},
	{"bra", 'D', "chdir", "=path", secJob, "", "working directory of the job (relative to the current one)"},
	{"b", 'M', "clusters", "=names", secJob, "b", "clusters to submit to (hpc runs one)"},
	{"b", 0, "cluster", "=names", secJob, "b", "the same as --clusters"},
	{"b", 0, "comment", "=text", secJob, "b", "free text kept with the job"},
	{"b", 0, "container", "=path", secJob, "b", "OCI bundle for Slurm's own container support"},
	{"bra", 'd', "dependency", "=type:jobid[:time]", secJob, "", "start only once other jobs reach a state (afterok:12)"},
	{"bra", 0, "deadline", "=time", secJob, "bra", "remove the job if it cannot end before this time"},
	{"b", 0, "delay-boot", "=minutes", secJob, "b", "wait this long before rebooting nodes for features"},
	{"ra", 'X', "disable-status", "", secJob, "ra", "make the first Ctrl-C end the step without a status report"},
	{"b", 'e', "error", "=file", secJob, "", "file for the script's standard error (%j: job id)"},
	{"r", 'e', "error", "=all|none|task|file", secJob, "", "which tasks' standard error srun prints, or a file for it"},
	{"bra", 0, "export", "=ALL|NONE|names", secJob, "", "environment variables the job or step gets"},
	{"b", 0, "export-file", "=file", secJob, "b", "file of variables to add to the environment"},
	{"b", 0, "get-user-env", "[=timeout]", secJob, "b", "load the user's login environment"},
	{"b", 0, "gid", "=group", secJob, "b", "group to submit as (root only)"},
	{"b", 'H', "hold", "", secJob, "", "submit the job held (scontrol release starts it)"},
	{"ra", 'I', "immediate", "[=secs]", secJob, "", "give up unless the allocation starts within secs"},
	{"b", 0, "ignore-pbs", "", secJob, "b", "ignore #PBS lines in the script"},
	{"b", 'i', "input", "=file", secJob, "", "file for the script's standard input"},
	{"r", 'i', "input", "=all|none|task|file", secJob, "", "which tasks read srun's standard input, or a file they read"},
	{"bra", 'J', "job-name", "=name", secJob, "", "name of the job"},
	{"ra", 0, "jobid", "=id", secJob, "", "run as a step of this existing job"},
	{"ra", 'K', "kill-on-bad-exit", "[=0|1]", secJob, "ra", "end the step when a task fails"},
	{"b", 0, "kill-on-invalid-dep", "=yes|no", secJob, "b", "cancel the job if its dependency cannot be met"},
	{"ra", 'l', "label", "", secJob, "", "start each output line with its task number"},
	{"b", 'L', "licenses", "=names", secJob, "b", "licenses the job needs"},
	{"b", 0, "mail-type", "=events", secJob, "", "events to mail about (recorded; hpc sends no mail)"},
	{"b", 0, "mail-user", "=user", secJob, "", "who the mail would go to"},
	{"b", 0, "mcs-label", "=label", secJob, "b", "MCS label of the job"},
	{"ra", 0, "mpi", "=type", secJob, "ra", "MPI plugin for the step"},
	{"ra", 0, "multi-prog", "", secJob, "", "the program is a file giving each task its own command line"},
	{"b", 0, "nice", "[=adjustment]", secJob, "b", "lower the job's priority by this much"},
	{"b", 'k', "no-kill", "[=off]", secJob, "b", "keep the job running when one of its nodes fails"},
	{"b", 0, "no-requeue", "", secJob, "", "never requeue the job"},
	{"b", 0, "requeue", "", secJob, "", "let the job be requeued"},
	{"b", 'F', "nodefile", "=file", secJob, "b", "file listing the nodes to use"},
	{"bra", 0, "open-mode", "=append|truncate", secJob, "a", "how the output and error files are opened"},
	{"b", 'o', "output", "=file", secJob, "", "file for the script's standard output (%j: job id)"},
	{"r", 'o', "output", "=all|none|task|file", secJob, "", "which tasks' standard output srun prints, or a file for it"},
	{"ra", 0, "overlap", "", secJob, "ra", "let the step share its resources with other steps"},
	{"b", 0, "parsable", "", secJob, "", "print only the job id"},
	{"b", 0, "priority", "=value", secJob, "b", "ask for this priority"},
	{"b", 0, "profile", "=type", secJob, "b", "what the profiling plugin gathers"},
	{"b", 0, "propagate", "[=rlimits]", secJob, "b", "resource limits passed on to the job"},
	{"r", 0, "pty", "", secJob, "", "run task 0 on a pseudo-terminal"},
	{"bra", 'q', "qos", "=qos", secJob, "", "quality of service"},
	{"bra", 'Q', "quiet", "", secJob, "", "print errors only"},
	{"b", 0, "reboot", "", secJob, "b", "reboot the nodes before the job"},
	{"b", 0, "reservation", "=name", secJob, "b", "run in this reservation"},
	{"b", 0, "signal", "=[B:]num[@time]", secJob, "", "send a signal this many seconds before the time limit"},
	{"r", 0, "slurmd-debug", "=level", secJob, "r", "debug level of the node daemons for the step"},
	{"b", 0, "switches", "=max[@wait]", secJob, "", "most switches the job may span, and how long to wait"},
	{"r", 0, "task-epilog", "=path", secJob, "", "program run after each task ends"},
	{"r", 0, "task-prolog", "=path", secJob, "", "program run before each task starts"},
	{"b", 0, "test-only", "", secJob, "", "say when and where the job would start; submit nothing"},
	{"r", 'T', "threads", "=n", secJob, "r", "threads srun uses to launch the step"},
	{"bra", 't', "time", "=time", secJob, "", "time limit: minutes, MM:SS, HH:MM:SS or D-HH:MM"},
	{"b", 0, "time-min", "=time", secJob, "", "the least time limit the job accepts"},
	{"b", 0, "uid", "=user", secJob, "b", "user to submit as (root only)"},
	{"ra", 'u', "unbuffered", "", secJob, "ra", "pass output on without line buffering"},
	{"bra", 'v', "verbose", "", secJob, "", "say more; give it again for more"},
	{"b", 'W', "wait", "", secJob, "", "return when the job ends, with its exit status"},
	{"b", 0, "wait-all-nodes", "=0|1", secJob, "b", "start the script only once every node has booted"},
	{"b", 0, "wckey", "=key", secJob, "b", "workload characterization key"},
	{"b", 0, "wrap", "=command", secJob, "", "submit this command line as an sh script"},
	{"r", 'Z', "no-allocate", "", secJob, "r", "run the tasks without an allocation"},

	{"bra", 'C', "constraint", "=list", secNodes, "", "node features the job needs"},
	{"b", 0, "cluster-constraint", "=list", secNodes, "b", "features the cluster must have"},
	{"b", 0, "contiguous", "", secNodes, "b", "nodes next to each other"},
	{"b", 'S', "core-spec", "=cores", secNodes, "b", "cores per node kept for the system"},
	{"b", 0, "cores-per-socket", "=n", secNodes, "b", "nodes with at least n cores per socket"},
	{"b", 0, "cpu-freq", "=min[-max[:gov]]", secNodes, "b", "CPU frequency for the job"},
	{"bra", 'c', "cpus-per-task", "=n", secNodes, "", "CPUs for each task"},
	{"b", 'm', "distribution", "=type", secNodes, "b", "how tasks are laid out over nodes and CPUs"},
	{"bra", 'x', "exclude", "=hosts", secNodes, "", "nodes the job must not use"},
	{"bra", 0, "exclusive", "[=user|mcs]", secNodes, "", "whole nodes, shared with no other job"},
	{"b", 'B', "extra-node-info", "=S[:C[:T]]", secNodes, "b", "sockets, cores and threads the nodes need"},
	{"b", 0, "hint", "=type", secNodes, "b", "task binding hint"},
	{"b", 0, "mem-bind", "=type", secNodes, "b", "memory binding of the tasks"},
	{"bra", 0, "mincpus", "=n", secNodes, "", "at least n CPUs on each node"},
	{"b", 0, "network", "=type", secNodes, "b", "network resources"},
	{"bra", 'w', "nodelist", "=hosts", secNodes, "", "nodes the job must have"},
	{"bra", 'N', "nodes", "=N", secNodes, "", "how many nodes: a count or min-max"},
	{"bra", 'n', "ntasks", "=n", secNodes, "", "how many tasks"},
	{"b", 0, "ntasks-per-core", "=n", secNodes, "b", "most tasks on one core"},
	{"b", 0, "ntasks-per-gpu", "=n", secNodes, "b", "tasks for each GPU"},
	{"bra", 0, "ntasks-per-node", "=n", secNodes, "", "tasks on each node"},
	{"b", 0, "ntasks-per-socket", "=n", secNodes, "b", "most tasks on one socket"},
	{"bra", 'O', "overcommit", "", secNodes, "", "allow more tasks than CPUs"},
	{"b", 's', "oversubscribe", "", secNodes, "b", "share nodes with other jobs"},
	{"bra", 'p', "partition", "=name", secNodes, "", "partition to run in"},
	{"b", 0, "power", "=flags", secNodes, "b", "power management options"},
	{"b", 0, "prefer", "=list", secNodes, "b", "node features wanted but not required"},
	{"b", 0, "sockets-per-node", "=n", secNodes, "b", "nodes with at least n sockets"},
	{"b", 0, "spread-job", "", secNodes, "b", "spread the job over as many nodes as it can"},
	{"b", 0, "thread-spec", "=n", secNodes, "b", "threads per node kept for the system"},
	{"b", 0, "threads-per-core", "=n", secNodes, "b", "threads to use on each core"},
	{"bra", 0, "tmp", "=MB", secNodes, "ra", "temporary disk space each node must have"},
	{"bra", 0, "use-min-nodes", "", secNodes, "bra", "prefer the smaller node count of a min-max range"},

	{"bra", 0, "mem", "=MB", secMemGPU, "", "memory on each node (units K, M, G, T)"},
	{"bra", 0, "mem-per-cpu", "=MB", secMemGPU, "", "memory for each allocated CPU"},
	{"b", 0, "mem-per-gpu", "=MB", secMemGPU, "", "memory for each allocated GPU"},
	{"b", 0, "cpus-per-gpu", "=n", secMemGPU, "b", "CPUs for each allocated GPU"},
	{"bra", 'G', "gpus", "=n", secMemGPU, "", "GPUs for the whole job ([type:]count)"},
	{"b", 0, "gpus-per-node", "=n", secMemGPU, "", "GPUs on each node"},
	{"b", 0, "gpus-per-socket", "=n", secMemGPU, "b", "GPUs on each socket"},
	{"b", 0, "gpus-per-task", "=n", secMemGPU, "", "GPUs for each task"},
	{"b", 0, "gpu-bind", "=type", secMemGPU, "b", "how tasks are bound to GPUs"},
	{"b", 0, "gpu-freq", "=spec", secMemGPU, "b", "GPU frequency"},
	{"bra", 0, "gres", "=list", secMemGPU, "", "generic resources on each node (gpu:2)"},
	{"b", 0, "gres-flags", "=type", secMemGPU, "b", "how GRES are matched to CPUs"},

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
