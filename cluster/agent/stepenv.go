package agent

import (
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
	"hpc/exec"
)

// The environment of every step, batch or srun, is built here, in one
// place, as Slurm 22.05's slurmstepd sets it (see
// ../shared/slurm-reference/12 to 18), plus what PyTorch's launchers read
// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK,
// LOCAL_WORLD_SIZE) and the job's storage ($TMPDIR, $SCRATCH).

// defaultPath is the PATH of a step whose environment has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// envSlot says whose environment stepEnv builds: the batch step's (step
// nil) or one task's of a step on this node.
type envSlot struct {
	step      *api.Step
	nodeIndex int // this node's index in step.Nodes
	procID    int // the task's rank in the step
	localID   int // the task's rank on this node
	gtids     []int
	// masterAddr and masterPort are the rendezvous of the step (its first
	// node) or, for the batch step, of the job.
	masterAddr string
	masterPort int
	// launcher is the node whose daemon runs the step for srun.
	launcher string
	// tmpDir and scratch are the job's storage on this node.
	tmpDir, scratch string
}

// stepEnv builds the complete environment of a step's process. base is the
// environment it starts from: the submitter's for the batch step (sbatch
// has applied --export), srun's for a task (after exportEnv). The batch
// step drops the SLURM_* variables of its base, as they describe the
// submitter's own job if any; a task keeps its srun's (those of the batch
// step around it) and gets its own over them.
func (ag *Agent) stepEnv(j *api.Job, base []string, slot envSlot) []string {
	mine := allocOn(j, ag.name)
	set := ag.jobVars(j)
	set["SLURM_CPUS_ON_NODE"] = strconv.Itoa(mine.CPUs)
	set["SLURMD_NODENAME"] = ag.name
	set["SLURM_TOPOLOGY_ADDR"] = ag.name
	set["SLURM_TOPOLOGY_ADDR_PATTERN"] = "node"
	set["SLURM_PRIO_PROCESS"] = "0"
	set["HPC_SOCKET"] = ag.socket
	if conf := filepath.Join(filepath.Dir(ag.dir), "slurm.conf"); ag.dir != "" && fileExists(conf) {
		set["SLURM_CONF"] = conf
	}
	jobNodes := set["SLURM_JOB_NODELIST"]
	if slot.masterAddr != "" {
		set["MASTER_ADDR"] = slot.masterAddr
		set["MASTER_PORT"] = strconv.Itoa(slot.masterPort)
	}
	if slot.tmpDir != "" {
		set["TMPDIR"] = slot.tmpDir
	}
	if slot.scratch != "" {
		set["SCRATCH"] = slot.scratch
		set["PROJECT"] = ag.storage().projectDir(j)
	}
	gpus := gpuIndices(mine)
	if gpus != "" {
		set["CUDA_VISIBLE_DEVICES"] = gpus
		set["GPU_DEVICE_ORDINAL"] = gpus
		set["SLURM_GPUS_ON_NODE"] = strconv.Itoa(strings.Count(gpus, ",") + 1)
	}
	if s := slot.step; s == nil {
		// The batch step: one task, the job's first node.
		set["SLURM_NODELIST"] = jobNodes
		set["SLURM_NNODES"] = strconv.Itoa(len(j.Alloc))
		set["SLURM_NODEID"] = "0"
		set["SLURM_PROCID"] = "0"
		set["SLURM_LOCALID"] = "0"
		set["SLURM_GTIDS"] = "0"
		set["SLURM_NODE_ALIASES"] = "(null)"
		if gpus != "" {
			set["SLURM_JOB_GPUS"] = gpus
		}
	} else {
		stepNodes := hostlist.Compress(s.Nodes)
		ntasks := strconv.Itoa(s.NTasks())
		perNode := repeatCounts(s.Tasks)
		sid := strconv.FormatUint(uint64(s.ID), 10)
		set["SLURM_STEP_ID"] = sid
		set["SLURM_STEPID"] = sid
		set["SLURM_STEP_NODELIST"] = stepNodes
		set["SLURM_STEP_NUM_NODES"] = strconv.Itoa(len(s.Nodes))
		set["SLURM_STEP_NUM_TASKS"] = ntasks
		set["SLURM_STEP_TASKS_PER_NODE"] = perNode
		set["SLURM_NODELIST"] = stepNodes
		set["SLURM_NNODES"] = strconv.Itoa(len(s.Nodes))
		set["SLURM_NTASKS"] = ntasks
		set["SLURM_NPROCS"] = ntasks
		set["SLURM_TASKS_PER_NODE"] = perNode
		set["SLURM_NODEID"] = strconv.Itoa(slot.nodeIndex)
		set["SLURM_PROCID"] = strconv.Itoa(slot.procID)
		set["SLURM_LOCALID"] = strconv.Itoa(slot.localID)
		set["SLURM_GTIDS"] = joinInts(slot.gtids)
		if s.CPUsPerTask > 1 || j.Spec.CPUsPerTask > 0 {
			set["SLURM_CPUS_PER_TASK"] = strconv.Itoa(s.CPUsPerTask)
		}
		if n := ag.conf().Node(slot.launcher); n != nil {
			port := strconv.Itoa(ag.conf().APIPort)
			set["SLURM_LAUNCH_NODE_IPADDR"] = n.Addr
			set["SLURM_SRUN_COMM_HOST"] = n.Addr
			set["SLURM_SRUN_COMM_PORT"] = port
			set["SLURM_STEP_LAUNCHER_PORT"] = port
		}
		if gpus != "" {
			set["SLURM_STEP_GPUS"] = gpus
		}
		set["WORLD_SIZE"] = ntasks
		set["RANK"] = strconv.Itoa(slot.procID)
		set["LOCAL_RANK"] = strconv.Itoa(slot.localID)
		set["LOCAL_WORLD_SIZE"] = strconv.Itoa(s.Tasks[slot.nodeIndex])
		set["GROUP_RANK"] = strconv.Itoa(slot.nodeIndex)
	}
	return mergeEnv(base, set, slot.step == nil)
}

