package export

import (
	"fmt"
	"strings"
)

// readme is the README of an export: what each file is, and what the
// admin sets up by hand before the daemons start.
func readme(src Source, l layout) string {
	c := src.Config
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	from := src.From
	if from == "" {
		from = "an hpc cluster"
	}
	w("Slurm 22.05 configuration for cluster %q, exported by `hpc export slurm` from %s.", c.ClusterName, from)
	w("")
	w("Files")
	w("  slurm.conf     the cluster: controllers, daemons, scheduling, priority, nodes, partitions")
	if len(gresNames(c)) > 0 {
		w("  gres.conf      the nodes' generic resources (GPUs) and their device files")
	}
	if len(c.Topology) > 0 {
		w("  topology.conf  the switches (TopologyPlugin=topology/tree)")
	}
	w("  cgroup.conf    the limits of the jobs' cgroups (cores, memory without swap, devices)")
	w("  sacctmgr.sh    the QoS, accounts, users and associations, as sacctmgr -i commands")
	w("")
	w("Copy slurm.conf, gres.conf, topology.conf and cgroup.conf to /etc/slurm/ on every")
	w("host (the same files everywhere). hpc-only keys (Hpc*) are left out: the comments")
	w("at the end of slurm.conf's keys list them.")
	w("")
	w("What to add by hand")
	w("")
	w("1. Packages (Debian 12): slurmctld on the controller, slurmd on every node,")
	w("   slurm-client where people submit, munge everywhere, slurmdbd and mariadb-server")
	w("   on the accounting host.")
	w("2. munge: one key for the whole cluster, /etc/munge/munge.key (0400, munge:munge),")
	w("   the same on every host (e.g. made once with mungekey and copied); munged running")
	w("   everywhere before slurmctld and slurmd. hpc's cluster.key is hpc's own: do not")
	w("   reuse it.")
	w("3. SlurmUser (slurm.conf): the user slurmctld runs as, with the same uid on every")
	w("   host (Debian's package makes \"slurm\"). StateSaveLocation belongs to it; with")
	w("   more than one SlurmctldHost, the backups take over only if that directory is on")
	w("   storage all controllers mount. SlurmdSpoolDir, the log directory and the pid")
	w("   files are root's (slurmd runs as root).")
	w("4. slurmdbd: accounting goes to slurmdbd (AccountingStorageHost); give it")
	w("   /etc/slurm/slurmdbd.conf (0600, SlurmUser's) with StorageType=accounting_storage/mysql,")
	w("   StorageHost, StorageUser, StoragePass and StorageLoc of a MariaDB database it may")
	w("   use, start it, then run ./sacctmgr.sh once. hpc's job history (its SQLite")
	w("   accounting) is not carried over.")
	readmeAddresses(w, src, l)
	w("")
	w("Start order: munged, mariadb and slurmdbd, ./sacctmgr.sh, slurmctld, then slurmd.")
	w("Check with sinfo (every node idle) and srun -N2 hostname.")
	w("")
	w("Not carried over: hpc's storage areas (HpcHomeDir, HpcScratchDir, HpcProjectDir:")
	w("mount such file systems on every node), its CPU quota per step (Slurm confines")
	w("jobs to their cores), the jobs and their history, and hpc's dashboard (Slurm's")
	w("REST API is slurmrestd, a daemon of its own).")
	return b.String()
}

// readmeAddresses says how the hosts are addressed.
func readmeAddresses(w func(string, ...any), src Source, l layout) {
	if l.oneHost {
		w("5. Node addresses: every hpc host was on this machine, so the Slurm cluster is")
		w("   one machine too: slurmctld on %s (127.0.0.1), and for each node its own", l.host)
		w("   slurmd, started as `slurmd -N NODE` (Debian's slurmd is built for several per")
		w("   machine), on the node's Port (%d and up) and its loopback NodeAddr.", OneHostPortBase+1)
		w("   SlurmdParameters=config_overrides takes the node lines as they are, since all")
		w("   of them share this machine's hardware. On several machines, export a cluster")
		w("   whose nodes have their machines' addresses.")
		return
	}
	w("5. Node addresses: NodeAddr (or NodeHostname, else the node's name) must be how")
	w("   slurmctld reaches each node, and each node's host name (hostname -s) its")
	w("   NodeName or NodeHostname, so that its slurmd finds its own line. slurmctld")
	w("   listens on SlurmctldPort (6817), slurmd on SlurmdPort (6818), slurmdbd on 6819:")
	w("   open them between the hosts. Each node needs the users of the jobs (same uids).")
}
