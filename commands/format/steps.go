package format

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

// DefaultStepFormat is what squeue -s prints without -o.
const DefaultStepFormat = "%.15i %.8j %.9P %.8u %.9M %N"

// Step is one job step as squeue -s lists it.
type Step struct {
	JobID     uint64
	ID        string // "batch", "extern", "0", "1", ...
	Name      string
	Partition string
	User      string
	UID       uint32
	State     string // RUNNING, ...
	Start     time.Time
	Nodes     []string
	Tasks     int
	CPUs      int
	// TimeLimitMin is the step's own limit in minutes; 0 or less is
	// UNLIMITED (a batch step has none of its own).
	TimeLimitMin int64
}

// StepID is "12.batch", "12.0".
func (s Step) StepID() string { return strconv.FormatUint(s.JobID, 10) + "." + s.ID }

// BatchSteps returns the batch step of each running or completing job
// that has a batch script: Slurm runs the script as step "batch", one task
// on the job's first node (the batch host), with that node's CPUs.
func BatchSteps(jobs []api.Job) []Step {
	var out []Step
	for i := range jobs {
		j := &jobs[i]
		if !j.HasScript() || j.BatchHost == "" || !openapi.JobStarted(j) {
			continue
		}
		if j.State != api.StateRunning && j.State != api.StateCompleting {
			continue
		}
		cpus := 0
		for _, a := range j.Alloc {
			if a.Node == j.BatchHost {
				cpus = a.CPUs
			}
		}
		out = append(out, Step{
			JobID: j.ID, ID: "batch", Name: "batch", Partition: j.Spec.Partition,
			User: jobUser(j), UID: j.UID, State: string(api.StateRunning), Start: j.StartTime,
			Nodes: []string{j.BatchHost}, Tasks: 1, CPUs: cpus,
		})
	}
	return out
}

// JobSteps returns the steps squeue -s lists: the batch step of each
// running job (see BatchSteps) and the srun steps still running.
func JobSteps(jobs []api.Job) []Step {
	out := BatchSteps(jobs)
	for i := range jobs {
		j := &jobs[i]
		if j.State != api.StateRunning && j.State != api.StateCompleting {
			continue
		}
		for _, st := range j.Steps {
			if st.State.Final() {
				continue
			}
			cpt := st.CPUsPerTask
			if cpt <= 0 {
				cpt = 1
			}
			out = append(out, Step{
				JobID: j.ID, ID: strconv.FormatUint(uint64(st.ID), 10), Name: st.Name,
				Partition: j.Spec.Partition, User: jobUser(j), UID: j.UID, State: string(st.State),
				Start: st.Start, Nodes: st.Nodes, Tasks: st.NTasks(), CPUs: st.NTasks() * cpt,
			})
		}
	}
	return out
}

type stepCol struct {
	header string
	value  func(s Step, now time.Time) (string, bool)
}

func stepTime(s Step, now time.Time) time.Duration {
	if s.Start.IsZero() || now.Before(s.Start) {
		return 0
	}
	return now.Sub(s.Start)
}

var stepCols = sync.OnceValue(func() map[byte]stepCol {
	return map[byte]stepCol{
		'A': {"TASKS", func(s Step, _ time.Time) (string, bool) { return cut(strconv.Itoa(s.Tasks)) }},
		'b': {"TRES_PER_NODE", func(Step, time.Time) (string, bool) { return cut("N/A") }},
		'i': {"STEPID", func(s Step, _ time.Time) (string, bool) { return cut(s.StepID()) }},
		'j': {"NAME", func(s Step, _ time.Time) (string, bool) { return cut(s.Name) }},
		'l': {"TIME_LIMIT", func(s Step, _ time.Time) (string, bool) {
			if s.TimeLimitMin <= 0 {
				return cut("UNLIMITED")
			}
			return nocut(TimeLimit(s.TimeLimitMin))
		}},
		'M': {"TIME", func(s Step, now time.Time) (string, bool) { return nocut(Elapsed(stepTime(s, now))) }},
		'N': {"NODELIST", func(s Step, _ time.Time) (string, bool) { return nocut(openapi.NodeList(s.Nodes)) }},
		'P': {"PARTITION", func(s Step, _ time.Time) (string, bool) { return cut(s.Partition) }},
		'S': {"START_TIME", func(s Step, _ time.Time) (string, bool) { return cut(dateOrNA(s.Start)) }},
		'U': {"UID", func(s Step, _ time.Time) (string, bool) { return cut(strconv.FormatUint(uint64(s.UID), 10)) }},
		'u': {"USER", func(s Step, _ time.Time) (string, bool) { return cut(s.User) }},
	}
})

// stepLongCols() are the -O names squeue -s knows.
var stepLongCols = sync.OnceValue(func() map[string]stepCol {
	return map[string]stepCol{
		"numtasks":  stepCols()['A'],
		"gres":      stepCols()['b'],
		"stepid":    stepCols()['i'],
		"stepname":  stepCols()['j'],
		"timelimit": stepCols()['l'],
		"timeused":  stepCols()['M'],
		"nodes":     stepCols()['N'],
		"partition": stepCols()['P'],
		"starttime": stepCols()['S'],
		"userid":    stepCols()['U'],
		"username":  stepCols()['u'],
		"jobid":     {"JOB_ID", func(s Step, _ time.Time) (string, bool) { return cut(strconv.FormatUint(s.JobID, 10)) }},
		"arrayjobid": {"ARRAY_JOB_ID", func(s Step, _ time.Time) (string, bool) {
			return cut(strconv.FormatUint(s.JobID, 10))
		}},
		"arraytaskid": {"ARRAY_TASK_ID", func(Step, time.Time) (string, bool) { return cut("N/A") }},
		"numcpus":     {"NUM_CPUS", func(s Step, _ time.Time) (string, bool) { return cut(strconv.Itoa(s.CPUs)) }},
		"stepstate":   {"STATE", func(s Step, _ time.Time) (string, bool) { return cut(s.State) }},
		"network":     {"NETWORK", func(Step, time.Time) (string, bool) { return cut("(null)") }},
	}
})

