package format

import (
	"fmt"
	"strconv"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

// sstat's output: one line per running step, its tasks' live usage summed
// up as slurmstepd's accounting sums it (largest, smallest and total over
// the tasks; the average is the total over the task count). What hpc
// cannot measure (CPU frequency, energy) prints as Slurm prints a value
// its plugins left unset.

// DefaultSstatFormat is what sstat prints without -o.
const DefaultSstatFormat = "jobid,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,tresusageoutave,tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,tresusageoutmin,tresusageoutminn,tresusageoutmint,tresusageouttot"

// PidSstatFormat is sstat -i's format.
const PidSstatFormat = "jobid,nodelist,pids"

// SstatOptions selects sstat's output.
type SstatOptions struct {
	Parsable         bool // -P
	ParsableTrailing bool // -p
	NoHeader         bool // -n
	NoConvert        bool // --noconvert
}

// SstatField is one resolved column.
type SstatField struct {
	Name  string
	Width int // negative: left-justified
	num   bool
	value func(a *stepAgg, o SstatOptions) (string, bool)
}

// stepAgg is a step's tasks summed up.
type stepAgg struct {
	st    api.StepStat
	n     int
	max   [nMetric]int64
	maxAt [nMetric]api.TaskStat
	min   [nMetric]int64
	minAt [nMetric]api.TaskStat
	tot   [nMetric]int64
}

const (
	mCPU = iota // milliseconds
	mRSS        // bytes
	mVM         // bytes
	mPages
	mRead  // bytes
	mWrite // bytes
	nMetric
)

func taskMetric(t api.TaskStat, m int) int64 {
	switch m {
	case mCPU:
		return t.CPU.Milliseconds()
	case mRSS:
		return t.RSSKB << 10
	case mVM:
		return t.VMSizeKB << 10
	case mPages:
		return t.Pages
	case mRead:
		return t.ReadBytes
	}
	return t.WriteBytes
}

func aggregate(s api.StepStat) *stepAgg {
	a := &stepAgg{st: s, n: len(s.Tasks)}
	for i, t := range s.Tasks {
		for m := range nMetric {
			v := taskMetric(t, m)
			a.tot[m] += v
			if i == 0 || v > a.max[m] {
				a.max[m], a.maxAt[m] = v, t
			}
			if i == 0 || v < a.min[m] {
				a.min[m], a.minAt[m] = v, t
			}
		}
	}
	return a
}

func (a *stepAgg) ave(m int) int64 {
	if a.n == 0 {
		return 0
	}
	return a.tot[m] / int64(a.n)
}

// convertNum is Slurm's convert_num_unit for a count or a size in bytes:
// units while no precision is lost (half units kept), or none with
// --noconvert.
func convertNum(v int64, o SstatOptions) string {
	if v == 0 {
		return "0"
	}
	if o.NoConvert {
		return strconv.FormatInt(v, 10)
	}
	const units = "\x00KMGTP"
	num, u := float64(v), 0
	for num >= 1024 && int64(num)%512 == 0 && u < len(units)-1 {
		num /= 1024
		u++
	}
	suffix := ""
	if u > 0 {
		suffix = units[u : u+1]
	}
	if num == float64(int64(num)) {
		return strconv.FormatInt(int64(num), 10) + suffix
	}
	return fmt.Sprintf("%.2f%s", num, suffix)
}

// smallNum is sstat's way with disk figures (whole bytes here).
func smallNum(v int64, o SstatOptions) string {
	if v <= 0 {
		return "0"
	}
	return convertNum(v, o)
}

// cpuTime prints milliseconds of CPU as sstat's AveCPU and MinCPU.
func cpuTime(ms int64) string {
	secs := ms / 1000
	if secs >= 3600 {
		return secs2time(secs)
	}
	return fmt.Sprintf("00:%02d:%02d", secs/60, secs%60)
}

// tresIn is a TRESUsageIn string of values.
func tresIn(v [nMetric]int64, o SstatOptions, energy bool) string {
	parts := []string{"cpu=" + cpuTime(v[mCPU])}
	if energy {
		parts = append(parts, "energy=0")
	}
	conv := func(n int64) string {
		if o.NoConvert {
			return strconv.FormatInt(n, 10)
		}
		return convertNum(n, o)
	}
	parts = append(parts, "fs/disk="+conv(v[mRead]), "mem="+conv(v[mRSS]), "pages="+strconv.FormatInt(v[mPages], 10), "vmem="+conv(v[mVM]))
	return strings.Join(parts, ",")
}

// tresInWhere is a TRESUsageIn string of where each figure was: the
// task's node or its rank.
func tresInWhere(at [nMetric]api.TaskStat, node bool) string {
	w := func(m int) string {
		if node {
			return at[m].Node
		}
		return strconv.Itoa(at[m].Task)
	}
	return fmt.Sprintf("cpu=%s,fs/disk=%s,mem=%s,pages=%s,vmem=%s", w(mCPU), w(mRead), w(mRSS), w(mPages), w(mVM))
}

func withTasks(f func(a *stepAgg, o SstatOptions) string) func(a *stepAgg, o SstatOptions) (string, bool) {
	return func(a *stepAgg, o SstatOptions) (string, bool) {
		if a.n == 0 {
			return "", false
		}
		return f(a, o), true
	}
}

func always(s string) func(*stepAgg, SstatOptions) (string, bool) {
	return func(*stepAgg, SstatOptions) (string, bool) { return s, true }
}

func maxOf(m int, conv func(int64, SstatOptions) string) func(*stepAgg, SstatOptions) (string, bool) {
	return withTasks(func(a *stepAgg, o SstatOptions) string { return conv(a.max[m], o) })
}

func aveOf(m int, conv func(int64, SstatOptions) string) func(*stepAgg, SstatOptions) (string, bool) {
	return withTasks(func(a *stepAgg, o SstatOptions) string { return conv(a.ave(m), o) })
}

func maxNode(m int) func(*stepAgg, SstatOptions) (string, bool) {
	return withTasks(func(a *stepAgg, _ SstatOptions) string { return a.maxAt[m].Node })
}

func maxTask(m int) func(*stepAgg, SstatOptions) (string, bool) {
	return withTasks(func(a *stepAgg, _ SstatOptions) string { return strconv.Itoa(a.maxAt[m].Task) })
}

func cpuConv(ms int64, _ SstatOptions) string { return cpuTime(ms) }

// sstatDefs are sstat's fields in its order (sstat -e lists them).
var sstatDefs = []SstatField{
	{"AveCPU", 10, false, aveOf(mCPU, cpuConv)},
	{"AveCPUFreq", 10, false, always("0")},
	{"AveDiskRead", 12, false, aveOf(mRead, smallNum)},
	{"AveDiskWrite", 12, false, aveOf(mWrite, smallNum)},
	{"AvePages", 10, false, aveOf(mPages, convertNum)},
	{"AveRSS", 10, false, aveOf(mRSS, convertNum)},
	{"AveVMSize", 10, false, aveOf(mVM, convertNum)},
	{"ConsumedEnergy", 14, false, always("0")},
	{"ConsumedEnergyRaw", 17, true, always("0")},
	{"JobID", -12, false, func(a *stepAgg, _ SstatOptions) (string, bool) {
		return strconv.FormatUint(a.st.JobID, 10) + "." + a.st.Step, true
	}},
	{"MaxDiskRead", 12, false, maxOf(mRead, smallNum)},
	{"MaxDiskReadNode", 15, false, maxNode(mRead)},
	{"MaxDiskReadTask", 15, true, maxTask(mRead)},
	{"MaxDiskWrite", 12, false, maxOf(mWrite, smallNum)},
	{"MaxDiskWriteNode", 16, false, maxNode(mWrite)},
	{"MaxDiskWriteTask", 16, true, maxTask(mWrite)},
	{"MaxPages", 8, false, maxOf(mPages, convertNum)},
	{"MaxPagesNode", 12, false, maxNode(mPages)},
	{"MaxPagesTask", 14, true, maxTask(mPages)},
	{"MaxRSS", 10, false, maxOf(mRSS, convertNum)},
	{"MaxRSSNode", 10, false, maxNode(mRSS)},
	{"MaxRSSTask", 10, true, maxTask(mRSS)},
	{"MaxVMSize", 10, false, maxOf(mVM, convertNum)},
	{"MaxVMSizeNode", 14, false, maxNode(mVM)},
	{"MaxVMSizeTask", 14, true, maxTask(mVM)},
	{"MinCPU", 10, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return cpuTime(a.min[mCPU]) })},
	{"MinCPUNode", 10, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return a.minAt[mCPU].Node })},
	{"MinCPUTask", 10, true, withTasks(func(a *stepAgg, _ SstatOptions) string { return strconv.Itoa(a.minAt[mCPU].Task) })},
	{"Nodelist", 20, false, func(a *stepAgg, _ SstatOptions) (string, bool) { return openapi.NodeList(a.st.Nodes), true }},
	{"NTasks", 8, true, withTasks(func(a *stepAgg, _ SstatOptions) string { return strconv.Itoa(a.n) })},
	{"Pids", 20, false, func(a *stepAgg, _ SstatOptions) (string, bool) {
		var p []string
		for _, t := range a.st.Tasks {
			for _, pid := range t.Pids {
				p = append(p, strconv.Itoa(pid))
			}
		}
		return strings.Join(p, ","), true
	}},
	{"ReqCPUFreq", 10, false, always("Unknown")},
	{"ReqCPUFreqMin", 13, false, always("Unknown")},
	{"ReqCPUFreqMax", 13, false, always("Unknown")},
	{"ReqCPUFreqGov", 13, false, always("Unknown")},
	{"TRESUsageInAve", 14, false, withTasks(func(a *stepAgg, o SstatOptions) string {
		var v [nMetric]int64
		for m := range nMetric {
			v[m] = a.ave(m)
		}
		return tresIn(v, o, true)
	})},
	{"TRESUsageInMax", 14, false, withTasks(func(a *stepAgg, o SstatOptions) string { return tresIn(a.max, o, true) })},
	{"TRESUsageInMaxNode", 18, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return tresInWhere(a.maxAt, true) })},
	{"TRESUsageInMaxTask", 18, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return tresInWhere(a.maxAt, false) })},
	{"TRESUsageInMin", 14, false, withTasks(func(a *stepAgg, o SstatOptions) string { return tresIn(a.min, o, true) })},
	{"TRESUsageInMinNode", 18, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return tresInWhere(a.minAt, true) })},
	{"TRESUsageInMinTask", 18, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return tresInWhere(a.minAt, false) })},
	{"TRESUsageInTot", 14, false, withTasks(func(a *stepAgg, o SstatOptions) string { return tresIn(a.tot, o, true) })},
	{"TRESUsageOutAve", 15, false, withTasks(func(a *stepAgg, o SstatOptions) string { return "fs/disk=" + smallNum(a.ave(mWrite), o) })},
	{"TRESUsageOutMax", 15, false, withTasks(func(a *stepAgg, o SstatOptions) string { return "fs/disk=" + smallNum(a.max[mWrite], o) })},
	{"TRESUsageOutMaxNode", 19, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return "fs/disk=" + a.maxAt[mWrite].Node })},
	{"TRESUsageOutMaxTask", 19, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return "fs/disk=" + strconv.Itoa(a.maxAt[mWrite].Task) })},
	{"TRESUsageOutMin", 15, false, withTasks(func(a *stepAgg, o SstatOptions) string { return "fs/disk=" + smallNum(a.min[mWrite], o) })},
	{"TRESUsageOutMinNode", 19, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return "fs/disk=" + a.minAt[mWrite].Node })},
	{"TRESUsageOutMinTask", 19, false, withTasks(func(a *stepAgg, _ SstatOptions) string { return "fs/disk=" + strconv.Itoa(a.minAt[mWrite].Task) })},
	{"TRESUsageOutTot", 15, false, withTasks(func(a *stepAgg, o SstatOptions) string { return "energy=0,fs/disk=" + smallNum(a.tot[mWrite], o) })},
}

