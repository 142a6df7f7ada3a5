package jobspec

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/config"
)

// option is one row of sbatch's option table.
type option struct {
	Opt
	// apply interprets the option. nil: accepted and recorded in
	// Options.Other, not interpreted yet. To support an option, give it an
	// apply func (and a JobSpec field if the controller needs it).
	apply func(o *Options, val string) error
}

func set(f func(o *Options, v string)) func(*Options, string) error {
	return func(o *Options, v string) error { f(o, v); return nil }
}

// optionTable lists every sbatch option of Slurm 22.05. Lookups by long name
// follow getopt_long: an exact name, or an unambiguous prefix of one.
var optionTable = []option{
	{Opt{"account", 'A', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Account = v })},
	{Opt{"acctg-freq", 0, RequiredArg, ""}, nil},
	{Opt{"array", 'a', RequiredArg, ""}, func(o *Options, v string) error {
		if err := checkArray(v); err != nil {
			return err
		}
		o.Spec.Array = v
		return nil
	}},
	{Opt{"batch", 0, RequiredArg, ""}, nil},
	{Opt{"bb", 0, RequiredArg, ""}, nil},
	{Opt{"bbf", 0, RequiredArg, ""}, nil},
	{Opt{"begin", 'b', RequiredArg, ""}, func(o *Options, v string) error {
		// Checked now against a fixed time; Resolve computes the real
		// begin time from the submit time.
		if _, err := ParseBegin(v, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
			return &UsageError{Msg: "Invalid --begin specification", Code: 255}
		}
		o.begin = v
		return nil
	}},
	{Opt{"chdir", 'D', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.WorkDir = v })},
	{Opt{"cluster", 0, RequiredArg, "M"}, nil},
	{Opt{"cluster-constraint", 0, RequiredArg, ""}, nil},
	{Opt{"clusters", 'M', RequiredArg, ""}, nil},
	{Opt{"comment", 0, RequiredArg, ""}, nil},
	{Opt{"constraint", 'C', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Constraint = v })},
	{Opt{"container", 0, RequiredArg, ""}, nil},
	{Opt{"container-image", 0, RequiredArg, ""}, containerOption("container-image")}, // pyxis
	{Opt{"container-mounts", 0, RequiredArg, ""}, containerOption("container-mounts")},
	{Opt{"container-workdir", 0, RequiredArg, ""}, containerOption("container-workdir")},
	{Opt{"contiguous", 0, NoArg, ""}, nil},
	{Opt{"core-spec", 'S', RequiredArg, ""}, nil},
	{Opt{"cores-per-socket", 0, RequiredArg, ""}, nil},
	{Opt{"cpu-freq", 0, RequiredArg, ""}, nil},
	{Opt{"cpus-per-gpu", 0, RequiredArg, ""}, nil},
	{Opt{"cpus-per-task", 'c', RequiredArg, ""}, func(o *Options, v string) error {
		n, err := parseInt("--cpus-per-task", v)
		o.Spec.CPUsPerTask = n
		return err
	}},
	{Opt{"deadline", 0, RequiredArg, ""}, nil},
	{Opt{"delay-boot", 0, RequiredArg, ""}, nil},
	{Opt{"dependency", 'd', RequiredArg, ""}, func(o *Options, v string) error {
		if err := checkDependency(v); err != nil {
			return err
		}
		o.Spec.Dependency = v
		return nil
	}},
	{Opt{"distribution", 'm', RequiredArg, ""}, nil},
	{Opt{"error", 'e', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Error = v })},
	{Opt{"exclude", 'x', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Exclude = v })},
	{Opt{"exclusive", 0, OptionalArg, ""}, func(o *Options, v string) error {
		switch strings.ToLower(v) {
		case "", "exclusive":
			o.Spec.Exclusive = "exclusive"
		case "oversubscribe", "user", "mcs":
			o.Spec.Exclusive = strings.ToLower(v)
		default:
			return &UsageError{Msg: "Invalid --exclusive specification", Code: 255}
		}
		return nil
	}},
	{Opt{"export", 0, RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Export = v })},
	{Opt{"export-file", 0, RequiredArg, ""}, nil},
	{Opt{"extra-node-info", 'B', RequiredArg, ""}, nil},
	{Opt{"get-user-env", 0, OptionalArg, ""}, nil},
	{Opt{"gid", 0, RequiredArg, ""}, nil},
	{Opt{"gpu-bind", 0, RequiredArg, ""}, nil},
	{Opt{"gpu-freq", 0, RequiredArg, ""}, nil},
	{Opt{"gpus", 'G', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Gpus = v })},
	{Opt{"gpus-per-node", 0, RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.GpusPerNode = v })},
	{Opt{"gpus-per-socket", 0, RequiredArg, ""}, nil},
	{Opt{"gpus-per-task", 0, RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.GpusPerTask = v })},
	{Opt{"gres", 0, RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Gres = strings.TrimPrefix(v, "gres:") })},
	{Opt{"gres-flags", 0, RequiredArg, ""}, nil},
	{Opt{"help", 'h', NoArg, ""}, set(func(o *Options, _ string) { o.Help = true })},
	{Opt{"hint", 0, RequiredArg, ""}, nil},
	{Opt{"hold", 'H', NoArg, ""}, set(func(o *Options, _ string) { o.Spec.Hold = true })},
	{Opt{"ignore-pbs", 0, NoArg, ""}, nil},
	{Opt{"input", 'i', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Input = v })},
	{Opt{"job-name", 'J', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Name = v })},
	{Opt{"kill-on-invalid-dep", 0, RequiredArg, ""}, nil},
	{Opt{"licenses", 'L', RequiredArg, ""}, nil},
	{Opt{"mail-type", 0, RequiredArg, ""}, func(o *Options, v string) error {
		if err := checkMailType(v); err != nil {
			return err
		}
		o.Spec.MailType = v
		return nil
	}},
	{Opt{"mail-user", 0, RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.MailUser = v })},
	{Opt{"mcs-label", 0, RequiredArg, ""}, nil},
	{Opt{"mem", 0, RequiredArg, ""}, memOption("--mem", func(o *Options, mb int64) { o.Spec.MemPerNodeMB = mb })},
	{Opt{"mem-bind", 0, RequiredArg, ""}, nil},
	{Opt{"mem-per-cpu", 0, RequiredArg, ""}, memOption("--mem-per-cpu", func(o *Options, mb int64) { o.Spec.MemPerCPUMB = mb })},
	{Opt{"mem-per-gpu", 0, RequiredArg, ""}, memOption("--mem-per-gpu", func(o *Options, mb int64) { o.Spec.MemPerGPUMB = mb })},
	{Opt{"mincpus", 0, RequiredArg, ""}, func(o *Options, v string) error {
		n, err := parseInt("--mincpus", v)
		o.Spec.MinCPUs = n
		return err
	}},
	{Opt{"network", 0, RequiredArg, ""}, nil},
	{Opt{"nice", 0, OptionalArg, ""}, nil},
	{Opt{"no-kill", 'k', OptionalArg, ""}, nil},
	{Opt{"no-requeue", 0, NoArg, ""}, set(func(o *Options, _ string) { f := false; o.Spec.Requeue = &f })},
	{Opt{"nodefile", 'F', RequiredArg, ""}, nil},
	{Opt{"nodelist", 'w', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.NodeList = v })},
	{Opt{"nodes", 'N', RequiredArg, ""}, func(o *Options, v string) error {
		lo, hi, err := nodeCount(v)
		o.Spec.Nodes, o.Spec.MaxNodes = lo, hi
		return err
	}},
	{Opt{"ntasks", 'n', RequiredArg, ""}, func(o *Options, v string) error {
		n, err := parseInt("--ntasks", v)
		o.Spec.NTasks = n
		return err
	}},
	{Opt{"ntasks-per-core", 0, RequiredArg, ""}, nil},
	{Opt{"ntasks-per-gpu", 0, RequiredArg, ""}, nil},
	{Opt{"ntasks-per-node", 0, RequiredArg, ""}, func(o *Options, v string) error {
		n, err := parseInt("--ntasks-per-node", v)
		o.Spec.NTasksPerNode = n
		return err
	}},
	{Opt{"ntasks-per-socket", 0, RequiredArg, ""}, nil},
	{Opt{"open-mode", 0, RequiredArg, ""}, func(o *Options, v string) error {
		switch {
		case v != "" && (v[0] == 'a' || v[0] == 'A'):
			o.Spec.OpenMode = "append"
		case v != "" && (v[0] == 't' || v[0] == 'T'):
			o.Spec.OpenMode = "truncate"
		default:
			return &UsageError{Msg: "Invalid --open-mode specification", Code: 255}
		}
		return nil
	}},
	{Opt{"output", 'o', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Output = v })},
	{Opt{"overcommit", 'O', NoArg, ""}, set(func(o *Options, _ string) { o.Spec.Overcommit = true })},
	{Opt{"oversubscribe", 's', NoArg, ""}, nil},
	{Opt{"parsable", 0, NoArg, ""}, set(func(o *Options, _ string) { o.Parsable = true })},
	{Opt{"partition", 'p', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.Partition = v })},
	{Opt{"power", 0, RequiredArg, ""}, nil},
	{Opt{"prefer", 0, RequiredArg, ""}, nil},
	{Opt{"priority", 0, RequiredArg, ""}, nil},
	{Opt{"profile", 0, RequiredArg, ""}, nil},
	{Opt{"propagate", 0, OptionalArg, ""}, nil},
	{Opt{"qos", 'q', RequiredArg, ""}, set(func(o *Options, v string) { o.Spec.QOS = v })},
	{Opt{"quiet", 'Q', NoArg, ""}, set(func(o *Options, _ string) { o.Quiet = true })},
	{Opt{"reboot", 0, NoArg, ""}, nil},
	{Opt{"requeue", 0, NoArg, ""}, set(func(o *Options, _ string) { t := true; o.Spec.Requeue = &t })},
	{Opt{"reservation", 0, RequiredArg, ""}, nil},
	{Opt{"signal", 0, RequiredArg, ""}, func(o *Options, v string) error {
		if _, err := ParseSignalSpec(v); err != nil {
			return &UsageError{Msg: "Invalid --signal specification", Code: 255}
		}
		o.Spec.Signal = v
		return nil
	}},
	{Opt{"sockets-per-node", 0, RequiredArg, ""}, nil},
	{Opt{"spread-job", 0, NoArg, ""}, nil},
	{Opt{"switches", 0, RequiredArg, ""}, func(o *Options, v string) error {
		count, wait, hasWait := strings.Cut(v, "@")
		n, err := parseInt("--switches", count)
		if err != nil {
			return err
		}
		o.Spec.Switches, o.Spec.SwitchesWaitSec = n, 0
		if hasWait {
			secs, err := timeSeconds(wait)
			if err != nil {
				return &UsageError{Msg: "Invalid --switches specification", Code: 255}
			}
			o.Spec.SwitchesWaitSec = secs
		}
		return nil
	}},
	{Opt{"test-only", 0, NoArg, ""}, set(func(o *Options, _ string) { o.TestOnly = true })},
	{Opt{"thread-spec", 0, RequiredArg, ""}, nil},
	{Opt{"threads-per-core", 0, RequiredArg, ""}, nil},
	{Opt{"time", 't', RequiredArg, ""}, func(o *Options, v string) error {
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
	{Opt{"time-min", 0, RequiredArg, ""}, func(o *Options, v string) error {
		m, err := config.ParseTime(v)
		if err != nil || (m < 0 && m != config.Unlimited) {
			return &UsageError{Msg: "Invalid --time-min specification", Code: 255}
		}
		if m == 0 {
			m = config.Unlimited
		}
		o.Spec.TimeMinMin = m
		return nil
	}},
	{Opt{"tmp", 0, RequiredArg, ""}, func(o *Options, v string) error {
		// hpc's nodes declare no TmpDisk: checked, recorded in Other.
		if _, err := config.ParseMem(v); err != nil {
			return &UsageError{Msg: "Invalid --tmp specification", Code: 255}
		}
		o.Other["tmp"] = v
		return nil
	}},
	{Opt{"uid", 0, RequiredArg, ""}, nil},
	{Opt{"usage", 0, NoArg, ""}, set(func(o *Options, _ string) { o.Help, o.Usage = true, true })},
	{Opt{"use-min-nodes", 0, NoArg, ""}, nil},
	{Opt{"verbose", 'v', NoArg, ""}, set(func(o *Options, _ string) { o.Verbose++ })},
	{Opt{"version", 'V', NoArg, ""}, set(func(o *Options, _ string) { o.Version = true })},
	{Opt{"wait", 'W', NoArg, ""}, set(func(o *Options, _ string) { o.Wait = true })},
	{Opt{"wait-all-nodes", 0, RequiredArg, ""}, nil},
	{Opt{"wckey", 0, RequiredArg, ""}, nil},
	{Opt{"wrap", 0, RequiredArg, ""}, set(func(o *Options, v string) { o.Wrap = v })},
}

// sbatchGetopt parses with optionTable and stops at the script path, as
// sbatch does (its option string starts with '+').
var sbatchGetopt = sync.OnceValue(func() *Getopt {
	g := &Getopt{}
	for _, o := range optionTable {
		g.Opts = append(g.Opts, o.Opt)
	}
	return g
})

// byLong indexes optionTable by long name.
var byLong = sync.OnceValue(func() map[string]*option {
	m := map[string]*option{}
	for i := range optionTable {
		m[optionTable[i].Long] = &optionTable[i]
	}
	return m
})

// parseInt is Slurm's parse_int for options that need a positive count;
// like it, a bad value ends sbatch with status 1.
func parseInt(name, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, &UsageError{Msg: fmt.Sprintf("Invalid numeric value %q for %s.", v, name), Code: 1}
	}
	return n, nil
}

