package commands

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
)

// What -v makes srun, salloc and sbatch say on stderr, after Slurm 22.05's
// verbose() lines on the common path: the options given ("defined
// options"), srun's allocation ("jobid 12: nodes(2):`node[1-2]', cpu
// counts: 2(x2)"), where a step's tasks go ("launching StepId=12.0 on host
// node1, 2 tasks: [0-1]"), and each task's end. Options hpc accepts without
// acting on them are said as notices.

// givenOption is an option as given on the command line, for the
// "defined options" list.
type givenOption struct{ name, value string }

// hasGiven reports whether the option of that long name was given.
func hasGiven(list []givenOption, name string) bool {
	for _, g := range list {
		if g.name == name {
			return true
		}
	}
	return false
}

// addGiven records an option: its last value, where it was first given.
// Flags read "set", -v the number of times it was given, as Slurm's
// option getters print them.
func addGiven(list []givenOption, opt *jobspec.Opt, val string, has bool) []givenOption {
	if opt.Long == "" {
		return list
	}
	v := val
	if !has && opt.Arg != jobspec.RequiredArg {
		v = "set"
	}
	for i := range list {
		if list[i].name == opt.Long {
			if opt.Long == "verbose" {
				n, _ := strconv.Atoi(list[i].value)
				v = strconv.Itoa(n + 1)
			}
			list[i].value = v
			return list
		}
	}
	if opt.Long == "verbose" {
		v = "1"
	}
	return append(list, givenOption{opt.Long, v})
}

// printDefined prints Slurm's "defined options" block.
func printDefined(w io.Writer, prog string, given []givenOption) {
	rule := "-------------------- --------------------"
	fmt.Fprintf(w, "%s: defined options\n%s: %s\n", prog, prog, rule)
	for _, g := range given {
		fmt.Fprintf(w, "%s: %-20s: %s\n", prog, g.name, g.value)
	}
	fmt.Fprintf(w, "%s: %s\n%s: end of defined options\n", prog, rule, prog)
}

// cpuCounts writes the CPUs of an allocation's nodes as Slurm groups them:
// "2(x2),1(x1)".
func cpuCounts(alloc []api.NodeAlloc) string {
	out := ""
	for i := 0; i < len(alloc); {
		k := i
		for k < len(alloc) && alloc[k].CPUs == alloc[i].CPUs {
			k++
		}
		if out != "" {
			out += ","
		}
		out += fmt.Sprintf("%d(x%d)", alloc[i].CPUs, k-i)
		i = k
	}
	return out
}

// jobLine is srun's verbose line about the allocation it runs in.
func jobLine(prog string, j *api.Job) string {
	return fmt.Sprintf("%s: jobid %d: nodes(%d):`%s', cpu counts: %s\n",
		prog, j.ID, len(j.Alloc), hostlist.Compress(j.NodeNames()), cpuCounts(j.Alloc))
}

// launchLines are srun's verbose lines as a step's tasks start: where
// each node's tasks go, then that they started.
func launchLines(prog string, jobID uint64, s *api.Step) string {
	out := ""
	first := 0
	for i, node := range s.Nodes {
		ids := make([]string, s.Tasks[i])
		for k := range ids {
			ids[k] = strconv.Itoa(first + k)
		}
		first += s.Tasks[i]
		out += fmt.Sprintf("%s: launching StepId=%d.%d on host %s, %d tasks: %s\n",
			prog, jobID, s.ID, node, s.Tasks[i], hostlist.Compress(ids))
	}
	for i, node := range s.Nodes {
		out += fmt.Sprintf("%s: launch/slurm: _task_start: Node %s, %d tasks started\n", prog, node, s.Tasks[i])
	}
	return out
}

// exitLines are srun's verbose lines for one task's end: its wait status
// and, for a clean exit, "Completed" (the failures srun reports anyway).
func exitLines(prog string, jobID uint64, stepID uint32, x *api.TaskExit) string {
	status := x.ExitCode << 8
	if x.Signal != 0 {
		status = x.Signal & 0x7f
	}
	out := fmt.Sprintf("%s: launch/slurm: _task_finish: Received task exit notification for 1 task of StepId=%d.%d (status=0x%04x).\n",
		prog, jobID, stepID, status)
	if x.Signal == 0 && x.ExitCode == 0 {
		out += fmt.Sprintf("%s: launch/slurm: _task_finish: %s: task %d: Completed\n", prog, x.Node, x.Task)
	}
	return out
}

// sayOptions prints, with -v, the options given and the notices about
// those hpc accepts without acting on them.
func (o *runOpts) sayOptions(e *Env, prog string) {
	if o.verbose == 0 {
		return
	}
	printDefined(e.Stderr, prog, o.given)
	for _, n := range o.notices {
		fmt.Fprintf(e.Stderr, "%s: %s\n", prog, n)
	}
}

// msgNodesBusy is Slurm's ESLURM_NODES_BUSY text, what srun and salloc
// say when --immediate could not be met.
const msgNodesBusy = api.ErrNodesBusy

// immediateExit is the status srun and salloc end with when --immediate
// could not be met: SLURM_EXIT_IMMEDIATE, else 1.
func immediateExit(e *Env) int {
	if n, err := strconv.Atoi(e.Getenv("SLURM_EXIT_IMMEDIATE")); err == nil {
		return n
	}
	return 1
}

// ignoredNotices are -v's lines for the options jobspec took without acting
// on them (sbatch's, and those srun and salloc share with it): what they
// ask has no meaning on hpc (no burst buffers, no power or frequency
// control, no mail, ...).
func ignoredNotices(other map[string]string) []string {
	names := make([]string, 0, len(other))
	for name := range other {
		if name != "tmp" { // checked against the nodes, not ignored
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = fmt.Sprintf("--%s is accepted and ignored: hpc does not act on it", name)
	}
	return out
}