// SstatFieldNames are sstat's field names in its order.
func SstatFieldNames() []string {
	out := make([]string, len(sstatDefs))
	for i, d := range sstatDefs {
		out[i] = d.Name
	}
	return out
}

// SstatHelpFormat is sstat -e: the field names, four to a line, each in a
// column of 19.
func SstatHelpFormat() string {
	var b strings.Builder
	for i, n := range SstatFieldNames() {
		switch {
		case i%4 != 0:
			b.WriteString(" ")
		case i > 0:
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%-19s", n)
	}
	b.WriteString("\n")
	return b.String()
}

// ParseSstatFields resolves -o entries: comma-separated names matched
// case-insensitively by prefix (the first field that starts so wins), each
// with an optional "%N" width.
func ParseSstatFields(spec []string) ([]SstatField, error) {
	var out []SstatField
	for _, entry := range spec {
		for _, name := range strings.Split(entry, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			width := 0
			if i := strings.IndexByte(name, '%'); i >= 0 {
				width, _ = strconv.Atoi(name[i+1:])
				name = name[:i]
			}
			found := false
			for _, d := range sstatDefs {
				if len(name) <= len(d.Name) && strings.EqualFold(d.Name[:len(name)], name) {
					if width != 0 {
						d.Width = width
					}
					out = append(out, d)
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

// SstatHeader is sstat's header (nothing with NoHeader).
func SstatHeader(fields []SstatField, o SstatOptions) string {
	if o.NoHeader {
		return ""
	}
	names, widths := make([]string, len(fields)), make([]int, len(fields))
	for i, f := range fields {
		names[i], widths[i] = f.Name, f.Width
	}
	return fieldHeader(names, widths, o.Parsable || o.ParsableTrailing, func(i int) string { return sstatSep(i, len(fields), o) })
}

func sstatSep(i, n int, o SstatOptions) string {
	if i == n-1 && !o.ParsableTrailing {
		return ""
	}
	return "|"
}

// SstatLine is one step's line.
func SstatLine(s api.StepStat, fields []SstatField, o SstatOptions) string {
	a := aggregate(s)
	var b strings.Builder
	parsable := o.Parsable || o.ParsableTrailing
	for i, f := range fields {
		v, ok := f.value(a, o)
		if parsable {
			b.WriteString(v + sstatSep(i, len(fields), o))
			continue
		}
		w := abs(f.Width)
		switch {
		case !ok:
			v = ""
		case !f.num && len([]rune(v)) > w:
			v = truncRunes(v, w-1) + "+"
		}
		b.WriteString(pad(v, w, f.Width > 0, false) + " ")
	}
	b.WriteString("\n")
	return b.String()
}
