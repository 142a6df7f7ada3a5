package commands

import (
	"strings"
	"testing"
)

func TestSinfo(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.nodes.Nodes[3].State, f.nodes.Nodes[3].Reason = "IDLE+DRAIN", "bad disk"
	for _, c := range []struct {
		args   []string
		stdout string
		stderr string
		code   int
	}{
		{[]string{"sinfo"}, "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n" +
			"debug*       up 1-00:00:00      1  drain node4\n" +
			"debug*       up 1-00:00:00      3  alloc node[1-3]\n" +
			"gpu          up 1-00:00:00      1  drain node4\n" +
			"gpu          up 1-00:00:00      1  alloc node3\n", "", 0},
		{[]string{"sinfo", "-p", "nosuch"}, "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n", "", 0},
		{[]string{"sinfo", "-h", "-p", "gpu"}, "gpu          up 1-00:00:00      1  drain node4\n" +
			"gpu          up 1-00:00:00      1  alloc node3\n", "", 0},
		{[]string{"sinfo", "-Nh", "-n", "node[1-2]"}, "node1          1    debug* alloc \nnode2          1    debug* alloc \n", "", 0},
		{[]string{"sinfo", "-s"}, "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n" +
			"debug*       up 1-00:00:00          3/0/1/4 node[1-4]\n" +
			"gpu          up 1-00:00:00          1/0/1/2 node[3-4]\n", "", 0},
		{[]string{"sinfo", "-R"}, "REASON               USER      TIMESTAMP           NODELIST\n" +
			"bad disk             Unknown   Unknown             node4\n", "", 0},
		{[]string{"sinfo", "-t", "alloc", "-o", "%P %t %N"}, "PARTITION STATE NODELIST\ndebug* alloc node[1-3]\ngpu alloc node3\n", "", 0},
		// As in sinfo, a drained idle node is idle; partitions without a
		// matching node still print.
		{[]string{"sinfo", "-t", "idle", "-h"}, "debug*       up 1-00:00:00      1  drain node4\ngpu          up 1-00:00:00      1  drain node4\n", "", 0},
		{[]string{"sinfo", "-t", "mix", "-h"}, "debug*       up 1-00:00:00      0    n/a \ngpu          up 1-00:00:00      0    n/a \n", "", 0},
		{[]string{"sinfo", "-O", "partition:7,nodes:.4", "-h"}, "debug*    4\ngpu       2\n", "", 0},
		{[]string{"sinfo", "-V"}, "slurm-wlm 22.05.8\n", "", 0},
		{[]string{"sinfo", "-T"}, "RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST\n", "", 0},
		{[]string{"sinfo", "-t", "sleepy"}, "", "sinfo: error: Bad state string: \"sleepy\"\nsinfo: error: valid states: " + sinfoStateList + "\n", 1},
		{[]string{"sinfo", "--bogus"}, "", "sinfo: unrecognized option '--bogus'\nTry \"sinfo --help\" for more information\n", 1},
		{[]string{"sinfo", "-a", "-p", "gpu"}, "", "sinfo: error: Conflicting options, -a and -p, specified. Please choose one or the other.\n", 1},
		{[]string{"sinfo", "-l", "-o", "%P"}, "", "sinfo: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.\n", 1},
		{[]string{"sinfo", "-n", "node[", "-h"}, "", "sinfo: error: 'node[' invalid entry for --nodes\n", 1},
		{[]string{"sinfo", "-o", "%P %Q", "-h", "-p", "gpu"}, "gpu %Q\n", "sinfo: error: Invalid node format specification: Q\n", 0},
	} {
		stdout, stderr, code := run(e, out, errb, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("%v: exit %d\n%s%q\nwant %d\n%s%q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
	}
	stdout, _, _ := run(e, out, errb, "sinfo", "-N", "-l")
	if !strings.HasPrefix(stdout, "Mon Nov 30 04:59:33 2026\nNODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON") ||
		!strings.Contains(stdout, "node4          1       gpu     drained 2       1:2:1   4000        0      1   (null) bad disk") {
		t.Errorf("sinfo -N -l:\n%s", stdout)
	}
	// The hpc verb is the same command.
	if a, _, _ := run(e, out, errb, "hpc", "nodes", "-s"); !strings.Contains(a, "3/0/1/4") {
		t.Errorf("hpc nodes -s: %q", a)
	}
}

// TestSinfoSortAndClusters: -S sorts lines by sinfo's keys, the first
// deciding, '-' descending; -M names this cluster ("lab") or all, and
// the listing then begins with its CLUSTER line.
func TestSinfoSortAndClusters(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.nodes.Nodes[3].State, f.nodes.Nodes[3].Reason = "IDLE+DRAIN", "bad disk"
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"sinfo", "-h", "-o", "%P %D %t %N", "-S", "-P,t"}, "gpu 1 alloc node3\ngpu 1 drain node4\ndebug* 3 alloc node[1-3]\ndebug* 1 drain node4\n", "", 0},
		{[]string{"sinfo", "-h", "-o", "%P %D %t %N", "-S", "-D,P,-t"}, "debug* 3 alloc node[1-3]\ndebug* 1 drain node4\ngpu 1 drain node4\ngpu 1 alloc node3\n", "", 0},
		{[]string{"sinfo", "-h", "-o", "%P %D %t %N", "--sort=t,#P"}, "debug* 3 alloc node[1-3]\ngpu 1 alloc node3\ndebug* 1 drain node4\ngpu 1 drain node4\n", "", 0},
		{[]string{"sinfo", "-h", "-N", "-o", "%N %P", "-S", "-N"}, "node4 debug*\nnode4 gpu\nnode3 debug*\nnode3 gpu\nnode2 debug*\nnode1 debug*\n", "", 0},
		{[]string{"sinfo", "-M", "lab", "-o", "%P %D", "-p", "gpu"}, "CLUSTER: lab\nPARTITION NODES\ngpu 2\n", "", 0},
		{[]string{"sinfo", "--clusters=all", "-h", "-o", "%P %D", "-p", "gpu"}, "gpu 2\n", "", 0},
		{[]string{"sinfo", "-M", "lab,other", "-h", "-o", "%P", "-p", "gpu"}, "gpu\n", "sinfo: error: No cluster 'other' known by database.\n", 0},
		{[]string{"sinfo", "-M", "other"}, "", "sinfo: error: No cluster 'other' known by database.\n" +
			"sinfo: error: 'other' can't be reached now, or it is an invalid entry for --cluster.  Use 'sacctmgr list clusters' to see available clusters.\n", 1},
	} {
		stdout, stderr, code := run(e, out, errb, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("%v: %d\n%s%s\nwant %d\n%s%s", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
	}
}

// sinfo -v prints its options and the match flags its format sets, as
// Slurm's sinfo does, then the date, then the listing.
func TestSinfoVerbose(t *testing.T) {
	_, e, out, errb := newFake(t)
	stdout, stderr, code := run(e, out, errb, "sinfo", "-v", "-N", "-l", "-n", "node[1-2]", "-t", "idle")
	if code != 0 || stderr != "" {
		t.Fatalf("sinfo -v: %d %q", code, stderr)
	}
	for _, want := range []string{
		"-----------------------------\ndead        = false\nexact       = 0\nfiltering   = true\n" +
			"format      = nodelist:0 ,nodes:.6 ,partition:.9 ,statelong:.11 ,cpus:4 ,socketcorethread:.8 ,memory:.6 ,disk:.8 ,weight:.6 ,features:.8 ,reason:20\n" +
			"iterate     = 0\nlong        = true\nno_header   = false\nnode_field  = true\nnode_format = true\n" +
			"nodes       = node[1-2]\npart_field  = true\npartition   = n/a\nresponding  = false\nstates      = idle\n",
		"verbose     = 1\n-----------------------------\nall_flag        = false\n",
		"cpus_flag       = true\ndefault_time_flag =false\ndisk_flag       = true\n",
		"features_flag   = true\n", "memory_flag     = true\npartition_flag  = true\n", "reason_flag     = true\n",
		"state_flag      = true\nstatecomplete_flag = false\nweight_flag     = true\n-----------------------------\n\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("sinfo -v lacks\n%s\nin\n%s", want, stdout)
		}
	}
	if !strings.Contains(stdout, "NODELIST   NODES PARTITION       STATE CPUS") {
		t.Errorf("no listing after the dump:\n%s", stdout)
	}
	// -o's letters set their flags.
	stdout, _, _ = run(e, out, errb, "sinfo", "-v", "-o", "%P %c %G")
	if !strings.Contains(stdout, "format      = %P %c %G\n") || !strings.Contains(stdout, "gres_flag       = true\n") ||
		!strings.Contains(stdout, "avail_flag      = false\n") || !strings.Contains(stdout, "part_field  = false\n") {
		t.Errorf("sinfo -v -o: %s", stdout)
	}
}
