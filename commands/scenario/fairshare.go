package scenario

import (
	"context"
	"fmt"
	"math"
	"os/user"
	"strings"
	"time"

	"hpc/cluster/api"
)

var fairshare = &Scenario{
	Name:  "fairshare",
	Title: "two accounts with shares 3:1 keep the cluster full; their usage converges to 3:1",
	Needs: "PriorityType=priority/multifactor and PriorityWeightFairshare in slurm.conf, an sacctmgr administrator (root), idle nodes",
	run:   runFairshare,
}

// The accounts the scenario makes, their shares, and the tolerance of the
// verdict: each account's part of the CPU-seconds within fsTolerance of
// its part of the shares.
const (
	fsBig, fsSmall       = "fs-big", "fs-small"
	fsBigShares          = 3
	fsSmallShares        = 1
	fsTolerance          = 0.12
	fsRounds             = 12 // the run lasts this many jobs' run times
	fsJob                = 10 * time.Second
	fsMinJobsEachAccount = 2
)

// fsObs is what the fair-share scenario measured: each account's
// CPU-seconds (sacct's rows clipped to the window) and sshare's lines.
type fsObs struct {
	from, to time.Time
	cpuSec   map[string]float64 // account -> CPU-seconds in the window
	jobs     map[string]int     // account -> jobs that ran in the window
	shares   map[string]int     // account -> RawShares
	share    []api.ShareRow     // sshare's lines of the two accounts, at the end
}

