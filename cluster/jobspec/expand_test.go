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
