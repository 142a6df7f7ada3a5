package format

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

// squeueAliases() are the -O/--Format names that print exactly what a
// one-letter -o field prints.
var squeueAliases = sync.OnceValue(func() map[string]byte {
	return map[string]byte{
		"account": 'a', "jobid": 'A', "batchhost": 'B', "mincpus": 'c', "numcpus": 'C',
		"mintmpdisk": 'd', "numnodes": 'D', "endtime": 'e', "dependency": 'E',
		"feature": 'f', "arrayjobid": 'F', "groupname": 'g', "groupid": 'G',
		"oversubscribe": 'h', "shared": 'h', "sockets": 'H', "jobarrayid": 'i',
		"cores": 'I', "name": 'j', "threads": 'J', "comment": 'k', "arraytaskid": 'K',
		"timelimit": 'l', "timeleft": 'L', "minmemory": 'm', "timeused": 'M',
		"reqnodes": 'n', "nodelist": 'N', "command": 'o', "contiguous": 'O',
		"priority": 'p', "partition": 'P', "qos": 'q', "prioritylong": 'Q',
		"reason": 'r', "reasonlist": 'R', "selectjobinfo": 's', "starttime": 'S',
		"statecompact": 't', "state": 'T', "username": 'u', "userid": 'U',
		"reservation": 'v', "submittime": 'V', "wckey": 'w', "licenses": 'W',
		"corespec": 'X', "nice": 'y', "schednodes": 'Y', "sct": 'z', "workdir": 'Z',
	}
})

// squeueLongCols are the -O/--Format fields: the aliases of the letters
// and the fields that only -O has.
var squeueLongCols = sync.OnceValue(func() map[string]squeueCol {
	m := map[string]squeueCol{
		"numtasks": {"TASKS", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(strconv.Itoa(openapi.JobTasks(j))) }},
		"cpus-per-task": {"CPUS_PER_TASK", true, func(j *api.Job, _ time.Time) (string, bool) {
			return cut(strconv.Itoa(openapi.JobCPUsPerTask(j)))
		}},
		"stdout":    {"STDOUT", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.JobStdOut(j)) }},
		"stderr":    {"STDERR", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.JobStdErr(j)) }},
		"stdin":     {"STDIN", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.JobStdIn(j)) }},
		"exit_code": {"EXIT_CODE", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(exitPair(j.ExitCode, j.Signal)) }},
		"eligibletime": {"ELIGIBLE_TIME", true, func(j *api.Job, _ time.Time) (string, bool) {
			if openapi.NotEligible(j) {
				return cut("N/A")
			}
			return cut(dateOrNA(j.SubmitTime))
		}},
		"accruetime": {"ACCRUE_TIME", true, func(j *api.Job, _ time.Time) (string, bool) {
			if openapi.NotEligible(j) {
				return cut("N/A")
			}
			return cut(dateOrNA(j.SubmitTime))
		}},
		"lastschedeval": {"LAST_SCHED_EVAL", true, func(j *api.Job, _ time.Time) (string, bool) {
			if openapi.JobStarted(j) {
				return cut(dateOrNA(j.StartTime))
			}
			return cut(dateOrNA(j.SubmitTime))
		}},
		"pendingtime": {"PENDING_TIME", true, func(j *api.Job, now time.Time) (string, bool) {
			end := now
			if openapi.JobStarted(j) {
				end = j.StartTime
			}
			secs := int64(end.Sub(j.SubmitTime) / time.Second)
			return cut(strconv.FormatInt(max(secs, 0), 10))
		}},
		"batchflag": {"BATCH_FLAG", true, func(j *api.Job, _ time.Time) (string, bool) {
			if j.HasScript() {
				return cut("1")
			}
			return cut("0")
		}},
		"requeue": {"REQUEUE", true, func(j *api.Job, _ time.Time) (string, bool) {
			if j.Spec.Requeue != nil && !*j.Spec.Requeue {
				return cut("0")
			}
			return cut("1")
		}},
		"restartcnt": {"RESTART_COUNT", true, constant("0")},
		"maxnodes": {"MAX_NODES", true, func(j *api.Job, _ time.Time) (string, bool) {
			return cut(strconv.Itoa(j.Spec.MaxNodes))
		}},
		"maxcpus": {"MAX_CPUS", true, constant("0")},
		"ntpernode": {"NTASKS_PER_NODE", true, func(j *api.Job, _ time.Time) (string, bool) {
			if j.Spec.NTasksPerNode > 0 {
				return cut(strconv.Itoa(j.Spec.NTasksPerNode))
			}
			return cut("N/A")
		}},
		"mintime": {"TIME_MIN", true, func(j *api.Job, _ time.Time) (string, bool) {
			if j.Spec.TimeMinMin > 0 {
				return nocut(TimeLimit(j.Spec.TimeMinMin))
			}
			return cut("0:00")
		}},
		"tres-alloc": {"TRES_ALLOC", true, func(j *api.Job, _ time.Time) (string, bool) {
			if len(j.Alloc) == 0 {
				return cut("N/A")
			}
			return cut(openapi.JobTRES(j))
		}},
		"tres-per-node": {"TRES_PER_NODE", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.TRESPerNode(j)) }},
		"tres-per-task": {"TRES_PER_TASK", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.TRESPerTask(j)) }},
		"tres-per-job":  {"TRES_PER_JOB", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.TRESPerJob(j)) }},
		"deadline":      {"DEADLINE", true, constant("N/A")},
		"allocnodes": {"ALLOC_NODES", true, func(j *api.Job, _ time.Time) (string, bool) {
			return cut(orNull(j.Spec.SubmitHost))
		}},
		"allocsid":  {"ALLOC_SID", true, constant("0")},
		"derivedec": {"DERIVED_EC", true, constant("0:0")},
		"mcslabel":  {"MCSLABEL", true, constant("N/A")},
		"profile":   {"PROFILE", true, constant("NotSet")},
		"reboot":    {"REBOOT", true, constant("0")},
		"network":   {"NETWORK", true, constant("(null)")},
		"reqswitch": {"REQ_SWITCH", true, func(j *api.Job, _ time.Time) (string, bool) {
			return cut(strconv.Itoa(j.Spec.Switches))
		}},
		"wait4switch": {"WAIT4SWITCH", true, func(j *api.Job, _ time.Time) (string, bool) {
			return cut(strconv.FormatInt(j.Spec.SwitchesWaitSec, 10))
		}},
	}
	m["gres"] = m["tres-per-node"]
	m["tres"] = m["tres-alloc"]
	for name, letter := range squeueAliases() {
		m[name] = squeueCols()[letter]
	}
	return m
})

