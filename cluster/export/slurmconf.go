package export

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"hpc/cluster/config"
)

// confWriter writes slurm.conf's top-level keys. A value hpc's slurm.conf
// gave for a key hpc keeps without interpreting it (Raw) wins over the
// exporter's own: what the admin wrote for Slurm stays.
type confWriter struct {
	b    strings.Builder
	raw  map[string][2]string // lowercased key -> key as written, value
	done map[string]bool      // lowercased keys written
}

func newConfWriter(raw map[string]string) *confWriter {
	w := &confWriter{raw: map[string][2]string{}, done: map[string]bool{}}
	for k, v := range raw {
		w.raw[strings.ToLower(k)] = [2]string{k, v}
	}
	return w
}

func (w *confWriter) line(s string) { w.b.WriteString(s + "\n") }

func (w *confWriter) comment(lines ...string) {
	for _, s := range lines {
		w.line("# " + s)
	}
}

// key writes Key=value, or the value hpc's slurm.conf gave the key; an
// empty value with none given writes nothing.
func (w *confWriter) key(k, v string) {
	lk := strings.ToLower(k)
	if w.done[lk] {
		return
	}
	if r, ok := w.raw[lk]; ok {
		v = r[1]
	}
	w.done[lk] = true
	if v != "" {
		w.line(k + "=" + v)
	}
}

// slurmConf is the exported slurm.conf.
func slurmConf(src Source, l layout) string {
	c := src.Config
	w := newConfWriter(c.Raw)
	w.b.WriteString(header(src, "slurm.conf"))
	w.comment("README beside this file says what to set up before slurmctld and slurmd start.")
	w.line("")
	w.key("ClusterName", c.ClusterName)
	controllerKeys(w, c, l)
	daemonKeys(w, c, l)
	schedulingKeys(w, c)
	priorityKeys(w, c)
	accountingKeys(w, c, l)
	rawKeys(w, c)
	w.line("")
	nodeLines(w, c, l)
	w.line("")
	w.comment("Partitions, as hpc runs them now (scontrol's changes included).")
	for i := range c.Partitions {
		w.line(c.Partitions[i].Line())
	}
	return w.b.String()
}

// controllerKeys writes SlurmctldHost: hpc's controllers, or this machine
// for a cluster on one machine.
func controllerKeys(w *confWriter, c *config.Config, l layout) {
	w.line("")
	if l.oneHost {
		names := make([]string, len(c.ControlHosts))
		for i, h := range c.ControlHosts {
			names[i] = h.Name
		}
		w.comment("Every host of the hpc cluster was on this machine (loopback addresses), so",
			"Slurm's runs here too: one slurmctld (hpc's controllers "+strings.Join(names, ", ")+" were",
			"Raft voters; Slurm has one primary), and one slurmd per node, each started",
			"as `slurmd -N NODE` and listening on its node's Port.")
		w.line("SlurmctldHost=" + l.host + "(127.0.0.1)")
		w.done["slurmctldhost"] = true
		return
	}
	w.comment("Controllers. hpc's are Raft voters and any of them may lead; Slurm's first",
		"SlurmctldHost is the primary and the others are backups, which can take over",
		"only when StateSaveLocation is on storage all of them mount (README).")
	for _, h := range c.ControlHosts {
		if h.Addr != "" && h.Addr != h.Name {
			w.line("SlurmctldHost=" + h.Name + "(" + h.Addr + ")")
		} else {
			w.line("SlurmctldHost=" + h.Name)
		}
	}
	w.done["slurmctldhost"] = true
}