func memOption(name string, put func(*Options, int64)) func(*Options, string) error {
	return func(o *Options, v string) error {
		mb, err := config.ParseMem(v)
		if err != nil {
			return &UsageError{Msg: "Invalid " + name + " specification", Code: 255}
		}
		put(o, mb)
		return nil
	}
}

// nodeCount reads -N's "N" or "N-M" (each may carry a k suffix, as in
// Slurm) and returns the minimum and, for a range, the maximum.
func nodeCount(v string) (int, int, error) {
	bad := func(s string) error {
		return &UsageError{Msg: fmt.Sprintf("%q is not a valid node count", s), Code: 255}
	}
	if lo, hi, isRange := strings.Cut(v, "-"); isRange {
		min, ok := countField(lo)
		if strings.TrimSpace(lo) == "" {
			min, ok = 1, true // "-3": at most 3, as Slurm reads an empty minimum
		}
		if !ok {
			return 0, 0, bad(lo)
		}
		max, ok := countField(hi)
		if !ok {
			return 0, 0, bad(hi)
		}
		if max != 0 && max < min {
			return 0, 0, &UsageError{Msg: fmt.Sprintf("Maximum node count %d is less than minimum node count %d", max, min), Code: 255}
		}
		return max0(min, 1), max, nil
	}
	n, ok := countField(v)
	if !ok {
		return 0, 0, bad(v)
	}
	return n, 0, nil
}

