package commands

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
)

func TestScancel(t *testing.T) {
	for _, c := range []struct {
		args    []string
		stderr  string
		code    int
		cancels []api.CancelRequest // what reached the controller
	}{
		// Slurm's reference files 63, 63b, 70, 75, 75b.
		{[]string{"scancel", "999999"}, "", 0, []api.CancelRequest{{JobIDs: []uint64{999999}}}},
		{[]string{"scancel", "-v", "999999"}, "scancel: Terminating job 999999\nscancel: error: Kill job error on job id 999999: Invalid job id specified\n", 0,
			[]api.CancelRequest{{JobIDs: []uint64{999999}}}},
		{[]string{"scancel", "16"}, "", 0, []api.CancelRequest{{JobIDs: []uint64{16}}}},
		{[]string{"scancel", "14"}, "", 0, []api.CancelRequest{{JobIDs: []uint64{14}}}},
		{[]string{"scancel", "14", "-v"}, "scancel: Terminating job 14\nscancel: error: Kill job error on job id 14: Job/step already completing or completed\n", 0,
			[]api.CancelRequest{{JobIDs: []uint64{14}}}},
		{[]string{"scancel", "15,16", "17"}, "", 0, []api.CancelRequest{{JobIDs: []uint64{15}}, {JobIDs: []uint64{16}}, {JobIDs: []uint64{17}}}},
		// Another user's job is refused, whatever the verbosity.
		{[]string{"scancel", "26"}, "scancel: error: Kill job error on job id 26: Access/permission denied\n", 1, []api.CancelRequest{{JobIDs: []uint64{26}}}},
		// Array tasks and steps do not exist in hpc yet.
		{[]string{"scancel", "15_3"}, "", 0, nil},
		{[]string{"scancel", "-v", "15_[1-2]"}, "scancel: Terminating job 15_1\nscancel: error: Kill job error on job id 15_1: Invalid job id specified\n" +
			"scancel: Terminating job 15_2\nscancel: error: Kill job error on job id 15_2: Invalid job id specified\n", 0, nil},
		{[]string{"scancel", "15.0"}, "scancel: error: Kill job error on job step id 15.0: Invalid job id specified\n", 1, nil},
		// Filters: scancel loads the jobs, picks the live ones that match,
		// pending ones first, and cancels them in one request.
		{[]string{"scancel", "-u", "root"}, "", 0, batch(20, 25, 15, 16, 17, 18, 19)},
		{[]string{"scancel", "-uroot", "-p", "gpu"}, "", 0, batch(19)},
		{[]string{"scancel", "-n", "sleeper", "-t", "R"}, "", 0, batch(15, 16, 17)},
		{[]string{"scancel", "--name=big", "-t", "PENDING", "-v"}, "scancel: Terminating job 20\n", 0, batch(20)},
		{[]string{"scancel", "-w", "node3"}, "", 0, batch(18, 19)},
		{[]string{"scancel", "-t", "PD", "-u", "root", "25", "15"}, "", 0, batch(25)},
		{[]string{"scancel", "-n", "nosuch", "-v"}, "scancel: error: No active jobs match ALL job filters, including: job_name=nosuch \n", 0, nil},
		{[]string{"scancel", "-p", "gpu", "999"}, "scancel: error: Kill job error on job id 999: Invalid job id specified\n", 1, nil},
		// --signal goes through CancelRequest.Signal.
		{[]string{"scancel", "--signal=USR1", "15"}, "", 0, reqs(10, 15)},
		{[]string{"scancel", "-s", "SIGTERM", "-v", "16"}, "scancel: Signal 15 to job 16\n", 0, reqs(15, 16)},
		{[]string{"scancel", "-s", "9", "14"}, "scancel: error: Kill job error on job id 14: Invalid job id specified\n", 1, nil},
		{[]string{"scancel", "-b", "-v", "18"}, "scancel: Terminating batch job 18\n", 0, scoped(api.SignalBatch, reqs(9, 18))},
		{[]string{"scancel", "-f", "-s", "USR2", "18"}, "", 0, scoped(api.SignalFull, reqs(12, 18))},
		// Errors, as Slurm prints them.
		{[]string{"scancel"}, "scancel: error: No job identification provided\n", 1, nil},
		{[]string{"scancel", "abc"}, "scancel: error: Invalid job id abc\n", 1, nil},
		{[]string{"scancel", "5x"}, "scancel: error: Invalid job id 5x\n", 1, nil},
		{[]string{"scancel", "-s", "BOGUS", "5"}, "Unknown job signal: BOGUS\n", 1, nil},
		{[]string{"scancel", "-t", "sleeping", "5"}, "Invalid job state specified: sleeping\nValid job states are PENDING, RUNNING, and SUSPENDED\n", 1, nil},
		{[]string{"scancel", "-u", "no-such-user-x"}, "scancel: error: Invalid user name: no-such-user-x\n", 1, nil},
		{[]string{"scancel", "--bogus"}, "scancel: unrecognized option '--bogus'\nTry \"scancel --help\" for more information\n", 1, nil},
	} {
		f, e, out, errb := newFake(t)
		stdout, stderr, code := run(e, out, errb, c.args...)
		if stdout != "" || stderr != c.stderr || code != c.code || !reflect.DeepEqual(f.cancels, c.cancels) {
			t.Errorf("%v: exit %d stdout %q stderr %q cancels %+v\n want exit %d stderr %q cancels %+v",
				c.args, code, stdout, stderr, f.cancels, c.code, c.stderr, c.cancels)
		}
	}
}

