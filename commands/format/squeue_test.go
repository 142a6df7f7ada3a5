package format

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
)

func TestParseSqueueFormat(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    []Field
		wantErr string
	}{
		{"%.18i", []Field{{Letter: 'i', Width: 18, Right: true}}, ""},
		{"%8j", []Field{{Letter: 'j', Width: 8}}, ""},
		{"%-8u", []Field{{Letter: 'u', Width: 8}}, ""},
		{"%R", []Field{{Letter: 'R'}}, ""},
		{"%.2t %.10M", []Field{
			{Letter: 't', Width: 2, Right: true, Text: " "},
			{Letter: 'M', Width: 10, Right: true},
		}, ""},
		{"id=%i|%P end", []Field{
			{Text: "id="},
			{Letter: 'i', Text: "|"},
			{Letter: 'P', Text: " end"},
		}, ""},
		{"no fields at all", []Field{{Text: "no fields at all"}}, ""},
		{"%i %%", []Field{{Letter: 'i', Text: " "}}, ""},
		{"%i %.5@!", []Field{{Letter: 'i', Text: " "}, {Text: "%.5@!"}},
			"Invalid job format specification: @"},
		{"%Q %! %1", []Field{{Letter: 'Q', Text: " "}, {Text: "%! "}, {Text: "%1"}},
			"Invalid job format specification: !\nInvalid job format specification: "},
		{"", nil, ""},
	} {
		got, err := ParseSqueueFormat(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseSqueueFormat(%q) = %+v, want %+v", c.in, got, c.want)
		}
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != c.wantErr {
			t.Errorf("ParseSqueueFormat(%q) error = %q, want %q", c.in, gotErr, c.wantErr)
		}
	}
}

// oneJob renders a single job with a format and no header.
func oneJob(j api.Job, format string) string {
	return strings.TrimSuffix(Squeue([]api.Job{j}, at(4, 59, 33), SqueueOptions{Format: format, NoHeader: true}), "\n")
}

func TestSqueueFields(t *testing.T) {
	run := *findJob(busyJobs(), 18)
	pend := *findJob(busyJobs(), 20)
	failed := running(batchJob(30, "crash", "debug"), "node1")
	failed.State = api.StateFailed
	failed.Reason = "NonZeroExitCode"
	failed.EndTime = at(4, 59, 31)
	anon := running(batchJob(31, "", "debug"), "node4")
	anon.User = ""
	anon.UID = 1234
	long := running(batchJob(32, "a-very-long-job-name", "debug"), "node1")
	long.StartTime = at(3, 0, 0)
	long.Spec.TimeLimitMin = -1

	for _, c := range []struct {
		name   string
		job    api.Job
		format string
		want   string
	}{
		{"right justify", run, "%.6i|", "    18|"},
		{"left justify", run, "%6i|", "18    |"},
		{"dash means left", run, "%-6i|", "18    |"},
		{"cut to width", long, "%.8j|%8j|", "a-very-l|a-very-l|"},
		{"no width no pad", long, "%j|%i", "a-very-long-job-name|32"},
		{"node list never cut", run, "%.3N|", "node[2-3]|"},
		{"time never cut", long, "%.3M|", "1:59:33|"},
		{"pending reason cut", pend, "%.5R|", "(Reso|"},
		{"running shows nodes", run, "%R", "node[2-3]"},
		{"failed shows reason", failed, "%R %t %T", "(NonZeroExitCode) F FAILED"},
		{"failed time is end-start", failed, "%M", "0:02"},
		{"state", pend, "%t %T %r", "PD PENDING Resources"},
		{"long state", long, "%.8T|%.2t", " RUNNING| R"},
		{"counts pending", pend, "%C %D %c", "4 2 1"},
		{"counts running", run, "%C %D", "2 2"},
		{"memory", pend, "%m", "1000M"},
		{"time limit", run, "%l %L", "10:00 9:56"},
		{"unlimited", long, "%l %L %e", "UNLIMITED UNLIMITED NONE"},
		{"dates", run, "%S %V %e", "2026-11-30T04:59:29 2026-11-30T04:59:28 2026-11-30T05:09:29"},
		{"pending dates", pend, "%S %e", "N/A N/A"},
		{"account workdir", run, "%a %Z", "root /tmp/slurm-capture"},
		{"unset values", run, "%k %E %q %h %A %F %K %B", "(null) (null) normal OK 18 18 N/A node2"},
		{"uid when no name", anon, "%u %U %j %g", "1234 1234 (null) root"},
		{"priority", *findJob(busyJobs(), 15), "%Q", "4294901745"},
		{"held priority", *findJob(busyJobs(), 22), "%Q %p", "0 0.00000000000000"},
		{"literal text", run, "[%i] on %P.", "[18] on debug."},
	} {
		if got := oneJob(c.job, c.format); got != c.want {
			t.Errorf("%s: %q gives %q, want %q", c.name, c.format, got, c.want)
		}
	}
}

func TestSqueueHeaders(t *testing.T) {
	got := Squeue(nil, at(4, 59, 33), SqueueOptions{Format: "%.4i %5P %.3N %.2R %l"})
	// Headers are cut to the width, except NODELIST and NODELIST(REASON).
	want := "JOBI PARTI NODELIST NODELIST(REASON) TIME_LIMIT\n"
	if got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
	got = Squeue(busyJobs()[:1], at(4, 59, 33), SqueueOptions{Long: true, NoHeader: true})
	if strings.Contains(got, "2026") || strings.Contains(got, "JOBID") {
		t.Errorf("-l -h printed a date or header: %q", got)
	}
	got = Squeue(nil, at(4, 59, 33), SqueueOptions{Long: true})
	if !strings.HasPrefix(got, "Mon Nov 30 04:59:33 2026\n") {
		t.Errorf("-l does not start with the date: %q", got)
	}
}

func TestSortJobs(t *testing.T) {
	mk := func(id uint64, part string, st api.JobState, reason string) api.Job {
		j := batchJob(id, "j", part)
		j.State = st
		j.Reason = reason
		return j
	}
	jobs := []api.Job{
		mk(5, "gpu", api.StateRunning, ""),
		mk(9, "debug", api.StateRunning, ""),
		mk(3, "debug", api.StatePending, "JobHeldUser"),
		mk(7, "debug", api.StatePending, "Priority"),
		mk(4, "debug", api.StatePending, "Resources"),
		mk(8, "debug", api.StateCompleting, ""),
		mk(2, "gpu", api.StatePending, "Priority"),
		mk(6, "debug", api.StateRunning, ""),
	}
	var got []uint64
	for _, j := range sortedJobs(jobs, "", time.Time{}) {
		got = append(got, j.ID)
	}
	// debug: CG 8; PD 4, 7, then held 3 (priority 0); R 6, 9. gpu: PD 2; R 5.
	want := []uint64{8, 4, 7, 3, 6, 9, 2, 5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestSqueueDoesNotReorderCallerSlice(t *testing.T) {
	jobs := busyJobs()
	first := jobs[0].ID
	Squeue(jobs, time.Now(), SqueueOptions{})
	if jobs[0].ID != first {
		t.Errorf("Squeue sorted the caller's slice")
	}
}
