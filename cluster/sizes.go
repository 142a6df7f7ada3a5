package cluster

import (
	"fmt"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// checkSizes holds a submission's strings to the lengths slurmctld allows
// (its _test_job_desc_fields), so that no user can fill the controllers'
// memory and Raft log with one job: the script to max_script_size
// (SchedulerParameters, 4 MiB by default), paths to PATH_MAX, names and
// the like to 1 KiB, and the environment to 1 MiB in all (one variable to
// Slurm's 128 KiB). Past a limit the job is refused with Slurm's error
// and the field named.
func checkSizes(cfg *config.Config, s *api.JobSpec) error {
	const name, path = 1024, 4096
	for _, f := range []struct {
		what  string
		value string
		max   int
	}{
		{"script", s.Script, cfg.MaxScriptSize()},
		{"name", s.Name, name}, {"partition", s.Partition, name}, {"account", s.Account, name},
		{"qos", s.QOS, name}, {"features", s.Constraint, name}, {"mail_user", s.MailUser, name},
		{"array_inx", s.Array, 4 * 1024}, {"dependency", s.Dependency, 128 * 1024},
		{"std_out", s.Output, path}, {"std_err", s.Error, path}, {"std_in", s.Input, path},
		{"work_dir", s.WorkDir, path}, {"container_image", s.ContainerImage, path},
		{"container_mounts", s.ContainerMounts, 128 * 1024}, {"container_workdir", s.ContainerWorkDir, path},
		{"node_list", s.NodeList, 128 * 1024}, {"exclude", s.Exclude, 128 * 1024},
		{"export", s.Export, 128 * 1024}, {"gres", s.Gres, name}, {"signal", s.Signal, name},
		{"submit_host", s.SubmitHost, name},
	} {
		if len(f.value) > f.max {
			return tooLong(f.what, len(f.value), f.max)
		}
	}
	total := 0
	for _, kv := range s.Env {
		if len(kv) > config.MaxEnvVarSize {
			return tooLong("environment variable", len(kv), config.MaxEnvVarSize)
		}
		total += len(kv) + 1
	}
	if total > config.DefaultMaxEnvSize {
		return tooLong("environment", total, config.DefaultMaxEnvSize)
	}
	return nil
}

func tooLong(what string, n, max int) error {
	return &api.Error{Message: api.ErrTooLong, Detail: fmt.Sprintf("%s is %d bytes, more than %d", what, n, max)}
}
