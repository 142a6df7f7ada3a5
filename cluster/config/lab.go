package config

import (
	"fmt"
	"strings"

	"hpc/cluster/hostlist"
)

// MaxLabNodes is the largest lab Lab writes: one loopback address per node,
// 127.0.1.1 to 127.0.1.250.
const MaxLabNodes = 250

// MaxLabControllers is the most dedicated controllers a lab may have: Raft
// gains nothing from more than five voters but slower commits.
const MaxLabControllers = 5

// LabOptions shape the lab LabWith writes.
type LabOptions struct {
	Nodes int // compute nodes node1..nodeN on 127.0.1.1..
	// Controllers, when above 0, gives the lab that many dedicated
	// controllers ctl1..ctlN on the loopback addresses after the compute
	// nodes' (SlurmctldHost lines and no NodeName line: they never run
	// jobs). 0 is the default lab: the first three nodes are controllers
	// and compute nodes both.
	Controllers int
	// SubmitHosts, when above 0, gives the lab that many login nodes
	// login1..loginN on the addresses after the controllers' (HpcSubmitHost
	// lines: they run neither jobs nor a controller; users submit there).
	SubmitHosts int
	// Net is the first three parts of the lab's addresses, with the final
	// dot ("10.70.0."); "" is the loopback lab's "127.0.1.".
	Net string
}

// MaxLabSubmitHosts is the most login nodes a lab may have.
const MaxLabSubmitHosts = 5

// Lab returns the commented slurm.conf that `hpc up --nodes n` writes: a
// cluster "lab" of n nodes on one machine, each with its own loopback address
// (node<i> on 127.0.1.<i>), up to three controllers, fake GPUs on the upper
// half of the nodes, and the partitions debug (all nodes, default) and gpu.
// n must be between 1 and MaxLabNodes.
func Lab(n int) (string, error) { return LabWith(LabOptions{Nodes: n}) }

