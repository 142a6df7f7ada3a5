package fsm

import (
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
	"unique"
	"unsafe"
	"weak"

	"hpc/cluster/api"
)

// internSpec makes a job's environment, script and paths share memory with
// every equal one of the other jobs the state holds. Jobs submitted from
// one shell carry the same hundred-odd variables and often the same
// script: with 5,000 of them pending these copies were most of a
// controller's heap. Each string is kept once (unique.Make, for as long
// as some job uses it), and so is each environment as a whole
// (internEnv): a job's Env is then a slice header into an array other
// jobs share, where its own array of string headers had been about 1 KB
// a job (5,000 jobs held from a shell: 5.1 MB of the leader's heap in
// internSpec, none after; go tool pprof -sample_index=inuse_space of its
// /debug/pprof/heap).
//
// A job's Env is never written into in place (jobs are replaced whole,
// and every environment built from one is a new slice: stepenv.go's
// mergeEnv and exportEnv, records.go's copy); a shared array has
// len == cap, so an append to it copies.
func internSpec(s *api.JobSpec) {
	if len(s.Env) > 0 {
		s.Env = internEnv(s.Env) // never the entry's own slice: it may be shared with the proposer
	}
	for _, p := range []*string{&s.Script, &s.WorkDir, &s.Output, &s.Error, &s.Name, &s.SubmitHost} {
		if *p != "" {
			*p = unique.Make(*p).Value()
		}
	}
}

// envTable finds the environment arrays the jobs hold by a hash of their
// contents. It holds them weakly: once no job holds an array, the
// collector frees it and a cleanup takes its entry out. Every FSM of the
// process shares it (tests run several).
var envTable = struct {
	sync.Mutex
	seed maphash.Seed
	m    map[uint64][]sharedEnv
}{seed: maphash.MakeSeed(), m: map[uint64][]sharedEnv{}}

// sharedEnv is one environment array: its first element, weakly, and its
// length.
type sharedEnv struct {
	first weak.Pointer[string]
	n     int
}

// internEnv is an array equal to env that other jobs may share: an
// existing one, or a new one (each string interned) that later equal
// environments will share. env itself is never returned or kept.
func internEnv(env []string) []string {
	var h maphash.Hash
	h.SetSeed(envTable.seed)
	for _, e := range env {
		h.WriteString(e)
		h.WriteByte(0) // no variable holds a NUL byte: "a","b" differs from "ab"
	}
	key := h.Sum64()
	envTable.Lock()
	defer envTable.Unlock()
	for _, s := range envTable.m[key] {
		if p := s.first.Value(); p != nil && s.n == len(env) {
			if shared := unsafe.Slice(p, s.n); slices.Equal(shared, env) {
				return shared
			}
		}
	}
	shared := make([]string, len(env))
	for i, e := range env {
		shared[i] = unique.Make(e).Value()
	}
	// &shared[0] is the start of the array's allocation, which weak
	// pointers and cleanups need.
	envTable.m[key] = append(envTable.m[key], sharedEnv{weak.Make(&shared[0]), len(shared)})
	runtime.AddCleanup(&shared[0], dropFreedEnvs, key)
	return shared
}

// dropFreedEnvs takes out key's entries whose arrays have been freed.
func dropFreedEnvs(key uint64) {
	envTable.Lock()
	defer envTable.Unlock()
	live := slices.DeleteFunc(envTable.m[key], func(s sharedEnv) bool { return s.first.Value() == nil })
	if len(live) == 0 {
		delete(envTable.m, key)
	} else {
		envTable.m[key] = live
	}
}