// ParseStepFormat reads a squeue -s -o format; unknown letters print
// literally and are reported as "Invalid job step format specification: X".
func ParseStepFormat(s string) ([]Field, error) {
	return parsePercentFormat(s, func(c byte) bool { _, ok := stepCols()[c]; return ok }, "Invalid job step format specification")
}

// ParseStepLongFormat reads a squeue -s -O format (see
// ParseSqueueLongFormat); unknown names are reported as "Invalid job step
// format specification: name".
func ParseStepLongFormat(s string) ([]Field, error) {
	fields, _ := ParseSqueueLongFormat(s) // for the widths and suffixes
	var errs []error
	i := 0
	for _, tok := range strings.Split(s, ",") {
		if tok == "" {
			continue
		}
		name, _, _ := strings.Cut(tok, ":")
		if _, ok := stepLongCols()[strings.ToLower(name)]; ok {
			fields[i].Name = name
		} else {
			fields[i].Name = ""
			errs = append(errs, fmt.Errorf("Invalid job step format specification: %s", name))
		}
		i++
	}
	return fields, errors.Join(errs...)
}

func (f Field) stepColumn() (stepCol, bool) {
	switch {
	case f.Letter != 0:
		c, ok := stepCols()[f.Letter]
		return c, ok
	case f.Name != "":
		c, ok := stepLongCols()[strings.ToLower(f.Name)]
		return c, ok
	}
	return stepCol{}, false
}

// SqueueSteps renders steps as squeue -s does: Format (-o) or LongFormat
// (-O), else DefaultStepFormat; sorted by partition, then job id, then step
// (numbered steps before the batch step), or by o.Sort's letters (i, N, P,
// l, S, M, u, U).
func SqueueSteps(steps []Step, now time.Time, o SqueueOptions) string {
	var fields []Field
	switch {
	case o.Format != "":
		fields, _ = ParseStepFormat(o.Format)
	case o.LongFormat != "":
		fields, _ = ParseStepLongFormat(o.LongFormat)
	default:
		fields, _ = ParseStepFormat(DefaultStepFormat)
	}
	var b strings.Builder
	if !o.NoHeader {
		if o.Long {
			b.WriteString(CTime(now) + "\n")
		}
		for _, f := range fields {
			if c, ok := f.stepColumn(); ok {
				b.WriteString(pad(c.header, f.Width, f.Right, true))
			}
			b.WriteString(f.Text)
		}
		b.WriteString("\n")
	}
	sorted := append([]Step(nil), steps...)
	sortSteps(sorted, o.Sort, now)
	for _, s := range sorted {
		for _, f := range fields {
			if c, ok := f.stepColumn(); ok {
				v, cut := c.value(s, now)
				b.WriteString(pad(v, f.Width, f.Right, cut))
			}
			b.WriteString(f.Text)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// stepNumber orders step ids as Slurm's numbers do: numbered steps first,
// then the special ones (extern, batch).
func stepNumber(id string) uint64 {
	if n, err := strconv.ParseUint(id, 10, 32); err == nil {
		return n
	}
	switch id {
	case "batch":
		return 0xfffffffb
	case "extern":
		return 0xfffffffc
	case "interactive":
		return 0xfffffffa
	}
	return 0xffffffff
}

var stepSortKeys = sync.OnceValue(func() map[byte]func(a, b Step, now time.Time) int {
	return map[byte]func(a, b Step, now time.Time) int{
		'i': func(a, b Step, _ time.Time) int {
			if c := cmpUint(a.JobID, b.JobID); c != 0 {
				return c
			}
			return cmpUint(stepNumber(a.ID), stepNumber(b.ID))
		},
		'N': func(a, b Step, _ time.Time) int { return compareNodeLists(a.Nodes, b.Nodes) },
		'P': func(a, b Step, _ time.Time) int { return strings.Compare(a.Partition, b.Partition) },
		'l': func(a, b Step, _ time.Time) int { return cmpInt64(stepLimitKey(a), stepLimitKey(b)) },
		'S': func(a, b Step, _ time.Time) int { return a.Start.Compare(b.Start) },
		'M': func(a, b Step, now time.Time) int { return cmpInt64(int64(stepTime(a, now)), int64(stepTime(b, now))) },
		'u': func(a, b Step, _ time.Time) int { return strings.Compare(a.User, b.User) },
		'U': func(a, b Step, _ time.Time) int { return cmpUint(uint64(a.UID), uint64(b.UID)) },
	}
})

func stepLimitKey(s Step) int64 {
	if s.TimeLimitMin <= 0 {
		return 1<<32 - 1
	}
	return s.TimeLimitMin
}

// sortSteps sorts as squeue -s does ("P,i" by default); letters steps
// cannot be sorted by are ignored, as squeue ignores them.
func sortSteps(steps []Step, spec string, now time.Time) {
	if spec == "" {
		spec = "P,i"
	}
	for i := len(spec) - 1; i >= 0; i-- {
		c := spec[i]
		cmp := stepSortKeys()[c]
		if cmp == nil {
			continue
		}
		reverse := i > 0 && spec[i-1] == '-'
		sort.SliceStable(steps, func(a, b int) bool {
			r := cmp(steps[a], steps[b], now)
			if reverse {
				r = -r
			}
			return r < 0
		})
	}
}
