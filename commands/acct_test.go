package commands

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
)

// setRows changes the fake's accounting rows of a job (its steps too).
func setRows(f *fakeCluster, id uint64, fn func(r *api.AcctRow)) {
	for i := range f.rows {
		if f.rows[i].JobID == id {
			fn(&f.rows[i])
		}
	}
}

// withQOS makes the fake also answer /api/acctmgr with these QOS (sacct
// -q checks its names against them).
func withQOS(t *testing.T, f *fakeCluster, e *Env, names ...string) {
	t.Helper()
	var st api.AcctmgrState
	for i, n := range names {
		st.QOS = append(st.QOS, api.QOS{ID: i + 1, Name: n})
	}
	sock := filepath.Join(t.TempDir(), "qos.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/acctmgr" {
			json.NewEncoder(w).Encode(st)
			return
		}
		f.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	e.Client = func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil }
}

// TestSacctSelectors: -q, -g, -k/-K, -C and -R select jobs as slurmdbd
// does; the columns they select on show.
func TestSacctSelectors(t *testing.T) {
	f, e, out, errb := newFake(t)
	withQOS(t, f, e, "normal", "high")
	for _, id := range []uint64{14, 15, 16, 17, 18, 19} {
		setRows(f, id, func(r *api.AcctRow) { r.QOS, r.TimeLimitMin, r.Group, r.GID = "normal", 10, "root", 0 })
	}
	setRows(f, 15, func(r *api.AcctRow) { r.QOS, r.Constraints, r.TimeLimitMin = "high", "gpu&fast", 30 })
	setRows(f, 16, func(r *api.AcctRow) { r.Group, r.GID, r.Reason, r.TimeLimitMin = "users", 100, "Dependency", -1 })
	setRows(f, 17, func(r *api.AcctRow) { r.Constraints = "fast" })
	ids := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := run(e, out, errb, append([]string{"sacct", "-a", "-X", "-n", "-P", "-o", "jobid", "-S", "00:00"}, args...)...)
		if code != 0 || stderr != "" {
			t.Errorf("sacct %v: %d %q", args, code, stderr)
		}
		return strings.ReplaceAll(strings.TrimSpace(stdout), "\n", ",")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-q", "HIGH"}, "15"},
		{[]string{"-q", "normal,high"}, "14,15,16,17,18,19"},
		{[]string{"-g", "100"}, "16"},
		{[]string{"--group=0,100"}, "14,15,16,17,18,19"},
		{[]string{"-k", "30"}, "15"},
		{[]string{"-k", "10", "-K", "30"}, "14,15,17,18,19"},
		{[]string{"-K", "30"}, "14,15,16,17,18,19"}, // ignored alone
		{[]string{"-k", "UNLIMITED"}, "16"},
		{[]string{"-C", "fast"}, "15,17"},
		{[]string{"-C", "gpu,fast"}, "15"},
		{[]string{"-R", "dependency"}, "16"},
		{[]string{"-R", "None"}, "14,15,17,18,19"},
	} {
		if got := ids(tc.args...); got != tc.want {
			t.Errorf("sacct %v: %q, want %q", tc.args, got, tc.want)
		}
	}
	stdout, _, _ := run(e, out, errb, "sacct", "-a", "-n", "-P", "-o", "jobid,qos,group,gid,constraints,reason,timelimit,timelimitraw", "-j", "15,16")
	want := "15|high|root|0|gpu&fast|None|00:30:00|30\n15.batch|high|root|0||||\n" +
		"16|normal|users|100||Dependency|UNLIMITED|UNLIMITED\n16.batch|normal|users|100||||\n"
	if stdout != want {
		t.Errorf("columns:\n%s\nwant\n%s", stdout, want)
	}
	for _, tc := range []struct{ args, want string }{
		{"-k 0", "sacct: fatal: Invalid time limit specification\n"},
		{"-K bogus", "sacct: fatal: Invalid time limit specification\n"},
		{"-g nosuchgroup_x", "sacct: error: Invalid group id: nosuchgroup_x\n"},
		{"-q normal,Low", "sacct: error: You gave a bad qos 'Low'. Valid QOS's are normal,high\nsacct: fatal: problem processing qos list\n"},
	} {
		if _, stderr, code := run(e, out, errb, append([]string{"sacct"}, strings.Fields(tc.args)...)...); code != 1 || stderr != tc.want {
			t.Errorf("sacct %s: %d %q", tc.args, code, stderr)
		}
	}
}