// ParseSqueueLongFormat reads a squeue -O/--Format string: comma-separated
// field names, each optionally followed by ":[.]width" and then a suffix
// printed after it ("jobid:.10 ,name:20,state"). A field without a width is
// 20 wide and left justified; width 0 prints the value as it is. Names are
// matched without regard to case.
//
// As with ParseSqueueFormat, an unknown name does not stop the parse: it
// prints only its suffix, and the returned error has one line per bad name
// ("Invalid job format specification: name") for the caller to print.
func ParseSqueueLongFormat(s string) ([]Field, error) {
	var fields []Field
	var errs []error
	for _, tok := range strings.Split(s, ",") {
		if tok == "" {
			continue
		}
		name, spec, hasSpec := strings.Cut(tok, ":")
		f := Field{Name: name, Width: 20}
		if hasSpec {
			if strings.HasPrefix(spec, ".") {
				f.Right = true
				spec = spec[1:]
			}
			i := 0
			for i < len(spec) && spec[i] >= '0' && spec[i] <= '9' {
				i++
			}
			f.Width, _ = strconv.Atoi(spec[:i])
			if f.Width > 1<<16 {
				f.Width = 1 << 16
			}
			f.Text = spec[i:]
		}
		if _, ok := squeueLongCols()[strings.ToLower(name)]; !ok {
			errs = append(errs, fmt.Errorf("Invalid job format specification: %s", name))
			f.Name = ""
		}
		fields = append(fields, f)
	}
	return fields, errors.Join(errs...)
}

