package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
)

// shareFake serves /api/share and /api/report from canned answers.
func shareFake(t *testing.T, share api.ShareResponse, report api.ReportResponse) (*Env, *bytes.Buffer, *bytes.Buffer, *[]string) {
	t.Helper()
	var queries []string
	sock := filepath.Join(t.TempDir(), "hpc.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/share":
			json.NewEncoder(w).Encode(share)
		case "/api/report":
			queries = append(queries, r.URL.RawQuery)
			json.NewEncoder(w).Encode(report)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	var stdout, stderr bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Now:    func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) },
		Client: func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil },
		UID:    0}
	return e, &stdout, &stderr, &queries
}

var shareRows = api.ShareResponse{Cluster: "cluster", Rows: []api.ShareRow{
	{Account: "root", Depth: 0, RawShares: 1, NormShares: 1, RawUsage: 3000, EffectvUsage: 1, LevelFS: -1},
	{Account: "root", User: "root", Depth: 1, RawShares: 1, NormShares: 0.5, RawUsage: 0, LevelFS: -1, FairShare: 1},
	{Account: "phys", Depth: 1, RawShares: 1, NormShares: 0.5, RawUsage: 3000, EffectvUsage: 1, LevelFS: 0.5},
	{Account: "phys", User: "alice", Depth: 2, RawShares: 1, NormShares: 0.5, RawUsage: 3000.7, EffectvUsage: 1, LevelFS: 0.5, FairShare: 0.5},
	{Account: "phys", User: "bob", Depth: 2, RawShares: 1, NormShares: 0.5, RawUsage: 0, LevelFS: -1, FairShare: 0.666667},
}}

func TestSshare(t *testing.T) {
	e, so, se, _ := shareFake(t, shareRows, api.ReportResponse{})
	if code := sshareMain(e, "sshare", []string{"-a"}); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	want := "             Account       User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare \n" +
		"-------------------- ---------- ---------- ----------- ----------- ------------- ---------- \n" +
		"root                                          0.000000        3000      1.000000            \n" +
		" root                      root          1    0.500000           0      0.000000   1.000000 \n" +
		" phys                                    1    0.500000        3000      1.000000            \n" +
		"  phys                    alice          1    0.500000        3000      1.000000   0.500000 \n" +
		"  phys                      bob          1    0.500000           0      0.000000   0.666667 \n"
	if so.String() != want {
		t.Errorf("sshare -a:\n%s\nwant:\n%s", so, want)
	}

	so.Reset()
	sshareMain(e, "sshare", []string{"-P", "-n", "-u", "bob", "-A", "phys"})
	want = " phys||1|0.500000|3000|1.000000|\n  phys|bob|1|0.500000|0|0.000000|0.666667\n"
	if so.String() != want {
		t.Errorf("sshare -P -n -u bob -A phys = %q, want %q", so, want)
	}

	so.Reset()
	sshareMain(e, "sshare", []string{"-l", "-a", "-p"})
	lines := strings.Split(so.String(), "\n")
	if lines[0] != "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|" ||
		!strings.HasSuffix(lines[5], "|0.666667|inf|") {
		t.Errorf("sshare -l -a -p:\n%s", so)
	}

	if code := sshareMain(e, "sshare", []string{"--bogus"}); code == 0 {
		t.Error("an unknown option was accepted")
	}
}

