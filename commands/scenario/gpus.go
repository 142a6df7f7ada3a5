package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"hpc/cluster/api"
)

var gpus = &Scenario{
	Name:  "gpus",
	Title: "--gres=gpu:1 gets one device: CUDA_VISIBLE_DEVICES set, the other refused by the devices cgroup",
	Needs: "an idle node with 2 GPUs in gres.conf as distinct device files, steps in containers, the lab on this machine",
	run:   runGPUs,
}

// gpuObs is what the gpus scenario saw: the job, the node's device files
// by index, and what the job printed.
type gpuObs struct {
	job    api.Job
	files  []string
	output string
}

func runGPUs(r *Run) Verdict {
	node, files := r.gpuNode()
	part := r.partitionOf(node)
	if mode := r.execMode(node); !strings.Contains(mode, "containers") {
		r.skip("%s runs steps as %q: the devices cgroup is a container's (run the lab as root)", node, mode)
	}
	dir, err := os.MkdirTemp("", "hpc-scenario-gpus-")
	r.check(err, "a directory for the job's output")
	r.onUndo("rm -r "+dir, func(context.Context) error { return os.RemoveAll(dir) })
	out := filepath.Join(dir, "gpu.out")
	var script strings.Builder
	script.WriteString("echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES")
	for _, f := range files[:2] {
		fmt.Fprintf(&script, "; (exec 3<%s) 2>/dev/null && echo '%s opened' || echo '%s refused'", f, f, f)
	}
	r.say("%s has two GPUs, %s. A job asking for one gets one: its index in", node, strings.Join(files[:2], " and "))
	r.say("CUDA_VISIBLE_DEVICES, and a devices cgroup that lets it open that device only.")
	r.typeCmd("sinfo -o '%N %G'")
	id := r.sbatch("-p", part, "-w", node, "--gres=gpu:1", "-t", "1", "-o", out, "--wrap", script.String())
	r.watch("the node grid shows the GPU in use on " + node)
	f := r.follow()
	m := f.until("the GPU job to end", 90*time.Second, []uint64{id}, func(m map[uint64]api.Job) bool { return allEnded(m, id) })
	r.typeCmd("cat " + out)
	var text string
	r.waitUntil("the job's output", 10*time.Second, func() bool {
		b, err := os.ReadFile(out)
		text = string(b)
		return err == nil && strings.Count(text, "\n") >= 3
	})
	res, summary, evidence := judgeGPUs(gpuObs{job: m[id], files: files, output: text})
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// gpuNode is an idle node whose gres.conf gives two GPUs or more as
// distinct device files that exist here; it skips the scenario if none.
func (r *Run) gpuNode() (string, []string) {
	idle := r.idleNodes()
	why := "no idle node has GPUs listed in gres.conf"
	for _, d := range r.cfg.GresDevices {
		if d.Name != "gpu" || len(d.Files) < 2 || !slices.Contains(idle, d.Node) {
			continue
		}
		var a, b syscall.Stat_t
		if syscall.Stat(d.Files[0], &a) != nil || syscall.Stat(d.Files[1], &b) != nil {
			why = fmt.Sprintf("%s's GPU files %s are not on this machine", d.Node, strings.Join(d.Files[:2], ", "))
			continue
		}
		if a.Rdev == b.Rdev {
			why = fmt.Sprintf("%s's GPU files %s are the same device (hpc up's fake GPUs link to /dev/null, which every container may open): "+
				"give them distinct device files in gres.conf to see the devices cgroup refuse one", d.Node, strings.Join(d.Files[:2], " and "))
			continue
		}
		return d.Node, d.Files
	}
	r.skip("%s", why)
	return "", nil
}

// partitionOf is a partition holding the node, the default one first.
func (r *Run) partitionOf(node string) string {
	resp, err := r.cl.Nodes(r.ctx)
	r.check(err, "sinfo")
	parts := slices.Clone(resp.Partitions)
	slices.SortStableFunc(parts, func(a, b api.Partition) int {
		if a.Default != b.Default {
			if a.Default {
				return -1
			}
			return 1
		}
		return 0
	})
	for _, p := range parts {
		if slices.Contains(p.Nodes, node) {
			return p.Name
		}
	}
	r.skip("%s is in no partition", node)
	return ""
}

// execMode is how the node runs steps, as hpc status shows it.
func (r *Run) execMode(node string) string {
	st, err := r.cl.Status(r.ctx)
	r.check(err, "hpc status")
	for _, m := range st.Members {
		if m.Name == node {
			return m.ExecMode
		}
	}
	return st.ExecMode
}

// judgeGPUs checks that the job got one GPU, that CUDA_VISIBLE_DEVICES
// names it, that it could open that device and that the devices cgroup
// refused it the other.
func judgeGPUs(o gpuObs) (Result, string, []string) {
	var idx []int
	for _, a := range o.job.Alloc {
		for _, g := range a.Gres {
			if g.Name == "gpu" {
				idx = append(idx, g.Indices...)
			}
		}
	}
	ev := []string{fmt.Sprintf("job %d on %s: GRES indices %v, %s", o.job.ID, compress(o.job.NodeNames()), idx, o.job.State)}
	for _, l := range strings.Split(strings.TrimSpace(o.output), "\n") {
		ev = append(ev, "output: "+l)
	}
	fail := notCompleted(o.job)
	if len(idx) != 1 || idx[0] < 0 || idx[0] > 1 {
		fail = append(fail, fmt.Sprintf("the job was given GPUs %v, not one of two", idx))
		return Fail, joinSemi(fail), ev
	}
	mine, other := o.files[idx[0]], o.files[1-idx[0]]
	for _, want := range []string{fmt.Sprintf("CUDA_VISIBLE_DEVICES=%d", idx[0]), mine + " opened", other + " refused"} {
		if !strings.Contains(o.output, want+"\n") {
			fail = append(fail, fmt.Sprintf("the job did not print %q", want))
		}
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("the job got GPU %d (CUDA_VISIBLE_DEVICES=%d), opened %s, and the devices cgroup refused it %s", idx[0], idx[0], mine, other), ev
}
