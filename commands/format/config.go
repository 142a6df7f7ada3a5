package format

import (
	"hpc/cluster/openapi"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ConfigItem is one "Key = value" line of scontrol show config.
type ConfigItem struct{ Key, Value string }

// ConfigSection is one of the titled blocks scontrol show config prints
// after the main list ("Cgroup Support Configuration:").
type ConfigSection struct {
	Title string
	Items []ConfigItem
}

// configKey is one key of scontrol show config's main list, in the order
// Slurm 22.05 prints them: its default when nothing sets it, the unit
// printed after a plain number, and how it is printed.
type configKey struct {
	key, def, unit string
	// optional keys are printed only when a value is given (Slurm prints
	// them only in some configurations: multifactor priority's keys, ...).
	optional bool
	// alt is the key printed instead, with its value, when that one is
	// given (DefMemPerCPU for DefMemPerNode).
	alt string
	// indexed keys are printed once per value given as key[0], key[1], ...
	indexed bool
}

// slurmConfigKeys is scontrol show config's main list with Slurm 22.05's
// defaults.
var slurmConfigKeys = []configKey{
	{key: "AccountingStorageBackupHost", def: "(null)"},
	{key: "AccountingStorageEnforce", def: "none"},
	{key: "AccountingStorageHost", def: "localhost"},
	{key: "AccountingStorageExternalHost", def: "(null)"},
	{key: "AccountingStorageParameters", def: "(null)"},
	{key: "AccountingStoragePort", def: "0"},
	{key: "AccountingStorageTRES", def: "cpu,mem,energy,node,billing,fs/disk,vmem,pages"},
	{key: "AccountingStorageType", def: "accounting_storage/none"},
	{key: "AccountingStorageUser", def: "root"},
	{key: "AccountingStoreFlags", def: "(null)"},
	{key: "AcctGatherEnergyType", def: "acct_gather_energy/none"},
	{key: "AcctGatherFilesystemType", def: "acct_gather_filesystem/none"},
	{key: "AcctGatherInterconnectType", def: "acct_gather_interconnect/none"},
	{key: "AcctGatherNodeFreq", def: "0", unit: "sec"},
	{key: "AcctGatherProfileType", def: "acct_gather_profile/none"},
	{key: "AllowSpecResourcesUsage", def: "No"},
	{key: "AuthAltTypes", def: "(null)"},
	{key: "AuthAltParameters", def: "(null)"},
	{key: "AuthInfo", def: "(null)"},
	{key: "AuthType", def: "auth/munge"},
	{key: "BatchStartTimeout", def: "10", unit: "sec"},
	{key: "BcastExclude", def: "/lib,/usr/lib,/lib64,/usr/lib64"},
	{key: "BcastParameters", def: "(null)"},
	{key: "BOOT_TIME", def: "Unknown"},
	{key: "BurstBufferType", def: "(null)"},
	{key: "CliFilterPlugins", def: "(null)"},
	{key: "ClusterName", def: "(null)"},
	{key: "CommunicationParameters", def: "(null)"},
	{key: "CompleteWait", def: "0", unit: "sec"},
	{key: "CoreSpecPlugin", def: "core_spec/none"},
	{key: "CpuFreqDef", def: "Unknown"},
	{key: "CpuFreqGovernors", def: "OnDemand,Performance,UserSpace"},
	{key: "CredType", def: "cred/munge"},
	{key: "DebugFlags", def: "(null)"},
	{key: "DefMemPerNode", def: "UNLIMITED", alt: "DefMemPerCPU"},
	{key: "DependencyParameters", def: "(null)"},
	{key: "DisableRootJobs", def: "No"},
	{key: "EioTimeout", def: "60"},
	{key: "EnforcePartLimits", def: "NO"},
	{key: "Epilog", def: "(null)"},
	{key: "EpilogMsgTime", def: "2000", unit: "usec"},
	{key: "EpilogSlurmctld", def: "(null)"},
	{key: "ExtSensorsType", def: "ext_sensors/none"},
	{key: "ExtSensorsFreq", def: "0", unit: "sec"},
	{key: "FairShareDampeningFactor", optional: true},
	{key: "FederationParameters", def: "(null)"},
	{key: "FirstJobId", def: "1"},
	{key: "GetEnvTimeout", def: "2", unit: "sec"},
	{key: "GresTypes", def: "(null)"},
	{key: "GpuFreqDef", def: "high,memory=high"},
	{key: "GroupUpdateForce", def: "1"},
	{key: "GroupUpdateTime", def: "600", unit: "sec"},
	{key: "HASH_VAL", def: "Match"},
	{key: "HealthCheckInterval", def: "0", unit: "sec"},
	{key: "HealthCheckNodeState", def: "ANY"},
	{key: "HealthCheckProgram", def: "(null)"},
	{key: "InactiveLimit", def: "0", unit: "sec"},
	{key: "InteractiveStepOptions", def: "--interactive --preserve-env --pty $SHELL"},
	{key: "JobAcctGatherFrequency", def: "30"},
	{key: "JobAcctGatherType", def: "jobacct_gather/none"},
	{key: "JobAcctGatherParams", def: "(null)"},
	{key: "JobCompHost", def: "localhost"},
	{key: "JobCompLoc", def: "/var/log/slurm_jobcomp.log"},
	{key: "JobCompPort", def: "0"},
	{key: "JobCompType", def: "jobcomp/none"},
	{key: "JobCompUser", def: "root"},
	{key: "JobContainerType", def: "job_container/none"},
	{key: "JobCredentialPrivateKey", def: "(null)"},
	{key: "JobCredentialPublicCertificate", def: "(null)"},
	{key: "JobDefaults", def: "(null)"},
	{key: "JobFileAppend", def: "0"},
	{key: "JobRequeue", def: "1"},
	{key: "JobSubmitPlugins", def: "(null)"},
	{key: "KillOnBadExit", def: "0"},
	{key: "KillWait", def: "30", unit: "sec"},
	{key: "LaunchParameters", def: "(null)"},
	{key: "LaunchType", def: "launch/slurm"},
	{key: "Licenses", def: "(null)"},
	{key: "LogTimeFormat", def: "iso8601_ms"},
	{key: "MailDomain", def: "(null)"},
	{key: "MailProg", def: "/bin/mail"},
	{key: "MaxArraySize", def: "1001"},
	{key: "MaxDBDMsgs", def: "10000"},
	{key: "MaxJobCount", def: "10000"},
	{key: "MaxJobId", def: "67043328"},
	{key: "MaxMemPerNode", def: "UNLIMITED", alt: "MaxMemPerCPU"},
	{key: "MaxNodeCount", def: "0"},
	{key: "MaxStepCount", def: "40000"},
	{key: "MaxTasksPerNode", def: "512"},
	{key: "MCSPlugin", def: "mcs/none"},
	{key: "MCSParameters", def: "(null)"},
	{key: "MessageTimeout", def: "10", unit: "sec"},
	{key: "MinJobAge", def: "300", unit: "sec"},
	{key: "MpiDefault", def: "none"},
	{key: "MpiParams", def: "(null)"},
	{key: "MULTIPLE_SLURMD", def: "Yes"},
	{key: "NEXT_JOB_ID", def: "1"},
	{key: "NodeFeaturesPlugins", def: "(null)"},
	{key: "OverTimeLimit", def: "0", unit: "min"},
	{key: "PluginDir", def: "/usr/local/lib/slurm"},
	{key: "PlugStackConfig", def: "(null)"},
	{key: "PowerParameters", def: "(null)"},
	{key: "PowerPlugin", def: ""},
	{key: "PreemptMode", def: "OFF"},
	{key: "PreemptType", def: "preempt/none"},
	{key: "PreemptExemptTime", def: "00:00:00"},
	{key: "PrEpParameters", def: "(null)"},
	{key: "PrEpPlugins", def: "prep/script"},
	{key: "PriorityParameters", def: "(null)"},
	{key: "PrioritySiteFactorParameters", def: "(null)"},
	{key: "PrioritySiteFactorPlugin", def: "(null)"},
	{key: "PriorityDecayHalfLife", optional: true},
	{key: "PriorityCalcPeriod", optional: true},
	{key: "PriorityFavorSmall", optional: true},
	{key: "PriorityFlags", optional: true},
	{key: "PriorityMaxAge", optional: true},
	{key: "PriorityUsageResetPeriod", optional: true},
	{key: "PriorityType", def: "priority/basic"},
	{key: "PriorityWeightAge", optional: true},
	{key: "PriorityWeightAssoc", optional: true},
	{key: "PriorityWeightFairShare", optional: true},
	{key: "PriorityWeightJobSize", optional: true},
	{key: "PriorityWeightPartition", optional: true},
	{key: "PriorityWeightQOS", optional: true},
	{key: "PriorityWeightTRES", optional: true},
	{key: "PrivateData", def: "none"},
	{key: "ProctrackType", def: "proctrack/cgroup"},
	{key: "Prolog", def: "(null)"},
	{key: "PrologEpilogTimeout", def: "65534"},
	{key: "PrologSlurmctld", def: "(null)"},
	{key: "PrologFlags", def: "(null)"},
	{key: "PropagatePrioProcess", def: "0"},
	{key: "PropagateResourceLimits", def: "ALL"},
	{key: "PropagateResourceLimitsExcept", def: "(null)"},
	{key: "RebootProgram", def: "(null)"},
	{key: "ReconfigFlags", def: "(null)"},
	{key: "RequeueExit", def: "(null)"},
	{key: "RequeueExitHold", def: "(null)"},
	{key: "ResumeFailProgram", def: "(null)"},
	{key: "ResumeProgram", def: "(null)"},
	{key: "ResumeRate", def: "300", unit: "nodes/min"},
	{key: "ResumeTimeout", def: "60", unit: "sec"},
	{key: "ResvEpilog", def: "(null)"},
	{key: "ResvOverRun", def: "0", unit: "min"},
	{key: "ResvProlog", def: "(null)"},
	{key: "ReturnToService", def: "0"},
	{key: "RoutePlugin", def: "route/default"},
	{key: "SchedulerParameters", def: "(null)"},
	{key: "SchedulerTimeSlice", def: "30", unit: "sec"},
	{key: "SchedulerType", def: "sched/backfill"},
	{key: "ScronParameters", def: "(null)"},
	{key: "SelectType", def: "select/linear"},
	{key: "SelectTypeParameters", optional: true},
	{key: "SlurmUser", def: "root(0)"},
	{key: "SlurmctldAddr", def: "(null)"},
	{key: "SlurmctldDebug", def: "info"},
	{key: "SlurmctldHost", indexed: true},
	{key: "SlurmctldLogFile", def: "(null)"},
	{key: "SlurmctldPort", def: "6817"},
	{key: "SlurmctldSyslogDebug", def: "(null)"},
	{key: "SlurmctldPrimaryOffProg", def: "(null)"},
	{key: "SlurmctldPrimaryOnProg", def: "(null)"},
	{key: "SlurmctldTimeout", def: "120", unit: "sec"},
	{key: "SlurmctldParameters", def: "(null)"},
	{key: "SlurmdDebug", def: "info"},
	{key: "SlurmdLogFile", def: "(null)"},
	{key: "SlurmdParameters", def: "(null)"},
	{key: "SlurmdPidFile", def: "/var/run/slurmd.pid"},
	{key: "SlurmdPort", def: "6818"},
	{key: "SlurmdSpoolDir", def: "/var/spool/slurmd"},
	{key: "SlurmdSyslogDebug", def: "(null)"},
	{key: "SlurmdTimeout", def: "300", unit: "sec"},
	{key: "SlurmdUser", def: "root(0)"},
	{key: "SlurmSchedLogFile", def: "(null)"},
	{key: "SlurmSchedLogLevel", def: "0"},
	{key: "SlurmctldPidFile", def: "/var/run/slurmctld.pid"},
	{key: "SlurmctldPlugstack", def: "(null)"},
	{key: "SLURM_CONF", def: "/etc/slurm/slurm.conf"},
	{key: "SLURM_VERSION", def: openapi.SlurmVersion},
	{key: "SrunEpilog", def: "(null)"},
	{key: "SrunPortRange", def: "0-0"},
	{key: "SrunProlog", def: "(null)"},
	{key: "StateSaveLocation", def: "/var/spool"},
	{key: "SuspendExcNodes", def: "(null)"},
	{key: "SuspendExcParts", def: "(null)"},
	{key: "SuspendProgram", def: "(null)"},
	{key: "SuspendRate", def: "60", unit: "nodes/min"},
	{key: "SuspendTime", def: "INFINITE", unit: "sec"},
	{key: "SuspendTimeout", def: "30", unit: "sec"},
	{key: "SwitchParameters", def: "(null)"},
	{key: "SwitchType", def: "switch/none"},
	{key: "TaskEpilog", def: "(null)"},
	{key: "TaskPlugin", def: "task/none"},
	{key: "TaskPluginParam", def: "(null type)"},
	{key: "TaskProlog", def: "(null)"},
	{key: "TCPTimeout", def: "2", unit: "sec"},
	{key: "TmpFS", def: "/tmp"},
	{key: "TopologyParam", def: "(null)"},
	{key: "TopologyPlugin", def: "topology/none"},
	{key: "TrackWCKey", def: "No"},
	{key: "TreeWidth", def: "50"},
	{key: "UsePam", def: "No"},
	{key: "UnkillableStepProgram", def: "(null)"},
	{key: "UnkillableStepTimeout", def: "60", unit: "sec"},
	{key: "VSizeFactor", def: "0", unit: "percent"},
	{key: "WaitTime", def: "0", unit: "sec"},
	{key: "X11Parameters", def: "(null)"},
}

// slurmConfigNames maps each key of the main list, lowercased, to its
// spelling; slurm.conf may spell keys in any case.
var slurmConfigNames = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, k := range slurmConfigKeys {
		m[strings.ToLower(k.key)] = k.key
		if k.alt != "" {
			m[strings.ToLower(k.alt)] = k.alt
		}
	}
	return m
})

