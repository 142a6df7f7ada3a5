package format

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
)

// DefaultSacctFormat is what sacct prints without -o.
const DefaultSacctFormat = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"

// SacctOptions selects sacct's output.
type SacctOptions struct {
	// Fields are the -o/--format names, matched case-insensitively and by
	// prefix as sacct does ("jobn" is JobName); an entry may hold several
	// comma-separated names and a "%N" width ("JobName%20"). Empty means
	// DefaultSacctFormat.
	Fields []string
	// Parsable is -P: fields separated by '|', no trailing '|', no dashes.
	Parsable bool
	// ParsableTrailing is -p: like -P but every field, the last included,
	// is followed by '|'.
	ParsableTrailing bool
	// NoHeader is -n.
	NoHeader bool
	// Delimiter is --delimiter: what separates fields under -p and -P
	// instead of '|'.
	Delimiter string
	// Now is used for the elapsed time of jobs that have not ended.
	Now time.Time
}

// SacctField is one resolved sacct column: its canonical name and width.
// A negative width left-justifies (JobID), a positive one right-justifies.
type SacctField struct {
	Name  string
	Width int
	kind  byte // 's' string, 'u' number, 't' duration, 'd' date
	value func(r api.AcctRow, now time.Time) (string, bool)
}

type sacctDef struct {
	width int
	name  string
	kind  byte
	value func(r api.AcctRow, now time.Time) (string, bool)
}

func sv(s string) (string, bool) { return s, true }

// unset is a field hpc does not record: sacct prints it blank.
func unset(api.AcctRow, time.Time) (string, bool) { return "", false }

// cpuField prints a CPU time of a row's usage as sacct does.
func cpuField(get func(*api.StepUsage) time.Duration) func(api.AcctRow, time.Time) (string, bool) {
	return func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Usage == nil {
			return "", false
		}
		return sv(CPUTimeString(get(r.Usage)))
	}
}

// CPUTimeString spells a CPU time as sacct's TotalCPU does: MM:SS.mmm
// under an hour, [D-]HH:MM:SS above.
func CPUTimeString(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d >= time.Hour {
		return secs2time(int64(d / time.Second))
	}
	ms := d.Milliseconds()
	return fmt.Sprintf("%02d:%02d.%03d", ms/60000, ms/1000%60, ms%1000)
}

func rowElapsed(r api.AcctRow, now time.Time) time.Duration {
	if r.Start.IsZero() {
		return 0
	}
	end := r.End
	if end.IsZero() {
		end = now
	}
	if d := end.Sub(r.Start); d > 0 {
		return d
	}
	return 0
}

func rowState(r api.AcctRow) string {
	if r.CancelledBy != nil && strings.HasPrefix(r.State, string(api.StateCancelled)) {
		return string(api.StateCancelled) + " by " + strconv.FormatUint(uint64(*r.CancelledBy), 10)
	}
	return r.State
}

