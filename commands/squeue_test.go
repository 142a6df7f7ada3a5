package commands

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
)

// ids returns the first column of each data line.
func ids(out string) string {
	var s []string
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if i == 0 || line == "" {
			continue
		}
		s = append(s, strings.Fields(line)[0])
	}
	return strings.Join(s, " ")
}

func TestSqueueDefaultOutput(t *testing.T) {
	_, e, out, errb := newFake(t)
	stdout, stderr, code := run(e, out, errb, "squeue")
	want := "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n" +
		"                20     debug      big     root PD       0:00      2 (Resources)\n" +
		"                25     debug    small     root PD       0:00      1 (Priority)\n" +
		"                26     debug   theirs   nobody PD       0:00      1 (Priority)\n" +
		"                15     debug  sleeper     root  R       0:04      1 node1\n" +
		"                16     debug  sleeper     root  R       0:04      1 node1\n" +
		"                17     debug  sleeper     root  R       0:04      1 node2\n" +
		"                18     debug    multi     root  R       0:04      2 node[2-3]\n" +
		"                19       gpu   gpujob     root  R       0:04      1 node3\n"
	if stdout != want || stderr != "" || code != 0 {
		t.Errorf("squeue: %d %q\n%s\nwant\n%s", code, stderr, stdout, want)
	}
}

func TestSqueueFilters(t *testing.T) {
	_, e, out, errb := newFake(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"squeue", "-uroot"}, "20 25 15 16 17 18 19"},
		{[]string{"squeue", "-u", "nobody"}, "26"},
		{[]string{"squeue", "--user=65534"}, "26"},
		{[]string{"squeue", "--me"}, "20 25 15 16 17 18 19"},
		{[]string{"squeue", "-j5,6"}, ""},
		{[]string{"squeue", "-j15,19"}, "15 19"},
		{[]string{"squeue", "-j", "16"}, "16"},
		{[]string{"squeue", "--jobs=17,18"}, "17 18"},
		{[]string{"squeue", "-j", "14"}, ""}, // ended: squeue shows live jobs only
		{[]string{"squeue", "-j14", "-t", "all"}, "14"},
		{[]string{"squeue", "-p", "gpu"}, "19"},
		{[]string{"squeue", "--partitions=gpu,debug", "-t", "R"}, "15 16 17 18 19"},
		{[]string{"squeue", "-t", "PD,cd"}, "14 20 25 26"}, // CD sorts before PD
		{[]string{"squeue", "-t", "pending"}, "20 25 26"},
		{[]string{"squeue", "-n", "sleeper,big"}, "20 15 16 17"},
		{[]string{"squeue", "-w", "node3"}, "18 19"},
		{[]string{"squeue", "-w", "node[1-2]", "-h"}, "16 17 18"}, // -h: no header (first line dropped by ids)
		{[]string{"squeue", "-A", "NOBODY"}, "26"},
		{[]string{"squeue", "-q", "normal", "-p", "gpu"}, "19"},
		{[]string{"squeue", "-L", "lic"}, ""},
		{[]string{"squeue", "-S", "-i"}, "26 25 20 19 18 17 16 15"},
		{[]string{"squeue", "-S", "j,i"}, "20 19 18 15 16 17 25 26"},
		{[]string{"squeue", "-r", "-a"}, "20 25 26 15 16 17 18 19"},
		{[]string{"hpc", "queue", "-j", "14"}, "14"}, // the hpc verb finds ended jobs
		{[]string{"hpc", "queue", "-h", "-j", "14", "-o", "%t"}, ""},
	} {
		stdout, stderr, code := run(e, out, errb, c.args...)
		if c.args[0] == "hpc" && c.args[2] == "-h" {
			if stdout != "CD\n" || code != 0 {
				t.Errorf("%v: %d %q %q", c.args, code, stdout, stderr)
			}
			continue
		}
		if got := ids(stdout); got != c.want || code != 0 || stderr != "" {
			t.Errorf("%v: %q (exit %d, stderr %q), want %q", c.args, got, code, stderr, c.want)
		}
	}
}