// SlurmConfigKey is key as scontrol show config spells it, and whether it
// is one of the main list's keys.
func SlurmConfigKey(key string) (string, bool) {
	k, ok := slurmConfigNames()[strings.ToLower(key)]
	return k, ok
}

// ConfigItems is scontrol show config's main list: every key in Slurm's
// order, with the value vals gives it (keys spelled as SlurmConfigKey
// spells them) or Slurm's default. A plain number gets the key's unit
// ("30" → "30 sec"). An indexed key takes vals["Key[0]"], vals["Key[1]"]...
func ConfigItems(vals map[string]string) []ConfigItem {
	var items []ConfigItem
	for _, k := range slurmConfigKeys {
		switch {
		case k.indexed:
			for i := 0; ; i++ {
				name := k.key + "[" + strconv.Itoa(i) + "]"
				v, ok := vals[name]
				if !ok {
					break
				}
				items = append(items, ConfigItem{name, v})
			}
			continue
		case k.alt != "" && vals[k.alt] != "":
			items = append(items, ConfigItem{k.alt, vals[k.alt]})
			continue
		}
		v, ok := vals[k.key]
		if !ok || v == "" {
			if k.optional {
				continue
			}
			v = k.def
		}
		if k.unit != "" && v != "" && strings.Trim(v, "0123456789") == "" {
			v += " " + k.unit
		}
		items = append(items, ConfigItem{k.key, v})
	}
	return items
}

