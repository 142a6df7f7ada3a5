package commands

import "testing"

// TestClustersOption: squeue, scancel and scontrol take -M naming this
// cluster ("lab") or all, and answer another name with Slurm's errors;
// scontrol -u takes the caller's own uid and explains why it cannot act
// as another.
func TestClustersOption(t *testing.T) {
	f, e, out, errb := newFake(t)
	notOk := "error: No cluster 'other' known by database.\n"
	unreachable := "error: 'other' can't be reached now, or it is an invalid entry for --cluster.  Use 'sacctmgr list clusters' to see available clusters.\n"
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"squeue", "-M", "lab", "-h", "-o", "%i", "-j", "19"}, "CLUSTER: lab\n19\n", "", 0},
		{[]string{"squeue", "--clusters=all", "-h", "-o", "%i", "-j", "19"}, "CLUSTER: lab\n19\n", "", 0},
		{[]string{"squeue", "-M", "other"}, "", "squeue: " + notOk + "squeue: " + unreachable, 1},
		{[]string{"scancel", "-M", "lab", "25"}, "", "", 0},
		{[]string{"scancel", "--cluster=other", "25"}, "", "scancel: " + notOk + "scancel: " + unreachable, 1},
		{[]string{"scontrol", "-M", "lab", "-o", "show", "partition", "gpu"}, "", "", 0},
		{[]string{"scontrol", "-M", "other", "show", "job"}, "", "scontrol: " + notOk + "scontrol: " + unreachable, 1},
		{[]string{"scontrol", "-u", "root", "--version"}, "slurm-wlm 22.05.8\n", "", 0},
		{[]string{"scontrol", "--uid=0", "--version"}, "slurm-wlm 22.05.8\n", "", 0},
		{[]string{"scontrol", "-u", "65534", "show", "job"}, "", "scontrol: error: --uid=65534: hpc's controller knows callers by their socket's peer credentials and acts for uid 0 only; run scontrol as uid 65534 instead\n", 1},
		{[]string{"scontrol", "-u", "no_such_user_x", "show", "job"}, "", "scontrol: error: --uid=\"no_such_user_x\" invalid\n", 1},
	} {
		n := len(f.cancels)
		stdout, stderr, code := run(e, out, errb, c.args...)
		if c.args[0] == "scontrol" && c.args[1] == "-M" && c.code == 0 {
			stdout = "" // scontrol's own output is tested elsewhere
		}
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("%v: %d %q %q, want %d %q %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
		if c.args[0] == "scancel" && (len(f.cancels) > n) != (c.code == 0) {
			t.Errorf("%v: cancels %v", c.args, f.cancels[n:])
		}
	}
	if last := f.cancels[len(f.cancels)-1]; len(last.JobIDs) != 1 || last.JobIDs[0] != 25 {
		t.Errorf("scancel -M lab 25 did not cancel 25: %v", f.cancels)
	}
}
