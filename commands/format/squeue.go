package format

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

// DefaultSqueueFormat is what squeue prints without -o.
const DefaultSqueueFormat = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"

// DefaultSqueueSort is squeue's order without -S (sortedJobs).
const DefaultSqueueSort = "P,t,-p"

// LongSqueueFormat is what squeue -l prints (after a date line).
const LongSqueueFormat = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"

// Field is one item of a squeue -o/--format string. Letter is the field code
// ('i' job id, 'P' partition, ...) or 0 for plain text. Width 0 prints the
// value at its natural width; otherwise it is padded to Width, on the left
// when Right ('.' in the format) and on the right otherwise, and cut to
// Width characters (node lists and durations are never cut). Text is the
// literal text printed after the field, or alone for plain text.
type Field struct {
	Letter byte
	// Name is the -O/--Format field name ("jobid", "state"), for fields
	// that come from a -O string; Letter is 0 then.
	Name  string
	Width int
	Right bool
	Text  string
}

// column returns the column a field prints, and whether it prints one.
func (f Field) column() (squeueCol, bool) {
	switch {
	case f.Letter != 0:
		c, ok := squeueCols()[f.Letter]
		return c, ok
	case f.Name != "":
		c, ok := squeueLongCols()[strings.ToLower(f.Name)]
		return c, ok
	}
	return squeueCol{}, false
}

// squeueCol describes one squeue field letter.
type squeueCol struct {
	header    string
	cutHeader bool
	// value returns the text and whether it may be cut to the width.
	value func(j *api.Job, now time.Time) (string, bool)
}

func cut(s string) (string, bool)   { return s, true }
func nocut(s string) (string, bool) { return s, false }

func constant(s string) func(*api.Job, time.Time) (string, bool) {
	return func(*api.Job, time.Time) (string, bool) { return s, true }
}