func max0(v, floor int) int {
	if v < floor {
		return floor
	}
	return v
}

// countField reads a node count: digits with an optional k or m suffix,
// whitespace around allowed.
func countField(s string) (int, bool) {
	s = strings.TrimSpace(s)
	mult := 1
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult, s = 1024, s[:n-1]
		case 'm', 'M':
			mult, s = 1024*1024, s[:n-1]
		}
	}
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > (1<<31-1)/mult {
		return 0, false
	}
	return n * mult, true
}

// checkArray checks an --array index specification: comma-separated
// indexes or ranges ("0-15", "1-7:2"), optionally followed by "%N", the
// most tasks to run at once. It returns Slurm's message for a bad one.
func checkArray(v string) error {
	// Slurm's controller refuses a bad one; sbatch prints its answer.
	bad := &UsageError{Msg: "Batch job submission failed: Invalid job array specification", Code: 1}
	spec, limit, hasLimit := strings.Cut(v, "%")
	if hasLimit {
		if n, err := strconv.Atoi(limit); err != nil || n < 0 {
			return bad
		}
	}
	if spec == "" {
		return bad
	}
	for _, item := range strings.Split(spec, ",") {
		rng, step, hasStep := strings.Cut(item, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || strings.TrimLeft(lo, "0123456789") != "" {
			return bad
		}
		if isRange {
			b, err := strconv.Atoi(hi)
			if err != nil || b < a || strings.TrimLeft(hi, "0123456789") != "" {
				return bad
			}
		}
		if hasStep {
			if !isRange {
				return bad
			}
			if s, err := strconv.Atoi(step); err != nil || s <= 0 {
				return bad
			}
		}
	}
	return nil
}

// mailTypes are the values --mail-type accepts.
var mailTypes = map[string]bool{
	"NONE": true, "BEGIN": true, "END": true, "FAIL": true, "REQUEUE": true, "ALL": true,
	"INVALID_DEPEND": true, "STAGE_OUT": true, "TIME_LIMIT": true, "TIME_LIMIT_90": true,
	"TIME_LIMIT_80": true, "TIME_LIMIT_50": true, "ARRAY_TASKS": true,
}

func checkMailType(v string) error {
	for _, t := range strings.Split(v, ",") {
		if !mailTypes[strings.ToUpper(strings.TrimSpace(t))] {
			return &UsageError{Msg: "Invalid --mail-type specification", Code: 255}
		}
	}
	return nil
}

// SignalSpec is a parsed --signal=[{R|B}:]<sig>[@<secs>] value: send Signal
// Seconds before the time limit, to the batch shell only (Batch) or to the
// job's steps, and also when a reservation ends (Reservation).
type SignalSpec struct {
	Signal      int
	Seconds     int // default 60
	Batch       bool
	Reservation bool
}

// ParseSignalSpec reads --signal's value as Slurm's sbatch does.
func ParseSignalSpec(v string) (SignalSpec, error) {
	s := SignalSpec{Seconds: 60}
	rest := v
	for i := 0; i < 2 && rest != ""; i++ {
		switch rest[0] {
		case 'R', 'r':
			s.Reservation, rest = true, rest[1:]
			continue
		case 'B', 'b':
			// "B:" flags the batch shell; "BUS" is no signal we know.
			if len(rest) > 1 && (rest[1] == ':' || rest[1] == 'R' || rest[1] == 'r') {
				s.Batch, rest = true, rest[1:]
				continue
			}
		}
		break
	}
	rest = strings.TrimPrefix(rest, ":")
	name, secs, hasSecs := strings.Cut(rest, "@")
	s.Signal = SignalNumber(name)
	if s.Signal < 1 || s.Signal > 0xffff {
		return s, fmt.Errorf("invalid signal %q", v)
	}
	if hasSecs {
		n, err := strconv.Atoi(secs)
		if err != nil || n < 0 || n > 0xffff {
			return s, fmt.Errorf("invalid signal time %q", v)
		}
		s.Seconds = n
	}
	return s, nil
}

// signalNames are the signal names Slurm's commands accept (with or
// without "SIG", any case).
var signalNames = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "ALRM": 14, "TERM": 15,
	"USR1": 10, "USR2": 12, "URG": 23, "CONT": 18, "STOP": 19, "TSTP": 20,
	"TTIN": 21, "TTOU": 22, "XCPU": 24,
}

