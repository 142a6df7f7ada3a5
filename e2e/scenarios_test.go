package e2e

// The guided scenarios of `hpc lab scenario` end to end: each runs on a
// real 4-node lab (two leaf switches, QoS preemption allowed) at a small
// time scale, must judge itself PASS, and must leave the lab as it found
// it: the same nodes' states, QoS, accounts and associations, no job left.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hpc/commands/scenario"
)

// scenarioScale runs the scenarios' jobs at 15% of their classroom
// length: the whole test stays near a minute.
const scenarioScale = "0.15"

func TestScenarios(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-scenarios-", 4, "KillWait=2\nPreemptType=preempt/qos\nPreemptMode=REQUEUE\n", func(top string) {
		if err := os.WriteFile(filepath.Join(top, "topology.conf"), []byte(dashTopology), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	out, errs, code := l.run(0, l.top, "lab", "scenario", "list")
	if code != 0 {
		t.Fatalf("hpc lab scenario list: exit %d\n%s%s", code, out, errs)
	}
	for _, s := range scenario.List() {
		if !strings.Contains(out, s.Name+" ") {
			t.Errorf("list lacks %s:\n%s", s.Name, out)
		}
	}
	// What "as found" means to an observer of the lab: sinfo's node
	// states and sacctmgr's QoS and associations.
	lab := func() string {
		nodes, _, _ := l.run(0, l.top, "nodes", "-N", "-h", "-o", "%N %T")
		qos, _, _ := l.run(0, l.top, "sacctmgr", "-n", "-P", "show", "qos", "format=Name,Priority,Preempt,PreemptMode")
		assoc, _, _ := l.run(0, l.top, "sacctmgr", "-n", "-P", "show", "assoc", "format=Account,User,Share,QOS")
		queue, _, _ := l.run(0, l.top, "queue", "-h")
		return nodes + qos + assoc + queue
	}
	before := lab()
	for _, s := range scenario.List() {
		t.Run(s.Name, func(t *testing.T) {
			l := l.with(t)
			start := time.Now()
			out, errs, code := l.run(0, l.top, "lab", "scenario", "run", "--json", "--scale", scenarioScale, s.Name)
			var v scenario.Verdict
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("run %s: exit %d, not a verdict: %v\n%s%s", s.Name, code, err, out, errs)
			}
			t.Logf("%s in %.1f s: %s %s", s.Name, time.Since(start).Seconds(), v.Result, v.Summary)
			for _, e := range v.Evidence {
				t.Logf("  %s", e)
			}
			if v.Result != scenario.Pass || code != 0 {
				t.Errorf("%s: %s (exit %d): %s", s.Name, v.Result, code, v.Summary)
			}
			if !v.LabRestored {
				t.Errorf("%s left the lab changed: %v", s.Name, v.Differences)
			}
			if now := lab(); now != before {
				t.Errorf("after %s the lab is\n%s\nbefore it was\n%s", s.Name, now, before)
			}
		})
	}
	// The narration, as a learner sees it on a pipe: plain lines, the
	// commands to type, the dashboard, then the verdict.
	t.Run("narration", func(t *testing.T) {
		out, errs, code := l.run(0, l.top, "lab", "scenario", "run", "--scale", scenarioScale, "gang")
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		for _, want := range []string{"== gang: ", "Dashboard: http://" + l.net + "1:", "$ sbatch -J gang-3node", "$ sinfo -N", "PASS gang: ", "lab left as found"} {
			if !strings.Contains(out, want) {
				t.Errorf("narration lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "\033[") {
			t.Errorf("escape codes on a pipe:\n%q", out)
		}
	})
}