// TestSacctTexts: -B and --env-vars print what the store kept, NONE
// otherwise, and need -j, as sacct does.
func TestSacctTexts(t *testing.T) {
	f, e, out, errb := newFake(t)
	script := "#!/bin/sh\nsleep 1\n"
	setRows(f, 14, func(r *api.AcctRow) { r.Script, r.Env = &script, []string{"A=1", "B=2"} })
	rule := strings.Repeat("-", 80)
	stdout, stderr, code := run(e, out, errb, "sacct", "-B", "-j", "14,15")
	want := "Batch Script for 14\n" + rule + "\n#!/bin/sh\nsleep 1\n\nBatch Script for 15\n" + rule + "\nNONE\n\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("sacct -B: %d %q %q", code, stdout, stderr)
	}
	stdout, _, code = run(e, out, errb, "sacct", "--env-vars", "-j", "14")
	if want := "Environment used for 14 (must be batch to display)\n" + rule + "\nA=1\nB=2\n\n"; code != 0 || stdout != want {
		t.Errorf("sacct --env-vars: %d %q", code, stdout)
	}
	for _, tc := range []struct{ args, want string }{
		{"-B", "sacct: fatal: When requesting job scripts you must also request specific jobs with the '-j' option.\n"},
		{"--env-vars", "sacct: fatal: When requesting job environment you must also request specific jobs with the '-j' option.\n"},
		{"-B --env-vars -j 14", "sacct: fatal: Options --batch-script and --env-vars are mutually exclusive\n"},
	} {
		if _, stderr, code := run(e, out, errb, append([]string{"sacct"}, strings.Fields(tc.args)...)...); code != 1 || stderr != tc.want {
			t.Errorf("sacct %s: %d %q", tc.args, code, stderr)
		}
	}
}

// TestSacctClustersAndNoops: -M selects this cluster or nothing; what
// means nothing in hpc behaves as sacct does without the data, with a
// notice under -v.
func TestSacctClustersAndNoops(t *testing.T) {
	_, e, out, errb := newFake(t)
	base := []string{"sacct", "-a", "-X", "-n", "-P", "-o", "jobid", "-j", "14,15"}
	for _, tc := range []struct {
		args       []string
		want, note string
	}{
		{[]string{"-M", "lab"}, "14\n15\n", ""},
		{[]string{"-M", "all"}, "14\n15\n", ""},
		{[]string{"--clusters=other,lab"}, "14\n15\n", ""},
		{[]string{"-M", "other"}, "", ""},
		{[]string{"-x", "3", "-v"}, "", "sacct: --associations: hpc's associations have no ids; no job matches\n"},
		{[]string{"-W", "w1"}, "", ""},
		{[]string{"-F", "None"}, "14\n15\n", ""},
		{[]string{"-F", "SchedMain"}, "", ""},
		{[]string{"--whole-hetjob=yes", "-v"}, "14\n15\n", "sacct: --whole-hetjob: hpc runs no heterogeneous jobs; no effect\n"},
		{[]string{"-c"}, "", ""},
	} {
		stdout, stderr, code := run(e, out, errb, append(append([]string{}, base...), tc.args...)...)
		if code != 0 || stdout != tc.want || stderr != tc.note {
			t.Errorf("sacct %v: %d %q %q", tc.args, code, stdout, stderr)
		}
	}
	if stdout, _, _ := run(e, out, errb, "sacct", "-c", "-P", "-o", "jobid,state"); stdout != "JobID|State\n" {
		t.Errorf("sacct -c: %q", stdout)
	}
	file := filepath.Join(t.TempDir(), "jobcomp.log")
	os.WriteFile(file, nil, 0o644)
	if stdout, _, code := run(e, out, errb, "sacct", "-n", "-f", file); code != 0 || stdout != "" {
		t.Errorf("sacct -f: %d %q", code, stdout)
	}
	for _, tc := range []struct{ args, want string }{
		{"-f /nonexistent", "/nonexistent is not a valid file\n"},
		{"-F bogus", "sacct: error: str_2_job_flags: Invalid job flag bogus\n"},
		{"--whole-hetjob=maybe", "sacct: error: Invalid --whole-hetjob value \"maybe\". Valid values: [yes|no].\n"},
	} {
		if _, stderr, code := run(e, out, errb, append([]string{"sacct"}, strings.Fields(tc.args)...)...); code != 1 || stderr != tc.want {
			t.Errorf("sacct %s: %d %q", tc.args, code, stderr)
		}
	}
	// --delimiter applies to -p and -P only.
	if stdout, _, _ := run(e, out, errb, "sacct", "-a", "-X", "-p", "--delimiter=::", "-o", "jobid,state", "-j", "14"); stdout != "JobID::State::\n14::COMPLETED::\n" {
		t.Errorf("sacct --delimiter -p: %q", stdout)
	}
	if stdout, _, _ := run(e, out, errb, "sacct", "-a", "-X", "-n", "--delimiter=,", "-o", "jobid%4", "-j", "14"); stdout != "  14 \n" {
		t.Errorf("sacct --delimiter without -p: %q", stdout)
	}
}