// jobSortKeys() are the -S letters squeue sorts jobs by, as comparisons
// (negative: a first). Letters squeue accepts but does not sort by map to
// nil.
var jobSortKeys = sync.OnceValue(func() map[byte]func(a, b *api.Job, now time.Time) int {
	return map[byte]func(a, b *api.Job, now time.Time) int{
		'B': func(a, b *api.Job, _ time.Time) int { return strings.Compare(a.BatchHost, b.BatchHost) },
		'c': nil,
		'C': func(a, b *api.Job, _ time.Time) int { return cmpInt(openapi.JobNumCPUs(a), openapi.JobNumCPUs(b)) },
		'd': func(*api.Job, *api.Job, time.Time) int { return 0 },
		'D': func(a, b *api.Job, _ time.Time) int { return cmpInt(openapi.JobNumNodes(a), openapi.JobNumNodes(b)) },
		'e': func(a, b *api.Job, _ time.Time) int { return openapi.JobEndTime(a).Compare(openapi.JobEndTime(b)) },
		'f': nil,
		'g': func(a, b *api.Job, _ time.Time) int { return strings.Compare(jobGroup(a), jobGroup(b)) },
		'G': func(a, b *api.Job, _ time.Time) int { return cmpInt(int(a.GID), int(b.GID)) },
		'h': nil,
		'H': func(*api.Job, *api.Job, time.Time) int { return 0 },
		'i': func(a, b *api.Job, _ time.Time) int { return cmpUint(a.ID, b.ID) },
		'I': func(*api.Job, *api.Job, time.Time) int { return 0 },
		'j': func(a, b *api.Job, _ time.Time) int { return strings.Compare(a.Spec.Name, b.Spec.Name) },
		'J': func(*api.Job, *api.Job, time.Time) int { return 0 },
		'l': func(a, b *api.Job, _ time.Time) int { return cmpUint(limitKey(a), limitKey(b)) },
		'L': func(a, b *api.Job, now time.Time) int { return cmpInt64(timeLeftKey(a, now), timeLeftKey(b, now)) },
		'm': func(a, b *api.Job, _ time.Time) int { return cmpInt64(minMemKey(a), minMemKey(b)) },
		'M': func(a, b *api.Job, now time.Time) int {
			return cmpInt64(int64(jobRunTime(a, now)), int64(jobRunTime(b, now)))
		},
		'n': nil,
		'N': func(a, b *api.Job, _ time.Time) int { return compareNodeLists(a.NodeNames(), b.NodeNames()) },
		'O': nil,
		'p': func(a, b *api.Job, _ time.Time) int {
			return cmpUint(uint64(openapi.BasicPriority(a)), uint64(openapi.BasicPriority(b)))
		},
		'P': func(a, b *api.Job, _ time.Time) int { return strings.Compare(a.Spec.Partition, b.Spec.Partition) },
		'Q': func(a, b *api.Job, _ time.Time) int {
			return cmpUint(uint64(openapi.BasicPriority(a)), uint64(openapi.BasicPriority(b)))
		},
		'S': func(a, b *api.Job, now time.Time) int { return startKey(a, now).Compare(startKey(b, now)) },
		't': func(a, b *api.Job, _ time.Time) int { return strings.Compare(a.State.Short(), b.State.Short()) },
		'T': func(a, b *api.Job, _ time.Time) int { return strings.Compare(string(a.State), string(b.State)) },
		'u': func(a, b *api.Job, _ time.Time) int { return strings.Compare(jobUser(a), jobUser(b)) },
		'U': func(a, b *api.Job, _ time.Time) int { return cmpInt(int(a.UID), int(b.UID)) },
		'v': func(*api.Job, *api.Job, time.Time) int { return 0 },
		'V': func(a, b *api.Job, _ time.Time) int { return a.SubmitTime.Compare(b.SubmitTime) },
		'z': func(*api.Job, *api.Job, time.Time) int { return 0 },
	}
})

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// limitKey orders time limits as Slurm's numbers do: an unlimited or unset
// limit is larger than any other.
func limitKey(j *api.Job) uint64 {
	if j.Spec.TimeLimitMin <= 0 {
		return 1<<32 - 1
	}
	return uint64(j.Spec.TimeLimitMin)
}

func timeLeftKey(j *api.Job, now time.Time) int64 {
	if j.Spec.TimeLimitMin <= 0 {
		return 1<<32 - 1
	}
	return j.Spec.TimeLimitMin*60 - int64(jobRunTime(j, now)/time.Second)
}

func minMemKey(j *api.Job) int64 {
	switch {
	case j.Spec.MemPerNodeMB > 0:
		return j.Spec.MemPerNodeMB
	case j.Spec.MemPerCPUMB > 0:
		return j.Spec.MemPerCPUMB
	}
	return openapi.DefMemPerCPU
}

