package jobspec

import (
	"errors"
	"hpc/cluster/api"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzDirectives checks that Directives never panics, that nothing after the
// first command counts, and that Resolve copes with any script.
func FuzzDirectives(f *testing.F) {
	f.Add([]byte("#!/bin/bash\n#SBATCH -J test -N 2\nsrun hostname\n"))
	f.Fuzz(func(t *testing.T, script []byte) {
		words := Directives(script)
		for _, w := range words {
			if strings.ContainsRune(w, '\n') {
				t.Fatalf("word %q spans lines", w)
			}
		}
		more := append(append([]byte(nil), script...), "\nhostname\n#SBATCH --late\n"...)
		if got := Directives(more); !reflect.DeepEqual(got, words) {
			t.Fatalf("directives after the first command were read: %q vs %q", got, words)
		}
		in := Input{Cwd: "/w", ReadFile: func(string) ([]byte, error) { return script, nil }}
		o, err := Resolve([]string{"job.sh"}, in)
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) || ue.Msg == "" || (ue.Code != 1 && ue.Code != 255) {
				t.Fatalf("Resolve error %#v", err)
			}
			return
		}
		if o.Spec.Script != string(script) || (o.Spec.Name == "" && !o.Set["job-name"]) || o.Spec.WorkDir == "" {
			t.Fatalf("resolved spec %+v", o.Spec)
		}
	})
}

// FuzzParseArgs takes newline-separated arguments.
func FuzzParseArgs(f *testing.F) {
	f.Add("-J\nname\n--wrap\ntrue")
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\n")
		o, err := ParseArgs(args)
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) || (ue.Code != 255 && ue.Code != 1) || ue.Msg == "" {
				t.Fatalf("ParseArgs(%q) error %#v", args, err)
			}
			return
		}
		known := map[string]bool{}
		for _, opt := range optionTable {
			known[opt.Long] = true
		}
		for k := range o.Set {
			if !known[k] {
				t.Fatalf("Set has unknown option %q", k)
			}
		}
		if o.ScriptPath == "" && len(o.ScriptArgs) > 0 && !slices.Contains(args, "") {
			t.Fatalf("script args %q without a script", o.ScriptArgs)
		}
		if o.Spec.Nodes < 0 || o.Spec.NTasks < 0 || o.Spec.CPUsPerTask < 0 || o.Spec.MemPerNodeMB < 0 {
			t.Fatalf("negative counts: %+v", o.Spec)
		}
		in := Input{Cwd: "/w", ReadFile: func(string) ([]byte, error) { return []byte("#!/bin/sh\n#SBATCH -J x\ntrue\n"), nil }}
		if _, err := Resolve(args, in); err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("Resolve(%q) error %#v", args, err)
			}
		}
	})
}

// FuzzExpandPath: any pattern expands quickly to a bounded path.
func FuzzExpandPath(f *testing.F) {
	for _, s := range []string{"%j", "%99999999999j", "%x-%j.out", "%%%", "/a/%5a_%A"} {
		f.Add(s)
	}
	j := &api.Job{ID: 4294967295, User: "ann", Spec: api.JobSpec{Name: "n", WorkDir: "/w"}, ArrayJobID: 7, ArrayTaskID: 3}
	f.Fuzz(func(t *testing.T, pattern string) {
		p := ExpandPath(pattern, j, "slurm-%j.out")
		if len(p) > 12*len(pattern)+64 {
			t.Errorf("%q expanded to %d bytes", pattern, len(p))
		}
	})
}
