package fsm

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"hpc/cluster/api"
)

// Equal environments share one array, never the submitted slice; a
// different one gets its own; and once no job holds an array its entry
// leaves the table.
func TestInternEnvShares(t *testing.T) {
	base := sharedEnvs()
	mk := func(extra ...string) []string {
		return append([]string{"HOME=/home/u", "PATH=/usr/bin:/bin", "SHELL=/bin/sh"}, extra...)
	}
	a := api.JobSpec{Env: mk("X=1")}
	b := api.JobSpec{Env: mk("X=1")}
	c := api.JobSpec{Env: mk("X=2")}
	d := api.JobSpec{Env: mk("X", "=1")} // the same bytes run together differently
	submitted := a.Env
	for _, s := range []*api.JobSpec{&a, &b, &c, &d} {
		internSpec(s)
	}
	if &a.Env[0] == &submitted[0] {
		t.Fatal("the job holds the submitted slice")
	}
	if &a.Env[0] != &b.Env[0] {
		t.Error("equal environments do not share an array")
	}
	if &a.Env[0] == &c.Env[0] || &a.Env[0] == &d.Env[0] {
		t.Error("different environments share an array")
	}
	if !slices.Equal(a.Env, mk("X=1")) || !slices.Equal(c.Env, mk("X=2")) || !slices.Equal(d.Env, mk("X", "=1")) {
		t.Errorf("values changed: %q %q %q", a.Env, c.Env, d.Env)
	}
	if len(a.Env) != cap(a.Env) {
		t.Error("a shared array has room to append into")
	}
	if n := sharedEnvs(); n != base+3 {
		t.Errorf("%d arrays in the table, want %d", n, base+3)
	}
	runtime.KeepAlive(submitted)
	a, b, c, d = api.JobSpec{}, api.JobSpec{}, api.JobSpec{}, api.JobSpec{}
	// Cleanups run on their own goroutine after a collection.
	for deadline := time.Now().Add(10 * time.Second); sharedEnvs() > base; {
		if time.Now().After(deadline) {
			t.Fatalf("%d arrays left in the table after their jobs went, want %d", sharedEnvs(), base)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// sharedEnvs is how many environment arrays the table holds (tests).
func sharedEnvs() int {
	envTable.Lock()
	defer envTable.Unlock()
	n := 0
	for _, l := range envTable.m {
		n += len(l)
	}
	return n
}
