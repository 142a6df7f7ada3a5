package config

import (
	"strconv"
	"strings"
)

// Default values of the keys Config interprets.
const (
	DefaultClusterName       = "cluster"
	DefaultKillWait          = 30
	DefaultMinJobAge         = 300
	DefaultSlurmdTimeout     = 300
	LabSlurmdTimeout         = 10
	DefaultEnforcePartLimits = "ALL"
	DefaultAPIPort           = 7817
	DefaultRaftPort          = 7818
	DefaultGossipPort        = 7819
	// DefaultPrologEpilogTimeout is Slurm's PrologEpilogTimeout default
	// (65534 s: practically no limit).
	DefaultPrologEpilogTimeout = 65534
)

// MaxNodes is the largest number of nodes a configuration may define.
const MaxNodes = 65536

// Config is a parsed slurm.conf.
type Config struct {
	ClusterName string // ClusterName, lowercased as Slurm does; "cluster" if unset
	// ControlHosts are the SlurmctldHost lines in order: the nodes that may
	// act as controller, which are the Raft voters. At least one is required.
	ControlHosts []ControlHost
	// SubmitHosts are the HpcSubmitHost lines in order: login nodes, from
	// which users submit, that run neither jobs nor a controller (their
	// daemon forwards the commands run there to the controllers).
	SubmitHosts  []ControlHost
	DefMemPerCPU int64 // MB a job gets per CPU when it asks for no memory; 0 = unset
	KillWait     int   // seconds between SIGTERM and SIGKILL (default 30)
	// MinJobAge is how many seconds a finished job stays in the
	// controller's memory (squeue -j, scontrol show job) before only
	// accounting knows it (default 300, as Slurm).
	MinJobAge int
	// JobRequeue is slurm.conf's: 1 (the default) lets batch jobs be
	// requeued after a node failure unless they said --no-requeue; 0 only
	// those that said --requeue.
	JobRequeue int
	// SlurmdTimeout is how many seconds a node may be out of touch (gone
	// from gossip) before the controller marks it DOWN and its jobs end
	// NODE_FAIL (default 300, as Slurm; the lab's config says 10). A node
	// daemon restarted within it finds its jobs still running.
	SlurmdTimeout int
	// Prolog and Epilog are the absolute paths of the scripts each node
	// runs as root before a job starts there and after it ended there;
	// "" for none. PrologEpilogTimeout bounds each run, in seconds
	// (default 65534, as Slurm).
	Prolog              string
	Epilog              string
	PrologEpilogTimeout int
	Priority            Priority
	// PreemptType is preempt/none (default) or preempt/qos; PreemptMode
	// OFF (default), REQUEUE or CANCEL.
	PreemptType string
	PreemptMode string
	// SchedulerParameters as given (bf_max_job_test=N, bf_window=MIN, ...).
	SchedulerParameters map[string]string
	// MaxJobCount is the most jobs the controller holds (default 10000);
	// MaxArraySize bounds array task ids to 0..MaxArraySize-1 (default
	// 1001). See limits.go.
	MaxJobCount  int
	MaxArraySize int
	// GresDevices and Topology come from gres.conf and topology.conf next
	// to slurm.conf (LoadAll); empty when those files are absent.
	GresDevices       []GresDevice
	Topology          []Switch
	EnforcePartLimits string // ALL (default), ANY or NO
	APIPort           int    // HpcApiPort, default 7817
	RaftPort          int    // HpcRaftPort, default 7818
	GossipPort        int    // HpcGossipPort, default 7819
	Nodes             []Node
	Partitions        []Partition
	// Raw holds every other key, spelled as written in the file, with its
	// last value. hpc does not interpret these.
	Raw map[string]string
	// PropagateResourceLimits and PropagateResourceLimitsExcept are the
	// limit names of those keys (propagate.go); nil when not given.
	PropagateResourceLimits, PropagateResourceLimitsExcept []string

	// PrivateData and AccountingStorageEnforce (access.go); none by
	// default, as in Slurm.
	PrivateData              PrivateData
	AccountingStorageEnforce AccountingEnforce
	// SlurmUser is the user the daemons run as (Slurm's SlurmUser): like
	// root, an sacctmgr Administrator with an association under the root
	// account from the cluster's start. Unset, a daemon not run as root
	// takes its own user (a lab started by a normal user), and root's is
	// root.
	SlurmUser string

	// Text is the slurm.conf text Parse read (not served: scontrol write
	// config and reconfigure use it).
	Text string `json:"-"`

	nodeIndex map[string]int // name -> index in Nodes, built by Parse
}

// ControlHost is one SlurmctldHost line: SlurmctldHost=node1(127.0.1.1).
// Without the parenthesised address, Addr is the NodeAddr of the node of that
// name, or the name itself when no node has it. An HpcSubmitHost line has
// the same form.
type ControlHost struct {
	Name string
	Addr string
}

// Node is one compute node (a NodeName line may define several).
type Node struct {
	Name           string
	Addr           string // NodeAddr; defaults to Hostname
	Hostname       string // NodeHostname; defaults to Name
	CPUs           int    // defaults to Sockets*CoresPerSocket*ThreadsPerCore
	Sockets        int    // default 1
	CoresPerSocket int    // default 1
	ThreadsPerCore int    // default 1
	RealMemoryMB   int64  // RealMemory, default 1 as in Slurm
	Gres           []Gres
	Features       []string
	Weight         int // default 1
}

