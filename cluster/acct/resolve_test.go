package acct

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"hpc/cluster/api"
	"hpc/sched"
)

// TestResolveAsResolved: the association a submit is checked against
// (userAssoc, resolve) is the one Resolved lists for its account and user,
// with what it inherits, in trees with limits, QoS lists and TRES set
// anywhere, accounts whose parents are missing or form a cycle, and
// chains deeper than Resolved goes; nil where Resolved lists none.
func TestResolveAsResolved(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		a := randomTree(rng)
		listed := map[string]*api.Assoc{}
		for _, r := range a.Resolved() {
			listed[assocKey(r.Account, r.User)] = r
		}
		for key, as := range a.Assocs {
			got, want := a.resolve(as.Account, as.User), listed[key]
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, %s: resolve\n%+v\nResolved lists\n%+v", seed, key, got, want)
			}
		}
		if a.resolve("nosuch", "") != nil || a.resolve(rootAccount, "nosuch") != nil {
			t.Fatalf("seed %d: an association that does not exist resolves", seed)
		}
	}
}

// randomTree is a state of random accounts (each under root, another
// account, a missing one, or itself through a cycle; now and then a chain
// of 70), users under them, and settings on any of them.
func randomTree(rng *rand.Rand) State {
	a := New()
	n := 2 + rng.IntN(12)
	name := func(i int) string { return fmt.Sprint("a", i) }
	for i := range n {
		parent := rootAccount
		switch rng.IntN(8) {
		case 0:
			parent = "missing"
		case 1:
			parent = name(i) // a cycle of one
		case 2, 3, 4:
			if i > 0 {
				parent = name(rng.IntN(i))
			}
		default:
			if i+1 < n {
				parent = name(i + 1) // forward: cycles of several, or chains
			}
		}
		a.Assocs[assocKey(name(i), "")] = randomSettings(rng, &api.Assoc{Account: name(i), Parent: parent, Shares: 1})
	}
	if rng.IntN(4) == 0 { // deeper than Resolved goes
		prev := rootAccount
		for i := range 70 {
			acct := fmt.Sprint("deep", i)
			a.Assocs[assocKey(acct, "")] = &api.Assoc{Account: acct, Parent: prev, Shares: 1}
			prev = acct
		}
		a.Assocs[assocKey(prev, "u")] = &api.Assoc{Account: prev, User: "u", Shares: 1}
		a.Assocs[assocKey("deep63", "u")] = &api.Assoc{Account: "deep63", User: "u", Shares: 1}
	}
	for range rng.IntN(15) {
		acct := rootAccount
		if rng.IntN(5) > 0 {
			acct = name(rng.IntN(n))
		}
		u := fmt.Sprint("u", rng.IntN(5))
		a.Assocs[assocKey(acct, u)] = randomSettings(rng, &api.Assoc{Account: acct, User: u, Shares: 1})
	}
	randomSettings(rng, a.Assocs[assocKey(rootAccount, "")])
	return a
}

func randomSettings(rng *rand.Rand, as *api.Assoc) *api.Assoc {
	pick := func() bool { return rng.IntN(3) == 0 }
	limit := func(p **int, below int) {
		if pick() {
			v := rng.IntN(below)
			*p = &v
		}
	}
	limit(&as.MaxJobs, 100)
	limit(&as.MaxSubmitJobs, 6)
	limit(&as.GrpJobs, 10)
	limit(&as.GrpSubmitJobs, 12)
	if pick() {
		v := rng.Int64N(1000)
		as.MaxWallMin = &v
	}
	if pick() {
		as.MaxTRESPerJob = api.TRES{"cpu": rng.Int64N(64), fmt.Sprint("gres/gpu", rng.IntN(2)): 2}
	}
	if pick() {
		as.QOS = []string{"normal", fmt.Sprint("q", rng.IntN(3))}
	}
	if pick() {
		as.DefaultQOS = "normal"
	}
	return as
}

// TestSubmitInputsAsSchedInputs: a submit's limits read from SubmitInputs
// (its own association and the accounts') give what they give from
// SchedInputs (every association), whoever submits under whichever
// account, whatever jobs are counted.
func TestSubmitInputsAsSchedInputs(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 4))
		a := randomTree(rng)
		if rng.IntN(3) == 0 {
			v := rng.IntN(8)
			a.QOS["normal"].MaxSubmitJobsPerUser = &v
		}
		accounts := []string{rootAccount, "missing", "deep69"}
		for k := range a.Assocs {
			accounts = append(accounts, strings.TrimSuffix(k, "/"+a.Assocs[k].User))
		}
		slices.Sort(accounts)
		accounts = slices.Compact(accounts)
		usage := map[sched.UsageKey]int{}
		for range rng.IntN(30) {
			k := sched.UsageKey{QOS: []string{"", "normal"}[rng.IntN(2)], Account: accounts[rng.IntN(len(accounts))], User: fmt.Sprint("u", rng.IntN(5))}
			usage[k] += 1 + rng.IntN(3)
		}
		for range 20 {
			j := sched.Job{ID: 1 << 40, User: fmt.Sprint("u", rng.IntN(5)), Account: accounts[rng.IntN(len(accounts))]}
			var all, some sched.Snapshot
			all.QOS, all.Assocs = a.SchedInputs()
			some.QOS, some.Assocs = a.SubmitInputs(j.User, j.Account)
			if got, want := sched.SubmitLimitOf(&some, usage, &j), sched.SubmitLimitOf(&all, usage, &j); got != want {
				t.Fatalf("seed %d, %s under %s: %q, from every association %q", seed, j.User, j.Account, got, want)
			}
		}
	}
}

// BenchmarkSubmitAssoc: a submit's association on a site's tree (50
// accounts, 1,000 users each under one).
func BenchmarkSubmitAssoc(b *testing.B) {
	a := New()
	for i := range 50 {
		acct := fmt.Sprint("a", i)
		a.Assocs[assocKey(acct, "")] = &api.Assoc{Account: acct, Parent: rootAccount, Shares: 1}
	}
	for i := range 1000 {
		u, acct := fmt.Sprint("u", i), fmt.Sprint("a", i%50)
		a.Users[u] = &api.AcctUser{Name: u, DefaultAccount: acct}
		a.Assocs[assocKey(acct, u)] = &api.Assoc{Account: acct, User: u, Shares: 1}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := a.SubmitAssoc("u500", "", "", Enforce{Associations: true}); err != nil {
			b.Fatal(err)
		}
	}
}
