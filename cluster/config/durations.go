package config

import "time"

// KillWaitTime is KillWait: how long a job's processes have between
// SIGTERM and SIGKILL (Slurm's default, 30 s, when unset).
func (c *Config) KillWaitTime() time.Duration {
	if c.KillWait > 0 {
		return time.Duration(c.KillWait) * time.Second
	}
	return 30 * time.Second
}

// StepAttachWait is how long a node's share of an srun step waits for its
// launcher to attach again after the launcher's daemon went away (and how
// long srun tries to attach again): SlurmdTimeout, at least a minute.
func (c *Config) StepAttachWait() time.Duration {
	return max(time.Duration(c.SlurmdTimeout)*time.Second, time.Minute)
}
