package commands

import (
	"fmt"
	"strings"
)

// -M/--clusters and the notices of options that mean nothing in hpc.
//
// hpc runs one cluster: its ClusterName (slurm.conf) is the one cluster
// slurmdbd would know. The commands that talk to a controller (squeue,
// sinfo, scancel, scontrol, sprio, sshare, sdiag, sreport) resolve -M as
// slurmdb_get_info_cluster does: "all" is every cluster (this one); a name
// the database does not know gets "No cluster 'x' known by database.",
// and when none is left, print_db_notok's message and exit status 1.

// clusterName asks the cluster for its ClusterName.
func clusterName(e *Env) (string, error) {
	cl, ctx, cancel, err := connect(e)
	if err != nil {
		return "", err
	}
	defer cancel()
	var cfg struct{ ClusterName string }
	if err := cl.Config(ctx, &cfg); err != nil {
		return "", err
	}
	return cfg.ClusterName, nil
}

// resolveClusters answers -M/--clusters val: the name of this cluster
// when val names it (or is "all"), after Slurm's messages for the names
// it does not know; ok is false (the messages printed) when none is left.
func resolveClusters(e *Env, prog, val string) (name string, ok bool) {
	own, err := clusterName(e)
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "There is a problem talking to the database: %s.  Only local cluster communication is available, remove --cluster from your command line or contact your admin to resolve the problem.", msg)
		return "", false
	}
	if strings.EqualFold(strings.TrimSpace(val), "all") {
		return own, true
	}
	found := false
	for _, n := range splitList(val) {
		if n == own {
			found = true
			continue
		}
		e.errorf(prog, "No cluster '%s' known by database.", n)
	}
	if !found {
		e.errorf(prog, "'%s' can't be reached now, or it is an invalid entry for --cluster.  Use 'sacctmgr list clusters' to see available clusters.", val)
		return "", false
	}
	return own, true
}

// clustersOption is resolveClusters as an option handler's answer: nil,
// or quit{1} after the messages.
func clustersOption(e *Env, prog, val string) error {
	if _, ok := resolveClusters(e, prog, val); !ok {
		return quit{1}
	}
	return nil
}

// notices collects what a command says under -v about options it takes
// without acting on them (they mean nothing in hpc): -v may come after
// them, so they are printed once the options are read.
type notices struct {
	verbose int
	lines   []string
}

// add records a notice about an option.
func (n *notices) add(format string, args ...any) {
	n.lines = append(n.lines, fmt.Sprintf(format, args...))
}

// flush prints the notices on stderr, "<prog>: <notice>", when -v was
// given.
func (n *notices) flush(e *Env, prog string) {
	if n.verbose == 0 {
		return
	}
	for _, l := range n.lines {
		fmt.Fprintf(e.Stderr, "%s: %s\n", prog, l)
	}
}

// scontrolUID is scontrol -u/--uid: Slurm lets root act as another user.
// hpc's daemons take the caller's identity from the socket's peer
// credentials, never from the request, so scontrol acts as its caller:
// -u naming the caller is taken, another uid refused with the reason.
func scontrolUID(e *Env, prog, val string) error {
	uid, ok := lookupUID(val)
	if !ok {
		e.errorf(prog, "--uid=\"%s\" invalid", val)
		return quit{1}
	}
	if int(uid) != e.UID {
		e.errorf(prog, "--uid=%s: hpc's controller knows callers by their socket's peer credentials and acts for uid %d only; run scontrol as uid %d instead", val, e.UID, uid)
		return quit{1}
	}
	return nil
}
