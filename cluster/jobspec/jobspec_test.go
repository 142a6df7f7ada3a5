package jobspec

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"hpc/cluster/api"
)

func TestParseArgsForms(t *testing.T) {
	tests := []struct {
		args []string
		want api.JobSpec
		set  []string
	}{
		{[]string{"-J", "name"}, api.JobSpec{Name: "name"}, []string{"job-name"}},
		{[]string{"-Jname"}, api.JobSpec{Name: "name"}, []string{"job-name"}},
		{[]string{"--job-name=my job"}, api.JobSpec{Name: "my job"}, []string{"job-name"}},
		{[]string{"--job-name", "x"}, api.JobSpec{Name: "x"}, []string{"job-name"}},
		{[]string{"--job-name="}, api.JobSpec{}, []string{"job-name"}},
		{[]string{"--job=x"}, api.JobSpec{Name: "x"}, []string{"job-name"}}, // unique prefix
		{[]string{"-p", "debug"}, api.JobSpec{Partition: "debug"}, []string{"partition"}},
		{[]string{"--part=debug"}, api.JobSpec{Partition: "debug"}, []string{"partition"}},
		{[]string{"--partition", "gpu"}, api.JobSpec{Partition: "gpu"}, []string{"partition"}},
		{[]string{"-N2"}, api.JobSpec{Nodes: 2}, []string{"nodes"}},
		{[]string{"-N", "2-4"}, api.JobSpec{Nodes: 2, MaxNodes: 4}, []string{"nodes"}},
		{[]string{"-N-3"}, api.JobSpec{Nodes: 1, MaxNodes: 3}, []string{"nodes"}}, // Slurm reads an empty minimum as 1
		{[]string{"--nodes=3"}, api.JobSpec{Nodes: 3}, []string{"nodes"}},
		{[]string{"-n4"}, api.JobSpec{NTasks: 4}, []string{"ntasks"}},
		{[]string{"--ntasks", "8"}, api.JobSpec{NTasks: 8}, []string{"ntasks"}},
		{[]string{"-c", "2"}, api.JobSpec{CPUsPerTask: 2}, []string{"cpus-per-task"}},
		{[]string{"--cpus-per-task=3"}, api.JobSpec{CPUsPerTask: 3}, []string{"cpus-per-task"}},
		{[]string{"--mem=2G"}, api.JobSpec{MemPerNodeMB: 2048}, []string{"mem"}},
		{[]string{"--mem", "500"}, api.JobSpec{MemPerNodeMB: 500}, []string{"mem"}},
		{[]string{"--mem=0"}, api.JobSpec{}, []string{"mem"}},
		{[]string{"-t", "10"}, api.JobSpec{TimeLimitMin: 10}, []string{"time"}},
		{[]string{"-t1-00:00:00"}, api.JobSpec{TimeLimitMin: 1440}, []string{"time"}},
		{[]string{"--time=0:30"}, api.JobSpec{TimeLimitMin: 1}, []string{"time"}},
		{[]string{"--time=UNLIMITED"}, api.JobSpec{TimeLimitMin: -1}, []string{"time"}},
		{[]string{"-t", "0"}, api.JobSpec{TimeLimitMin: -1}, []string{"time"}},
		{[]string{"-t", "-5"}, api.JobSpec{TimeLimitMin: -5}, []string{"time"}}, // the controller rejects it
		{[]string{"-o", "out-%j.txt", "-e", "err-%j.txt"}, api.JobSpec{Output: "out-%j.txt", Error: "err-%j.txt"}, []string{"output", "error"}},
		{[]string{"--output=o", "--error=e"}, api.JobSpec{Output: "o", Error: "e"}, []string{"output", "error"}},
		{[]string{"-D", "sub"}, api.JobSpec{WorkDir: "sub"}, []string{"chdir"}},
		{[]string{"--chdir=/abs"}, api.JobSpec{WorkDir: "/abs"}, []string{"chdir"}},
		{[]string{"-J", "a", "-J", "b"}, api.JobSpec{Name: "b"}, []string{"job-name"}}, // last wins
		{[]string{"-O", "-n8"}, api.JobSpec{Overcommit: true, NTasks: 8}, []string{"overcommit", "ntasks"}},
		{[]string{"--overcommit"}, api.JobSpec{Overcommit: true}, []string{"overcommit"}},
		{[]string{"--mincpus=2"}, api.JobSpec{MinCPUs: 2}, []string{"mincpus"}},
		{[]string{"--tmp=10G"}, api.JobSpec{}, []string{"tmp"}},
		{[]string{"-N1", "-n2", "-c3", "-pdebug", "-Jx"}, api.JobSpec{Nodes: 1, NTasks: 2, CPUsPerTask: 3, Partition: "debug", Name: "x"},
			[]string{"nodes", "ntasks", "cpus-per-task", "partition", "job-name"}},
	}
	for _, tt := range tests {
		o, err := ParseArgs(tt.args)
		if err != nil {
			t.Errorf("ParseArgs(%q): %v", tt.args, err)
			continue
		}
		if !reflect.DeepEqual(o.Spec, tt.want) {
			t.Errorf("ParseArgs(%q).Spec = %+v, want %+v", tt.args, o.Spec, tt.want)
		}
		if len(o.Set) != len(tt.set) {
			t.Errorf("ParseArgs(%q).Set = %v, want %v", tt.args, o.Set, tt.set)
		}
		for _, s := range tt.set {
			if !o.Set[s] {
				t.Errorf("ParseArgs(%q).Set lacks %q", tt.args, s)
			}
		}
		if o.ScriptPath != "" || o.ScriptArgs != nil {
			t.Errorf("ParseArgs(%q) script %q %q", tt.args, o.ScriptPath, o.ScriptArgs)
		}
	}
}

