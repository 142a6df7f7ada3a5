package jobspec

import (
	"fmt"
	"strings"
)

// InputEnv maps sbatch's input environment variables to the options they
// set, in the order Slurm 22.05 reads them. Their values are read as the
// option's argument; for options without one (SBATCH_WAIT, SBATCH_REQUEUE)
// the variable being set is enough.
var InputEnv = []struct{ Var, Option string }{
	{"SBATCH_ACCOUNT", "account"},
	{"SBATCH_ARRAY_INX", "array"},
	{"SBATCH_ACCTG_FREQ", "acctg-freq"},
	{"SBATCH_BATCH", "batch"},
	{"SBATCH_BURST_BUFFER", "bb"},
	{"SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"},
	{"SBATCH_CLUSTERS", "clusters"},
	{"SLURM_CLUSTERS", "clusters"},
	{"SBATCH_CONTAINER", "container"},
	{"SBATCH_CONSTRAINT", "constraint"},
	{"SBATCH_CORE_SPEC", "core-spec"},
	{"SBATCH_CPU_FREQ_REQ", "cpu-freq"},
	{"SBATCH_CPUS_PER_GPU", "cpus-per-gpu"},
	{"SBATCH_DEBUG", "verbose"},
	{"SBATCH_DELAY_BOOT", "delay-boot"},
	{"SBATCH_DISTRIBUTION", "distribution"},
	{"SBATCH_EXCLUSIVE", "exclusive"},
	{"SBATCH_EXPORT", "export"},
	{"SBATCH_GET_USER_ENV", "get-user-env"},
	{"SBATCH_GRES", "gres"},
	{"SBATCH_GRES_FLAGS", "gres-flags"},
	{"SBATCH_GPUS", "gpus"},
	{"SBATCH_GPU_BIND", "gpu-bind"},
	{"SBATCH_GPU_FREQ", "gpu-freq"},
	{"SBATCH_GPUS_PER_NODE", "gpus-per-node"},
	{"SBATCH_GPUS_PER_SOCKET", "gpus-per-socket"},
	{"SBATCH_GPUS_PER_TASK", "gpus-per-task"},
	{"SLURM_HINT", "hint"},
	{"SBATCH_HINT", "hint"},
	{"SBATCH_JOB_NAME", "job-name"},
	{"SBATCH_MEM_BIND", "mem-bind"},
	{"SBATCH_MEM_PER_CPU", "mem-per-cpu"},
	{"SBATCH_MEM_PER_GPU", "mem-per-gpu"},
	{"SBATCH_MEM_PER_NODE", "mem"},
	{"SBATCH_NETWORK", "network"},
	{"SBATCH_NO_KILL", "no-kill"},
	{"SBATCH_NO_REQUEUE", "no-requeue"},
	{"SBATCH_OPEN_MODE", "open-mode"},
	{"SBATCH_OVERCOMMIT", "overcommit"},
	{"SBATCH_PARTITION", "partition"},
	{"SBATCH_POWER", "power"},
	{"SBATCH_PROFILE", "profile"},
	{"SBATCH_QOS", "qos"},
	{"SBATCH_REQ_SWITCH", "switches"},
	{"SBATCH_REQUEUE", "requeue"},
	{"SBATCH_RESERVATION", "reservation"},
	{"SBATCH_SIGNAL", "signal"},
	{"SBATCH_SPREAD_JOB", "spread-job"},
	{"SBATCH_THREAD_SPEC", "thread-spec"},
	{"SBATCH_THREADS_PER_CORE", "threads-per-core"},
	{"SBATCH_TIMELIMIT", "time"},
	{"SBATCH_USE_MIN_NODES", "use-min-nodes"},
	{"SBATCH_WAIT", "wait"},
	{"SBATCH_WAIT_ALL_NODES", "wait-all-nodes"},
	{"SBATCH_WAIT4SWITCH", ""}, // the @max-time of --switches
	{"SBATCH_WCKEY", "wckey"},
	{"SBATCH_ERROR", "error"},
	{"SBATCH_INPUT", "input"},
	{"SBATCH_OUTPUT", "output"},
}

// applyInputEnv applies the SBATCH_* variables found in env (KEY=VALUE)
// over what the script's directives set. A bad value is reported as the
// option's own error is.
func applyInputEnv(o *Options, env []string) error {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	for _, e := range InputEnv {
		val, ok := vars[e.Var]
		if !ok {
			continue
		}
		if e.Option == "" { // SBATCH_WAIT4SWITCH
			secs, err := timeSeconds(val)
			if err != nil {
				return &UsageError{Msg: "Invalid SBATCH_WAIT4SWITCH specification", Code: 255}
			}
			o.Spec.SwitchesWaitSec = secs
			continue
		}
		opt := byLong()[e.Option]
		if opt == nil {
			return fmt.Errorf("jobspec: input variable %s names unknown option %q", e.Var, e.Option)
		}
		if opt.Arg == NoArg {
			val = ""
		}
		o.from[opt.Long] = "env"
		if err := o.apply(opt, val); err != nil {
			return err
		}
	}
	return nil
}
