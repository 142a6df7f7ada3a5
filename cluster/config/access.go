package config

import (
	"fmt"
	"strings"
)

// PrivateData is slurm.conf's PrivateData: the records ordinary users see
// only of their own (root and sacctmgr operators and administrators see
// everything). hpc enforces Jobs (squeue, scontrol show job, sacct, sprio)
// and Usage (sshare, sreport); the others are read and shown by scontrol
// show config.
type PrivateData struct {
	Accounts     bool `json:"accounts,omitempty"`
	Cloud        bool `json:"cloud,omitempty"`
	Events       bool `json:"events,omitempty"`
	Jobs         bool `json:"jobs,omitempty"`
	Nodes        bool `json:"nodes,omitempty"`
	Partitions   bool `json:"partitions,omitempty"`
	Reservations bool `json:"reservations,omitempty"`
	Usage        bool `json:"usage,omitempty"`
	Users        bool `json:"users,omitempty"`
}

// privateDataWords are PrivateData's words in the order scontrol prints
// them; Slurm also reads the singular (job, node, ...).
func (p *PrivateData) words() []struct {
	name string
	on   *bool
} {
	return []struct {
		name string
		on   *bool
	}{
		{"accounts", &p.Accounts}, {"cloud", &p.Cloud}, {"events", &p.Events}, {"jobs", &p.Jobs},
		{"nodes", &p.Nodes}, {"partitions", &p.Partitions}, {"reservations", &p.Reservations},
		{"usage", &p.Usage}, {"users", &p.Users},
	}
}

// ParsePrivateData reads PrivateData's comma list: accounts, cloud,
// events, jobs, nodes, partitions, reservations, usage, users (singular
// or plural, any case), all, or none.
func ParsePrivateData(v string) (PrivateData, error) {
	var p PrivateData
	for _, item := range strings.Split(v, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		switch item {
		case "", "none":
			continue
		case "all":
			for _, w := range p.words() {
				*w.on = true
			}
			continue
		}
		found := false
		for _, w := range p.words() {
			if item == w.name || item+"s" == w.name {
				*w.on, found = true, true
			}
		}
		if !found {
			return PrivateData{}, fmt.Errorf("unknown PrivateData item %q (accounts, cloud, events, jobs, nodes, partitions, reservations, usage, users or all)", item)
		}
	}
	return p, nil
}

// String is the value as scontrol show config prints it: "none" or the
// items in Slurm's order.
func (p PrivateData) String() string {
	var out []string
	for _, w := range p.words() {
		if *w.on {
			out = append(out, w.name)
		}
	}
	return listOrNone(out)
}

// AccountingEnforce is slurm.conf's AccountingStorageEnforce. With
// Associations a job needs an association of its user (and of the
// account it asks for); with QOS its QoS must be one its association may
// use. limits, qos, safe and wckeys imply associations, as in Slurm.
// Limits, Safe, WCKeys, NoJobs and NoSteps are read and shown, not acted
// on: hpc enforces association and QoS limits whether or not limits is
// set, and records every job and step.
type AccountingEnforce struct {
	Associations bool `json:"associations,omitempty"`
	Limits       bool `json:"limits,omitempty"`
	NoJobs       bool `json:"nojobs,omitempty"`
	NoSteps      bool `json:"nosteps,omitempty"`
	QOS          bool `json:"qos,omitempty"`
	Safe         bool `json:"safe,omitempty"`
	WCKeys       bool `json:"wckeys,omitempty"`
}

// ParseAccountingEnforce reads AccountingStorageEnforce's comma list:
// associations, limits, nojobs, nosteps, qos, safe, wckeys, all (all but
// nojobs and nosteps), or none (also 0; 1 and 2 are Slurm's old
// associations and limits).
func ParseAccountingEnforce(v string) (AccountingEnforce, error) {
	var e AccountingEnforce
	for _, item := range strings.Split(v, ",") {
		switch strings.ToLower(strings.TrimSpace(item)) {
		case "", "none", "0":
		case "associations", "1":
			e.Associations = true
		case "limits", "2":
			e.Associations, e.Limits = true, true
		case "safe":
			e.Associations, e.Limits, e.Safe = true, true, true
		case "wckeys":
			e.Associations, e.WCKeys = true, true
		case "qos":
			e.Associations, e.QOS = true, true
		case "nojobs":
			e.NoJobs, e.NoSteps = true, true
		case "nosteps":
			e.NoSteps = true
		case "all":
			e.Associations, e.Limits, e.QOS, e.Safe, e.WCKeys = true, true, true, true, true
		default:
			return AccountingEnforce{}, fmt.Errorf("unknown AccountingStorageEnforce item %q (associations, limits, nojobs, nosteps, qos, safe, wckeys or all)", strings.TrimSpace(item))
		}
	}
	return e, nil
}

// String is the value as scontrol show config prints it: "none" or the
// items in Slurm's order.
func (e AccountingEnforce) String() string {
	var out []string
	for _, it := range []struct {
		name string
		on   bool
	}{
		{"associations", e.Associations}, {"limits", e.Limits}, {"nojobs", e.NoJobs},
		{"nosteps", e.NoSteps}, {"qos", e.QOS}, {"safe", e.Safe}, {"wckeys", e.WCKeys},
	} {
		if it.on {
			out = append(out, it.name)
		}
	}
	return listOrNone(out)
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ",")
}
