package commands

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"hpc/cluster/jobspec"
)

// TestHelpUsageShapes runs each command's --help and --usage through the
// patterns Slurm 22.05's Python suite (tests/commands/*/test_--help.py and
// test_--usage.py) checks them with. Python's $ without MULTILINE also
// matches before a final newline, hence \n?$ where the suite has $; RE2
// has no lookahead, and salloc's (?=\s+\[) is implied by what follows it.
func TestHelpUsageShapes(t *testing.T) {
	cases := []struct {
		cmd, flag string
		patterns  []string
	}{
		{"sacct", "--help", []string{`sacct \[<OPTION>\]`, `Valid <OPTION> values are:`, `-A, --accounts:`,
			`-j, --jobs:`, `-s, --state:`, `-S, --starttime:`, `valid start/end time formats are...`}},
		{"scancel", "--help", []string{`Usage: scancel \[OPTIONS\]`, `Help options:`}},
		{"scontrol", "--help", []string{`Valid <COMMAND> values are:`, `reconfigure`, `show <ENTITY> \[<ID>\]`, `version`}},
		{"sinfo", "--help", []string{`Usage: sinfo \[OPTIONS\]`, `Help options:`}},
		{"sprio", "--help", []string{`sprio \[OPTIONS\]`, `-j, --jobs`, `-l, --long`, `-M, --cluster`,
			`-p, --partition`, `-u, --user`, `-w, --weights`}},
		{"squeue", "--help", []string{`Usage: squeue \[OPTIONS\]`, `Help options:`}},
		{"srun", "--help", []string{`Usage: srun .*?OPTIONS.*?executable.*?args`, `-b, --begin=time`,
			`-N, --nodes=N`, `-q, --qos=qos`, `--mincpus=n`, `-G, --gpus=n`}},
		{"sacctmgr", "--usage", []string{`sacctmgr \[<OPTION>\] \[<COMMAND>\]`, `Valid <OPTION> values are:`,
			`Valid <COMMAND> values are:`, `<ENTITY> may be`, `<SPECS> are different for each command entity pair`,
			`add account`, `list associations`, `modify cluster`, `delete qos`}},
		{"salloc", "--usage", []string{`Usage: salloc(?:\s+\[{1,2}-{1,2}.*?\])+\s+\[command \[args\.\.\.\]\]\n?$`}},
		{"sbatch", "--usage", []string{`Usage: sbatch (?:\[-{1,2}.*?\]\s+)+executable \[args\.\.\.\]\n?$`}},
		{"scancel", "--usage", []string{`Usage: scancel(?:\s+\[-{1,2}[^\]]+\])+\s+\[job_id.+\]\n?$`}},
		{"sdiag", "--usage", []string{`Usage: sdiag(?:\s+\[-{1,2}[^\]]+\])+\n?$`}},
		{"sinfo", "--usage", []string{`Usage: sinfo(?:\s+\[-{1,2}[^\]]+])+\n?$`}},
		{"sprio", "--usage", []string{`Usage: sprio(?:\s+\[-{1,2}[^\]]+(?:\[s\])?\])+\n?$`}},
		{"squeue", "--usage", []string{`Usage: squeue(?:\s+\[-{1,2}[^\]]+\])+\n?$`}},
		{"srun", "--usage", []string{`Usage: srun (?:\[-{1,2}.*?\]\s+)+executable \[args\.\.\.\]\n?$`}},
		// No suite test: the same shape as their siblings'.
		{"sshare", "--usage", []string{`Usage: sshare(?:\s+\[-{1,2}[^\]]+\])+\n?$`}},
		{"sshare", "--help", []string{`Usage: sshare \[OPTIONS\]`, `Help options:`}},
		{"sreport", "--help", []string{`sreport \[<OPTION>\] \[<COMMAND>\]`, `Valid <OPTION> values are:`, `Valid <COMMAND> values are:`}},
		{"sreport", "--usage", []string{`Usage: sreport(?:\s+\[-{1,2}[^\]]+\])+\s+<COMMAND>`}},
		{"sdiag", "--help", []string{`Usage: sdiag \[OPTIONS\]`, `Help options:`}},
		{"sbatch", "--help", []string{`Usage: sbatch .*?OPTIONS.*?script.*?args`, `-b, --begin=time`, `-N, --nodes=N`, `-G, --gpus=n`}},
		{"salloc", "--help", []string{`Usage: salloc .*?OPTIONS.*?command.*?args`, `-b, --begin=time`, `-N, --nodes=N`, `-G, --gpus=n`}},
		{"sacct", "--usage", []string{`Usage: sacct(?:\s+\[-{1,2}[^\]]+\])+\n?$`}},
		{"sacctmgr", "--help", []string{`sacctmgr \[<OPTION>\] \[<COMMAND>\]`}},
		{"scontrol", "--usage", []string{`Valid <COMMAND> values are:`}},
	}
	_, e, out, errb := newFake(t)
	for _, c := range cases {
		stdout, stderr, code := run(e, out, errb, c.cmd, c.flag)
		if code != 0 || stderr != "" {
			t.Errorf("%s %s: exit %d, stderr %q", c.cmd, c.flag, code, stderr)
		}
		for _, p := range c.patterns {
			if !regexp.MustCompile(p).MatchString(stdout) {
				t.Errorf("%s %s: no match for %s in:\n%s", c.cmd, c.flag, p, stdout)
			}
		}
	}
}

// TestHelpListsOptions: every long option a command accepts is in its
// --help, so the help says what hpc takes.
func TestHelpListsOptions(t *testing.T) {
	_, e, out, errb := newFake(t)
	for cmd, longs := range helpOptionNames() {
		stdout, _, _ := run(e, out, errb, cmd, "--help")
		for _, l := range longs {
			if cmd == "salloc" && sallocRefuses[l] {
				continue
			}
			if !strings.Contains(stdout, "--"+l) {
				t.Errorf("%s --help does not list --%s", cmd, l)
			}
		}
	}
}

// sallocRefuses are the options of srun's table salloc refuses ("give it
// to srun"): its help does not list them.
var sallocRefuses = map[string]bool{"pty": true, "input": true, "output": true, "error": true}

// helpOptionNames are the long options of each command's table: the
// getopt tables of commands/, srun's and salloc's, and sbatch's table in
// cluster/jobspec/options.go (read from its source).
func helpOptionNames() map[string][]string {
	longs := func(opts ...[]jobspec.Opt) []string {
		var out []string
		for _, list := range opts {
			for _, o := range list {
				if o.Long != "" {
					out = append(out, o.Long)
				}
			}
		}
		return out
	}
	m := map[string][]string{
		"sacct": longs(sacctOpts().Opts), "scancel": longs(scancelOpts().Opts), "scontrol": longs(scontrolOpts().Opts),
		"sinfo": longs(sinfoOpts().Opts), "squeue": longs(squeueOpts().Opts), "sdiag": longs(sdiagOpts().Opts),
		"sprio": longs(sprioOpts().Opts), "sreport": longs(sreportOpts().Opts), "sshare": longs(sshareOpts().Opts),
	}
	// srun's and salloc's tables as runGetopt builds them.
	for _, prog := range []string{"srun", "salloc"} {
		g, _ := runGetopt(prog)
		m[prog] = longs(g.Opts)
	}
	if src, err := os.ReadFile("../cluster/jobspec/options.go"); err == nil {
		for _, s := range regexp.MustCompile(`\{Opt\{"([a-z0-9-]+)"`).FindAllSubmatch(src, -1) {
			m["sbatch"] = append(m["sbatch"], string(s[1]))
		}
	}
	return m
}