// daemonKeys writes who the daemons run as, how they authenticate, where
// they keep state, and how steps are tracked and confined.
func daemonKeys(w *confWriter, c *config.Config, l layout) {
	user := c.SlurmUser
	if user == "" {
		user = "slurm" // Debian's slurmctld package makes this user
	}
	perNode := ""
	if l.oneHost {
		perNode = "-%n" // one slurmd per node on this machine: files of their own
	}
	w.line("")
	w.comment("Daemons: their user, munge for authentication (README), state and logs.")
	w.key("SlurmUser", user)
	w.key("AuthType", "auth/munge")
	w.key("CredType", "cred/munge")
	w.key("SlurmctldPort", "6817")
	w.key("SlurmdPort", "6818")
	w.key("StateSaveLocation", "/var/spool/slurmctld")
	if l.oneHost {
		w.key("SlurmdSpoolDir", "/var/spool/slurmd/%n")
	} else {
		w.key("SlurmdSpoolDir", "/var/spool/slurmd")
	}
	w.key("SlurmctldPidFile", "/run/slurmctld.pid")
	w.key("SlurmdPidFile", "/run/slurmd"+perNode+".pid")
	w.key("SlurmctldLogFile", "/var/log/slurm/slurmctld.log")
	w.key("SlurmdLogFile", "/var/log/slurm/slurmd"+perNode+".log")
	w.key("MpiDefault", "none")
	if l.oneHost {
		w.comment("The slurmd of this machine share its hardware: the node lines below are",
			"taken as they are, not checked against what each slurmd finds.")
		w.key("SlurmdParameters", "config_overrides")
	}
	w.line("")
	w.comment("Steps in cgroups, as hpc runs them; cgroup.conf holds the limits.")
	w.key("ProctrackType", "proctrack/cgroup")
	w.key("TaskPlugin", "task/cgroup,task/affinity")
	w.key("JobAcctGatherType", "jobacct_gather/cgroup")
}

// schedulingKeys writes allocation, scheduling and job-lifetime keys.
func schedulingKeys(w *confWriter, c *config.Config) {
	w.line("")
	w.comment("Allocation and scheduling: whole cores and memory, GRES as TRES, backfill.")
	w.key("SelectType", "select/cons_tres")
	w.key("SelectTypeParameters", "CR_Core_Memory")
	w.key("SchedulerType", "sched/backfill")
	w.key("SchedulerParameters", "")
	if c.DefMemPerCPU > 0 {
		w.key("DefMemPerCPU", strconv.FormatInt(c.DefMemPerCPU, 10))
	}
	w.key("KillWait", strconv.Itoa(c.KillWait))
	w.key("MinJobAge", strconv.Itoa(c.MinJobAge))
	w.key("JobRequeue", strconv.Itoa(c.JobRequeue))
	w.key("SlurmdTimeout", strconv.Itoa(c.SlurmdTimeout))
	w.key("ReturnToService", "2")
	w.key("MaxJobCount", strconv.Itoa(c.MaxJobCount))
	w.key("MaxArraySize", strconv.Itoa(c.MaxArraySize))
	w.key("EnforcePartLimits", c.EnforcePartLimits)
	w.key("Prolog", c.Prolog)
	w.key("Epilog", c.Epilog)
	if c.PrologEpilogTimeout != config.DefaultPrologEpilogTimeout {
		w.key("PrologEpilogTimeout", strconv.Itoa(c.PrologEpilogTimeout))
	}
	w.key("PropagateResourceLimits", strings.Join(c.PropagateResourceLimits, ","))
	w.key("PropagateResourceLimitsExcept", strings.Join(c.PropagateResourceLimitsExcept, ","))
	if c.PreemptType != "" && c.PreemptType != "preempt/none" {
		w.key("PreemptType", c.PreemptType)
		w.key("PreemptMode", c.PreemptMode)
	}
	if names := gresNames(c); len(names) > 0 {
		w.key("GresTypes", strings.Join(names, ","))
	}
	if len(c.Topology) > 0 {
		w.key("TopologyPlugin", "topology/tree")
	}
}

// priorityKeys writes PriorityType and, for priority/multifactor, its
// weights and periods.
func priorityKeys(w *confWriter, c *config.Config) {
	p := c.Priority
	w.line("")
	w.comment("Priority, as configured in hpc.")
	w.key("PriorityType", p.Type)
	if p.Type != "priority/multifactor" {
		return
	}
	for _, x := range []struct {
		key string
		v   uint32
	}{{"PriorityWeightAge", p.WeightAge}, {"PriorityWeightFairshare", p.WeightFairshare},
		{"PriorityWeightJobSize", p.WeightJobSize}, {"PriorityWeightPartition", p.WeightPartition},
		{"PriorityWeightQOS", p.WeightQOS}} {
		w.key(x.key, strconv.FormatUint(uint64(x.v), 10))
	}
	w.key("PriorityMaxAge", config.FormatTimeLong(p.MaxAgeMin))
	w.key("PriorityDecayHalfLife", config.FormatTimeLong(p.DecayHalfLifeMin))
	if p.CalcPeriodMin > 0 {
		w.key("PriorityCalcPeriod", strconv.FormatInt(p.CalcPeriodMin, 10))
	}
	if p.FavorSmall {
		w.key("PriorityFavorSmall", "YES")
	}
}

