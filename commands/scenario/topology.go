package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
)

var topology = &Scenario{
	Name:  "topology",
	Title: "a 2-node job lands under one leaf switch; --switches waits for one",
	Needs: "a topology.conf with two leaf switches of 2 idle nodes or more",
	run:   runTopology,
}

// leaf is a leaf switch and its idle nodes.
type leaf struct {
	name  string
	nodes []string
}

// leaves are the topology's leaf switches with at least two idle nodes, in
// topology.conf's order.
func (r *Run) leaves(idle []string) []leaf {
	var out []leaf
	for _, sw := range r.cfg.Topology {
		var ns []string
		for _, n := range sw.Nodes {
			if slices.Contains(idle, n) {
				ns = append(ns, n)
			}
		}
		if len(ns) >= 2 {
			out = append(out, leaf{sw.Name, ns})
		}
	}
	return out
}

// leafOf names the leaf switch holding every node, or "".
func leafOf(leaves []leaf, nodes []string) string {
	for _, l := range leaves {
		all := len(nodes) > 0
		for _, n := range nodes {
			all = all && slices.Contains(l.nodes, n)
		}
		if all {
			return l.name
		}
	}
	return ""
}

// topoObs is what the topology scenario saw.
type topoObs struct {
	leaves []leaf
	pair   api.Job // the 2-node job on an idle lab
	wait   api.Job // the --switches=1 job
	// splitLooks counts the looks, while the --switches job pended, in
	// which two or more nodes were IDLE but under different leaves.
	splitLooks, looks int
	t0                time.Time
}

func runTopology(r *Run) Verdict {
	ls := r.leaves(r.idleNodes())
	if len(ls) < 2 {
		r.skip("needs a topology.conf (next to slurm.conf) with two leaf switches of 2 idle nodes or more; this lab has %d", len(ls))
	}
	d := r.dur(5 * time.Second)
	for _, l := range ls {
		r.say("Leaf switch %s: %s", l.name, compress(l.nodes))
	}
	r.typeCmd("scontrol show config | grep Topology")
	r.say("1. On an idle lab a 2-node job goes under the lowest switch that holds it: one leaf.")
	p := r.sbatch("-J", "topo-pair", "-N2", "--exclusive", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(d))
	f := r.follow()
	m := f.until("the pair to end", d+60*time.Second, []uint64{p}, func(m map[uint64]api.Job) bool { return allEnded(m, p) })
	o := topoObs{leaves: ls, pair: m[p], t0: r.t0}
	r.say("2. Now every leaf keeps one free node: two nodes are free, but under different")
	r.say("   leaves. A job with --switches=1 waits for one leaf to free two.")
	var blockers []uint64
	for i, l := range ls {
		t := r.dur(12 * time.Second)
		if i > 0 {
			t = r.dur(60 * time.Second) // the other leaves stay split
		}
		busy := l.nodes[1:]
		blockers = append(blockers, r.sbatch("-J", "topo-blocker", "-w", strings.Join(busy, ","), "-N", strconv.Itoa(len(busy)),
			"--exclusive", "-t", "2", "-o", "/dev/null", "--wrap", sleepCmd(t)))
	}
	for _, b := range blockers {
		r.waitState(b, 30*time.Second, api.StateRunning)
	}
	w := r.sbatch("-J", "topo-switches", "-N2", "--exclusive", "--switches=1@5:00", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(d))
	r.typeCmd("squeue -o '%.6i %.14j %.3t %.8r %N'")
	r.watch("the topology tree: each running job drawn on the lowest switch holding all its nodes")
	m = f.until("the --switches job to start", r.dur(12*time.Second)+60*time.Second, []uint64{w}, func(m map[uint64]api.Job) bool {
		if m[w].State == api.StatePending {
			o.looks++
			if free := r.freeIn(ls); len(free) >= 2 && leafOf(ls, free) == "" {
				o.splitLooks++
			}
		}
		return m[w].State != api.StatePending
	})
	m = f.until("the --switches job to end", d+60*time.Second, []uint64{w}, func(m map[uint64]api.Job) bool { return allEnded(m, w) })
	o.wait = m[w]
	res, summary, evidence := judgeTopology(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// freeIn lists the leaves' nodes that are IDLE now.
func (r *Run) freeIn(ls []leaf) []string {
	resp, err := r.cl.Nodes(r.ctx)
	r.check(err, "sinfo")
	var out []string
	for _, n := range resp.Nodes {
		if n.State == api.NodeIdle && slices.ContainsFunc(ls, func(l leaf) bool { return slices.Contains(l.nodes, n.Name) }) {
			out = append(out, n.Name)
		}
	}
	return out
}

// judgeTopology checks that the pair ran under one leaf, and that the
// --switches job waited while free nodes were split across leaves, then
// ran under one leaf.
func judgeTopology(o topoObs) (Result, string, []string) {
	rel := func(t time.Time) string { return fmt.Sprintf("%+.1fs", t.Sub(o.t0).Seconds()) }
	pairLeaf, waitLeaf := leafOf(o.leaves, o.pair.NodeNames()), leafOf(o.leaves, o.wait.NodeNames())
	ev := []string{
		fmt.Sprintf("pair %d on an idle lab: %s, under leaf %q", o.pair.ID, compress(o.pair.NodeNames()), pairLeaf),
		fmt.Sprintf("--switches=1 job %d: pending %s to %s; in %d of %d looks two or more nodes were free but under different leaves",
			o.wait.ID, rel(o.wait.SubmitTime), rel(o.wait.StartTime), o.splitLooks, o.looks),
		fmt.Sprintf("--switches=1 job %d ran on %s, under leaf %q", o.wait.ID, compress(o.wait.NodeNames()), waitLeaf),
	}
	fail := notCompleted(o.pair, o.wait)
	if pairLeaf == "" {
		fail = append(fail, "the 2-node job spanned leaf switches on an idle lab")
	}
	if waitLeaf == "" {
		fail = append(fail, "the --switches=1 job spanned leaf switches")
	}
	if o.splitLooks == 0 {
		fail = append(fail, "the --switches=1 job was never seen waiting while free nodes were split across leaves")
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("the 2-node job ran under leaf %s; the --switches=1 job waited %s with free nodes split across leaves, then ran under leaf %s",
		pairLeaf, span(o.wait.SubmitTime, o.wait.StartTime), waitLeaf), ev
}