// startKey is the start time squeue sorts by: a pending job that has no
// expected start, or one in the past, counts as starting now.
func startKey(j *api.Job, now time.Time) time.Time {
	if j.State == api.StatePending && j.StartTime.Before(now) {
		return now
	}
	return j.StartTime
}

// compareNodeLists compares node lists by their first host; an empty list
// sorts first.
func compareNodeLists(a, b []string) int {
	switch {
	case len(a) == 0 && len(b) == 0:
		return 0
	case len(a) == 0:
		return -1
	case len(b) == 0:
		return 1
	}
	sa := append([]string(nil), a...)
	sb := append([]string(nil), b...)
	sort.Slice(sa, func(i, j int) bool { return openapi.LessHost(sa[i], sa[j]) })
	sort.Slice(sb, func(i, j int) bool { return openapi.LessHost(sb[i], sb[j]) })
	return compareHost(sa[0], sb[0])
}

// sortKey is one parsed -S item.
type sortKey struct {
	letter  byte
	reverse bool
}

// parseSort reads a -S string: letters, each optionally preceded by '-'
// (descending) or '+', separated by commas or not at all ("P,t,-p" or
// "Pt-p"). unknown lists letters squeue rejects.
func parseSort(spec string) (keys []sortKey, unknown []byte) {
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		if c == ',' || c == '+' || c == '-' {
			continue
		}
		k := sortKey{letter: c, reverse: i > 0 && spec[i-1] == '-'}
		if _, ok := jobSortKeys()[c]; !ok && c != 'b' {
			unknown = append(unknown, c)
			continue
		}
		keys = append(keys, k)
	}
	return keys, unknown
}

// CheckSqueueSort checks a -S string as squeue does: an unknown letter is
// an error ("Invalid sort specification: X"); 'b' (a gres sort squeue no
// longer has) only earns a note. It returns the notes to print.
func CheckSqueueSort(spec string) ([]string, error) {
	keys, unknown := parseSort(spec)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("Invalid sort specification: %c", unknown[0])
	}
	var notes []string
	for _, k := range keys {
		if k.letter == 'b' {
			notes = append(notes, "Invalid sort specification: b")
		}
	}
	return notes, nil
}

// sortedJobs returns pointers to jobs in the order squeue -S spec lists
// them (spec "" is squeue's default, "P,t,-p"): first by start time,
// latest first, then by each key from the last to the first, each sort
// keeping the order of equal jobs, so the first key counts most. Jobs that
// compare equal on every key keep job id order. now is the time of the
// listing (time used, time left and the start time of pending jobs depend
// on it). Pointers, because a job is a kilobyte and the stable passes
// would move each many times.
//
// The default order is:
//
//  1. partition name, ascending (byte order: "debug" before "gpu");
//  2. compact state code, ascending as text, so completing jobs (CG) come
//     before pending ones (PD), which come before running ones (R);
//  3. priority, descending (BasicPriority: earlier jobs first, held jobs,
//     whose priority is 0, last);
//  4. start time, descending (squeue sorts by it first and its later sorts
//     keep that order among equals), then job id, ascending.
//
// This reproduces the reference listings 30 and 72 exactly.
func sortedJobs(jobs []api.Job, spec string, now time.Time) []*api.Job {
	keys, _ := parseSort(cmp.Or(spec, DefaultSqueueSort))
	type sortCmp func(a, b *api.Job, now time.Time) int
	var cmps []sortCmp // in order of significance, each already reversed if asked
	for _, k := range keys {
		c := jobSortKeys()[k.letter]
		switch {
		case c == nil:
		case k.reverse:
			cmps = append(cmps, func(a, b *api.Job, now time.Time) int { return -c(a, b, now) })
		default:
			cmps = append(cmps, c)
		}
	}
	// One sort by the keys, then the start time (descending), then the
	// id: what stable passes from the least significant up would give.
	type entry struct {
		j     *api.Job
		start time.Time
	}
	es := make([]entry, len(jobs))
	for i := range jobs {
		es[i] = entry{&jobs[i], startKey(&jobs[i], now)}
	}
	slices.SortFunc(es, func(a, b entry) int {
		for _, c := range cmps {
			if r := c(a.j, b.j, now); r != 0 {
				return r
			}
		}
		if r := b.start.Compare(a.start); r != 0 {
			return r
		}
		return cmp.Compare(a.j.ID, b.j.ID)
	})
	ps := make([]*api.Job, len(es))
	for i, e := range es {
		ps[i] = e.j
	}
	return ps
}
