package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"hpc/cluster/api"
)

var gang = &Scenario{
	Name:  "gang",
	Title: "a 3-node job waits without holding nodes, then starts on all three at once",
	Needs: "3 idle nodes",
	run:   runGang,
}

// gangObs is what the gang scenario saw.
type gangObs struct {
	blocker, gang, filler api.Job
	nodes                 []string // the three nodes the gang job asked for
	// looks counts the looks at the lab while the gang job pended; held
	// those in which it held any node, idle those in which its third node
	// was IDLE.
	looks, held, idle int
	t0                time.Time
}

func runGang(r *Run) Verdict {
	nodes := r.needNodes(3)[:3]
	blockT, fillT, gangT := r.dur(30*time.Second), r.dur(8*time.Second), r.dur(8*time.Second)
	r.say("Slurm allocates a multi-node job all at once or not at all (gang, atomic).")
	r.say("1. A blocker holds %s until it ends, after %s.", nodes[0], blockT)
	b := r.sbatch("-J", "gang-blocker", "-w", nodes[0], "--exclusive", "-t", "2", "-o", "/dev/null", "--wrap", sleepCmd(blockT))
	r.waitState(b, 30*time.Second, api.StateRunning)
	r.say("2. A job asks for %s, all three: it cannot start, and holds none of them.", compress(nodes))
	g := r.sbatch("-J", "gang-3node", "-w", strings.Join(nodes, ","), "-N3", "--exclusive", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(gangT))
	r.waitState(g, 30*time.Second, api.StatePending)
	r.typeCmd("sinfo -N -n " + compress(nodes))
	r.watch(nodes[1] + " and " + nodes[2] + " stay IDLE in the node grid")
	r.say("3. Being free, %s can even run another short job meanwhile (backfill).", nodes[1])
	fl := r.sbatch("-J", "gang-filler", "-w", nodes[1], "--exclusive", "-t", "1", "-o", "/dev/null", "--wrap", sleepCmd(fillT))
	o := gangObs{nodes: nodes, t0: r.t0}
	f := r.follow()
	ids := []uint64{b, g, fl}
	m := f.until("the gang workload to end", blockT+gangT+90*time.Second, ids, func(m map[uint64]api.Job) bool {
		if m[g].State == api.StatePending {
			o.looks++
			if len(m[g].Alloc) > 0 {
				o.held++
			}
			if r.nodeState(nodes[2]) == api.NodeIdle {
				o.idle++
			}
		}
		return allEnded(m, ids...)
	})
	o.blocker, o.gang, o.filler = m[b], m[g], m[fl]
	r.typeCmd(fmt.Sprintf("sacct -X -j %d,%d,%d -o JobID,JobName,Start,End,NodeList", b, g, fl))
	res, summary, evidence := judgeGang(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// nodeState is a node's state as sinfo shows it ("" when unknown).
func (r *Run) nodeState(name string) string {
	resp, err := r.cl.Nodes(r.ctx)
	r.check(err, "sinfo")
	for _, n := range resp.Nodes {
		if n.Name == name {
			return n.State
		}
	}
	return ""
}

// judgeGang checks that the job held no node while it pended (its third
// node stayed IDLE, its second ran another job), then started on its
// three nodes with one start time.
func judgeGang(o gangObs) (Result, string, []string) {
	rel := func(t time.Time) string { return fmt.Sprintf("%+.1fs", t.Sub(o.t0).Seconds()) }
	ev := []string{
		fmt.Sprintf("blocker %d on %s: ran %s to %s", o.blocker.ID, compress(o.blocker.NodeNames()), rel(o.blocker.StartTime), rel(o.blocker.EndTime)),
		fmt.Sprintf("gang job %d: pending from %s to %s; %d looks while it pended: it held nodes in %d, %s was IDLE in %d",
			o.gang.ID, rel(o.gang.SubmitTime), rel(o.gang.StartTime), o.looks, o.held, o.nodes[2], o.idle),
		fmt.Sprintf("filler %d on %s: ran %s to %s", o.filler.ID, compress(o.filler.NodeNames()), rel(o.filler.StartTime), rel(o.filler.EndTime)),
		fmt.Sprintf("gang job %d started %s on %s, all at once (one allocation, one start time), ended %s",
			o.gang.ID, rel(o.gang.StartTime), compress(o.gang.NodeNames()), rel(o.gang.EndTime)),
	}
	fail := notCompleted(o.blocker, o.gang, o.filler)
	if o.held > 0 {
		fail = append(fail, fmt.Sprintf("the gang job held nodes while pending in %d of %d looks", o.held, o.looks))
	}
	if o.looks == 0 {
		fail = append(fail, "the gang job was never seen pending")
	} else if o.idle == 0 {
		fail = append(fail, o.nodes[2]+" was never IDLE while the gang job pended")
	}
	if !o.filler.StartTime.Before(o.gang.StartTime) || !slices.Equal(o.filler.NodeNames(), []string{o.nodes[1]}) {
		fail = append(fail, fmt.Sprintf("the filler did not run on %s before the gang job started: the node was held", o.nodes[1]))
	}
	if !sameNodes(o.gang, o.nodes) {
		fail = append(fail, fmt.Sprintf("the gang job ran on %v, not %s", o.gang.NodeNames(), compress(o.nodes)))
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("the 3-node job waited %s holding nothing (%s ran another job meanwhile), then started on %s at once",
		span(o.gang.SubmitTime, o.gang.StartTime), o.nodes[1], compress(o.gang.NodeNames())), ev
}