// jobVars are the variables that describe a job wherever its steps run
// (and in salloc's shell).
func (ag *Agent) jobVars(j *api.Job) map[string]string {
	jobNodes := hostlist.Compress(j.NodeNames())
	cpus := make([]int, len(j.Alloc))
	for i, a := range j.Alloc {
		cpus[i] = a.CPUs
	}
	qos := j.Spec.QOS
	if qos == "" {
		qos = "normal"
	}
	id := strconv.FormatUint(j.ID, 10)
	set := map[string]string{
		"SLURM_JOB_ID":            id,
		"SLURM_JOBID":             id,
		"SLURM_JOB_NAME":          j.Spec.Name,
		"SLURM_JOB_NODELIST":      jobNodes,
		"SLURM_NODELIST":          jobNodes,
		"SLURM_JOB_NUM_NODES":     strconv.Itoa(len(j.Alloc)),
		"SLURM_NNODES":            strconv.Itoa(len(j.Alloc)),
		"SLURM_JOB_CPUS_PER_NODE": repeatCounts(cpus),
		"SLURM_TASKS_PER_NODE":    repeatCounts(j.TasksPerNode()),
		"SLURM_SUBMIT_DIR":        j.Spec.WorkDir,
		"SLURM_SUBMIT_HOST":       j.Spec.SubmitHost,
		"SLURM_JOB_PARTITION":     j.Spec.Partition,
		"SLURM_CLUSTER_NAME":      ag.conf().ClusterName,
		"SLURM_JOB_ACCOUNT":       j.Account,
		"SLURM_JOB_QOS":           qos,
		"SLURM_JOB_UID":           strconv.FormatUint(uint64(j.UID), 10),
		"SLURM_JOB_GID":           strconv.FormatUint(uint64(j.GID), 10),
		"SLURM_JOB_USER":          j.User,
	}
	if j.Restarts > 0 {
		// As slurmd sets it: only for a job that was requeued.
		set["SLURM_RESTART_COUNT"] = strconv.Itoa(j.Restarts)
	}
	if j.Spec.NTasks > 0 {
		set["SLURM_NTASKS"] = strconv.Itoa(j.Spec.NTasks)
		set["SLURM_NPROCS"] = strconv.Itoa(j.Spec.NTasks)
	}
	if j.ArrayJobID != 0 {
		set["SLURM_ARRAY_JOB_ID"] = strconv.FormatUint(j.ArrayJobID, 10)
		set["SLURM_ARRAY_TASK_ID"] = strconv.Itoa(j.ArrayTaskID)
		if idx, _, err := jobspec.ParseArray(j.Spec.Array); err == nil {
			set["SLURM_ARRAY_TASK_COUNT"] = strconv.Itoa(len(idx))
			set["SLURM_ARRAY_TASK_MIN"] = strconv.Itoa(idx[0])
			set["SLURM_ARRAY_TASK_MAX"] = strconv.Itoa(idx[len(idx)-1])
			set["SLURM_ARRAY_TASK_STEP"] = strconv.Itoa(jobspec.ArrayStep(idx))
		}
	}
	if j.Spec.CPUsPerTask > 0 {
		set["SLURM_CPUS_PER_TASK"] = strconv.Itoa(j.Spec.CPUsPerTask)
	}
	switch {
	case j.Spec.MemPerNodeMB > 0:
		set["SLURM_MEM_PER_NODE"] = strconv.FormatInt(j.Spec.MemPerNodeMB, 10)
	case j.Spec.MemPerCPUMB > 0:
		set["SLURM_MEM_PER_CPU"] = strconv.FormatInt(j.Spec.MemPerCPUMB, 10)
	case ag.conf().DefMemPerCPU > 0:
		set["SLURM_MEM_PER_CPU"] = strconv.FormatInt(ag.conf().DefMemPerCPU, 10)
	}
	return set
}

