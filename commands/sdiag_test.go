package commands

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
)

// sdiag's layout is Slurm 22.05's: the header, job counters, the main and
// backfill scheduling sections, and the request tables sorted as asked.
func TestPrintDiag(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	d := &api.Diag{Time: t0.Add(5 * time.Minute), Since: t0, JobsSubmitted: 3, JobsStarted: 2, JobsCompleted: 1,
		Cycles: 4, CycleLast: 90, CycleMax: 200, CycleSum: 400, QueueLen: 1,
		ByType: []api.DiagRPC{{Name: "REQUEST_JOB_INFO", ID: 2003, Count: 5, TotalMicros: 500}, {Name: "REQUEST_SUBMIT_BATCH_JOB", ID: 4003, Count: 3, TotalMicros: 900}},
		ByUser: []api.DiagRPC{{Name: "root", ID: 0, Count: 8, TotalMicros: 1400}}}
	var b bytes.Buffer
	printDiag(&b, d, "id")
	out := b.String()
	for _, want := range []string{
		"*******************************************************\nsdiag output at ",
		"Jobs submitted: 3\nJobs started:   2\nJobs completed: 1\nJobs canceled:  0\nJobs failed:    0\n\n",
		"\nMain schedule statistics (microseconds):\n\tLast cycle:   90\n\tMax cycle:    200\n\tTotal cycles: 4\n\tMean cycle:   100\n",
		"\tCycles per minute: 0\n",
		"\nBackfilling stats\n\tTotal backfilled jobs (since last slurm start): 0\n",
		"\tLast cycle when: N/A\n",
		"\nRemote Procedure Call statistics by message type\n\tREQUEST_JOB_INFO                        ( 2003) count:5      ave_time:100    total_time:500\n\tREQUEST_SUBMIT_BATCH_JOB                ( 4003) count:3      ave_time:300    total_time:900\n",
		"\nRemote Procedure Call statistics by user\n\troot            (       0) count:8      ave_time:175    total_time:1400\n",
		"\nPending RPC statistics\n\tNo pending RPCs\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	b.Reset()
	printDiag(&b, d, "time")
	if i, j := strings.Index(b.String(), "REQUEST_SUBMIT"), strings.Index(b.String(), "REQUEST_JOB_INFO"); i > j {
		t.Error("-t does not sort by total time")
	}
}

// TestSdiagOptions: -h is the help, -M names this cluster (another name
// is Slurm's error).
func TestSdiagOptions(t *testing.T) {
	e, so, se := answerFake(t, map[string]any{"/api/diag": api.Diag{JobsSubmitted: 7}, "/api/config": map[string]string{"ClusterName": "lab"}})
	if code := sdiagMain(e, "sdiag", []string{"-h"}); code != 0 || !strings.HasPrefix(so.String(), "Usage: sdiag [OPTIONS]") {
		t.Errorf("sdiag -h: %d %q", code, so)
	}
	so.Reset()
	if code := sdiagMain(e, "sdiag", []string{"-M", "lab"}); code != 0 || !strings.Contains(so.String(), "Jobs submitted: 7\n") || se.Len() != 0 {
		t.Errorf("sdiag -M lab: %d %q %q", code, so, se)
	}
	so.Reset()
	if code := sdiagMain(e, "sdiag", []string{"--cluster=other"}); code != 1 || so.Len() != 0 ||
		!strings.HasSuffix(se.String(), "sdiag: error: 'other' can't be reached now, or it is an invalid entry for --cluster.  Use 'sacctmgr list clusters' to see available clusters.\n") {
		t.Errorf("sdiag -M other: %d %q %q", code, so, se)
	}
}
