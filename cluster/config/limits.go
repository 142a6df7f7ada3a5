package config

import "strings"

// The limits that keep one user from filling the controllers' memory, as
// Slurm's are named.
const (
	// DefaultMaxJobCount is Slurm's MaxJobCount default: the most jobs the
	// controller holds (pending, running and finished not yet purged).
	DefaultMaxJobCount = 10000
	// DefaultMaxArraySize is Slurm's MaxArraySize default: array task ids
	// run 0..MaxArraySize-1.
	DefaultMaxArraySize = 1001
	// DefaultMaxScriptSize is SchedulerParameters=max_script_size's
	// default (4 MiB); Slurm refuses more than 512 MiB.
	DefaultMaxScriptSize = 4 << 20
	maxMaxScriptSize     = 512 << 20
	// DefaultMaxEnvSize bounds a job's environment (its variables
	// together); MaxEnvVarSize one variable (Slurm's MAX_ENV_STRLEN).
	DefaultMaxEnvSize = 1 << 20
	MaxEnvVarSize     = 32 * 4096
	// Submit rate per user (not root): a bucket of DefaultSubmitBurst
	// submissions refilled with DefaultSubmitRate a second, as Slurm's
	// SlurmctldParameters rl_bucket_size and rl_refill_rate.
	DefaultSubmitBurst = 100
	DefaultSubmitRate  = 10
)

// limitKey reads MaxJobCount, MaxArraySize and SlurmUser; it says whether
// the key was one of them.
func (p *parser) limitKey(n int, kv pair) (bool, error) {
	c := p.cfg
	switch kv.lower {
	case "maxjobcount":
		v, err := nonNegInt(kv.value)
		if err != nil || v < 1 {
			return true, p.errf(n, "invalid MaxJobCount=%s: expected a positive number", kv.value)
		}
		c.MaxJobCount = v
	case "slurmuser":
		if kv.value == "" || strings.ContainsAny(kv.value, " \t,:/") {
			return true, p.errf(n, "invalid SlurmUser=%s: expected a user name", kv.value)
		}
		c.SlurmUser = kv.value
	case "maxarraysize":
		v, err := nonNegInt(kv.value)
		if err != nil || v > 4000001 {
			return true, p.errf(n, "invalid MaxArraySize=%s: expected a number from 0 to 4000001", kv.value)
		}
		c.MaxArraySize = v
	default:
		return false, nil
	}
	return true, nil
}

// MaxScriptSize is SchedulerParameters=max_script_size (bytes), or its
// default.
func (c *Config) MaxScriptSize() int {
	if v, ok := c.SchedulerParameters["max_script_size"]; ok {
		if n, err := nonNegInt(strings.TrimSpace(v)); err == nil && n <= maxMaxScriptSize {
			return n
		}
	}
	return DefaultMaxScriptSize
}

// SubmitRate is the per-user submit rate limit: the bucket size and the
// refill per second, from SlurmctldParameters' rl_bucket_size= and
// rl_refill_rate=, or the defaults.
func (c *Config) SubmitRate() (burst, perSecond int) {
	burst, perSecond = DefaultSubmitBurst, DefaultSubmitRate
	for _, item := range strings.Split(c.RawValue("SlurmctldParameters"), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(item), "=")
		n, err := nonNegInt(v)
		switch {
		case strings.EqualFold(k, "rl_bucket_size") && err == nil && n > 0:
			burst = n
		case strings.EqualFold(k, "rl_refill_rate") && err == nil && n > 0:
			perSecond = n
		}
	}
	return burst, perSecond
}