var squeueCols = sync.OnceValue(func() map[byte]squeueCol {
	return map[byte]squeueCol{
		'a': {"ACCOUNT", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(orNull(openapi.JobAccount(j))) }},
		'A': {"JOBID", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(strconv.FormatUint(j.ID, 10)) }},
		'b': {"TRES_PER_NODE", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.TRESPerNode(j)) }},
		'B': {"EXEC_HOST", true, func(j *api.Job, _ time.Time) (string, bool) {
			if j.BatchHost == "" {
				return cut("n/a")
			}
			return cut(j.BatchHost)
		}},
		'c': {"MIN_CPUS", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(strconv.Itoa(openapi.JobCPUsPerTask(j))) }},
		'C': {"CPUS", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(strconv.Itoa(openapi.JobNumCPUs(j))) }},
		'd': {"MIN_TMP_DISK", true, constant("0")},
		'D': {"NODES", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(strconv.Itoa(openapi.JobNumNodes(j))) }},
		'e': {"END_TIME", true, func(j *api.Job, _ time.Time) (string, bool) {
			if j.Spec.TimeLimitMin < 0 && openapi.JobStarted(j) && j.EndTime.IsZero() {
				return cut("NONE") // no limit, still running
			}
			return cut(dateOrNA(openapi.JobEndTime(j)))
		}},
		'E': {"DEPENDENCY", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.DependencyString(j)) }},
		'f': {"FEATURES", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(orNull(j.Spec.Constraint)) }},
		'F': {"ARRAY_JOB_ID", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(arrayJobID(j)) }},
		'g': {"GROUP", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(jobGroup(j)) }},
		'G': {"GROUP", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(strconv.FormatUint(uint64(j.GID), 10)) }},
		'h': {"OVER_SUBSCRIBE", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(overSubscribe(j)) }},
		'H': {"SOCKETS_PER_NODE", true, constant("*")},
		'i': {"JOBID", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(jobID(j)) }},
		'I': {"CORES_PER_SOCKET", true, constant("*")},
		'j': {"NAME", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(orNull(j.Spec.Name)) }},
		'J': {"THREADS_PER_CORE", true, constant("*")},
		'k': {"COMMENT", true, constant("(null)")},
		'K': {"ARRAY_TASK_ID", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(arrayTaskID(j)) }},
		'l': {"TIME_LIMIT", true, func(j *api.Job, _ time.Time) (string, bool) {
			switch {
			case j.Spec.TimeLimitMin < 0:
				return cut("UNLIMITED")
			case j.Spec.TimeLimitMin == 0:
				return cut("NOT_SET")
			}
			return nocut(TimeLimit(j.Spec.TimeLimitMin))
		}},
		'L': {"TIME_LEFT", true, func(j *api.Job, now time.Time) (string, bool) {
			switch {
			case j.Spec.TimeLimitMin < 0:
				return cut("UNLIMITED")
			case j.Spec.TimeLimitMin == 0:
				return cut("NOT_SET")
			}
			left := j.Spec.TimeLimitMin*60 - int64(jobRunTime(j, now)/time.Second)
			return nocut(squeueSecs(left))
		}},
		'm': {"MIN_MEMORY", true, func(j *api.Job, _ time.Time) (string, bool) {
			return cut(openapi.ConvertMB(minMemKey(j)))
		}},
		'M': {"TIME", true, func(j *api.Job, now time.Time) (string, bool) { return nocut(Elapsed(jobRunTime(j, now))) }},
		'n': {"REQ_NODES", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(j.Spec.NodeList) }},
		'N': {"NODELIST", false, func(j *api.Job, _ time.Time) (string, bool) { return nocut(openapi.NodeList(j.NodeNames())) }},
		'o': {"COMMAND", true, constant("(null)")},
		'O': {"CONTIGUOUS", true, constant("0")},
		'p': {"PRIORITY", true, func(j *api.Job, _ time.Time) (string, bool) {
			return cut(fmt.Sprintf("%16.14f", float64(openapi.BasicPriority(j))/float64(0xffffffff)))
		}},
		'P': {"PARTITION", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(orNull(j.Spec.Partition)) }},
		'q': {"QOS", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.JobQOS(j)) }},
		'Q': {"PRIORITY", true, func(j *api.Job, _ time.Time) (string, bool) {
			return cut(strconv.FormatUint(uint64(openapi.BasicPriority(j)), 10))
		}},
		'r': {"REASON", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(openapi.JobReason(j)) }},
		'R': {"NODELIST(REASON)", false, func(j *api.Job, _ time.Time) (string, bool) {
			switch j.State {
			case api.StatePending, api.StateTimeout, api.StateOutOfMemory, api.StateFailed:
				return cut("(" + openapi.JobReason(j) + ")")
			}
			return nocut(openapi.NodeList(j.NodeNames()))
		}},
		's': {"", true, constant("")}, // select plugin data; cons_tres prints none
		'S': {"START_TIME", true, func(j *api.Job, _ time.Time) (string, bool) {
			if j.State == api.StatePending {
				return cut(dateOrNA(openapi.ExpectedStart(j)))
			}
			return cut(dateOrNA(j.StartTime))
		}},
		't': {"ST", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(j.State.Short()) }},
		'T': {"STATE", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(string(j.State)) }},
		'u': {"USER", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(jobUser(j)) }},
		'U': {"UID", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(strconv.FormatUint(uint64(j.UID), 10)) }},
		'v': {"RESERVATION", true, constant("(null)")},
		'V': {"SUBMIT_TIME", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(dateOrNA(j.SubmitTime)) }},
		'w': {"WCKEY", true, constant("(null)")},
		'W': {"LICENSES", true, constant("(null)")},
		'x': {"EXC_NODES", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(j.Spec.Exclude) }},
		'X': {"CORE_SPEC", true, constant("N/A")},
		'y': {"NICE", true, constant("0")},
		'Y': {"SCHEDNODES", false, func(j *api.Job, _ time.Time) (string, bool) {
			if j.State == api.StatePending && len(j.SchedNodes) > 0 {
				return nocut(openapi.NodeList(j.SchedNodes))
			}
			return nocut("(null)")
		}},
		'z': {"S:C:T", true, constant("*:*:*")},
		'Z': {"WORK_DIR", true, func(j *api.Job, _ time.Time) (string, bool) { return cut(orNull(j.Spec.WorkDir)) }},
	}
})

// ParseSqueueFormat reads a squeue -o/--format string such as
// "%.18i %.9P %8j %-8u %R". Each "%[.][-][width]letter" becomes a Field; text
// before the first '%' and after each field is kept as literal text. '.'
// right-justifies, '-' (accepted for printf habits) left-justifies, which is
// also the default.
//
// Like squeue, an unknown letter does not stop the parse: the offending
// "%..." text is kept as literal text and the returned error (one line per
// bad field, "Invalid job format specification: X") is for the caller to
// print as a warning. The fields are valid even when err is not nil.
func ParseSqueueFormat(s string) ([]Field, error) {
	return parsePercentFormat(s, func(c byte) bool { _, ok := squeueCols()[c]; return ok }, "Invalid job format specification")
}