// CgroupConfig is the "Cgroup Support Configuration" section as hpc's
// cgroups are set up: cores and memory confined, no swap beyond memory.
func CgroupConfig() ConfigSection {
	return ConfigSection{Title: "Cgroup Support Configuration", Items: []ConfigItem{
		{"AllowedKmemSpace", "(null)"}, {"AllowedRAMSpace", "100.0%"}, {"AllowedSwapSpace", "0.0%"},
		{"CgroupAutomount", "no"}, {"CgroupMountpoint", "/sys/fs/cgroup"}, {"CgroupPlugin", "autodetect"},
		{"ConstrainCores", "yes"}, {"ConstrainDevices", "no"}, {"ConstrainKmemSpace", "no"},
		{"ConstrainRAMSpace", "yes"}, {"ConstrainSwapSpace", "yes"}, {"IgnoreSystemd", "no"},
		{"IgnoreSystemdOnFailure", "no"}, {"MaxKmemPercent", "100.0%"}, {"MaxRAMPercent", "100.0%"},
		{"MaxSwapPercent", "100.0%"}, {"MemorySwappiness", "(null)"}, {"MinKmemSpace", "30 MB"},
		{"MinRAMSpace", "30 MB"},
	}}
}

// ShowConfig renders scontrol show config: the date line, one "Key = value"
// line per item (keys padded to 23 characters, as Slurm pads them), each
// section after a blank line and its title, and a blank line; the caller
// appends the controllers' status (PingLines).
func ShowConfig(items []ConfigItem, now time.Time, sections ...ConfigSection) string {
	var b strings.Builder
	b.WriteString("Configuration data as of " + ISOTime(now) + "\n")
	writeItems := func(items []ConfigItem) {
		for _, it := range items {
			b.WriteString(padRight(it.Key, 23) + " = " + it.Value + "\n")
		}
	}
	writeItems(items)
	for _, s := range sections {
		if len(s.Items) == 0 {
			continue
		}
		b.WriteString("\n" + s.Title + ":\n")
		writeItems(s.Items)
	}
	b.WriteString("\n")
	return b.String()
}

func padRight(s string, w int) string {
	if len(s) >= w {
		return s
	}
	return s + strings.Repeat(" ", w-len(s))
}

// ConfigMinutes is a duration in minutes as scontrol show config prints
// one: "7-00:00:00", "00:05:00".
func ConfigMinutes(min int64) string { return mins2time(min) }