// TestSacctJSON: --json prints openapi/dbv0.0.38's jobs answer as
// json-c pretty-prints it; --yaml the same tree.
func TestSacctJSON(t *testing.T) {
	f, e, out, errb := newFake(t)
	setRows(f, 14, func(r *api.AcctRow) {
		r.Group, r.QOS, r.WorkDir, r.ReqCPUs, r.ReqMemMB, r.TimeLimitMin = "root", "normal", "/tmp/w", 1, 1000, 10
		r.ExitCode, r.Signal = 0, 0
	})
	stdout, stderr, code := run(e, out, errb, "sacct", "--json", "-j", "14")
	if code != 0 || stderr != "" {
		t.Fatalf("sacct --json: %d %q", code, stderr)
	}
	for _, want := range []string{
		"{\n  \"meta\": {\n    \"plugin\": {\n      \"type\": \"openapi\\/dbv0.0.38\",\n      \"name\": \"Slurm OpenAPI DB v0.0.38\"\n    },\n" +
			"    \"Slurm\": {\n      \"version\": {\n        \"major\": 22,\n        \"micro\": 8,\n        \"minor\": 5\n      },\n" +
			"      \"release\": \"22.05.8\"\n    }\n  },\n  \"errors\": [\n  ],\n  \"jobs\": [\n    {\n      \"account\": \"root\",\n",
		"      \"cluster\": \"lab\",\n",
		"      \"exit_code\": {\n        \"status\": \"SUCCESS\",\n        \"return_code\": 0\n      },\n",
		"      \"job_id\": 14,\n      \"name\": \"wrap\",\n",
		"      \"qos\": \"normal\",\n      \"required\": {\n        \"CPUs\": 1,\n        \"memory\": 1000\n      },\n",
		"      \"state\": {\n        \"current\": \"COMPLETED\",\n        \"reason\": \"None\"\n      },\n",
		"            \"id\": \"batch\",\n            \"name\": \"batch\"\n",
		"      \"working_directory\": \"\\/tmp\\/w\"\n    }\n  ]\n}",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("sacct --json lacks\n%s\nin\n%s", want, stdout)
		}
	}
	if strings.HasSuffix(stdout, "\n") {
		t.Errorf("sacct --json ends in a newline, as json-c's text does not")
	}
	stdout, _, code = run(e, out, errb, "sacct", "--yaml", "-X", "-j", "14")
	for _, want := range []string{"---\nmeta:\n  plugin:\n    type: openapi/dbv0.0.38\n", "errors: []\njobs:\n- account: root\n",
		"  steps: []\n", "  working_directory: /tmp/w\n...\n"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("sacct --yaml lacks\n%s\nin\n%s", want, stdout)
		}
	}
}

// sacct shows an array's tasks as A_T (JobIDRaw their own ids), the tasks
// that have not started as one A_[...] row; -j takes the array's id (all
// its tasks) or A_T.
func TestSacctArrays(t *testing.T) {
	f, e, out, errb := newFake(t)
	sub := at(4, 0, 0)
	task := func(id uint64, idx int, state string, started bool) api.AcctRow {
		r := api.AcctRow{JobID: id, JobName: "arr", Partition: "debug", Account: "root", User: "root", State: state,
			Submit: sub, ArrayJobID: 40, ArrayTaskID: idx, AllocCPUs: 1}
		if started {
			r.Start, r.End, r.NodeList = sub.Add(time.Minute), sub.Add(2*time.Minute), "node1"
		}
		return r
	}
	batch := task(40, 0, "COMPLETED", true)
	batch.Step, batch.JobName = "batch", "batch"
	f.rows = []api.AcctRow{task(40, 0, "COMPLETED", true), batch, task(41, 1, "PENDING", false), task(42, 2, "PENDING", false),
		task(43, 3, "PENDING", false), {JobID: 44, JobName: "plain", State: "PENDING", Submit: sub, User: "root"}}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-j", "40", "-o", "jobid,jobidraw,state"}, "40_0|40|COMPLETED|\n40_0.batch|40.batch|COMPLETED|\n40_[1-3]|41|PENDING|\n"},
		{[]string{"-j", "40_2", "-o", "jobid"}, "40_[2]|\n"},
		{[]string{"-j", "40_0", "-X", "-o", "jobid"}, "40_0|\n"},
		{[]string{"-j", "41", "-o", "jobid"}, "40_[1]|\n"}, // a task by its own id
		{[]string{"-j", "44", "-o", "jobid"}, "44|\n"},
	} {
		stdout, stderr, code := run(e, out, errb, append([]string{"sacct", "-n", "-p"}, c.args...)...)
		if stdout != c.want || stderr != "" || code != 0 {
			t.Errorf("sacct %v: %d %q, want %q (%q)", c.args, code, stdout, c.want, stderr)
		}
	}
}