// Gres is one generic resource of a node: gpu:2 or gpu:tesla:2.
type Gres struct {
	Name  string
	Type  string // "" when untyped
	Count int
}

// String prints the Gres as slurm.conf and scontrol do: "gpu:2", "gpu:tesla:2".
func (g Gres) String() string {
	s := g.Name
	if g.Type != "" {
		s += ":" + g.Type
	}
	return s + ":" + strconv.Itoa(g.Count)
}

// FormatGres prints a node's generic resources comma separated ("gpu:2"),
// "" for none (scontrol prints that as "(null)").
func FormatGres(gres []Gres) string {
	parts := make([]string, len(gres))
	for i, g := range gres {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// GresCount is how many of the named resource the node has, over all types.
func (n *Node) GresCount(name string) int {
	total := 0
	for _, g := range n.Gres {
		if g.Name == name {
			total += g.Count
		}
	}
	return total
}

// Partition is one PartitionName line.
type Partition struct {
	Name           string
	Nodes          []string // expanded node names; Nodes=ALL lists every node
	Default        bool     // Default=YES; if no partition says so, the first one is the default
	MaxTimeMin     int64    // MaxTime in minutes, Unlimited (-1) by default
	DefaultTimeMin int64    // DefaultTime in minutes, -1 (NONE) by default: jobs get MaxTime
	MaxNodes       int      // -1 = UNLIMITED (default)
	State          string   // UP (default), DOWN, DRAIN or INACTIVE
	// PriorityTier: jobs of higher-tier partitions are scheduled first
	// (default 1). PriorityJobFactor feeds the partition priority factor
	// (default 1).
	PriorityTier      int
	PriorityJobFactor int
	// OverSubscribe is NO (default) or EXCLUSIVE (whole nodes per job).
	OverSubscribe string
	// AllowAccounts and AllowQos restrict who may use the partition; nil
	// means ALL.
	AllowAccounts []string
	AllowQos      []string
}

// Priority holds the multifactor priority settings (PriorityType=
// priority/multifactor and its PriorityWeight* keys). All weights 0 is
// priority/basic: submit order.
type Priority struct {
	Type             string // priority/basic (default) or priority/multifactor
	WeightAge        uint32
	WeightFairshare  uint32
	WeightJobSize    uint32
	WeightPartition  uint32
	WeightQOS        uint32
	MaxAgeMin        int64 // PriorityMaxAge in minutes (default 7 days)
	DecayHalfLifeMin int64 // PriorityDecayHalfLife in minutes (default 7 days)
	FavorSmall       bool
	// CalcPeriodMin is PriorityCalcPeriod in minutes: priorities are
	// computed as of the start of each such period (Slurm recalculates
	// them that often; its default is 5). 0 (hpc's default): continuously.
	CalcPeriodMin int64
}

// Node returns the node of that name, or nil.
func (c *Config) Node(name string) *Node {
	if i, ok := c.nodeIndex[name]; ok && i < len(c.Nodes) && c.Nodes[i].Name == name {
		return &c.Nodes[i]
	}
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			return &c.Nodes[i]
		}
	}
	return nil
}

// Partition returns the partition of that name, or nil.
func (c *Config) Partition(name string) *Partition {
	for i := range c.Partitions {
		if c.Partitions[i].Name == name {
			return &c.Partitions[i]
		}
	}
	return nil
}

// DefaultPartition returns the partition jobs go to without -p: the one with
// Default=YES, else the first; nil when there are no partitions.
func (c *Config) DefaultPartition() *Partition {
	for i := range c.Partitions {
		if c.Partitions[i].Default {
			return &c.Partitions[i]
		}
	}
	if len(c.Partitions) > 0 {
		return &c.Partitions[0]
	}
	return nil
}

// PartitionsOf lists the partitions that contain the node, in config order.
func (c *Config) PartitionsOf(node string) []string {
	var out []string
	for _, p := range c.Partitions {
		for _, n := range p.Nodes {
			if n == node {
				out = append(out, p.Name)
				break
			}
		}
	}
	return out
}

// IsController reports whether name appears on a SlurmctldHost line.
func (c *Config) IsController(name string) bool {
	for _, h := range c.ControlHosts {
		if h.Name == name {
			return true
		}
	}
	return false
}

// ControllerOnly reports whether name is on a SlurmctldHost line but on no
// NodeName line: a host that runs a controller and never jobs (Slurm's
// dedicated slurmctld host).
func (c *Config) ControllerOnly(name string) bool {
	return c.IsController(name) && c.Node(name) == nil
}

// IsSubmitHost reports whether name is on an HpcSubmitHost line: a login
// node that runs neither jobs nor a controller.
func (c *Config) IsSubmitHost(name string) bool {
	for _, h := range c.SubmitHosts {
		if h.Name == name {
			return true
		}
	}
	return false
}

// HostAddr is the address of a host of the cluster: a node's NodeAddr, a
// controller-only host's SlurmctldHost address or a submit host's. ok is
// false for a name the config does not know.
func (c *Config) HostAddr(name string) (addr string, ok bool) {
	if n := c.Node(name); n != nil {
		return n.Addr, true
	}
	for _, hosts := range [][]ControlHost{c.ControlHosts, c.SubmitHosts} {
		for _, h := range hosts {
			if h.Name == name {
				return h.Addr, true
			}
		}
	}
	return "", false
}
