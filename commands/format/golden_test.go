package format

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"hpc/cluster/api"
)

// normaliser rewrites both the expected and the produced text before they
// are compared. Each one hides a value hpc cannot reproduce; see
// testdata/golden/README.md.
type normaliser func(string) string

func replaceRe(re, with string) normaliser {
	r := regexp.MustCompile(re)
	return func(s string) string { return r.ReplaceAllString(s, with) }
}

var (
	// Values a node reports that hpc does not track, and the lab host's name.
	nodeRuntime = []normaliser{
		replaceRe(`CPULoad=\S+`, "CPULoad=X"),
		replaceRe(`FreeMem=\S+`, "FreeMem=X"),
		replaceRe(`BootTime=\S+`, "BootTime=X"),
		replaceRe(`SlurmdStartTime=\S+`, "SlurmdStartTime=X"),
		replaceRe(`LastBusyTime=\S+`, "LastBusyTime=X"),
		replaceRe(`NodeHostName=\S+`, "NodeHostName=X"),
		replaceRe(`Arch=\S+`, "Arch=X"),
		// The OS item ("OS=Linux 6.18 ... @0 ") and the separator after it.
		replaceRe(`OS=[^\n]*?(\n   | )RealMemory=`, "RealMemory="),
	}
	// hpc tracks no per-node GPU allocation yet.
	allocGres = replaceRe(`(AllocTRES=[^ \n]*),gres/gpu=\d+`, "$1")
	// The submitting shell's session id.
	jobRuntime = []normaliser{replaceRe(`AllocNode:Sid=(\S+):\d+`, "AllocNode:Sid=$1:X")}
	// When the scheduler last looked at a pending job: hpc shows the
	// submit time.
	lastSchedEval = replaceRe(`LastSchedEval=\S+`, "LastSchedEval=X")
	// Slurm 22.05 shows node=1 in a pending multi-node job's TRES; hpc shows
	// the requested node count.
	pendingTRESNodes = replaceRe(`(TRES=cpu=\d+,mem=\w+,)node=\d+`, "${1}node=X")
)

// sortRows sorts the lines after the first skip ones: sinfo -N builds one
// node's per-partition lines in racing threads, so their order is not
// reproducible.
func sortRows(skip int) normaliser {
	return func(s string) string {
		lines := strings.SplitAfter(s, "\n")
		if len(lines) <= skip {
			return s
		}
		rows := lines[skip:]
		sort.Strings(rows)
		return strings.Join(append(lines[:skip:skip], rows...), "")
	}
}

func pendingOnly(jobs []api.Job) []api.Job {
	var out []api.Job
	for _, j := range jobs {
		if j.State == api.StatePending {
			out = append(out, j)
		}
	}
	return out
}

func nodeNamed(nodes []api.Node, name string) api.Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	panic("no node " + name)
}

