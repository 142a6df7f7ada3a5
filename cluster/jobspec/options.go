package jobspec

import (
	"fmt"
	"strconv"
	"strings"

	"hpc/cluster/config"
)

// argKind says whether an option takes an argument, as in getopt_long.
type argKind int

const (
	noArg       argKind = iota // --parsable
	requiredArg                // --time=10, --time 10, -t10, -t 10
	optionalArg                // --exclusive or --exclusive=user; never takes the next word
)

// option is one row of the option table.
type option struct {
	long  string
	short byte // 0: long form only
	arg   argKind
	// apply interprets the option. nil: accepted and recorded in
	// Options.Other, not interpreted yet. To support an option, give it an
	// apply func (and a JobSpec field if it needs one).
	apply func(o *Options, val string) error
}

// optionTable lists every sbatch option of Slurm 22.05. Lookups by long name
// follow getopt_long: an exact name, or an unambiguous prefix of one.
var optionTable = []option{
	{"account", 'A', requiredArg, nil},
	{"acctg-freq", 0, requiredArg, nil},
	{"array", 'a', requiredArg, nil},
	{"batch", 0, requiredArg, nil},
	{"bb", 0, requiredArg, nil},
	{"bbf", 0, requiredArg, nil},
	{"begin", 'b', requiredArg, nil},
	{"chdir", 'D', requiredArg, func(o *Options, v string) error { o.Spec.WorkDir = v; return nil }},
	{"cluster", 0, requiredArg, nil},
	{"cluster-constraint", 0, requiredArg, nil},
	{"clusters", 'M', requiredArg, nil},
	{"comment", 0, requiredArg, nil},
	{"constraint", 'C', requiredArg, nil},
	{"container", 0, requiredArg, nil},
	{"contiguous", 0, noArg, nil},
	{"core-spec", 'S', requiredArg, nil},
	{"cores-per-socket", 0, requiredArg, nil},
	{"cpu-freq", 0, requiredArg, nil},
	{"cpus-per-gpu", 0, requiredArg, nil},
	{"cpus-per-task", 'c', requiredArg, func(o *Options, v string) error {
		n, err := positiveInt("--cpus-per-task", v)
		o.Spec.CPUsPerTask = n
		return err
	}},
	{"deadline", 0, requiredArg, nil},
	{"delay-boot", 0, requiredArg, nil},
	{"dependency", 'd', requiredArg, nil},
	{"distribution", 'm', requiredArg, nil},
	{"error", 'e', requiredArg, func(o *Options, v string) error { o.Spec.Error = v; return nil }},
	{"exclude", 'x', requiredArg, nil},
	{"exclusive", 0, optionalArg, nil},
	{"export", 0, requiredArg, nil},
	{"export-file", 0, requiredArg, nil},
	{"extra-node-info", 'B', requiredArg, nil},
	{"get-user-env", 0, optionalArg, nil},
	{"gid", 0, requiredArg, nil},
	{"gpu-bind", 0, requiredArg, nil},
	{"gpu-freq", 0, requiredArg, nil},
	{"gpus", 'G', requiredArg, nil},
	{"gpus-per-node", 0, requiredArg, nil},
	{"gpus-per-socket", 0, requiredArg, nil},
	{"gpus-per-task", 0, requiredArg, nil},
	{"gres", 0, requiredArg, nil},
	{"gres-flags", 0, requiredArg, nil},
	{"help", 'h', noArg, func(o *Options, _ string) error { o.Help = true; return nil }},
	{"hint", 0, requiredArg, nil},
	{"hold", 'H', noArg, nil},
	{"ignore-pbs", 0, noArg, nil},
	{"input", 'i', requiredArg, nil},
	{"job-name", 'J', requiredArg, func(o *Options, v string) error { o.Spec.Name = v; return nil }},
	{"kill-on-invalid-dep", 0, requiredArg, nil},
	{"licenses", 'L', requiredArg, nil},
	{"mail-type", 0, requiredArg, nil},
	{"mail-user", 0, requiredArg, nil},
	{"mcs-label", 0, requiredArg, nil},
	{"mem", 0, requiredArg, func(o *Options, v string) error {
		mb, err := config.ParseMem(v)
		if err != nil {
			return &UsageError{Msg: "Invalid --mem specification", Code: 255}
		}
		o.Spec.MemPerNodeMB = mb
		return nil
	}},
	{"mem-bind", 0, requiredArg, nil},
	{"mem-per-cpu", 0, requiredArg, nil},
	{"mem-per-gpu", 0, requiredArg, nil},
	{"mincpus", 0, requiredArg, nil},
	{"network", 0, requiredArg, nil},
	{"nice", 0, optionalArg, nil},
	{"no-kill", 'k', optionalArg, nil},
	{"no-requeue", 0, noArg, nil},
	{"nodefile", 'F', requiredArg, nil},
	{"nodelist", 'w', requiredArg, nil},
	{"nodes", 'N', requiredArg, func(o *Options, v string) error {
		n, err := nodeCount(v)
		o.Spec.Nodes = n
		return err
	}},
	{"ntasks", 'n', requiredArg, func(o *Options, v string) error {
		n, err := positiveInt("--ntasks", v)
		o.Spec.NTasks = n
		return err
	}},
	{"ntasks-per-core", 0, requiredArg, nil},
	{"ntasks-per-gpu", 0, requiredArg, nil},
	{"ntasks-per-node", 0, requiredArg, nil},
	{"ntasks-per-socket", 0, requiredArg, nil},
	{"open-mode", 0, requiredArg, nil},
	{"output", 'o', requiredArg, func(o *Options, v string) error { o.Spec.Output = v; return nil }},
	{"overcommit", 'O', noArg, nil},
	{"oversubscribe", 's', noArg, nil},
	{"parsable", 0, noArg, func(o *Options, _ string) error { o.Parsable = true; return nil }},
	{"partition", 'p', requiredArg, func(o *Options, v string) error { o.Spec.Partition = v; return nil }},
	{"power", 0, requiredArg, nil},
	{"prefer", 0, requiredArg, nil},
	{"priority", 0, requiredArg, nil},
	{"profile", 0, requiredArg, nil},
	{"propagate", 0, optionalArg, nil},
	{"qos", 'q', requiredArg, nil},
	{"quiet", 'Q', noArg, nil},
	{"reboot", 0, noArg, nil},
	{"requeue", 0, noArg, nil},
	{"reservation", 0, requiredArg, nil},
	{"signal", 0, requiredArg, nil},
	{"sockets-per-node", 0, requiredArg, nil},
	{"spread-job", 0, noArg, nil},
	{"switches", 0, requiredArg, nil},
	{"test-only", 0, noArg, nil},
	{"thread-spec", 0, requiredArg, nil},
	{"threads-per-core", 0, requiredArg, nil},
	{"time", 't', requiredArg, func(o *Options, v string) error {
		m, err := config.ParseTime(v)
		if err != nil {
			return &UsageError{Msg: "Invalid --time specification", Code: 255}
		}
		if m == 0 {
			m = config.Unlimited // "A time limit of zero requests that no time limit be imposed."
		}
		o.Spec.TimeLimitMin = m
		return nil
	}},
	{"time-min", 0, requiredArg, nil},
	{"tmp", 0, requiredArg, nil},
	{"uid", 0, requiredArg, nil},
	{"usage", 0, noArg, func(o *Options, _ string) error { o.Help = true; return nil }},
	{"use-min-nodes", 0, noArg, nil},
	{"verbose", 'v', noArg, nil},
	{"version", 'V', noArg, func(o *Options, _ string) error { o.Version = true; return nil }},
	{"wait", 'W', noArg, func(o *Options, _ string) error { o.Wait = true; return nil }},
	{"wait-all-nodes", 0, requiredArg, nil},
	{"wckey", 0, requiredArg, nil},
	{"wrap", 0, requiredArg, func(o *Options, v string) error { o.Wrap = v; return nil }},
}