// sacctDefs is sacct 22.05's field table (src/sacct/sacct.c), in its order,
// which decides which field a prefix names.
var sacctDefs = []sacctDef{
	{10, "Account", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(r.Account) }},
	{15, "AdminComment", 's', unset},
	{10, "AllocCPUS", 'u', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(strconv.Itoa(r.AllocCPUs)) }},
	{10, "AllocNodes", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(strconv.Itoa(rowNodeCount(r))) }},
	{10, "AllocTRES", 's', unset},
	{7, "AssocID", 'u', unset},
	{10, "AveCPU", 's', unset},
	{10, "AveCPUFreq", 's', unset},
	{14, "AveDiskRead", 's', unset},
	{14, "AveDiskWrite", 's', unset},
	{10, "AvePages", 's', unset},
	{10, "AveRSS", 's', unset},
	{10, "AveVMSize", 's', unset},
	{16, "BlockID", 's', unset},
	{10, "Cluster", 's', unset},
	{14, "Comment", 's', unset},
	{19, "Constraints", 's', jobOnly(func(r api.AcctRow) string { return r.Constraints })},
	{14, "ConsumedEnergy", 's', unset},
	{17, "ConsumedEnergyRaw", 'u', unset},
	{19, "Container", 's', unset},
	{10, "CPUTime", 't', func(r api.AcctRow, now time.Time) (string, bool) {
		return sv(ElapsedHMS(rowElapsed(r, now) * time.Duration(r.AllocCPUs)))
	}},
	{10, "CPUTimeRAW", 'u', func(r api.AcctRow, now time.Time) (string, bool) {
		return sv(strconv.FormatInt(int64(rowElapsed(r, now)/time.Second)*int64(r.AllocCPUs), 10))
	}},
	{-10, "DBIndex", 'u', unset},
	{15, "DerivedExitCode", 's', unset},
	{10, "Elapsed", 't', func(r api.AcctRow, now time.Time) (string, bool) { return sv(ElapsedHMS(rowElapsed(r, now))) }},
	{10, "ElapsedRaw", 'u', func(r api.AcctRow, now time.Time) (string, bool) {
		return sv(strconv.FormatInt(int64(rowElapsed(r, now)/time.Second), 10))
	}},
	{19, "Eligible", 'd', func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Step != "" {
			return sv(ISOTime(r.Start))
		}
		return sv(ISOTime(r.Submit))
	}},
	{19, "End", 'd', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(ISOTime(r.End)) }},
	{8, "ExitCode", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(exitPair(r.ExitCode, r.Signal)) }},
	{19, "Flags", 's', unset},
	{6, "GID", 'u', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(strconv.FormatUint(uint64(r.GID), 10)) }},
	{9, "Group", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(r.Group) }},
	{-12, "JobID", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(r.JobIDString()) }},
	{-12, "JobIDRaw", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(r.JobIDRawString()) }},
	{10, "JobName", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(r.JobName) }},
	{9, "Layout", 's', unset},
	{12, "MaxDiskRead", 's', unset},
	{15, "MaxDiskReadNode", 's', unset},
	{15, "MaxDiskReadTask", 'u', unset},
	{12, "MaxDiskWrite", 's', unset},
	{16, "MaxDiskWriteNode", 's', unset},
	{16, "MaxDiskWriteTask", 'u', unset},
	{8, "MaxPages", 's', unset},
	{12, "MaxPagesNode", 's', unset},
	{14, "MaxPagesTask", 'u', unset},
	{10, "MaxRSS", 's', func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Usage == nil || r.Usage.MaxRSSKB <= 0 {
			return "", false
		}
		return sv(strconv.FormatInt(r.Usage.MaxRSSKB, 10) + "K")
	}},
	{10, "MaxRSSNode", 's', func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Usage == nil || r.Usage.MaxRSSNode == "" {
			return "", false
		}
		return sv(r.Usage.MaxRSSNode)
	}},
	{10, "MaxRSSTask", 'u', func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Usage == nil || r.Usage.MaxRSSKB <= 0 {
			return "", false
		}
		return sv("0")
	}},
	{10, "MaxVMSize", 's', unset},
	{14, "MaxVMSizeNode", 's', unset},
	{14, "MaxVMSizeTask", 'u', unset},
	{12, "McsLabel", 's', unset},
	{10, "MinCPU", 's', unset},
	{10, "MinCPUNode", 's', unset},
	{10, "MinCPUTask", 'u', unset},
	{10, "NCPUS", 'u', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(strconv.Itoa(r.AllocCPUs)) }},
	{8, "NNodes", 'u', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(strconv.Itoa(rowNodeCount(r))) }},
	{15, "NodeList", 's', func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.NodeList == "" {
			return sv("None assigned")
		}
		return sv(r.NodeList)
	}},
	{8, "NTasks", 'u', unset},
	{10, "Partition", 's', func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Step != "" || r.Partition == "" {
			return "", false
		}
		return sv(r.Partition)
	}},
	{10, "Priority", 'u', unset},
	{10, "QOS", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(r.QOS) }},
	{6, "QOSRAW", 'u', unset},
	{22, "Reason", 's', jobOnly(func(r api.AcctRow) string {
		if r.Reason == "" {
			return "None"
		}
		return r.Reason
	})},
	{10, "ReqCPUFreq", 's', unset},
	{13, "ReqCPUFreqGov", 's', unset},
	{13, "ReqCPUFreqMax", 's', unset},
	{13, "ReqCPUFreqMin", 's', unset},
	{8, "ReqCPUS", 'u', unset},
	{10, "ReqMem", 's', unset},
	{8, "ReqNodes", 's', unset},
	{10, "ReqTRES", 's', unset},
	{20, "Reservation", 's', unset},
	{8, "ReservationId", 'u', unset},
	{10, "Reserved", 't', unset},
	{10, "ResvCPU", 't', unset},
	{10, "ResvCPURAW", 'u', unset},
	{19, "Start", 'd', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(ISOTime(r.Start)) }},
	{10, "State", 's', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(rowState(r)) }},
	{19, "Submit", 'd', func(r api.AcctRow, _ time.Time) (string, bool) { return sv(ISOTime(r.Submit)) }},
	{20, "SubmitLine", 's', unset},
	{10, "Suspended", 't', unset},
	{15, "SystemComment", 's', unset},
	{10, "SystemCPU", 's', cpuField(func(u *api.StepUsage) time.Duration { return u.SystemCPU })},
	{10, "Timelimit", 's', jobOnly(func(r api.AcctRow) string { return acctTimeLimit(r.TimeLimitMin, mins2time) })},
	{10, "TimelimitRaw", 's', jobOnly(func(r api.AcctRow) string {
		return acctTimeLimit(r.TimeLimitMin, func(m int64) string { return strconv.FormatInt(m, 10) })
	})},
	{10, "TotalCPU", 's', cpuField(func(u *api.StepUsage) time.Duration { return u.UserCPU + u.SystemCPU })},
	{14, "TRESUsageInAve", 's', unset},
	{14, "TRESUsageInMax", 's', unset},
	{18, "TRESUsageInMaxNode", 's', unset},
	{18, "TRESUsageInMaxTask", 's', unset},
	{14, "TRESUsageInMin", 's', unset},
	{18, "TRESUsageInMinNode", 's', unset},
	{18, "TRESUsageInMinTask", 's', unset},
	{14, "TRESUsageInTot", 's', unset},
	{15, "TRESUsageOutAve", 's', unset},
	{15, "TRESUsageOutMax", 's', unset},
	{19, "TRESUsageOutMaxNode", 's', unset},
	{19, "TRESUsageOutMaxTask", 's', unset},
	{15, "TRESUsageOutMin", 's', unset},
	{19, "TRESUsageOutMinNode", 's', unset},
	{19, "TRESUsageOutMinTask", 's', unset},
	{15, "TRESUsageOutTot", 's', unset},
	{6, "UID", 'u', func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Step != "" {
			return "", false
		}
		return sv(strconv.FormatUint(uint64(r.UID), 10))
	}},
	{9, "User", 's', func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Step != "" {
			return "", false
		}
		return sv(r.User)
	}},
	{10, "UserCPU", 's', cpuField(func(u *api.StepUsage) time.Duration { return u.UserCPU })},
	{10, "WCKey", 's', unset},
	{10, "WCKeyID", 'u', unset},
	{20, "WorkDir", 's', jobOnly(func(r api.AcctRow) string { return r.WorkDir })},
}