func TestGolden(t *testing.T) {
	busyNow := at(4, 59, 33)
	cases := []struct {
		file string
		got  func() string
		norm []normaliser
	}{
		{"01_squeue_empty", func() string { return Squeue(nil, busyNow, SqueueOptions{}) }, nil},
		{"02_sinfo_idle", func() string { return Sinfo(refPartitions(), refNodes(), SinfoOptions{}) }, nil},
		{"03_sinfo_Nl_idle", func() string {
			return Sinfo(refPartitions(), refNodes(), SinfoOptions{NodeCentric: true, Long: true, Now: at(4, 59, 7)})
		}, nil},
		{"04_scontrol_show_node_node1_idle", func() string { return ShowNode(refNodes()[0], false) }, nodeRuntime},
		{"05_scontrol_show_node_node3_idle", func() string { return ShowNode(refNodes()[2], false) }, nodeRuntime},
		{"06_scontrol_show_partition", func() string {
			var b strings.Builder
			for _, p := range refPartitions() {
				b.WriteString(ShowPartition(p, refNodes(), false))
			}
			return b.String()
		}, nil},
		{"30_squeue_busy", func() string { return Squeue(busyJobs(), busyNow, SqueueOptions{}) }, nil},
		{"31_squeue_busy_fmt", func() string {
			return Squeue(busyJobs(), busyNow, SqueueOptions{Format: "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"})
		}, nil},
		{"32_squeue_busy_long", func() string { return Squeue(busyJobs(), busyNow, SqueueOptions{Long: true}) }, nil},
		{"33_squeue_busy_pending", func() string { return Squeue(pendingOnly(busyJobs()), busyNow, SqueueOptions{}) }, nil},
		{"35_sinfo_busy", func() string { return Sinfo(refPartitions(), busyNodes(), SinfoOptions{}) }, nil},
		{"36_sinfo_Nl_busy", func() string {
			return Sinfo(refPartitions(), busyNodes(), SinfoOptions{NodeCentric: true, Long: true, Now: busyNow})
		}, []normaliser{sortRows(2)}},
		{"37_scontrol_show_job_running", func() string { return ShowJob(findJob(busyJobs(), 15), busyNow, false, false) }, jobRuntime},
		{"38_scontrol_show_job_multi", func() string { return ShowJob(findJob(busyJobs(), 18), busyNow, false, false) }, jobRuntime},
		{"39_scontrol_show_job_gpu", func() string { return ShowJob(findJob(busyJobs(), 19), busyNow, false, false) }, jobRuntime},
		{"40_scontrol_show_job_pending_resources", func() string { return ShowJob(findJob(busyJobs(), 20), busyNow, false, false) },
			append([]normaliser{pendingTRESNodes, lastSchedEval}, jobRuntime...)},
		{"41_scontrol_show_job_dependency", func() string { return ShowJob(findJob(busyJobs(), 21), busyNow, false, false) }, jobRuntime},
		{"42_scontrol_show_job_held", func() string { return ShowJob(findJob(busyJobs(), 22), busyNow, false, false) }, jobRuntime},
		{"43_scontrol_show_job_oneline", func() string { return ShowJob(findJob(busyJobs(), 15), busyNow, true, false) }, jobRuntime},
		{"44_scontrol_show_node_node1_busy", func() string { return ShowNode(busyNodes()[0], false) }, nodeRuntime},
		{"45_scontrol_show_node_node3_busy", func() string { return ShowNode(busyNodes()[2], false) },
			append([]normaliser{allocGres}, nodeRuntime...)},
		{"46_scontrol_show_node_oneline", func() string { return ShowNode(busyNodes()[2], true) },
			append([]normaliser{allocGres}, nodeRuntime...)},
		{"69_err_sinfo_unknown_partition", func() string { return Sinfo(nil, refNodes(), SinfoOptions{}) }, nil},
		{"71_scontrol_show_job_cancelled", func() string {
			return ShowJob(findJob(afterCancelJobs(), 16), at(4, 59, 35), false, false)
		}, jobRuntime},
		{"72_squeue_after_cancel_one", func() string { return Squeue(afterCancelJobs(), at(4, 59, 35), SqueueOptions{}) }, nil},
		{"74_squeue_empty_after", func() string { return Squeue(nil, at(4, 59, 40), SqueueOptions{}) }, nil},
		{"80_sacct_default", func() string { return Sacct(acctRows(), SacctOptions{}) }, nil},
		{"81_sacct_allusers_X", func() string {
			return Sacct(jobRowsOnly(acctRows()), SacctOptions{
				Fields: []string{"JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode,Elapsed,NodeList"}})
		}, nil},
		{"82_sacct_job_steps", func() string {
			var rows []api.AcctRow
			for _, r := range acctRows() {
				if r.JobID == 18 {
					rows = append(rows, r)
				}
			}
			return Sacct(rows, SacctOptions{})
		}, nil},
		{"83_sacct_parsable", func() string {
			return Sacct(jobRowsOnly(acctRows()), SacctOptions{
				Fields: []string{"JobID", "JobName", "State", "ExitCode"}, Parsable: true})
		}, nil},
		{"84_sacct_unknown_job", func() string { return Sacct(nil, SacctOptions{}) }, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "golden", c.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			want, got := string(raw), c.got()
			for _, n := range c.norm {
				want, got = n(want), n(got)
			}
			if got != want {
				t.Errorf("output differs from Slurm's\n--- want\n%s--- got\n%s%s", want, got, firstDiff(want, got))
			}
		})
	}
}

// firstDiff points at the first differing line.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "first difference at line " + itoa(i+1) + ":\n want " + quote(wl) + "\n  got " + quote(gl) + "\n"
		}
	}
	return ""
}