// LabWith is Lab with dedicated controllers when o.Controllers > 0.
func LabWith(o LabOptions) (string, error) {
	n := o.Nodes
	if n < 1 || n > MaxLabNodes {
		return "", fmt.Errorf("a lab cluster has 1 to %d nodes, not %d", MaxLabNodes, n)
	}
	if o.Controllers < 0 || o.Controllers > MaxLabControllers {
		return "", fmt.Errorf("a lab has 0 to %d dedicated controllers, not %d", MaxLabControllers, o.Controllers)
	}
	if o.SubmitHosts < 0 || o.SubmitHosts > MaxLabSubmitHosts {
		return "", fmt.Errorf("a lab has 0 to %d login nodes, not %d", MaxLabSubmitHosts, o.SubmitHosts)
	}
	net := o.Net
	if net == "" {
		net = "127.0.1."
	}
	// Addresses end at .254 here (.255 reads as a broadcast address to
	// some tools); the --netns lab gives .254 to this machine.
	last := 254
	if net != "127.0.1." {
		last = 253
	}
	if hosts := n + o.Controllers + o.SubmitHosts; hosts > last {
		return "", fmt.Errorf("%d nodes, %d controllers and %d login nodes need more than the %d addresses of %sx", n, o.Controllers, o.SubmitHosts, last, net)
	}
	names := make([]string, n)
	addrs := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("node%d", i+1)
		addrs[i] = fmt.Sprintf("%s%d", net, i+1)
	}
	gpuCount := (n + 1) / 2
	firstGPU := n - gpuCount // index of the first GPU node

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	flags := fmt.Sprintf("--nodes %d", n)
	if o.Controllers > 0 {
		flags += fmt.Sprintf(" --controllers %d", o.Controllers)
	}
	if o.Net != "" && o.Net != "127.0.1." {
		flags += " --netns"
	}
	w("# slurm.conf for the hpc lab cluster, written by `hpc up %s`.", flags)
	w("# hpc reads a subset of Slurm's slurm.conf syntax. Edit this file and restart")
	w("# the nodes to change the cluster; lines starting with # are comments.")
	w("")
	w("ClusterName=lab")
	w("")
	w("# Controllers. These nodes elect one leader among themselves (Raft), and the")
	w("# leader schedules jobs; if it dies another takes over. An odd number (1, 3")
	w("# or 5) survives the loss of a minority. Format: name(address).")
	if o.Controllers > 0 {
		w("# These hosts have no NodeName line: they run a controller only, never jobs.")
		for i := 1; i <= o.Controllers; i++ {
			w("SlurmctldHost=ctl%d(%s%d)", i, net, n+i)
		}
	} else {
		for i := 0; i < min(n, 3); i++ {
			w("SlurmctldHost=%s(%s)", names[i], addrs[i])
		}
	}
	if o.SubmitHosts > 0 {
		w("")
		w("# Login nodes (hpc's own key): users log in and submit here, as on a")
		w("# production cluster. They run neither jobs nor a controller: their daemon")
		w("# forwards the commands run there to the controllers. Format: name(address).")
		for i := 1; i <= o.SubmitHosts; i++ {
			w("HpcSubmitHost=login%d(%s%d)", i, net, n+o.Controllers+i)
		}
	}
	w("")
	w("# hpc's own ports on every node: the HTTP/JSON API, Raft traffic between")
	w("# controllers, and gossip (node membership). They differ from Slurm's")
	w("# 6817-6819 so a real Slurm can run on the same machine.")
	w("HpcApiPort=%d", DefaultAPIPort)
	w("HpcRaftPort=%d", DefaultRaftPort)
	w("HpcGossipPort=%d", DefaultGossipPort)
	w("")
	w("# Memory (MB) a job gets per allocated CPU when it does not ask with --mem.")
	w("DefMemPerCPU=1000")
	w("# Seconds between SIGTERM and SIGKILL when a job is cancelled or runs out of time.")
	w("KillWait=%d", DefaultKillWait)
	w("# Seconds a node may be out of touch before it is marked DOWN and its jobs end")
	w("# NODE_FAIL (Slurm's default is 300). A node daemon restarted within it keeps its jobs.")
	w("SlurmdTimeout=%d", LabSlurmdTimeout)
	w("# Reject at submission a job that its partition could never run.")
	w("EnforcePartLimits=%s", DefaultEnforcePartLimits)
	w("# Jobs run under an association of sacctmgr's: root has one from the start;")
	w("# another user needs one before submitting (as root: sacctmgr add account NAME,")
	w("# then sacctmgr add user USER account=NAME). A job's QoS must be one its")
	w("# association may use, and association and QoS limits apply.")
	w("AccountingStorageEnforce=associations,limits,qos")
	w("# Accounting is always on: the controllers keep the accounting database that")
	w("# sacct, sreport and sshare read (Slurm's slurmdbd plays this part there).")
	w("AccountingStorageType=accounting_storage/slurmdbd")
	w("# Pending jobs start in the order they were submitted (Slurm's default);")
	w("# priority/multifactor weighs age, fair share, size, partition and QoS.")
	w("PriorityType=priority/basic")
	w("# Generic resources (GRES) that nodes may declare.")
	w("GresTypes=gpu")
	w("")
	if net == "127.0.1." {
		w("# Compute nodes. Each has its own loopback address, so all of them can run")
		w("# on this one machine. NodeName=DEFAULT sets values for the lines below it;")
	} else {
		w("# Compute nodes. Each has its own address and network namespace (hpc up")
		w("# --netns), on one bridge. NodeName=DEFAULT sets values for the lines below it;")
	}
	w("# node[1-4] is a hostlist meaning node1, node2, node3, node4.")
	w("NodeName=DEFAULT Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000")
	if firstGPU > 0 {
		w("NodeName=%s NodeAddr=%s", hostlist.Compress(names[:firstGPU]), hostlist.Compress(addrs[:firstGPU]))
	}
	w("# These nodes have two fake GPUs each: jobs ask for them with --gres=gpu:N.")
	w("NodeName=%s NodeAddr=%s Gres=gpu:2", hostlist.Compress(names[firstGPU:]), hostlist.Compress(addrs[firstGPU:]))
	w("")
	w("# Partitions (queues). Jobs go to debug unless they ask with -p; gpu holds")
	w("# the GPU nodes. MaxTime is the longest time limit a job may ask for.")
	w("PartitionName=debug Nodes=%s Default=YES MaxTime=1-00:00:00 State=UP", hostlist.Compress(names))
	w("PartitionName=gpu Nodes=%s MaxTime=1-00:00:00 State=UP", hostlist.Compress(names[firstGPU:]))
	return b.String(), nil
}

// LabConfig is the parsed config of an n-node lab on this machine, as hpc
// up writes it.
func LabConfig(n int) (*Config, error) {
	text, err := Lab(n)
	if err != nil {
		return nil, err
	}
	return Parse(strings.NewReader(text))
}