func TestSqueueFormats(t *testing.T) {
	_, e, out, errb := newFake(t)
	stdout, _, _ := run(e, out, errb, "squeue", "-j15", "-o", "%.18i %j")
	if stdout != "             JOBID NAME\n                15 sleeper\n" {
		t.Errorf("-o: %q", stdout)
	}
	stdout, _, _ = run(e, out, errb, "squeue", "-h", "-j19", "-O", "jobid:6,name:10,state")
	if stdout != "19    gpujob    RUNNING             \n" {
		t.Errorf("-O: %q", stdout)
	}
	stdout, _, _ = run(e, out, errb, "squeue", "-l", "-j15")
	if !strings.HasPrefix(stdout, "Mon Nov 30 04:59:33 2026\n") || !strings.Contains(stdout, " RUNNING ") || !strings.Contains(stdout, "TIME_LIMI") {
		t.Errorf("-l: %q", stdout)
	}
	stdout, stderr, code := run(e, out, errb, "squeue", "-h", "-j15", "-o", "%i %@")
	if stdout != "15 %@\n" || stderr != "squeue: error: Invalid job format specification: @\n" || code != 0 {
		t.Errorf("bad letter: %d %q %q", code, stdout, stderr)
	}
	stdout, _, _ = run(e, out, errb, "squeue", "--start")
	want := "             JOBID PARTITION     NAME     USER ST          START_TIME  NODES SCHEDNODES           NODELIST(REASON)\n" +
		"                20     debug      big     root PD                 N/A      2 (null)               (Resources)\n"
	if !strings.HasPrefix(stdout, want) || strings.Contains(stdout, " R ") {
		t.Errorf("--start:\n%s", stdout)
	}
	stdout, _, _ = run(e, out, errb, "squeue", "-s")
	want = "         STEPID     NAME PARTITION     USER      TIME NODELIST\n" +
		"       15.batch    batch     debug     root      0:04 node1\n" +
		"       16.batch    batch     debug     root      0:04 node1\n" +
		"       17.batch    batch     debug     root      0:04 node2\n" +
		"       18.batch    batch     debug     root      0:04 node2\n" +
		"       19.batch    batch       gpu     root      0:04 node3\n"
	if stdout != want {
		t.Errorf("-s:\n%s\nwant\n%s", stdout, want)
	}
	for _, args := range [][]string{{"squeue", "-s", "18.batch"}, {"squeue", "-s18.batch"}, {"squeue", "-j18", "-s"}} {
		if stdout, _, _ := run(e, out, errb, args...); ids(stdout) != "18.batch" {
			t.Errorf("%v: %q", args, stdout)
		}
	}
	e.Environ = append(e.Environ, "SQUEUE_FORMAT=%i:%u", "SQUEUE_SORT=-i")
	if stdout, _, _ := run(e, out, errb, "squeue", "-h", "-p", "gpu,debug", "-t", "R"); stdout != "19:root\n18:root\n17:root\n16:root\n15:root\n" {
		t.Errorf("SQUEUE_FORMAT/SORT: %q", stdout)
	}
}

