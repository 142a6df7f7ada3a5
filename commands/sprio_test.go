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

// answerFake serves canned answers by path.
func answerFake(t *testing.T, answers map[string]any) (*Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "hpc.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(api.Error{Message: "no such endpoint " + r.URL.Path})
			return
		}
		json.NewEncoder(w).Encode(a)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	var stdout, stderr bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Now:    func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) },
		Client: func(context.Context) (*api.Client, error) { return api.NewClient(sock), nil },
		UID:    0}
	return e, &stdout, &stderr
}

var prioAnswer = api.PriorityResponse{Plugin: "priority/multifactor",
	Weights: api.PriorityFactors{Age: 1000, Fairshare: 2000, JobSize: 0, Partition: 0, QOS: 0},
	Rows: []api.PriorityRow{
		{JobID: 20, User: "root", Partition: "debug", Priority: 1500,
			Weighted: api.PriorityFactors{Age: 500, Fairshare: 1000}, Normalized: api.PriorityFactors{Age: 0.5, Fairshare: 0.5}},
		{JobID: 25, User: "ann", Partition: "gpu", Priority: 2900, Nice: 10,
			Weighted: api.PriorityFactors{Age: 900, Fairshare: 2000}, Normalized: api.PriorityFactors{Age: 0.9, Fairshare: 1}},
		{JobID: 26, User: "bob", Partition: "debug", Priority: 100,
			Weighted: api.PriorityFactors{Age: 100}, Normalized: api.PriorityFactors{Age: 0.1}},
	}}

// TestSprioFormatSortVerbose: -o prints sprio's format letters, -S sorts
// by them, -v prints the options, -M takes this cluster's name.
func TestSprioFormatSortVerbose(t *testing.T) {
	e, so, se := answerFake(t, map[string]any{"/api/priority": prioAnswer, "/api/config": map[string]string{"ClusterName": "lab"}})
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"-o", "%.5i|%6u|%.6Y|%A|%.4F|%r|%N"}, "JOBID|USER  |PRIORI|AGE|FAIR|PARTITION|NICE\n" +
			"   20|root  |  1500|500|1000|debug|0\n   25|ann   |  2900|900|2000|gpu|10\n   26|bob   |   100|100|   0|debug|0\n", "", 0},
		{[]string{"-h", "-o", "%i:%a:%f", "-S", "-y"}, "25:0.9000000:1.0000000\n20:0.5000000:0.5000000\n26:0.1000000:0.0000000\n", "", 0},
		{[]string{"-h", "-o", "%i", "-S", "r,-i"}, "26\n20\n25\n", "", 0},
		{[]string{"-w", "-o", "%.7i %.5A %.5F %S", "-u", "ann"}, "  JOBID   AGE FAIRS SITE\nWeights  1000  2000 1\n     25   900  2000 0\n", "", 0},
		{[]string{"-h", "-o", "id=%i%c", "-M", "lab", "-j", "25"}, "id=25lab\n", "", 0},
		{[]string{"-h", "-o", "%i %z", "-j", "25"}, "25 \n", "sprio: error: Invalid job format specification: z\n", 0},
		{[]string{"-h", "-o", "%i", "-S", "x"}, "", "sprio: error: Invalid sort specification: x\n", 1},
		{[]string{"-l", "-o", "%i"}, "", "sprio: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", 1},
		{[]string{"-v", "--local", "-h", "-o", "%i", "-j", "20"}, "-----------------------------\nformat     = %i\njob_flag   = 1\njobs       = 20\n" +
			"partition  = (null)\nusers      = (null)\nverbose    = 1\n-----------------------------\n\n\n20\n",
			"sprio: --local: hpc runs one cluster, not a federation; no effect\n", 0},
		{[]string{"--federation", "--sibling", "-h", "-o", "%i", "--jobs=26"}, "26\n", "", 0},
	} {
		so.Reset()
		se.Reset()
		code := sprioMain(e, "sprio", c.args)
		if so.String() != c.stdout || se.String() != c.stderr || code != c.code {
			t.Errorf("sprio %s: %d\n%s%s\nwant %d\n%s%s", c.args, code, so, se, c.code, c.stdout, c.stderr)
		}
	}
}