// parsePercentFormat parses a "%[.]width letter" format; valid says which
// letters exist and what names the error for the others.
func parsePercentFormat(s string, valid func(byte) bool, what string) ([]Field, error) {
	if s == "" {
		return nil, nil
	}
	var fields []Field
	var errs []error
	rest := s
	if i := strings.IndexByte(s, '%'); i != 0 {
		if i < 0 {
			return []Field{{Text: s}}, nil
		}
		fields = append(fields, Field{Text: s[:i]})
		rest = s[i:]
	}
	// Tokens are the pieces between '%' signs; empty ones vanish, as with
	// strtok in squeue ("%%" prints nothing).
	for _, tok := range strings.Split(rest, "%") {
		if tok == "" {
			continue
		}
		f := Field{}
		i := 0
		if tok[i] == '.' {
			f.Right = true
			i++
		}
		if i < len(tok) && tok[i] == '-' && !f.Right {
			i++
		}
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			f.Width = f.Width*10 + int(tok[i]-'0')
			if f.Width > 1<<16 {
				f.Width = 1 << 16
			}
			i++
		}
		if i >= len(tok) {
			fields = append(fields, Field{Text: "%" + tok})
			errs = append(errs, errors.New(what+": "))
			continue
		}
		letter := tok[i]
		if !valid(letter) {
			fields = append(fields, Field{Text: "%" + tok})
			errs = append(errs, fmt.Errorf("%s: %c", what, letter))
			continue
		}
		f.Letter = letter
		f.Text = tok[i+1:]
		fields = append(fields, f)
	}
	return fields, errors.Join(errs...)
}

// SqueueOptions selects squeue's output.
type SqueueOptions struct {
	// Format is the -o string; empty means DefaultSqueueFormat, or
	// LongSqueueFormat with Long.
	Format string
	// LongFormat is the -O/--Format string ("jobid:.10,name:20,state"),
	// used when Format is empty.
	LongFormat string
	// Sort is the -S string ("P,t,-p" when empty); see sortedJobs. Invalid
	// letters are ignored here; callers check the string with
	// CheckSqueueSort first.
	Sort string
	// Long is -l: a date line ("Mon Nov 30 04:59:33 2026") before the
	// header, and the long default format.
	Long bool
	// NoHeader is -h: neither the header nor the date line.
	NoHeader bool
}

// Squeue renders jobs as squeue does, sorted as squeue sorts them (sortedJobs). now is
// the time the listing is made: it drives the TIME column and the -l date
// line. Unknown letters in o.Format print literally (see ParseSqueueFormat).
func Squeue(jobs []api.Job, now time.Time, o SqueueOptions) string {
	fields := o.fields()
	var b strings.Builder
	b.Grow((len(jobs) + 1) * lineGuess(fields)) // one allocation for 100,000 lines
	if !o.NoHeader {
		if o.Long {
			b.WriteString(CTime(now) + "\n")
		}
		for _, f := range fields {
			if c, ok := f.column(); ok {
				b.WriteString(pad(c.header, f.Width, f.Right, c.cutHeader))
			}
			b.WriteString(f.Text)
		}
		b.WriteString("\n")
	}
	cols := make([]*squeueCol, len(fields)) // looked up once, not per job
	for i, f := range fields {
		if c, ok := f.column(); ok {
			cols[i] = &c
		}
	}
	for _, j := range sortedJobs(jobs, o.Sort, now) {
		for i, f := range fields {
			if c := cols[i]; c != nil {
				v, cut := c.value(j, now)
				writePad(&b, v, f.Width, f.Right, cut)
			}
			b.WriteString(f.Text)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// fields are the columns the options print: -o's, else -O's, else -l's
// or the default's.
func (o SqueueOptions) fields() []Field {
	var fields []Field
	switch {
	case o.Format != "":
		fields, _ = ParseSqueueFormat(o.Format)
	case o.LongFormat != "":
		fields, _ = ParseSqueueLongFormat(o.LongFormat)
	case o.Long:
		fields, _ = ParseSqueueFormat(LongSqueueFormat)
	default:
		fields, _ = ParseSqueueFormat(DefaultSqueueFormat)
	}
	return fields
}

// lineGuess is about how long a line of these fields is: the widths given,
// and ten bytes for a field of no width.
func lineGuess(fields []Field) int {
	n := 1
	for _, f := range fields {
		w := f.Width
		if w <= 0 {
			w = 10
		}
		n += w + len(f.Text)
	}
	return n
}