// SignalNumber converts a signal name ("USR1", "SIGUSR1", "usr1") or
// number ("10") to its number, as Slurm's sig_name2num does; 0 means not a
// signal.
func SignalNumber(s string) int {
	t := strings.TrimSpace(s)
	if t != "" && (t[0] >= '0' && t[0] <= '9' || t[0] == '-' || t[0] == '+') {
		n, err := strconv.Atoi(t)
		if err != nil {
			return 0
		}
		return n
	}
	u := strings.ToUpper(t)
	u = strings.TrimPrefix(u, "SIG")
	return signalNames[u]
}

// timeSeconds reads a time in Slurm's syntax and returns seconds.
func timeSeconds(s string) (int64, error) {
	m, err := config.ParseTime(s)
	if err != nil || m < 0 {
		return 0, fmt.Errorf("invalid time %q", s)
	}
	return m * 60, nil
}

// dependencyTypes are the kinds of --dependency Slurm knows.
var dependencyTypes = map[string]bool{
	"after": true, "afterany": true, "afternotok": true, "afterok": true,
	"aftercorr": true, "afterburstbuffer": true, "expand": true,
}

// checkDependency checks --dependency's syntax: items separated by ','
// (all must hold) or '?' (any may), each "singleton" or
// "type:jobid[+minutes][:jobid...]", a job id being "12", "12_3" or
// "12_*". Slurm's controller refuses a bad one; sbatch prints its answer.
func checkDependency(v string) error {
	bad := &UsageError{Msg: "Batch job submission failed: Job dependency problem", Code: 1}
	if v == "" || (strings.Contains(v, ",") && strings.Contains(v, "?")) {
		return bad
	}
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '?' }) {
		if strings.EqualFold(item, "singleton") {
			continue
		}
		kind, ids, ok := strings.Cut(item, ":")
		if !ok || !dependencyTypes[strings.ToLower(kind)] {
			return bad
		}
		for _, id := range strings.Split(ids, ":") {
			id, plus, hasPlus := strings.Cut(id, "+")
			if hasPlus && (plus == "" || strings.TrimLeft(plus, "0123456789") != "") {
				return bad
			}
			job, task, hasTask := strings.Cut(id, "_")
			if job == "" || strings.TrimLeft(job, "0123456789") != "" {
				return bad
			}
			if hasTask && task != "*" && (task == "" || strings.TrimLeft(task, "0123456789") != "") {
				return bad
			}
		}
	}
	return nil
}

// SbatchOption is sbatch's option of that long name, for srun and salloc,
// which share many of sbatch's options and hand them to ParseArgs.
func SbatchOption(long string) (Opt, bool) {
	if o := byLong()[long]; o != nil {
		return o.Opt, true
	}
	return Opt{}, false
}
