package fsm

import (
	"unique"

	"hpc/cluster/api"
)

// internSpec makes a job's environment, script and paths share memory with
// every equal string of the other jobs the state holds (unique.Make keeps
// one copy of each, for as long as some job uses it). Jobs submitted from
// one shell carry the same hundred-odd variables and often the same
// script: with 5,000 of them pending these copies were most of a
// controller's heap.
func internSpec(s *api.JobSpec) {
	if len(s.Env) > 0 {
		env := make([]string, len(s.Env)) // the entry's slice may be shared with the proposer
		for i, e := range s.Env {
			env[i] = unique.Make(e).Value()
		}
		s.Env = env
	}
	for _, p := range []*string{&s.Script, &s.WorkDir, &s.Output, &s.Error, &s.Name, &s.SubmitHost} {
		if *p != "" {
			*p = unique.Make(*p).Value()
		}
	}
}