// accountingKeys writes slurmdbd accounting, its enforcement and
// PrivateData.
func accountingKeys(w *confWriter, c *config.Config, l layout) {
	dbd := "localhost"
	if !l.oneHost && len(c.ControlHosts) > 0 {
		dbd = c.ControlHosts[0].Name
	}
	w.line("")
	w.comment("Accounting: slurmdbd keeps what hpc's controllers kept (README), and",
		"sacctmgr.sh loads its QoS, accounts, users and associations.")
	w.key("AccountingStorageType", "accounting_storage/slurmdbd")
	w.key("AccountingStorageHost", dbd)
	w.key("AccountingStoragePort", "6819")
	if e := c.AccountingStorageEnforce.String(); e != "none" {
		w.key("AccountingStorageEnforce", e)
	}
	if slices.Contains(gresNames(c), "gpu") {
		w.key("AccountingStorageTRES", "gres/gpu")
	}
	if p := c.PrivateData.String(); p != "none" {
		w.key("PrivateData", p)
	}
}

// rawKeys writes the keys of hpc's slurm.conf not written yet: Slurm's as
// they are, hpc's own (Hpc*) and unknown ones as comments.
func rawKeys(w *confWriter, c *config.Config) {
	var slurm, dropped []string
	for _, lk := range sortedKeys(w.raw) {
		if w.done[lk] {
			continue
		}
		kv := w.raw[lk]
		switch {
		case strings.HasPrefix(lk, "hpc"):
			dropped = append(dropped, kv[0]+"="+kv[1]+"   (hpc's own key)")
		case slurmKeys()[lk]:
			slurm = append(slurm, kv[0]+"="+kv[1])
		default:
			dropped = append(dropped, kv[0]+"="+kv[1]+"   (not a Slurm 22.05 key)")
		}
	}
	for _, p := range []struct {
		key  string
		port int
	}{{"HpcApiPort", c.APIPort}, {"HpcRaftPort", c.RaftPort}, {"HpcGossipPort", c.GossipPort}} {
		dropped = append(dropped, fmt.Sprintf("%s=%d   (hpc's own key)", p.key, p.port))
	}
	if len(slurm) > 0 {
		w.line("")
		w.comment("Other keys of hpc's slurm.conf, as written there.")
		for _, s := range slurm {
			w.line(s)
		}
	}
	w.line("")
	w.comment("Left out: keys Slurm does not have.")
	for _, s := range dropped {
		w.comment("  " + s)
	}
}

// nodeLines writes a NodeName line per node.
func nodeLines(w *confWriter, c *config.Config, l layout) {
	w.comment("Nodes: hpc's sockets, cores, threads, memory (MB) and GRES.")
	for _, n := range c.Nodes {
		var b strings.Builder
		b.WriteString("NodeName=" + n.Name)
		switch {
		case l.oneHost:
			fmt.Fprintf(&b, " NodeHostname=%s NodeAddr=%s Port=%d", l.host, n.Addr, l.ports[n.Name])
		default:
			if n.Hostname != "" && n.Hostname != n.Name {
				b.WriteString(" NodeHostname=" + n.Hostname)
			}
			if n.Addr != "" && n.Addr != n.Hostname {
				b.WriteString(" NodeAddr=" + n.Addr)
			}
		}
		if n.CPUs != n.Sockets*n.CoresPerSocket*n.ThreadsPerCore {
			fmt.Fprintf(&b, " CPUs=%d", n.CPUs)
		}
		fmt.Fprintf(&b, " Sockets=%d CoresPerSocket=%d ThreadsPerCore=%d RealMemory=%d",
			n.Sockets, n.CoresPerSocket, n.ThreadsPerCore, n.RealMemoryMB)
		if len(n.Gres) > 0 {
			b.WriteString(" Gres=" + config.FormatGres(n.Gres))
		}
		if len(n.Features) > 0 {
			b.WriteString(" Features=" + strings.Join(n.Features, ","))
		}
		if n.Weight != 1 {
			fmt.Fprintf(&b, " Weight=%d", n.Weight)
		}
		b.WriteString(" State=UNKNOWN")
		w.line(b.String())
	}
}

// gresNames lists the GRES names the nodes have, sorted.
func gresNames(c *config.Config) []string {
	var names []string
	for _, n := range c.Nodes {
		for _, g := range n.Gres {
			if !slices.Contains(names, g.Name) {
				names = append(names, g.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
