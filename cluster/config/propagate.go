package config

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Which of the submitter's resource limits a job's processes start with
// (PropagateResourceLimits, PropagateResourceLimitsExcept): srun and
// sbatch send their soft limits as SLURM_RLIMIT_<NAME> variables, and a
// node applies those its slurm.conf propagates.

// Rlimit is a resource limit Slurm can propagate: its name in slurm.conf
// and SLURM_RLIMIT_<Name>, and setrlimit(2)'s resource.
type Rlimit struct {
	Name     string
	Resource int
}

// Rlimits are the limits Slurm propagates, in its order.
var Rlimits = []Rlimit{
	{"CPU", unix.RLIMIT_CPU}, {"FSIZE", unix.RLIMIT_FSIZE}, {"DATA", unix.RLIMIT_DATA},
	{"STACK", unix.RLIMIT_STACK}, {"CORE", unix.RLIMIT_CORE}, {"RSS", unix.RLIMIT_RSS},
	{"NPROC", unix.RLIMIT_NPROC}, {"NOFILE", unix.RLIMIT_NOFILE}, {"MEMLOCK", unix.RLIMIT_MEMLOCK},
	{"AS", unix.RLIMIT_AS},
}

// propagateKey reads PropagateResourceLimits and
// PropagateResourceLimitsExcept (kept in Raw too, for scontrol show
// config); it says whether the key was one of them.
func (p *parser) propagateKey(n int, kv pair) (bool, error) {
	var dst *[]string
	switch kv.lower {
	case "propagateresourcelimits":
		dst = &p.cfg.PropagateResourceLimits
	case "propagateresourcelimitsexcept":
		dst = &p.cfg.PropagateResourceLimitsExcept
	default:
		return false, nil
	}
	names, err := parseRlimitNames(kv.value)
	if err != nil {
		return true, p.errf(n, "invalid %s=%s: %v", kv.key, kv.value, err)
	}
	*dst = names
	p.cfg.Raw[kv.key] = kv.value
	return true, nil
}

// parseRlimitNames reads a list of limit names (CORE or RLIMIT_CORE,
// separated by commas or blanks), ALL or NONE, into the names it means
// (never nil).
func parseRlimitNames(s string) ([]string, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "ALL":
		return rlimitNames(func(string) bool { return true }), nil
	case "NONE":
		return []string{}, nil
	}
	given := map[string]bool{}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(", \t\n", r) }) {
		name := strings.TrimPrefix(strings.ToUpper(w), "RLIMIT_")
		if rlimitNamed(name) == nil {
			return nil, errBadRlimit(w)
		}
		given[name] = true
	}
	return rlimitNames(func(n string) bool { return given[n] }), nil
}

type errBadRlimit string

func (e errBadRlimit) Error() string {
	return "unknown resource limit " + string(e) + " (expected ALL, NONE or names among AS, CORE, CPU, DATA, FSIZE, MEMLOCK, NOFILE, NPROC, RSS, STACK)"
}

// rlimitNamed is the limit of a name, or nil.
func rlimitNamed(name string) *Rlimit {
	for i := range Rlimits {
		if Rlimits[i].Name == name {
			return &Rlimits[i]
		}
	}
	return nil
}

// rlimitNames lists the names of the limits keep keeps, in Slurm's order.
func rlimitNames(keep func(string) bool) []string {
	out := []string{}
	for _, l := range Rlimits {
		if keep(l.Name) {
			out = append(out, l.Name)
		}
	}
	return out
}

// PropagatedLimits are the limits a job's processes take from its
// submitter: all of them unless slurm.conf says otherwise;
// PropagateResourceLimitsExcept wins over PropagateResourceLimits, as in
// Slurm.
func (c *Config) PropagatedLimits() []Rlimit {
	except := map[string]bool{}
	switch {
	case c.PropagateResourceLimitsExcept != nil:
		for _, n := range c.PropagateResourceLimitsExcept {
			except[n] = true
		}
	case c.PropagateResourceLimits != nil:
		for _, l := range Rlimits {
			except[l.Name] = true
		}
		for _, n := range c.PropagateResourceLimits {
			except[n] = false
		}
	}
	var out []Rlimit
	for _, l := range Rlimits {
		if !except[l.Name] {
			out = append(out, l)
		}
	}
	return out
}