// scoped sets the signal scope (scancel -b, -f) of requests.
func scoped(scope string, rs []api.CancelRequest) []api.CancelRequest {
	for i := range rs {
		rs[i].Scope = scope
	}
	return rs
}

// reqs is one cancel request per job, with a signal.
// batch is the one request of a filtered scancel that sends no signal.
func batch(ids ...uint64) []api.CancelRequest {
	return []api.CancelRequest{{JobIDs: ids}}
}

func reqs(sig int, ids ...uint64) []api.CancelRequest {
	var out []api.CancelRequest
	for _, id := range ids {
		out = append(out, api.CancelRequest{JobIDs: []uint64{id}, Signal: sig})
	}
	return out
}

func TestScancelInteractive(t *testing.T) {
	f, e, out, errb := newFake(t)
	e.Stdin = stringsReader("n\ny\n")
	stdout, _, code := run(e, out, errb, "scancel", "-i", "-n", "sleeper", "-w", "node1")
	want := "Cancel job_id=15 name=sleeper partition=debug [y/n]? Cancel job_id=16 name=sleeper partition=debug [y/n]? "
	if stdout != want || code != 0 || !reflect.DeepEqual(f.cancels, batch(16)) {
		t.Errorf("-i: %d %q %+v", code, stdout, f.cancels)
	}
}

// A signal to a job that has not started is asked again, as Slurm's
// scancel does while the controller says the job cannot be altered yet;
// after 10 tries the error is reported.
func TestScancelSignalRetriesPending(t *testing.T) {
	f, e, out, errb := newFake(t)
	waits := 0
	defer func(w func(int) time.Duration) { cancelRetryWait = w }(cancelRetryWait)
	cancelRetryWait = func(i int) time.Duration { waits++; return 0 }
	f.jobs = []api.Job{pendingFor(refJob(30, "p", "debug"), "Priority")}
	f.pendingSignals = 2
	_, stderr, code := run(e, out, errb, "scancel", "-v", "--signal=USR1", "30")
	if code != 0 || waits != 2 || len(f.cancels) != 3 || strings.Count(stderr, "scancel: Job is in transitional state, retrying\n") != 2 {
		t.Errorf("scancel -s USR1 of a pending job: %d, %d waits, %d requests, %q", code, waits, len(f.cancels), stderr)
	}
	f.cancels, waits, f.pendingSignals = nil, 0, 100
	_, stderr, code = run(e, out, errb, "scancel", "--signal=USR1", "30")
	if code != 1 || waits != 9 || len(f.cancels) != 10 || stderr != "scancel: error: Kill job error on job id 30: Job can not be altered now, try again later\n" {
		t.Errorf("scancel -s USR1, never started: %d, %d waits, %d requests, %q", code, waits, len(f.cancels), stderr)
	}
}