// jobOnly is a column sacct fills on job rows only.
func jobOnly(get func(api.AcctRow) string) func(api.AcctRow, time.Time) (string, bool) {
	return func(r api.AcctRow, _ time.Time) (string, bool) {
		if r.Step != "" {
			return "", false
		}
		return sv(get(r))
	}
}

// acctTimeLimit is sacct's Timelimit: UNLIMITED, Partition_Limit for a
// job that gave none (hpc's 0), else the minutes as f writes them.
func acctTimeLimit(min int64, f func(int64) string) string {
	switch {
	case min < 0:
		return "UNLIMITED"
	case min == 0:
		return "Partition_Limit"
	}
	return f(min)
}

func rowNodeCount(r api.AcctRow) int {
	if r.NodeList == "" || r.NodeList == "None assigned" {
		return 0
	}
	names, err := hostlist.Expand(r.NodeList)
	if err != nil {
		return 0
	}
	return len(names)
}

// ParseSacctFields resolves -o/--format names to columns, as sacct does:
// names match case-insensitively and by prefix, the first field of sacct's
// table that matches wins, "ALL" means every field, and "Name%N" sets the
// width to N (which right-justifies, even JobID). An unknown name is an
// error whose text is sacct's: `Invalid field requested: "bogus"`.
func ParseSacctFields(spec []string) ([]SacctField, error) {
	if len(spec) == 0 {
		spec = []string{DefaultSacctFormat}
	}
	var out []SacctField
	for _, entry := range spec {
		for _, name := range strings.Split(entry, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			width, setWidth := 0, false
			if i := strings.IndexByte(name, '%'); i >= 0 {
				width, _ = strconv.Atoi(name[i+1:])
				setWidth = true
				name = name[:i]
			}
			field := func(d sacctDef) SacctField {
				f := SacctField{Name: d.name, Width: d.width, kind: d.kind, value: d.value}
				if setWidth && width != 0 {
					f.Width = width
				}
				return f
			}
			if len(name) <= 3 && strings.EqualFold(name, "ALL"[:len(name)]) && name != "" {
				for _, d := range sacctDefs {
					out = append(out, field(d))
				}
				continue
			}
			found := false
			for _, d := range sacctDefs {
				if len(name) <= len(d.name) && strings.EqualFold(d.name[:len(name)], name) {
					out = append(out, field(d))
					found = true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("Invalid field requested: %q", name)
			}
		}
	}
	return out, nil
}

// Sacct renders accounting rows as sacct does. Fixed-width columns are
// followed by one space each (the last one too); text longer than its
// column is cut and ends in '+' ("CANCELLED+"), numbers and durations are
// never cut, dates are cut without a mark. A job cancelled by a user shows
// "CANCELLED by <uid>". Steps (Step != "") show no partition.
//
// Invalid field names make Sacct return "": call ParseSacctFields first to
// report the error as sacct does ("sacct: error: Invalid field requested:
// ...", exit status 1).
func Sacct(rows []api.AcctRow, o SacctOptions) string {
	fields, err := ParseSacctFields(o.Fields)
	if err != nil {
		return ""
	}
	parsable := o.Parsable || o.ParsableTrailing
	delim := "|"
	if o.Delimiter != "" {
		delim = o.Delimiter
	}
	sep := func(i int) string {
		if i == len(fields)-1 && !o.ParsableTrailing {
			return ""
		}
		return delim
	}
	var b strings.Builder
	if !o.NoHeader {
		names, widths := make([]string, len(fields)), make([]int, len(fields))
		for i, f := range fields {
			names[i], widths[i] = f.Name, f.Width
		}
		b.WriteString(fieldHeader(names, widths, parsable, sep))
	}
	for _, r := range rows {
		for i, f := range fields {
			v, ok := f.value(r, o.Now)
			if parsable {
				b.WriteString(v + sep(i))
				continue
			}
			w := abs(f.Width)
			switch {
			case !ok:
				v = " "
			case f.kind == 's':
				if len([]rune(v)) > w {
					v = truncRunes(v, w-1) + "+"
				}
			case f.kind == 'd':
				v = truncRunes(v, w)
			}
			b.WriteString(pad(v, w, f.Width > 0, false) + " ")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// SacctFieldNames lists the field names sacct knows, in sacct's order
// (sacct --helpformat prints them).
func SacctFieldNames() []string {
	out := make([]string, len(sacctDefs))
	for i, d := range sacctDefs {
		out[i] = d.name
	}
	return out
}

// fieldHeader is the header of sacct's and sstat's tables: the names
// padded to their widths (negative: left-aligned) and a line of dashes,
// or, parsable, the names with their separators.
func fieldHeader(names []string, widths []int, parsable bool, sep func(int) string) string {
	var b strings.Builder
	for i, name := range names {
		if parsable {
			b.WriteString(name + sep(i))
			continue
		}
		w := abs(widths[i])
		b.WriteString(pad(truncRunes(name, w), w, widths[i] > 0, true) + " ")
	}
	b.WriteString("\n")
	if !parsable {
		for _, w := range widths {
			b.WriteString(strings.Repeat("-", abs(w)) + " ")
		}
		b.WriteString("\n")
	}
	return b.String()
}
