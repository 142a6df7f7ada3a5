package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	"hpc/exec"
)

// stepTable holds the steps this node's agent runs, by job id.
type stepTable struct {
	mu    sync.Mutex
	steps map[uint64]*exec.Step
	// cancelled remembers kills that arrived before the step was started.
	cancelled map[uint64]bool
}

func newStepTable() *stepTable {
	return &stepTable{steps: map[uint64]*exec.Step{}, cancelled: map[uint64]bool{}}
}

func (t *stepTable) killAll(grace time.Duration) {
	t.mu.Lock()
	var all []*exec.Step
	for _, s := range t.steps {
		all = append(all, s)
	}
	t.mu.Unlock()
	for _, s := range all {
		s.Kill(grace)
	}
	for _, s := range all {
		s.Wait()
	}
}

type signalRequest struct {
	JobID    uint64        `json:"job_id"`
	Signal   int           `json:"signal"` // 0: cancel
	KillWait time.Duration `json:"kill_wait"`
}

// handleLaunch starts a job's batch script on this node.
func (d *Daemon) handleLaunch(w http.ResponseWriter, r *http.Request) {
	var j api.Job
	if err := json.NewDecoder(r.Body).Decode(&j); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	d.steps.mu.Lock()
	_, running := d.steps.steps[j.ID]
	d.steps.mu.Unlock()
	if running {
		writeJSON(w, struct{}{}) // a repeated launch of the same job
		return
	}
	script := filepath.Join(d.o.Dir, "jobs", strconv.FormatUint(j.ID, 10), "script")
	if err := writeScript(script, j.Spec.Script, j.UID, j.GID); err != nil {
		writeErr(w, http.StatusInternalServerError, fmt.Errorf("write batch script: %w", err))
		return
	}
	var mine api.NodeAlloc
	for _, a := range j.Alloc {
		if a.Node == d.o.Name {
			mine = a
		}
	}
	spec := exec.StepSpec{
		ID:      fmt.Sprintf("%d.batch", j.ID),
		Argv:    []string{"/bin/sh", script},
		Env:     d.batchEnv(&j, mine),
		UID:     j.UID,
		GID:     j.GID,
		WorkDir: j.Spec.WorkDir,
		Stdout:  j.StdOut,
		Stderr:  j.StdErr,
		CPUs:    mine.CPUs,
		MemMB:   mine.MemMB,
	}
	if interp := interpreter(j.Spec.Script); interp != nil {
		spec.Argv = append(interp, script)
	}
	step, err := d.exec.Launch(spec)
	if err != nil {
		os.RemoveAll(filepath.Dir(script))
		writeErr(w, http.StatusInternalServerError, &api.Error{Message: err.Error()})
		return
	}
	d.steps.mu.Lock()
	d.steps.steps[j.ID] = step
	cancelled := d.steps.cancelled[j.ID]
	delete(d.steps.cancelled, j.ID)
	d.steps.mu.Unlock()
	if cancelled {
		step.Kill(d.killWait())
	}
	go d.watch(j.ID, step, filepath.Dir(script))
	writeJSON(w, struct{}{})
}

// watch waits for a step to end and reports the end to the leader until
// the leader has committed it.
func (d *Daemon) watch(id uint64, step *exec.Step, dir string) {
	res := step.Wait()
	d.steps.mu.Lock()
	delete(d.steps.steps, id)
	d.steps.mu.Unlock()
	os.RemoveAll(dir)
	e := jobEnd{JobID: id, Node: d.o.Name, ExitCode: res.ExitCode, Signal: res.Signal, OOM: res.OOM, Start: res.Start, End: res.End}
	if res.Err != nil {
		e.Error = res.Err.Error()
	}
	delay := 100 * time.Millisecond
	for {
		addr, err := d.localAPI()
		if err == nil {
			ctx, cancel := context.WithTimeout(d.ctx, 15*time.Second)
			err = d.callNode(ctx, addr, "/internal/job-end", e, nil)
			cancel()
		}
		if err == nil {
			return
		}
		d.log.Warn("reporting job end failed; retrying", "job", id, "err", err)
		select {
		case <-d.ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// localAPI is this node's own TCP API, which forwards to the leader.
func (d *Daemon) localAPI() (string, error) { return d.addr(d.cfg.APIPort), nil }

func (d *Daemon) handleSignal(w http.ResponseWriter, r *http.Request) {
	var req signalRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	d.steps.mu.Lock()
	step := d.steps.steps[req.JobID]
	if step == nil && req.Signal == 0 {
		d.steps.cancelled[req.JobID] = true
	}
	d.steps.mu.Unlock()
	switch {
	case step == nil:
	case req.Signal == 0:
		step.Kill(req.KillWait)
	default:
		if err := step.Signal(syscall.Signal(req.Signal)); err != nil {
			writeErr(w, http.StatusInternalServerError, err)
			return
		}
	}
	writeJSON(w, struct{}{})
}

// writeScript stores the batch script where the job's user can read it.
func writeScript(path, script string, uid, gid uint32) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(script), 0o500); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			return err
		}
		return os.Chown(path, int(uid), int(gid))
	}
	return nil
}

// interpreter returns the #! line's command, or nil.
func interpreter(script string) []string {
	line, _, _ := strings.Cut(script, "\n")
	if !strings.HasPrefix(line, "#!") {
		return nil
	}
	f := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(f) == 0 || !filepath.IsAbs(f[0]) {
		return nil
	}
	return f
}