func runFairshare(r *Run) Verdict {
	nodes := r.needNodes(1)
	if r.cfg.Priority.Type != "priority/multifactor" || r.cfg.Priority.WeightFairshare == 0 {
		r.skip("needs PriorityType=priority/multifactor and PriorityWeightFairshare=10000 in slurm.conf (this lab has %s, fair-share weight %d); add them and restart the lab",
			orDefault(r.cfg.Priority.Type, "priority/basic"), r.cfg.Priority.WeightFairshare)
	}
	cpus := 0
	resp, err := r.cl.Nodes(r.ctx)
	r.check(err, "sinfo")
	for _, n := range resp.Nodes {
		for _, m := range nodes {
			if n.Name == m {
				cpus += n.CPUs
			}
		}
	}
	me := r.setUpFairshareAccounts()
	r.say("Accounts %s (Fairshare=%d) and %s (Fairshare=%d) each submit an array of", fsBig, fsBigShares, fsSmall, fsSmallShares)
	r.say("1-CPU jobs, more than the %d CPUs of %s can run. Fair Tree priority starts the", cpus, compress(nodes))
	r.say("jobs of whichever account used less than its share so far.")
	d := r.dur(fsJob)
	per := cpus * (fsRounds + 2) // deeper than the run needs
	var ids []uint64
	// Measured from the first submission: Fair Tree evens out the usage
	// since the accounts began, which is what sshare shows. One array
	// each, so that both queues are full from the start.
	from := time.Now()
	for _, a := range []string{fsBig, fsSmall} {
		ids = append(ids, r.sbatch("-J", a, "-A", a, "-n1", "-t", "1", "-o", "/dev/null",
			fmt.Sprintf("--array=1-%d", per), "--wrap", sleepCmd(d)))
	}
	r.typeCmd("sprio -l")
	r.typeCmd("sshare -A " + fsBig + "," + fsSmall + " -a")
	r.watch("the running jobs alternate between the accounts as their usage moves")
	window := time.Duration(fsRounds) * d
	var said time.Time
	r.waitUntil("the measuring window", window+time.Minute, func() bool {
		if time.Since(from) >= window {
			return true
		}
		if time.Since(said) >= window/4 {
			if sh, err := r.cl.Share(r.ctx); err == nil {
				r.sayShares(sh)
				said = time.Now()
			}
		}
		return false
	})
	to := time.Now()
	o := fsObs{from: from, to: to, cpuSec: map[string]float64{}, jobs: map[string]int{},
		shares: map[string]int{fsBig: fsBigShares, fsSmall: fsSmallShares}}
	rows, err := r.cl.Acct(r.ctx, api.AcctQuery{JobIDs: ids, AllUsers: true, JobsOnly: true})
	r.check(err, "sacct")
	for _, row := range rows {
		if row.Step != "" || row.Start.IsZero() || row.User != me {
			continue
		}
		end := row.End
		if end.IsZero() {
			end = to
		}
		if s, e := maxTime(row.Start, from), minTime(end, to); e.After(s) {
			o.cpuSec[row.Account] += float64(row.AllocCPUs) * e.Sub(s).Seconds()
			o.jobs[row.Account]++
		}
	}
	sh, err := r.cl.Share(r.ctx)
	r.check(err, "sshare")
	r.sayShares(sh)
	for _, row := range sh.Rows {
		if row.User == "" && (row.Account == fsBig || row.Account == fsSmall) {
			o.share = append(o.share, row)
		}
	}
	res, summary, evidence := judgeFairshare(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// sayShares narrates sshare's lines of the two accounts.
func (r *Run) sayShares(sh *api.ShareResponse) {
	var parts []string
	for _, row := range sh.Rows {
		if row.User == "" && (row.Account == fsBig || row.Account == fsSmall) {
			parts = append(parts, fmt.Sprintf("%s RawShares=%d NormShares=%.2f RawUsage=%.0f EffectvUsage=%.2f", row.Account, row.RawShares, row.NormShares, row.RawUsage, row.EffectvUsage))
		}
	}
	if len(parts) > 0 {
		r.say("sshare: %s", strings.Join(parts, "; "))
	}
}

// setUpFairshareAccounts makes the two accounts under root with their
// shares and gives the caller an association under each, recording how to
// undo them; it returns the caller's user name.
func (r *Run) setUpFairshareAccounts() string {
	u, err := user.Current()
	r.check(err, "who am I")
	parent := "root"
	for _, a := range []struct {
		name   string
		shares int
	}{{fsBig, fsBigShares}, {fsSmall, fsSmallShares}} {
		shares := a.shares
		r.typeCmd(fmt.Sprintf("sacctmgr -i add account %s parent=root fairshare=%d", a.name, shares))
		if _, err := r.cl.AcctmgrChange(r.ctx, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{a.name}, Set: api.AcctmgrSet{Parent: &parent, Fairshare: &shares}}); err != nil {
			r.skip("sacctmgr add account %s: %s (needs an sacctmgr administrator, such as root)", a.name, errText(err))
		}
		name := a.name
		r.onUndo("sacctmgr -i delete account "+name, func(ctx context.Context) error {
			_, err := r.cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "delete", Entity: "account", Names: []string{name}})
			return err
		})
		r.typeCmd(fmt.Sprintf("sacctmgr -i add user %s account=%s", u.Username, name))
		_, err := r.cl.AcctmgrChange(r.ctx, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{u.Username}, Accounts: []string{name}})
		r.check(err, "sacctmgr add user")
		r.onUndo(fmt.Sprintf("sacctmgr -i delete user %s where account=%s", u.Username, name), func(ctx context.Context) error {
			_, err := r.cl.AcctmgrChange(ctx, api.AcctmgrRequest{Action: "delete", Entity: "user", Names: []string{u.Username}, Accounts: []string{name}})
			return err
		})
	}
	return u.Username
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// judgeFairshare checks that each account's part of the CPU-seconds used
// in the window is within fsTolerance of its part of the shares (3:1 is
// 0.75 and 0.25), and that both ran jobs: with both queues full, Fair
// Tree gives the account under its share the next CPU.
func judgeFairshare(o fsObs) (Result, string, []string) {
	total, shares := 0.0, 0
	for _, a := range []string{fsBig, fsSmall} {
		total += o.cpuSec[a]
		shares += o.shares[a]
	}
	var ev, fail []string
	ev = append(ev, fmt.Sprintf("window %.0f s; tolerance ±%.2f of the cluster's CPU-seconds", o.to.Sub(o.from).Seconds(), fsTolerance))
	for _, a := range []string{fsBig, fsSmall} {
		want := float64(o.shares[a]) / float64(max(shares, 1))
		got := math.NaN()
		if total > 0 {
			got = o.cpuSec[a] / total
		}
		ev = append(ev, fmt.Sprintf("%s: Fairshare=%d (%.2f of the shares), %d jobs ran in the window, %.0f CPU-seconds = %.2f of the usage",
			a, o.shares[a], want, o.jobs[a], o.cpuSec[a], got))
		switch {
		case o.jobs[a] < fsMinJobsEachAccount:
			fail = append(fail, fmt.Sprintf("%s ran %d jobs in the window (the queues were not both served)", a, o.jobs[a]))
		case math.IsNaN(got) || math.Abs(got-want) > fsTolerance:
			fail = append(fail, fmt.Sprintf("%s used %.2f of the CPU-seconds, not %.2f±%.2f", a, got, want, fsTolerance))
		}
	}
	for _, row := range o.share {
		ev = append(ev, fmt.Sprintf("sshare: %s RawShares=%d NormShares=%.2f RawUsage=%.0f EffectvUsage=%.2f",
			row.Account, row.RawShares, row.NormShares, row.RawUsage, row.EffectvUsage))
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("%s used %.2f and %s %.2f of the CPU-seconds, as their shares %d:%d say (±%.2f)",
		fsBig, o.cpuSec[fsBig]/total, fsSmall, o.cpuSec[fsSmall]/total, o.shares[fsBig], o.shares[fsSmall], fsTolerance), ev
}