func TestSqueueErrors(t *testing.T) {
	f, e, out, errb := newFake(t)
	for _, c := range []struct {
		args   []string
		stdout string
		stderr string
		code   int
	}{
		{[]string{"squeue", "-j", "999999"}, "", "slurm_load_jobs error: Invalid job id specified\n", 1},
		{[]string{"squeue", "--bogus"}, "", "squeue: unrecognized option '--bogus'\nTry \"squeue --help\" for more information\n", 1},
		{[]string{"squeue", "-y"}, "", "squeue: invalid option -- 'y'\nTry \"squeue --help\" for more information\n", 1},
		{[]string{"squeue", "-u"}, "", "squeue: option requires an argument -- 'u'\nTry \"squeue --help\" for more information\n", 1},
		{[]string{"squeue", "-t", "BOGUS"}, "", "squeue: error: Invalid job state specified: BOGUS\nsqueue: error: Valid job states include: " + jobStateList() + "\n\n", 1},
		{[]string{"squeue", "-j", "abc"}, "", "squeue: error: Invalid job id: abc\n", 1},
		{[]string{"squeue", "-S", "y"}, "", "squeue: error: Invalid sort specification: y\n", 1},
		{[]string{"squeue", "-l", "-o", "%i"}, "", "squeue: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", 1},
		{[]string{"squeue", "-o", "%i", "-O", "jobid"}, "", "squeue: error: -O (--Format) is incompatible with -o (--format)\n", 1},
		{[]string{"squeue", "-j", "1", "2"}, squeueUsage, "squeue: error: Unrecognized option: 2\n", 1},
		{[]string{"squeue", "extra"}, squeueUsage, "squeue: error: Unrecognized option: extra\n", 1},
		{[]string{"squeue", "-V"}, "slurm-wlm 22.05.8\n", "", 0},
		{[]string{"squeue", "-u", "no-such-user-x", "-h"}, "", "squeue: error: Invalid user: no-such-user-x\n\n", 0},
	} {
		stdout, stderr, code := run(e, out, errb, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("%v: exit %d stdout %q stderr %q; want %d %q %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
	}
	f.fail = api.ErrNoLeader
	if _, stderr, code := run(e, out, errb, "squeue"); code != 1 || stderr != "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n" {
		t.Errorf("no controller: %d %q", code, stderr)
	}
	if stdout, _, code := run(e, out, errb, "squeue", "--help"); code != 0 || !strings.HasPrefix(stdout, "Usage: squeue [OPTIONS]") {
		t.Errorf("--help: %d %q", code, stdout)
	}
}

// An array's tasks that have not started are one line (40_[1,3%2]) until
// they start; -r lists them one per line; -j names a task as A_T.
func TestSqueueArrays(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.jobs = nil
	for i, id := range []uint64{40, 41, 42, 43} {
		j := pendingFor(refJob(id, "arr", "debug"), "Priority")
		j.ArrayJobID, j.ArrayTaskID = 40, i+1
		j.Spec.Array = "1-4%2"
		f.jobs = append(f.jobs, j)
	}
	f.jobs[1] = runningOn(f.jobs[1], "node1")
	f.jobs[3].State = api.StateCancelled
	f.jobs = append(f.jobs, pendingFor(refJob(50, "plain", "debug"), "Priority"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-h", "-o", "%i %A %F %K %T"}, "40_[1,3%2] 40 40 1,3%2 PENDING\n50 50 50 N/A PENDING\n40_2 41 40 2 RUNNING\n"},
		{[]string{"-h", "-r", "-o", "%i %A"}, "40_1 40\n40_3 42\n50 50\n40_2 41\n"},
		{[]string{"-h", "-j", "40_3", "-o", "%i"}, "40_[1,3%2]\n"},
		{[]string{"-h", "-j", "40_2", "-o", "%i"}, "40_2\n"},
		{[]string{"-h", "-j", "40", "-o", "%i"}, "40_[1,3%2]\n40_2\n"},
		{[]string{"-h", "-r", "-j", "40_3", "-o", "%i"}, "40_3\n"},
	} {
		stdout, stderr, code := run(e, out, errb, append([]string{"squeue"}, c.args...)...)
		if stdout != c.want || stderr != "" || code != 0 {
			t.Errorf("squeue %v: %d %q (want %q) %q", c.args, code, stdout, c.want, stderr)
		}
	}
	if _, stderr, code := run(e, out, errb, "squeue", "-j", "40_4"); code != 1 || stderr != "slurm_load_jobs error: Invalid job id specified\n" {
		t.Errorf("squeue -j 40_4 (cancelled before it started): %d %q", code, stderr)
	}
}

// squeue -v prints its options as Slurm's does, the date, and what it
// loaded, before the queue.
func TestSqueueVerbose(t *testing.T) {
	f, e, out, errb := newFake(t)
	stdout, stderr, code := run(e, out, errb, "squeue", "-v", "-p", "debug", "-t", "PD,R", "-w", "node2,node1", "--me", "-j", "5,6_2")
	if code != 0 || stderr != "" {
		t.Fatalf("squeue -v: %d %q", code, stderr)
	}
	want := "-----------------------------\nall         = false\narray       = false\nfederation  = false\n" +
		"format      = (null)\niterate     = 0\njob_flag    = 1\njobs        = 5,6_2\nlicenses    = (null)\n" +
		"local       = false\nnames       = (null)\nnodes       = node[1-2]\npartitions  = debug\n" +
		"priority    = false\nreservation = (null)\nsibling      = false\nsort        = (null)\n" +
		"start_flag  = 0\nstates      = PD,R\nstep_flag   = 0\nsteps       = (null)\nusers       = " + strconv.Itoa(e.UID) + "\n" +
		"verbose     = 1\n-----------------------------\n\n\n"
	if !strings.HasPrefix(stdout, want) {
		t.Fatalf("squeue -v printed\n%s\nwant it to begin with\n%s", stdout, want)
	}
	rest := strings.SplitN(stdout[len(want):], "\n", 3)
	if _, err := time.Parse("Mon Jan _2 15:04:05 2006", rest[0]); err != nil {
		t.Errorf("date line %q: %v", rest[0], err)
	}
	if want := fmt.Sprintf("records=%d", len(f.jobs)); !strings.HasPrefix(rest[1], "last_update_time=") || !strings.HasSuffix(rest[1], want) {
		t.Errorf("loaded line %q, want last_update_time=... %s", rest[1], want)
	}
	if !strings.HasPrefix(rest[2], "             JOBID PARTITION") {
		t.Errorf("queue after the dump: %q", rest[2])
	}
}
