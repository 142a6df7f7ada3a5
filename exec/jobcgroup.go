//go:build linux

package exec

import (
	"fmt"
	"sync"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
)

// A job's steps on a node share a job cgroup, as under Slurm's cgroup
// plugins: <parent>/<node>/job_<job>/<step> (the parent: cgroupsetup.go).
// The job cgroup carries the job's memory limit on the node
// (StepSpec.JobMemMB), so that its steps together
// (the batch script and the srun steps it runs side by side) stay within
// --mem, each step keeping its own limit below it. It is made with the
// job's first step on the node and removed with its last.

// jobCgroups counts the running steps of each job cgroup.
type jobCgroups struct {
	mu    sync.Mutex
	steps map[string]int
}

// MinMemMB is the least memory limit a step or job cgroup gets, as
// Slurm's task/cgroup's MinRAMSpace (30 MB by default): a smaller --mem
// could not even start a container's init.
const MinMemMB = 30

func jobCgroupName(job string) string { return "job_" + sanitizeID(job) }

// jobPath is the cgroup path of a step of job (or of a step without one).
func (r *containerRuntime) stepCgroupPath(spec *StepSpec, cid string) string {
	if spec.Job == "" {
		return r.cgParent + "/" + cid
	}
	return r.cgParent + "/" + jobCgroupName(spec.Job) + "/" + cid
}

// joinJob makes (or finds) the job cgroup of a step about to start.
func (r *containerRuntime) joinJob(spec *StepSpec) error {
	if spec.Job == "" {
		return nil
	}
	r.jobs.mu.Lock()
	defer r.jobs.mu.Unlock()
	if r.jobs.steps == nil {
		r.jobs.steps = map[string]int{}
	}
	if r.jobs.steps[spec.Job] == 0 {
		// Devices stay as the node's: the steps below set their own.
		res := &cgroups.Resources{SkipDevices: true}
		if spec.JobMemMB > 0 {
			res.Memory = max(spec.JobMemMB, MinMemMB) << 20
			if r.v2 || r.memsw {
				res.MemorySwap = res.Memory
			}
		}
		m, err := r.jobManager(spec.Job, res)
		if err != nil {
			return fmt.Errorf("job cgroup: %w", err)
		}
		if err := m.Apply(-1); err != nil {
			return fmt.Errorf("job cgroup: %w", err)
		}
		if err := m.Set(res); err != nil {
			_ = m.Destroy()
			return fmt.Errorf("job cgroup limits: %w", err)
		}
	}
	r.jobs.steps[spec.Job]++
	return nil
}

// jobManager is the manager of job's cgroup: the node cgroup's paths
// (probeCgroups) with the job's name under each, rather than looking up
// every hierarchy's mount again for each step.
func (r *containerRuntime) jobManager(job string, res *cgroups.Resources) (cgroups.Manager, error) {
	name := jobCgroupName(job)
	paths := make(map[string]string, len(r.cgPaths))
	for sys, p := range r.cgPaths {
		paths[sys] = p + "/" + name
	}
	return manager.NewWithPaths(&cgroups.Cgroup{Path: r.cgParent + "/" + name, Resources: res}, paths)
}

// leaveJob is the end of a step of job: the job cgroup goes with its last.
func (r *containerRuntime) leaveJob(job string) {
	if job == "" {
		return
	}
	r.jobs.mu.Lock()
	defer r.jobs.mu.Unlock()
	if r.jobs.steps[job]--; r.jobs.steps[job] > 0 {
		return
	}
	delete(r.jobs.steps, job)
	if m, err := r.jobManager(job, &cgroups.Resources{}); err == nil {
		if err := m.Destroy(); err != nil {
			r.log.Warn("cannot remove a job cgroup", "job", job, "err", err)
		}
	}
}

// adoptJob counts a re-attached step in its job cgroup.
func (r *containerRuntime) adoptJob(job string) {
	if job == "" {
		return
	}
	r.jobs.mu.Lock()
	if r.jobs.steps == nil {
		r.jobs.steps = map[string]int{}
	}
	r.jobs.steps[job]++
	r.jobs.mu.Unlock()
}