func TestSreport(t *testing.T) {
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	rep := api.ReportResponse{Cluster: "cluster", Start: day, End: day.Add(24 * time.Hour), TotalCPUs: 4,
		Assocs: []api.ShareRow{{Account: "root"}, {Account: "root", User: "root", Depth: 1},
			{Account: "phys", Depth: 1}, {Account: "phys", User: "alice", Depth: 2}, {Account: "phys", User: "bob", Depth: 2}},
		Usage: []api.ReportUsage{{Account: "phys", User: "alice", CPUSeconds: 7200}, {Account: "phys", User: "bob", CPUSeconds: 600},
			{Account: "root", User: "root", CPUSeconds: 60}}}
	e, so, se, q := shareFake(t, api.ShareResponse{}, rep)
	if code := sreportMain(e, "sreport", []string{"cluster", "utilization"}); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	dash := strings.Repeat("-", 80)
	want := dash + "\nCluster Utilization 2026-11-29T00:00:00 - 2026-11-29T23:59:59\nUsage reported in CPU Minutes\n" + dash + "\n" +
		"  Cluster     Allocated       Down PLND Down          Idle    Planned      Reported \n" +
		"--------- ------------- ---------- --------- ------------- ---------- ------------- \n" +
		"  cluster           131          0         0          5629          0          5760 \n"
	if so.String() != want {
		t.Errorf("cluster utilization:\n%s\nwant:\n%s", so, want)
	}
	if len(*q) != 1 || !strings.Contains((*q)[0], "start=2026-11-29T00%3A00%3A00Z") || !strings.Contains((*q)[0], "end=2026-11-30T00%3A00%3A00Z") {
		t.Errorf("default window query %v", *q)
	}

	so.Reset()
	sreportMain(e, "sreport", []string{"-n", "-P", "-t", "hours", "user", "topusage", "start=2026-11-29", "end=2026-11-30"})
	if got := so.String(); !strings.HasPrefix(got, "cluster|alice|") || !strings.Contains(got, "|phys|2|0\n") || strings.Count(got, "\n") != 3 {
		t.Errorf("user topusage -n -P -t hours = %q", got)
	}

	so.Reset()
	sreportMain(e, "sreport", []string{"-P", "-n", "cluster", "accountutilizationbyuser"})
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	if len(lines) != 5 || lines[0] != "cluster|root|||131|0" || lines[2] != "cluster| phys|||130|0" || !strings.HasPrefix(lines[3], "cluster|  phys|alice|") {
		t.Errorf("accountutilizationbyuser:\n%s", so)
	}

	se.Reset()
	if code := sreportMain(e, "sreport", []string{"job", "sizes"}); code == 0 || !strings.Contains(se.String(), "Not valid report") {
		t.Errorf("unknown report: %d %q", code, se)
	}
	if code := sreportMain(e, "sreport", []string{"cluster", "utilization", "start=garbage"}); code == 0 {
		t.Error("a bad start time was accepted")
	}
}

// TestSshareOptions: -o picks sshare's fields (by prefix, with widths),
// -m adds the Partition column, -U leaves out account lines, -v says
// what was asked for, -M names this cluster and prints its CLUSTER line.
func TestSshareOptions(t *testing.T) {
	e, so, se := answerFake(t, map[string]any{"/api/share": shareRows, "/api/config": map[string]string{"ClusterName": "lab"}})
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"-a", "-P", "-o", "acc,user,fairs%8,levelfs,cluster"}, "Account|User|FairShare|LevelFS|Cluster\n" +
			"root||||cluster\n root|root|1.000000|inf|cluster\n phys|||0.500000|cluster\n" +
			"  phys|alice|0.500000|0.500000|cluster\n  phys|bob|0.666667|inf|cluster\n", "", 0},
		{[]string{"-a", "-n", "-o", "User%-6,RawUsage%5"}, "        3000 \nroot       0 \n        3000 \nalice   3000 \nbob        0 \n", "", 0},
		{[]string{"-a", "-U", "-P", "-n"}, " root|root|1|0.500000|0|0.000000|1.000000\n  phys|alice|1|0.500000|3000|1.000000|0.500000\n" +
			"  phys|bob|1|0.500000|0|0.000000|0.666667\n", "", 0},
		{[]string{"-u", "bob", "-U", "-m", "-p"}, "Account|User|Partition|RawShares|NormShares|RawUsage|EffectvUsage|FairShare|\n" +
			"  phys|bob||1|0.500000|0|0.000000|0.666667|\n", "", 0},
		{[]string{"-M", "lab", "-U", "-u", "bob", "-P", "-n", "-o", "user"}, "CLUSTER: lab\nbob\n", "", 0},
		{[]string{"-v", "-u", "bob,alice", "-A", "phys", "-U", "-P", "-n", "-o", "user"}, "alice\nbob\n",
			"Users requested:\n\t: bob\n\t: alice\nAccounts requested:\n\t: phys\n", 0},
		{[]string{"-v", "-a", "-U", "-P", "-n", "-o", "user"}, "root\nalice\nbob\n", "Users requested:\n\t: all\nAccounts requested:\n\t: all\n", 0},
		{[]string{"-o", "bogus"}, "", "sshare: error: Invalid field requested: \"bogus\"\n", 1},
		{[]string{"-M", "other"}, "", "sshare: error: No cluster 'other' known by database.\n" +
			"sshare: error: 'other' can't be reached now, or it is an invalid entry for --cluster.  Use 'sacctmgr list clusters' to see available clusters.\n", 1},
	} {
		so.Reset()
		se.Reset()
		code := sshareMain(e, "sshare", c.args)
		if so.String() != c.stdout || se.String() != c.stderr || code != c.code {
			t.Errorf("sshare %v: %d\n%s%s\nwant %d\n%s%s", c.args, code, so, se, c.code, c.stdout, c.stderr)
		}
	}
	so.Reset()
	sshareMain(e, "sshare", []string{"-e"})
	if !strings.HasPrefix(so.String(), "Account           Cluster           EffectvUsage      FairShare        \nGrpTRESMins") {
		t.Errorf("sshare -e:\n%s", so)
	}
}