// AllocEnv is what salloc's shell gets on top of its own environment.
func (ag *Agent) AllocEnv(j *api.Job) []string {
	return mergeEnv(nil, ag.jobVars(j), false)
}

// mergeEnv puts set over base, in a stable order; dropSlurm leaves out
// base's SLURM_* variables.
func mergeEnv(base []string, set map[string]string, dropSlurm bool) []string {
	env := make([]string, 0, len(base)+len(set)+1)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, override := set[k]; override || (dropSlurm && strings.HasPrefix(k, "SLURM_")) {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	if base != nil && !hasVar(env, "PATH") {
		env = append(env, "PATH="+defaultPath)
	}
	return env
}

// exportEnv applies srun's --export to its environment: ALL (or nothing
// said) passes it all; NONE only the SLURM_* variables; a list passes the
// variables it names (NAME, or NAME=value to set one), all of them when it
// holds ALL, else only those and the SLURM_* ones.
func exportEnv(export string, env []string) []string {
	if export == "" || strings.EqualFold(export, "ALL") {
		return env
	}
	slurmOnly := func() []string {
		var out []string
		for _, kv := range env {
			if strings.HasPrefix(kv, "SLURM_") {
				out = append(out, kv)
			}
		}
		return out
	}
	if strings.EqualFold(export, "NONE") {
		return slurmOnly()
	}
	all := false
	var named []string
	for _, item := range strings.Split(export, ",") {
		switch {
		case item == "":
		case strings.EqualFold(item, "ALL"):
			all = true
		case strings.EqualFold(item, "NONE"):
		default:
			named = append(named, item)
		}
	}
	out := slurmOnly()
	if all {
		out = append([]string(nil), env...)
	}
	for _, item := range named {
		if strings.Contains(item, "=") {
			out = append(out, item)
			continue
		}
		if v, ok := lookupVar(env, item); ok && !all {
			out = append(out, item+"="+v)
		}
	}
	return dedupEnv(out)
}

// dedupEnv keeps the last setting of each variable, in first-seen order
// (getenv(3) would find the first).
func dedupEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := make([]string, 0, len(last))
	seen := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, env[last[k]])
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// lookupVar finds a variable in an environment (the last setting wins).
func lookupVar(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// allocOn is a job's share of a node (zero if it has none there).
func allocOn(j *api.Job, node string) api.NodeAlloc {
	for _, a := range j.Alloc {
		if a.Node == node {
			return a
		}
	}
	return api.NodeAlloc{}
}

// gpuIndices lists the GPUs a job has on a node ("0,1"), or "".
func gpuIndices(a api.NodeAlloc) string {
	var idx []int
	for _, g := range a.Gres {
		if g.Name == "gpu" {
			idx = append(idx, g.Indices...)
		}
	}
	sort.Ints(idx)
	return joinInts(idx)
}

// nodeAddr is a node's address from the config ("" if unknown).
func (ag *Agent) nodeAddr(name string) string {
	if n := ag.conf().Node(name); n != nil {
		return n.Addr
	}
	return ""
}

// masterPort picks the rendezvous port of a job on this node: 10000 plus
// the job id modulo 50000, or the next one that this node can bind.
func (ag *Agent) masterPort(jobID uint64) int {
	base := int(jobID % 50000)
	for i := range 200 {
		p := 10000 + (base+i)%50000
		l, err := net.Listen("tcp", net.JoinHostPort(ag.self.Addr, strconv.Itoa(p)))
		if err == nil {
			l.Close()
			return p
		}
	}
	return 10000 + base
}

// gresDevices are the device files of the GRES allocated on this node, from
// gres.conf: device i of a name is the i-th file of that name's lines for
// this node, in file order (how the scheduler numbers them).
func (ag *Agent) gresDevices(mine api.NodeAlloc) []string {
	files := map[string][]string{}
	for _, g := range ag.conf().GresDevices {
		if g.Node == ag.name {
			files[g.Name] = append(files[g.Name], g.Files...)
		}
	}
	var out []string
	for _, g := range mine.Gres {
		for _, i := range g.Indices {
			if list := files[g.Name]; i >= 0 && i < len(list) && list[i] != "" {
				out = append(out, list[i])
			}
		}
	}
	return out
}

// inheritance is what a step's processes take from the process that
// submitted them, as slurmstepd's tasks do: its umask (SLURM_UMASK) and
// its soft limits (SLURM_RLIMIT_<NAME>) of those slurm.conf propagates.
type inheritance struct {
	umask  *uint32
	limits []exec.Rlimit
}

// taskPidVar holds each process's own pid.
const taskPidVar = "SLURM_TASK_PID"

// inherited reads a step's inheritance from its submitter's environment,
// and returns that environment without the SLURM_RLIMIT_* variables,
// which the processes never see (a batch step's drops SLURM_UMASK with
// the other SLURM_* variables of its submitter's; an srun task keeps it).
func (ag *Agent) inherited(env []string) (inheritance, []string) {
	var in inheritance
	if v, ok := lookupVar(env, "SLURM_UMASK"); ok {
		if m, err := strconv.ParseUint(v, 8, 32); err == nil && m <= 0o777 {
			mask := uint32(m)
			in.umask = &mask
		}
	}
	limits := map[string]string{}
	rest := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if name, ok := strings.CutPrefix(k, "SLURM_RLIMIT_"); ok {
			limits[name] = v
			continue
		}
		rest = append(rest, kv)
	}
	for _, l := range ag.conf().PropagatedLimits() {
		// A leading U marks a limit srun --propagate names: the same here.
		v, ok := limits[l.Name]
		if n, err := strconv.ParseUint(strings.TrimPrefix(v, "U"), 10, 64); ok && err == nil {
			in.limits = append(in.limits, exec.Rlimit{Resource: l.Resource, Soft: n})
		}
	}
	return in, rest
}

// apply gives a step its inheritance, and each of its processes its pid
// in SLURM_TASK_PID.
func (in inheritance) apply(spec *exec.StepSpec) {
	spec.Umask, spec.Rlimits, spec.PidEnv = in.umask, in.limits, taskPidVar
}
