package e2e

// The guided scenarios of `hpc lab scenario` end to end: each runs on a
// real 4-node lab (two leaf switches, QoS preemption allowed, two GPUs on
// node3 and node4 with device files of their own) at a small time scale,
// must judge itself PASS, and must leave the lab as it found it: the same
// nodes' states, QoS, accounts and associations, no job left.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hpc/commands/scenario"
	"hpc/internal/testrootfs"
)

// scenarioScale runs the scenarios' jobs at 15% of their classroom
// length: the whole test stays near a minute.
const scenarioScale = "0.15"

func TestScenarios(t *testing.T) {
	needLab(t)
	gpus := false // the GPU nodes have device files the devices cgroup tells apart
	// Fair-share priority for fairshare; a SlurmdTimeout short enough for
	// node-failure's node to go DOWN soon.
	extra := "KillWait=2\nPreemptType=preempt/qos\nPreemptMode=REQUEUE\n" +
		"PriorityType=priority/multifactor\nPriorityWeightFairshare=10000\nSlurmdTimeout=6\n"
	l, _ := startLab(t, "hpc-scenarios-", 4, extra, func(top string) {
		if err := os.WriteFile(filepath.Join(top, "topology.conf"), []byte(dashTopology), 0o644); err != nil {
			t.Fatal(err)
		}
		gpus = scenarioGPUs(t, top)
	})
	// containers' image, where the scenario looks for one: the lab
	// directory's images/.
	images := filepath.Join(l.dir, "images")
	os.MkdirAll(images, 0o755)
	testrootfs.Build(t, filepath.Join(images, "busybox"), "hpc scenario image\n")
	containers := strings.Contains(func() string { out, _, _ := l.run(0, l.top, "status"); return out }(), "Steps:    containers")
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
			if s.Name == "gpus" && !gpus && v.Result == scenario.Skip {
				t.Skipf("no device numbers to borrow for the fake GPUs: %s", v.Summary)
			}
			if s.Name == "containers" && !containers && v.Result == scenario.Skip {
				t.Skipf("steps do not run in containers here: %s", v.Summary)
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
	// A lab with a job in it is not the scenarios' to use: SKIP (exit 2),
	// and the job is left alone.
	t.Run("busy", func(t *testing.T) {
		l := l.with(t)
		held := l.submit(0, l.top, "--hold", "-o", "/dev/null", "--wrap", "true")
		out, errs, code := l.run(0, l.top, "lab", "scenario", "run", "--json", "backfill")
		var v scenario.Verdict
		if err := json.Unmarshal([]byte(out), &v); err != nil || code != 2 || v.Result != scenario.Skip || !strings.Contains(v.Summary, "busy") || len(v.Jobs) != 0 {
			t.Errorf("on a busy lab: exit %d %+v %v\n%s", code, v, err, errs)
		}
		l.cancelAll(held)
	})
	// The narration, as a learner sees it on a pipe: plain lines, the
	// commands to type, the dashboard, then the verdict.
	t.Run("narration", func(t *testing.T) {
		out, errs, code := l.run(0, l.top, "lab", "scenario", "run", "--scale", scenarioScale, "gang")
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		t.Logf("hpc lab scenario run gang:\n%s", out)
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

// scenarioGPUs gives node3 and node4 (the lab's GPU nodes, two GPUs each)
// device files as TestLabGPUDevices does: nodes with the numbers of
// /dev/fuse and /dev/net/tun, two devices the devices cgroup tells apart,
// in a gres.conf next to the lab's config. It reports false when it
// cannot make them here.
func scenarioGPUs(t *testing.T, top string) bool {
	var usable []uint64
	for _, p := range []string{"/dev/fuse", "/dev/net/tun"} {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			continue
		}
		if f, err := os.Open(p); err == nil {
			f.Close()
			usable = append(usable, st.Rdev)
		}
	}
	if len(usable) < 2 {
		return false
	}
	prefix := fmt.Sprintf("/dev/hpcscenario-%d-gpu", os.Getpid())
	for i, rdev := range usable {
		p := fmt.Sprintf("%s%d", prefix, i)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(rdev)); err != nil {
			return false
		}
		t.Cleanup(func() { os.Remove(p) })
	}
	conf := "NodeName=node[3-4] Name=gpu File=" + prefix + "[0-1]\n"
	return os.WriteFile(filepath.Join(top, "gres.conf"), []byte(conf), 0o644) == nil
}
