package jobspec

import (
	"hpc/cluster/api"
	"testing"
)

func TestExpandPath(t *testing.T) {
	j := &api.Job{ID: 42, User: "ann", Spec: api.JobSpec{Name: "train", WorkDir: "/home/ann"}, Alloc: []api.NodeAlloc{{Node: "node3"}}}
	cases := map[string]string{
		"":                    "/home/ann/slurm-42.out",
		"%x-%j.out":           "/home/ann/train-42.out",
		"/o/%u/%N/%A_%a.%s":   "/o/ann/node3/42_4294967294.batch",
		"%t-%n-%J-%%-%5j":     "/home/ann/0-0-42.batch-%-00042",
		"odd%q%":              "/home/ann/odd%q%",
		"%3":                  "/home/ann/%3",
		"rel/dir/%j":          "/home/ann/rel/dir/42",
		"/abs/%2t-%4a-%1j.io": "/abs/00-4294967294-42.io",
		// Widths are capped at 10, as Slurm's MAX_WIDTH: a huge one can
		// neither overflow nor make a huge path.
		"%99999999999j":                 "/home/ann/0000000042",
		"%999999999999999999999999999j": "/home/ann/0000000042",
		"%12j":                          "/home/ann/0000000042",
	}
	for pat, want := range cases {
		if got := ExpandPath(pat, j, "slurm-%j.out"); got != want {
			t.Errorf("%q: %q, want %q", pat, got, want)
		}
	}
}

// A step's patterns (srun's -o/-e/-i) name the step, the task and its node.
func TestExpandStepPath(t *testing.T) {
	j := &api.Job{ID: 42, User: "ann", Spec: api.JobSpec{Name: "train", WorkDir: "/home/ann"}, ArrayJobID: 40, ArrayTaskID: 2}
	v := StepPath{Step: 3, Task: 5, NodeIndex: 1, Node: "node7", Dir: "/scratch"}
	cases := map[string]string{
		"out_%t.txt":             "/scratch/out_5.txt",
		"%J-%s-%3s-%3t-%2n-%N":   "/scratch/42.3-3-003-005-01-node7",
		"/o/%x.%u.%A.%a.%j":      "/o/train.ann.40.2.42",
		"f.%%.out":               "/scratch/f.%.out",
		"%%t":                    "/scratch/%t",
		`lit\%t`:                 "/scratch/lit%t",
		`/a\\b%j`:                `/a\b%j`,
		"%15t":                   "/scratch/0000000005",
		"plain":                  "/scratch/plain",
		"/abs/%t/%n/%N/%u/%x/%j": "/abs/5/1/node7/ann/train/42",
	}
	for pat, want := range cases {
		if got := ExpandStepPath(pat, j, v); got != want {
			t.Errorf("%q: %q, want %q", pat, got, want)
		}
	}
	for pat, want := range map[string]bool{
		"o_%t": true, "o_%3n": true, "%N.out": true, "%u": false,
		"o_%j": false, "%%t": false, `\%t`: false, "%": false, "%5": false, "%s.%J.%x": false,
	} {
		if got := Uses(pat, "tnN"); got != want {
			t.Errorf("Uses(%q, tnN) = %v", pat, got)
		}
	}
	if !Uses("in.%3J", "sJ") || Uses("in.%j", "sJ") {
		t.Error("Uses sJ")
	}
}