// batchEnv is the batch step's environment: the submitter's environment
// (--export=ALL) plus the SLURM_* variables of Slurm 22.05.
func (d *Daemon) batchEnv(j *api.Job, mine api.NodeAlloc) []string {
	nodes := hostlist.Compress(j.NodeNames())
	tasks := j.Spec.NTasks
	cpusPerNode := make([]int, len(j.Alloc))
	for i, a := range j.Alloc {
		cpusPerNode[i] = a.CPUs
	}
	set := map[string]string{
		"SLURM_JOB_ID":                strconv.FormatUint(j.ID, 10),
		"SLURM_JOBID":                 strconv.FormatUint(j.ID, 10),
		"SLURM_JOB_NAME":              j.Spec.Name,
		"SLURM_JOB_NODELIST":          nodes,
		"SLURM_NODELIST":              nodes,
		"SLURM_JOB_NUM_NODES":         strconv.Itoa(len(j.Alloc)),
		"SLURM_NNODES":                strconv.Itoa(len(j.Alloc)),
		"SLURM_CPUS_ON_NODE":          strconv.Itoa(mine.CPUs),
		"SLURM_JOB_CPUS_PER_NODE":     repeatCounts(cpusPerNode),
		"SLURM_SUBMIT_DIR":            j.Spec.WorkDir,
		"SLURM_SUBMIT_HOST":           j.Spec.SubmitHost,
		"SLURM_JOB_PARTITION":         j.Spec.Partition,
		"SLURMD_NODENAME":             d.o.Name,
		"SLURM_CLUSTER_NAME":          d.cfg.ClusterName,
		"SLURM_JOB_ACCOUNT":           j.Account,
		"SLURM_JOB_QOS":               "normal",
		"SLURM_JOB_UID":               strconv.FormatUint(uint64(j.UID), 10),
		"SLURM_JOB_GID":               strconv.FormatUint(uint64(j.GID), 10),
		"SLURM_JOB_USER":              j.User,
		"SLURM_NODEID":                "0",
		"SLURM_PROCID":                "0",
		"SLURM_LOCALID":               "0",
		"SLURM_GTIDS":                 "0",
		"SLURM_PRIO_PROCESS":          "0",
		"SLURM_TOPOLOGY_ADDR":         d.o.Name,
		"SLURM_TOPOLOGY_ADDR_PATTERN": "node",
		"SLURM_NODE_ALIASES":          "(null)",
		"SLURM_TASKS_PER_NODE":        repeatCounts(tasksPerNode(j)),
		"HPC_SOCKET":                  d.o.Socket,
	}
	if tasks > 0 {
		set["SLURM_NTASKS"] = strconv.Itoa(tasks)
		set["SLURM_NPROCS"] = strconv.Itoa(tasks)
	}
	if j.Spec.CPUsPerTask > 0 {
		set["SLURM_CPUS_PER_TASK"] = strconv.Itoa(j.Spec.CPUsPerTask)
	}
	if j.Spec.MemPerNodeMB > 0 {
		set["SLURM_MEM_PER_NODE"] = strconv.FormatInt(j.Spec.MemPerNodeMB, 10)
	} else if d.cfg.DefMemPerCPU > 0 {
		set["SLURM_MEM_PER_CPU"] = strconv.FormatInt(d.cfg.DefMemPerCPU, 10)
	}
	var env []string
	for _, kv := range j.Spec.Env {
		k, _, _ := strings.Cut(kv, "=")
		if _, override := set[k]; override || strings.HasPrefix(k, "SLURM_") {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	if !hasVar(env, "PATH") {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin")
	}
	return env
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// tasksPerNode splits the job's tasks over its nodes as the allocation did.
func tasksPerNode(j *api.Job) []int {
	cpt := max(j.Spec.CPUsPerTask, 1)
	out := make([]int, len(j.Alloc))
	for i, a := range j.Alloc {
		out[i] = max(a.CPUs/cpt, 1)
	}
	return out
}

// repeatCounts writes counts as Slurm does: "2(x2),1".
func repeatCounts(v []int) string {
	var parts []string
	for i := 0; i < len(v); {
		k := i
		for k < len(v) && v[k] == v[i] {
			k++
		}
		if k-i > 1 {
			parts = append(parts, fmt.Sprintf("%d(x%d)", v[i], k-i))
		} else {
			parts = append(parts, strconv.Itoa(v[i]))
		}
		i = k
	}
	return strings.Join(parts, ",")
}

// expandPath turns an -o/-e pattern into a path: %j job id, %x job name,
// %u user, %N first node, %% a percent sign. Relative paths are taken from
// the job's working directory. An empty pattern gives def (itself a
// pattern, or an already expanded path).
func expandPath(pattern string, j *api.Job, def string) string {
	if pattern == "" {
		pattern = def
	}
	first := ""
	if len(j.Alloc) > 0 {
		first = j.Alloc[0].Node
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' || i+1 == len(pattern) {
			b.WriteByte(c)
			continue
		}
		i++
		switch pattern[i] {
		case 'j', 'A':
			b.WriteString(strconv.FormatUint(j.ID, 10))
		case 'x':
			b.WriteString(j.Spec.Name)
		case 'u':
			b.WriteString(j.User)
		case 'N':
			b.WriteString(first)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(pattern[i])
		}
	}
	p := b.String()
	if !filepath.IsAbs(p) {
		p = filepath.Join(j.Spec.WorkDir, p)
	}
	return p
}