func TestParseArgsFlagsAndScript(t *testing.T) {
	o, err := ParseArgs([]string{"-W", "--parsable", "--wrap", "echo hi", "-h", "-V"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Wait || !o.Parsable || o.Wrap != "echo hi" || !o.Help || !o.Version {
		t.Errorf("flags: %+v", o)
	}
	o, _ = ParseArgs([]string{"-WQv"}) // clustered flags
	if !o.Wait || !o.Set["quiet"] || !o.Set["verbose"] {
		t.Errorf("clustered: %+v", o.Set)
	}
	o, _ = ParseArgs([]string{"-WJname"}) // a flag, then an option with its argument attached
	if !o.Wait || o.Spec.Name != "name" {
		t.Errorf("-WJname: %+v", o)
	}
	o, _ = ParseArgs([]string{"--usage"})
	if !o.Help {
		t.Error("--usage should ask for help")
	}

	o, err = ParseArgs([]string{"-N", "2", "job.sh", "-N", "3", "--", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if o.ScriptPath != "job.sh" || !reflect.DeepEqual(o.ScriptArgs, []string{"-N", "3", "--", "x"}) || o.Spec.Nodes != 2 {
		t.Errorf("script: %q %q %+v", o.ScriptPath, o.ScriptArgs, o.Spec)
	}
	o, _ = ParseArgs([]string{"--", "-weird.sh", "a"})
	if o.ScriptPath != "-weird.sh" || !reflect.DeepEqual(o.ScriptArgs, []string{"a"}) {
		t.Errorf("after --: %q %q", o.ScriptPath, o.ScriptArgs)
	}
	o, _ = ParseArgs([]string{"-t", "5", "-"})
	if o.ScriptPath != "-" {
		t.Errorf("lone dash is a non-option: %q", o.ScriptPath)
	}
	o, _ = ParseArgs(nil)
	if o.ScriptPath != "" || len(o.Set) != 0 {
		t.Errorf("empty: %+v", o)
	}
}

func TestParseArgsOther(t *testing.T) {
	o, err := ParseArgs([]string{"--nice=5", "-k", "--reservation", "r1", "-L", "lic"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nice": "5", "no-kill": "", "reservation": "r1", "licenses": "lic"}
	if !reflect.DeepEqual(o.Other, want) {
		t.Errorf("Other = %v, want %v", o.Other, want)
	}
	for k := range want {
		if !o.Set[k] {
			t.Errorf("Set lacks %s", k)
		}
	}
	o, err = ParseArgs([]string{"-vv", "--tmp=1G", "--verbose"})
	if err != nil || o.Verbose != 3 || o.Other["tmp"] != "1G" {
		t.Errorf("-vv --verbose --tmp: %v %d %v", err, o.Verbose, o.Other)
	}
	// An optional argument never takes the next word.
	o, _ = ParseArgs([]string{"--exclusive", "job.sh"})
	if o.Spec.Exclusive != "exclusive" || o.ScriptPath != "job.sh" {
		t.Errorf("optional arg: %q %q", o.Spec.Exclusive, o.ScriptPath)
	}
}

func TestParseArgsCarried(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		args []string
		want api.JobSpec
	}{
		{[]string{"-A", "proj"}, api.JobSpec{Account: "proj"}},
		{[]string{"--array=0-15%4"}, api.JobSpec{Array: "0-15%4"}},
		{[]string{"-a", "1,3,5-9:2"}, api.JobSpec{Array: "1,3,5-9:2"}},
		{[]string{"-C", "fast&big"}, api.JobSpec{Constraint: "fast&big"}},
		{[]string{"-d", "afterok:12:13"}, api.JobSpec{Dependency: "afterok:12:13"}},
		{[]string{"-d", "afterany:12_3+5?singleton"}, api.JobSpec{Dependency: "afterany:12_3+5?singleton"}},
		{[]string{"-d", "afterok:999999"}, api.JobSpec{Dependency: "afterok:999999"}},
		{[]string{"--export=ALL,X=1"}, api.JobSpec{Export: "ALL,X=1"}},
		{[]string{"-G", "2"}, api.JobSpec{Gpus: "2"}},
		{[]string{"--gres=gpu:2"}, api.JobSpec{Gres: "gpu:2"}},
		{[]string{"--gres=gres:gpu:1"}, api.JobSpec{Gres: "gpu:1"}},
		{[]string{"--gpus-per-node=1", "--gpus-per-task=tesla:1"}, api.JobSpec{GpusPerNode: "1", GpusPerTask: "tesla:1"}},
		{[]string{"-H"}, api.JobSpec{Hold: true}},
		{[]string{"-i", "in.txt"}, api.JobSpec{Input: "in.txt"}},
		{[]string{"--mem-per-cpu=2G"}, api.JobSpec{MemPerCPUMB: 2048}},
		{[]string{"--mem-per-gpu", "500"}, api.JobSpec{MemPerGPUMB: 500}},
		{[]string{"--ntasks-per-node=4"}, api.JobSpec{NTasksPerNode: 4}},
		{[]string{"-w", "node[1-2]", "-x", "node3"}, api.JobSpec{NodeList: "node[1-2]", Exclude: "node3"}},
		{[]string{"--exclusive=user"}, api.JobSpec{Exclusive: "user"}},
		{[]string{"--open-mode=a"}, api.JobSpec{OpenMode: "append"}},
		{[]string{"--open-mode=truncate"}, api.JobSpec{OpenMode: "truncate"}},
		{[]string{"-q", "high"}, api.JobSpec{QOS: "high"}},
		{[]string{"--requeue"}, api.JobSpec{Requeue: &yes}},
		{[]string{"--requeue", "--no-requeue"}, api.JobSpec{Requeue: &no}},
		{[]string{"--time-min=30"}, api.JobSpec{TimeMinMin: 30}},
		{[]string{"--switches=2@10:00"}, api.JobSpec{Switches: 2, SwitchesWaitSec: 600}},
		{[]string{"--switches=1"}, api.JobSpec{Switches: 1}},
		{[]string{"--signal=B:USR1@90"}, api.JobSpec{Signal: "B:USR1@90"}},
		{[]string{"--mail-type=END,FAIL", "--mail-user=me@x"}, api.JobSpec{MailType: "END,FAIL", MailUser: "me@x"}},
	}
	for _, tt := range tests {
		o, err := ParseArgs(tt.args)
		if err != nil {
			t.Errorf("ParseArgs(%q): %v", tt.args, err)
			continue
		}
		if !reflect.DeepEqual(o.Spec, tt.want) {
			t.Errorf("ParseArgs(%q).Spec = %+v, want %+v", tt.args, o.Spec, tt.want)
		}
		if len(o.Other) != 0 {
			t.Errorf("ParseArgs(%q) left %v uninterpreted", tt.args, o.Other)
		}
	}
	o, _ := ParseArgs([]string{"--test-only", "-Q"})
	if !o.TestOnly || !o.Quiet {
		t.Errorf("--test-only -Q: %+v", o)
	}
}

func TestParseArgsErrors(t *testing.T) {
	tests := []struct {
		args   []string
		msg    string
		getopt bool
		code   int
	}{
		{[]string{"--bogus", "--wrap", "true"}, "unrecognized option '--bogus'\nTry \"sbatch --help\" for more information", true, 255},
		{[]string{"--bogus=1"}, "unrecognized option '--bogus=1'\nTry \"sbatch --help\" for more information", true, 255},
		{[]string{"-y"}, "invalid option -- 'y'\nTry \"sbatch --help\" for more information", true, 255},
		{[]string{"-J"}, "option requires an argument -- 'J'\nTry \"sbatch --help\" for more information", true, 255},
		{[]string{"--time"}, "option '--time' requires an argument\nTry \"sbatch --help\" for more information", true, 255},
		{[]string{"--parsable=yes"}, "option '--parsable' doesn't allow an argument\nTry \"sbatch --help\" for more information", true, 255},
		{[]string{"--pa=x"}, "option '--pa' is ambiguous; possibilities: '--parsable' '--partition'\nTry \"sbatch --help\" for more information", true, 255},
		{[]string{"--=x"}, "unrecognized option '--=x'\nTry \"sbatch --help\" for more information", true, 255},
		{[]string{"-t", "abc", "--wrap", "true"}, "Invalid --time specification", false, 255},
		{[]string{"--time=1:2:3:4"}, "Invalid --time specification", false, 255},
		{[]string{"--mem=abc", "--wrap", "true"}, "Invalid --mem specification", false, 255},
		{[]string{"--mem=10GB"}, "Invalid --mem specification", false, 255},
		{[]string{"--mem-per-cpu=x"}, "Invalid --mem-per-cpu specification", false, 255},
		{[]string{"--mem-per-gpu=1Q"}, "Invalid --mem-per-gpu specification", false, 255},
		{[]string{"--tmp=lots"}, "Invalid --tmp specification", false, 255},
		{[]string{"--mincpus=x"}, `Invalid numeric value "x" for --mincpus.`, false, 1},
		{[]string{"-N", "abc"}, `"abc" is not a valid node count`, false, 255},
		{[]string{"-N", "2-x"}, `"x" is not a valid node count`, false, 255},
		{[]string{"-N", "4-2"}, "Maximum node count 2 is less than minimum node count 4", false, 255},
		{[]string{"-n", "0"}, `Invalid numeric value "0" for --ntasks.`, false, 1},
		{[]string{"-n", "x"}, `Invalid numeric value "x" for --ntasks.`, false, 1},
		{[]string{"-c", "-1"}, `Invalid numeric value "-1" for --cpus-per-task.`, false, 1},
		{[]string{"--ntasks-per-node=0"}, `Invalid numeric value "0" for --ntasks-per-node.`, false, 1},
		{[]string{"--switches=x"}, `Invalid numeric value "x" for --switches.`, false, 1},
		{[]string{"--exclusive=bogus"}, "Invalid --exclusive specification", false, 255},
		{[]string{"--open-mode=x"}, "Invalid --open-mode specification", false, 255},
		{[]string{"--signal=NOPE"}, "Invalid --signal specification", false, 255},
		{[]string{"--signal=USR1@x"}, "Invalid --signal specification", false, 255},
		{[]string{"--begin=someday"}, "Invalid --begin specification", false, 255},
		{[]string{"--time-min=x"}, "Invalid --time-min specification", false, 255},
		{[]string{"--mail-type=SOMETIMES"}, "Invalid --mail-type specification", false, 255},
		{[]string{"--dependency=foo:1"}, "Batch job submission failed: Job dependency problem", false, 1},
		{[]string{"-d", "afterok:"}, "Batch job submission failed: Job dependency problem", false, 1},
		{[]string{"-d", "afterok:1,afterany:2?after:3"}, "Batch job submission failed: Job dependency problem", false, 1},
		{[]string{"-d", "afterok:x"}, "Batch job submission failed: Job dependency problem", false, 1},
		{[]string{"--array=5-1"}, "Batch job submission failed: Invalid job array specification", false, 1},
		{[]string{"--array=a"}, "Batch job submission failed: Invalid job array specification", false, 1},
		{[]string{"--array=1-9%x"}, "Batch job submission failed: Invalid job array specification", false, 1},
	}
	for _, tt := range tests {
		o, err := ParseArgs(tt.args)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("ParseArgs(%q) = %+v, %v; want a UsageError", tt.args, o, err)
			continue
		}
		if ue.Msg != tt.msg || ue.Code != tt.code || ue.Getopt != tt.getopt {
			t.Errorf("ParseArgs(%q) error = %+v, want %q (getopt %v, code %d)", tt.args, ue, tt.msg, tt.getopt, tt.code)
		}
	}
}

func TestUsageErrorFormat(t *testing.T) {
	_, err := ParseArgs([]string{"--bogus", "--wrap", "true"})
	// Exactly what Slurm prints (slurm-reference/62_err_sbatch_bad_option.txt).
	if got := err.(*UsageError).Format("sbatch"); got != "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information\n" {
		t.Errorf("Format = %q", got)
	}
	_, err = ParseArgs([]string{"-t", "abc", "--wrap", "true"})
	if got := err.(*UsageError).Format("sbatch"); got != "sbatch: error: Invalid --time specification\n" {
		t.Errorf("Format = %q", got)
	}
	e := &UsageError{Msg: msgNoInterp, Code: 1}
	want := "sbatch: error: This does not look like a batch script.  The first\n" +
		"sbatch: error: line must start with #! followed by the path to an interpreter.\n" +
		"sbatch: error: For instance: #!/bin/sh\n"
	if got := e.Format("sbatch"); got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
}

func TestDirectives(t *testing.T) {
	tests := []struct {
		name, script string
		want         []string
	}{
		{"basic", "#!/bin/bash\n#SBATCH -J test\n#SBATCH --time=10\necho hi\n", []string{"-J", "test", "--time=10"}},
		{"several per line", "#!/bin/sh\n#SBATCH -N 2 -n 4\n", []string{"-N", "2", "-n", "4"}},
		{"tabs", "#!/bin/sh\n#SBATCH\t-J\tx\n", []string{"-J", "x"}},
		{"single quotes", "#!/bin/sh\n#SBATCH -J 'my job'\n", []string{"-J", "my job"}},
		{"double quotes", "#!/bin/sh\n#SBATCH --job-name=\"my job\"\n", []string{"--job-name=my job"}},
		{"quoted hash", "#!/bin/sh\n#SBATCH -J 'a #b'\n", []string{"-J", "a #b"}},
		{"inline comment", "#!/bin/sh\n#SBATCH -J x # the name\n#SBATCH -p debug #comment\n", []string{"-J", "x", "-p", "debug"}},
		{"hash inside word", "#!/bin/sh\n#SBATCH -J a#b\n", []string{"-J", "a#b"}},
		{"blank and comment lines", "#!/bin/sh\n\n# a comment\n   \n#SBATCH -J x\n  # indented comment\n#SBATCH -p y\n", []string{"-J", "x", "-p", "y"}},
		{"stops at first command", "#!/bin/sh\n#SBATCH -J x\nhostname\n#SBATCH -p late\n", []string{"-J", "x"}},
		{"not a directive: no space", "#!/bin/sh\n#SBATCHX -J x\n#SBATCH-J y\n#SBATCH -p z\n", []string{"-p", "z"}},
		{"lowercase is a comment", "#!/bin/sh\n#sbatch -J x\n", nil},
		{"double hash is a comment", "#!/bin/sh\n##SBATCH -J x\n", nil},
		{"indented is a comment", "#!/bin/sh\n  #SBATCH -J x\n", nil},
		{"empty directive", "#!/bin/sh\n#SBATCH\n#SBATCH   \n", nil},
		{"unterminated quote", "#!/bin/sh\n#SBATCH -J 'abc\n", []string{"-J", "abc"}},
		{"empty quotes", "#!/bin/sh\n#SBATCH -J ''\n", []string{"-J", ""}},
		{"crlf", "#!/bin/sh\r\n#SBATCH -J x\r\n", []string{"-J", "x"}},
		{"no shebang", "#SBATCH -J x\n", []string{"-J", "x"}},
		{"empty", "", nil},
		{"command first", "echo hi\n#SBATCH -J x\n", nil},
	}
	for _, tt := range tests {
		if got := Directives([]byte(tt.script)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Directives = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// fakeFS is an Input whose files live in a map.
func fakeInput(files map[string]string) Input {
	return Input{
		Cwd:      "/home/u/work",
		Env:      []string{"PATH=/bin", "HOME=/home/u"},
		Hostname: "login1",
		ReadFile: func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		},
	}
}

func TestResolve(t *testing.T) {
	script := "#!/bin/bash\n#SBATCH -J fromscript\n#SBATCH -p debug -N 2\n#SBATCH --time=30 --mem=1G\n#SBATCH -o out.%j\nsrun hostname\n"
	in := fakeInput(map[string]string{"/home/u/work/job.sh": script, "/abs/other.sh": "#!/bin/sh\ntrue\n"})

	o, err := Resolve([]string{"-N", "3", "job.sh", "arg1"}, in)
	if err != nil {
		t.Fatal(err)
	}
	want := api.JobSpec{Name: "fromscript", Partition: "debug", Nodes: 3, TimeLimitMin: 30, MemPerNodeMB: 1024, Output: "out.%j",
		WorkDir: "/home/u/work", Script: script, Env: in.Env, SubmitHost: "login1"}
	if !reflect.DeepEqual(o.Spec, want) {
		t.Errorf("Spec = %+v\nwant   %+v", o.Spec, want)
	}
	if o.ScriptPath != "job.sh" || !reflect.DeepEqual(o.ScriptArgs, []string{"arg1"}) {
		t.Errorf("script %q args %q", o.ScriptPath, o.ScriptArgs)
	}
	for _, k := range []string{"job-name", "partition", "nodes", "time", "mem", "output"} {
		if !o.Set[k] {
			t.Errorf("Set lacks %s: %v", k, o.Set)
		}
	}
	in.Env[0] = "CHANGED=1"
	if o.Spec.Env[0] != "PATH=/bin" {
		t.Error("Spec.Env shares the caller's slice")
	}

	// The command line wins whatever the order; the default name is the file's base name.
	o, err = Resolve([]string{"--time=5", "-D", "/tmp/x/../y", "/abs/other.sh"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if o.Spec.Name != "other.sh" || o.Spec.TimeLimitMin != 5 || o.Spec.WorkDir != "/tmp/y" || o.Spec.Wrap {
		t.Errorf("spec = %+v", o.Spec)
	}
	o, _ = Resolve([]string{"-D", "sub", "job.sh"}, in)
	if o.Spec.WorkDir != "/home/u/work/sub" {
		t.Errorf("relative -D = %q", o.Spec.WorkDir)
	}
	o, _ = Resolve([]string{"job.sh", "-J", "notanoption"}, in)
	if o.Spec.Name != "fromscript" || !reflect.DeepEqual(o.ScriptArgs, []string{"-J", "notanoption"}) {
		t.Errorf("options after the script are its arguments: %+v %q", o.Spec, o.ScriptArgs)
	}
}

func TestResolveOverrideOrder(t *testing.T) {
	script := "#!/bin/sh\n#SBATCH --time=30\n#SBATCH -t 40\n#SBATCH -J one -J two\n#SBATCH --wait\ntrue\n"
	in := fakeInput(map[string]string{"/home/u/work/j.sh": script})
	o, err := Resolve([]string{"j.sh"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if o.Spec.TimeLimitMin != 40 || o.Spec.Name != "two" || !o.Wait {
		t.Errorf("later directives win: %+v wait=%v", o.Spec, o.Wait)
	}
	o, _ = Resolve([]string{"-t", "7", "-J", "cli", "j.sh"}, in)
	if o.Spec.TimeLimitMin != 7 || o.Spec.Name != "cli" {
		t.Errorf("command line wins: %+v", o.Spec)
	}
}

func TestResolveWrapAndStdin(t *testing.T) {
	in := fakeInput(nil)
	o, err := Resolve([]string{"--wrap", "echo hi", "-J", "w"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if o.Spec.Script != "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi\n" || !o.Spec.Wrap || o.Spec.Name != "w" || o.Wrap != "echo hi" {
		t.Errorf("wrap spec = %+v", o.Spec)
	}
	o, _ = Resolve([]string{"--wrap=true"}, in)
	if o.Spec.Name != "wrap" {
		t.Errorf("wrap name = %q", o.Spec.Name)
	}
	// As in Slurm, the generated script is read for directives like any other.
	o, _ = Resolve([]string{"--wrap", "#SBATCH -J x"}, in)
	if o.Spec.Name != "x" {
		t.Errorf("wrap directives: %q", o.Spec.Name)
	}

	in.Stdin = strings.NewReader("#!/bin/sh\n#SBATCH -p gpu\nnvidia-smi\n")
	o, err = Resolve([]string{"-t", "1"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if o.Spec.Name != "sbatch" || o.Spec.Partition != "gpu" || o.Spec.TimeLimitMin != 1 || o.Spec.Wrap {
		t.Errorf("stdin spec = %+v", o.Spec)
	}

	// Help and version need no script.
	in.Stdin = nil
	for _, a := range []string{"--help", "-V"} {
		if o, err := Resolve([]string{a}, in); err != nil || !(o.Help || o.Version) {
			t.Errorf("Resolve(%s) = %+v, %v", a, o, err)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	files := map[string]string{
		"/home/u/work/noshebang.sh": "echo hi\n",
		"/home/u/work/empty.sh":     "",
		"/home/u/work/dos.sh":       "#!/bin/sh\r\ntrue\r\n",
		"/home/u/work/nul.sh":       "#!/bin/sh\n\x00\n",
		"/home/u/work/badopt.sh":    "#!/bin/sh\n\n#SBATCH -J ok\n#SBATCH --bogus\n",
		"/home/u/work/badtime.sh":   "#!/bin/sh\n#SBATCH -t abc\n",
		"/home/u/work/word.sh":      "#!/bin/sh\n#SBATCH -J x extra\n",
		"/home/u/work/wrap.sh":      "#!/bin/sh\n#SBATCH --wrap=true\n",
		"/home/u/work/noarg.sh":     "#!/bin/sh\n#SBATCH -J\n#SBATCH x\n",
		"/home/u/work/good.sh":      "#!/bin/sh\ntrue\n",
	}
	tests := []struct {
		args  []string
		stdin string
		msg   string
		code  int
	}{
		{nil, "", "Batch script is empty!", 1},
		{[]string{"empty.sh"}, "", "Batch script is empty!", 1},
		{nil, "echo hi\n", msgNoInterp, 1},
		{[]string{"noshebang.sh"}, "", "This does not look like a batch script.  The first\nline must start with #! followed by the path to an interpreter.\nFor instance: #!/bin/sh", 1},
		{[]string{"dos.sh"}, "", msgDOSBreaks, 1},
		{[]string{"nul.sh"}, "", msgNulInScript, 1},
		{[]string{"missing.sh"}, "", "Unable to open file missing.sh", 1},
		{[]string{"badopt.sh"}, "", "batch script line 4: unrecognized option '--bogus'", 255},
		{[]string{"badtime.sh"}, "", "batch script line 2: Invalid --time specification", 255},
		{[]string{"word.sh"}, "", `batch script line 2: invalid #SBATCH directive "extra": options start with '-'`, 255},
		{[]string{"wrap.sh"}, "", "batch script line 2: --wrap cannot be used in a batch script", 255},
		{[]string{"noarg.sh"}, "", "batch script line 2: option requires an argument -- 'J'", 255},
		{[]string{"--wrap", "true", "good.sh"}, "", msgWrapArgs, 1},
		{[]string{"--bogus", "good.sh"}, "", "unrecognized option '--bogus'\nTry \"sbatch --help\" for more information", 255},
		{[]string{"-t", "abc", "--wrap", "true"}, "", "Invalid --time specification", 255},
	}
	for _, tt := range tests {
		in := fakeInput(files)
		in.Stdin = strings.NewReader(tt.stdin)
		o, err := Resolve(tt.args, in)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("Resolve(%q) = %+v, %v; want a UsageError", tt.args, o, err)
			continue
		}
		if ue.Msg != tt.msg || ue.Code != tt.code {
			t.Errorf("Resolve(%q) error = %q (code %d), want %q (code %d)", tt.args, ue.Msg, ue.Code, tt.msg, tt.code)
		}
	}
}

func TestReExports(t *testing.T) {
	if m, err := ParseTime("1-00:00:00"); m != 1440 || err != nil {
		t.Errorf("ParseTime = %d, %v", m, err)
	}
	if m, err := ParseMem("1G"); m != 1024 || err != nil {
		t.Errorf("ParseMem = %d, %v", m, err)
	}
	if s := FormatTime(10); s != "10:00" {
		t.Errorf("FormatTime = %q", s)
	}
}

// validValue gives options whose argument is checked a value they accept.
var validValue = map[string]string{
	"open-mode": "append", "mail-type": "END", "signal": "USR1@30", "begin": "now+1hour", "dependency": "afterok:1",
	"container-workdir": "/w",
}

func TestOptionTable(t *testing.T) {
	seenLong := map[string]bool{}
	seenShort := map[byte]bool{}
	for _, o := range optionTable {
		if seenLong[o.Long] || o.Long == "" || strings.HasPrefix(o.Long, "-") {
			t.Errorf("bad or duplicate long option %q", o.Long)
		}
		seenLong[o.Long] = true
		if o.Short != 0 {
			if seenShort[o.Short] {
				t.Errorf("duplicate short option -%c", o.Short)
			}
			seenShort[o.Short] = true
		}
		// Every option can be given by its full name.
		args := []string{"--" + o.Long}
		if o.Arg == RequiredArg {
			args = append(args, validValue[o.Long])
			if args[1] == "" {
				args[1] = "1"
			}
		}
		if opts, err := ParseArgs(args); err != nil || !opts.Set[o.Long] {
			t.Errorf("ParseArgs(%q): %v", args, err)
		}
	}
}
