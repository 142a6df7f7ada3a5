package e2e

// Real-world job scripts (testdata/jobs/) run unchanged on a 4-node lab
// through the Slurm command names: a PyTorch-DDP-style launch, an MPI-style
// srun -n 8, a GPU job, a dependency chain and a job that keeps its own
// books with SLURM_* variables.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRealWorldScripts(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-realworld-", 4, "KillWait=2\n")
	bin, lab, work := l.links, l.dir, filepath.Join(l.top, "work")
	os.MkdirAll(work, 0o755)
	env := append(os.Environ(), "HPC_DIR="+lab, "PATH="+bin+":"+os.Getenv("PATH"))
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	for _, f := range []string{"ddp.sh", "mpi.sh", "gpu.sh", "stage1.sh", "stage2.sh", "bookkeeping.sh", "array.sh"} {
		b, err := os.ReadFile(repoPath(t, "testdata", "jobs", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(work, f), b, 0o755)
	}
	// batch runs a script with sbatch --wait and returns its output file.
	batch := func(script string) string {
		t.Helper()
		id := strings.TrimSpace(run(work, "sbatch", "--parsable", "--wait", "-o", script+"-%j.out", script))
		b, err := os.ReadFile(filepath.Join(work, script+"-"+id+".out"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	t.Run("DDP", func(t *testing.T) {
		out := batch("ddp.sh")
		for _, want := range []string{
			"head node: node1 of 2 nodes",
			"launcher node_rank=0 nnodes=2 on node1", "launcher node_rank=1 nnodes=2 on node2",
			"rank=0 local_rank=0 world_size=4 master=" + l.net + "1:", "rank=3 local_rank=1 world_size=4 master=" + l.net + "1:",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("ddp output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("MPI", func(t *testing.T) {
		out := batch("mpi.sh")
		for r := 0; r < 8; r++ {
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d: rank %d of 8 on node[1-4]$`, r, r)).MatchString(out) {
				t.Errorf("rank %d missing:\n%s", r, out)
			}
		}
	})
	t.Run("GPU", func(t *testing.T) {
		out := batch("gpu.sh")
		if !strings.Contains(out, "CUDA_VISIBLE_DEVICES=0,1") || !strings.Contains(out, "SLURM_JOB_GPUS=0,1") ||
			!regexp.MustCompile(`node=node[34] partition=gpu`).MatchString(out) {
			t.Errorf("gpu output:\n%s", out)
		}
	})
	t.Run("DependencyChain", func(t *testing.T) {
		first := strings.TrimSpace(run(work, "sbatch", "--parsable", "stage1.sh"))
		second := strings.TrimSpace(run(work, "sbatch", "--parsable", "--wait", "-d", "afterok:"+first, "stage2.sh"))
		b, err := os.ReadFile(filepath.Join(work, "stage2-"+second+".out"))
		if err != nil || strings.TrimSpace(string(b)) != "stage2 sum=5050" {
			t.Errorf("stage2: %q %v", b, err)
		}
	})
	t.Run("Array", func(t *testing.T) {
		id := strings.TrimSpace(run(work, "sbatch", "--parsable", "array.sh"))
		// While it runs: tasks show as ID_TASK, at most two running, the
		// rest waiting on JobArrayTaskLimit.
		seenLimit := false
		waitFor(t, 60*time.Second, "the array to finish", func() (bool, string) {
			out := run(work, "squeue", "-h", "-o", "%i %t %r")
			if strings.Count(out, " R ") > 2 {
				t.Fatalf("throttle %%2 exceeded:\n%s", out)
			}
			seenLimit = seenLimit || strings.Contains(out, "JobArrayTaskLimit")
			return !strings.Contains(out, id+"_"), "\n" + out
		})
		if !seenLimit {
			t.Error("no task was seen waiting on JobArrayTaskLimit")
		}
		first, _ := strconv.ParseUint(id, 10, 64)
		for task := 0; task < 6; task++ {
			b, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("sweep-%s_%d.out", id, task)))
			want := fmt.Sprintf("task %d of array %s (job %d, 6 tasks)", task, id, first+uint64(task))
			if err != nil || strings.TrimSpace(string(b)) != want {
				t.Errorf("task %d: %q %v, want %q", task, b, err, want)
			}
		}
	})
	t.Run("MultiProg", func(t *testing.T) {
		os.WriteFile(filepath.Join(work, "mp.conf"), []byte("0 echo leader %t\n1-3 echo worker %t offset %o\n"), 0o644)
		out := run(work, "srun", "-n", "4", "-l", "--multi-prog", "mp.conf")
		for _, want := range []string{"0: leader 0", "1: worker 1 offset 0", "2: worker 2 offset 1", "3: worker 3 offset 2"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("multi-prog output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("Bookkeeping", func(t *testing.T) {
		id := strings.TrimSpace(run(work, "sbatch", "--parsable", "--wait", "bookkeeping.sh"))
		b, err := os.ReadFile(filepath.Join(work, "results", "bookkeeping-"+id+".txt"))
		if err != nil || !strings.Contains(string(b), "job="+id+" name=bookkeeping user=root") {
			t.Errorf("results: %q %v", b, err)
		}
		if _, err := os.Stat(filepath.Join(work, "bookkeeping-"+id+".log")); err != nil {
			t.Errorf("%%x-%%j output: %v", err)
		}
	})
}