// TestSreportOptions: -T cpu reports in TRES units with a TRES Name
// column; TRES hpc does not measure are left out (none left: fatal); -M
// names this cluster or reports nothing; one cluster option at a time.
func TestSreportOptions(t *testing.T) {
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	rep := api.ReportResponse{Cluster: "lab", Start: day, End: day.Add(24 * time.Hour), TotalCPUs: 4,
		Assocs: []api.ShareRow{{Account: "root"}, {Account: "root", User: "root", Depth: 1}},
		Usage:  []api.ReportUsage{{Account: "root", User: "root", CPUSeconds: 600}}}
	e, so, se := answerFake(t, map[string]any{"/api/report": rep, "/api/config": map[string]string{"ClusterName": "lab"}})
	dash := strings.Repeat("-", 80)
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"-P", "-T", "cpu", "cluster", "utilization"}, dash + "\nCluster Utilization 2026-11-29T00:00:00 - 2026-11-29T23:59:59\n" +
			"Usage reported in TRES Minutes\n" + dash + "\nCluster|TRES Name|Allocated|Down|PLND Down|Idle|Planned|Reported\nlab|cpu|10|0|0|5750|0|5760\n", "", 0},
		{[]string{"-n", "-P", "-v", "--tres=mem,cpu", "user", "topusage"}, "lab|root|root|root|cpu|10\n",
			"sreport: --tres: hpc's accounting measures cpu only; mem left out\n", 0},
		{[]string{"-T", "mem", "cluster", "utilization"}, "", "sreport: fatal: No valid TRES given\n", 1},
		{[]string{"-n", "-P", "-M", "lab", "-Q", "cluster", "utilization"}, "lab|10|0|0|5750|0|5760\n", "", 0},
		{[]string{"-n", "-P", "--cluster", "other", "cluster", "utilization"}, "", "", 0},
		{[]string{"-n", "-P", "-a", "--federation", "cluster", "utilization"}, "lab|10|0|0|5750|0|5760\n", "", 0},
		{[]string{"-a", "-M", "lab", "cluster", "utilization"}, "", "Only one cluster option can be used (--all_clusters OR --cluster OR --local)\n", 1},
	} {
		so.Reset()
		se.Reset()
		code := sreportMain(e, "sreport", append(c.args, "start=2026-11-29", "end=2026-11-30"))
		if so.String() != c.stdout || se.String() != c.stderr || code != c.code {
			t.Errorf("sreport %v: %d\n%s%s\nwant %d\n%s%s", c.args, code, so, se, c.code, c.stdout, c.stderr)
		}
	}
	so.Reset()
	if code := sreportMain(e, "sreport", []string{"-h"}); code != 0 || !strings.Contains(so.String(), "Valid <OPTION> values are:") {
		t.Errorf("sreport -h: %d %q", code, so)
	}
}
