package commands

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"hpc/cluster/config"
)

// withInheritance is the environment srun and sbatch send: env and, as
// Slurm's commands set them, SLURM_UMASK (this process's umask, unless env
// has one already: a task's srun passes on its step's) and
// SLURM_RLIMIT_<NAME> with each of this process's soft limits. The node
// applies those slurm.conf propagates (PropagateResourceLimits) and hides
// the SLURM_RLIMIT_* variables from the job.
func withInheritance(env []string) []string {
	out := make([]string, 0, len(env)+len(config.Rlimits)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SLURM_RLIMIT_") {
			out = append(out, kv)
		}
	}
	if _, ok := (&Env{Environ: env}).LookupEnv("SLURM_UMASK"); !ok {
		mask := syscall.Umask(0)
		syscall.Umask(mask)
		out = append(out, fmt.Sprintf("SLURM_UMASK=%04o", mask))
	}
	for _, l := range config.Rlimits {
		var r unix.Rlimit
		if unix.Getrlimit(l.Resource, &r) != nil {
			continue
		}
		cur := r.Cur
		if l.Resource == unix.RLIMIT_NOFILE {
			cur = callerNofile(r)
		}
		out = append(out, "SLURM_RLIMIT_"+l.Name+"="+strconv.FormatUint(cur, 10))
	}
	return out
}

// callerNofile is the soft RLIMIT_NOFILE this process was started with:
// the Go runtime raises its own to the hard limit less one at start, and
// gives its children the original back, so a child shell says what it
// was.
func callerNofile(now unix.Rlimit) uint64 {
	if now.Max == unix.RLIM_INFINITY || now.Cur != now.Max-1 {
		return now.Cur // never raised
	}
	b, err := exec.Command("/bin/sh", "-c", "ulimit -Sn").Output()
	if err != nil {
		return now.Cur
	}
	if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
		return n
	}
	return now.Cur
}