// byShort indexes optionTable by short letter.
var byShort = func() map[byte]*option {
	m := map[byte]*option{}
	for i := range optionTable {
		if c := optionTable[i].short; c != 0 {
			m[c] = &optionTable[i]
		}
	}
	return m
}()

func positiveInt(name, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || strings.TrimLeft(v, "0123456789") != "" {
		return 0, &UsageError{Msg: fmt.Sprintf("Invalid numeric value %q for %s.", v, name), Code: 255}
	}
	return n, nil
}

// nodeCount reads -N's "N" or "N-M" and keeps the minimum.
func nodeCount(v string) (int, error) {
	bad := &UsageError{Msg: fmt.Sprintf("invalid node count `%s'", v), Code: 255}
	lo, hi, isRange := strings.Cut(v, "-")
	min, err := countField(lo)
	if err != nil {
		return 0, bad
	}
	if isRange {
		max, err := countField(hi)
		if err != nil || max < min {
			return 0, bad
		}
	}
	return min, nil
}

func countField(s string) (int, error) {
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("bad count")
	}
	return strconv.Atoi(s)
}

// lookupLong finds the option named by name (the text after "--" and before
// any '='): an exact match or a unique prefix, as getopt_long does. word is
// the whole argument, for messages.
func lookupLong(name, word string) (*option, error) {
	var matches []*option
	for i := range optionTable {
		opt := &optionTable[i]
		if opt.long == name {
			return opt, nil
		}
		if name != "" && strings.HasPrefix(opt.long, name) {
			matches = append(matches, opt)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, getoptError(fmt.Sprintf("unrecognized option '%s'", word))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "option '--%s' is ambiguous; possibilities:", name)
	for _, m := range matches {
		fmt.Fprintf(&b, " '--%s'", m.long)
	}
	return nil, getoptError(b.String())
}
