package agent

import (
	"path/filepath"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
	"hpc/exec"
)

// The agents' side of container images (the StepSpec of a batch step,
// batch.go, and of srun's steps, steps.go).

// batchImage is the image the batch step of job j runs in (nil: the host's
// file system): the job's --container-image, with the node's directories
// the step needs bound in: the one holding the batch script (jobs, read-only),
// the one holding the job's $TMPDIR (tmp) and its $SCRATCH. The parents are
// bound, not the job's own directories, so that the mount points these need
// in an image are made once per node rather than once per job. The batch
// step of salloc's and srun's allocations only holds them: it stays on the
// host.
func batchImage(j *api.Job, jobs, tmp, scratch string) (*exec.Image, error) {
	if j.Spec.ContainerImage == "" || j.Spec.Script == api.HolderScript {
		return nil, nil
	}
	mounts, err := imageMounts(j.Spec.ContainerMounts)
	if err != nil {
		return nil, err
	}
	return &exec.Image{Path: j.Spec.ContainerImage, Mounts: mounts, WorkDir: j.Spec.ContainerWorkDir,
		Binds: jobBinds(jobs, tmp, scratch)}, nil
}

// imageMounts reads --container-mounts (checked at submit already; srun's
// own arrive through its environment).
func imageMounts(s string) ([]exec.Mount, error) {
	ms, err := jobspec.ParseContainerMounts(s, "")
	if err != nil {
		return nil, err
	}
	out := make([]exec.Mount, len(ms))
	for i, m := range ms {
		out[i] = exec.Mount{Source: m.Source, Destination: m.Destination, ReadOnly: m.ReadOnly}
	}
	return out, nil
}

// stepImage is the image an srun step of job j runs in (nil: the host's
// file system): srun's own options, passed in its environment env (see
// jobspec.EnvContainerImage), else the job's.
func stepImage(j *api.Job, env []string, tmp, scratch string) (*exec.Image, error) {
	path, mounts, workDir := j.Spec.ContainerImage, j.Spec.ContainerMounts, j.Spec.ContainerWorkDir
	if v, ok := lookupVar(env, jobspec.EnvContainerImage); ok && v != "" {
		path = v
		mounts, _ = lookupVar(env, jobspec.EnvContainerMounts)
		workDir, _ = lookupVar(env, jobspec.EnvContainerWorkDir)
	}
	if path == "" {
		return nil, nil
	}
	ms, err := imageMounts(mounts)
	if err != nil {
		return nil, err
	}
	return &exec.Image{Path: path, Mounts: ms, WorkDir: workDir, Binds: jobBinds("", tmp, scratch)}, nil
}

// jobBinds are the node's directories a job's step needs in its image.
func jobBinds(jobs, tmp, scratch string) []exec.Mount {
	var out []exec.Mount
	if jobs != "" {
		out = append(out, exec.Mount{Source: jobs, ReadOnly: true})
	}
	if tmp != "" {
		out = append(out, exec.Mount{Source: filepath.Dir(tmp)})
	}
	if scratch != "" {
		out = append(out, exec.Mount{Source: scratch})
	}
	return out
}
