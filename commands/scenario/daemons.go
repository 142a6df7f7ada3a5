package scenario

import (
	"context"
	"fmt"
	"slices"
	"time"

	"hpc/cluster/api"
)

// Lab is a scenario's hand on the lab's node daemons, for the scenarios
// that kill one (node-failure, failover): the daemons `hpc up` started,
// found by their pid files in the lab's directory. The command that runs
// the scenarios provides it; without it those scenarios SKIP.
type Lab interface {
	// Dir is the lab's directory (hpc up --dir).
	Dir() string
	// Unreachable says why the scenario cannot stop and start the node's
	// daemon (no pid file, another user's process); "" when it can.
	Unreachable(node string) string
	// Kill stops the node's daemon with SIGKILL, as a crash would, and
	// waits until it is gone. Its jobs' processes are left running, as a
	// daemon that dies leaves them.
	Kill(node string) error
	// Up starts the daemons of the lab that are not running (hpc up
	// --dir) and waits until they have joined.
	Up(ctx context.Context) error
	// Client is an API client on the node's own socket.
	Client(node string) *api.Client
}

// needLab skips the scenario when the lab's daemons cannot be stopped and
// started from here, saying why.
func (r *Run) needLab(nodes ...string) Lab {
	if r.o.Lab == nil {
		r.skip("cannot reach the lab's directory to stop and start a node's daemon (run it on the machine of `hpc up`, with HPC_DIR set to the lab's directory)")
	}
	for _, n := range nodes {
		if why := r.o.Lab.Unreachable(n); why != "" {
			r.skip("cannot stop and start %s's daemon: %s", n, why)
		}
	}
	return r.o.Lab
}

// killNode kills the node's daemon with SIGKILL, showing the command, and
// records that `hpc up` must bring it back, whatever the outcome.
func (r *Run) killNode(lab Lab, node string) time.Time {
	r.onUndo("hpc up --dir "+lab.Dir()+" (bring "+node+" back)", func(ctx context.Context) error {
		return lab.Up(ctx)
	})
	r.typeCmd(fmt.Sprintf("kill -9 $(cat %s/%s/hpc.pid)", lab.Dir(), node))
	err := lab.Kill(node)
	r.check(err, "kill "+node+"'s daemon")
	return time.Now()
}

// leader is the controller the lab's leader is, as the scenario's node
// sees it ("" during an election).
func (r *Run) leader() string {
	st, err := r.cl.Status(r.ctx)
	if err != nil {
		return ""
	}
	return st.Leader
}

// useNode makes the scenario talk to the lab through node's socket (the
// node it would use may be the one it kills).
func (r *Run) useNode(lab Lab, node string) {
	r.cl = lab.Client(node)
}

// patientJobs reads the jobs' records, tolerating the errors of a lab
// that is electing a leader (nil then).
func (r *Run) patientJobs(ids ...uint64) map[uint64]api.Job {
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	jobs, err := r.cl.Jobs(ctx)
	if err != nil {
		return nil
	}
	out := map[uint64]api.Job{}
	for _, j := range jobs {
		if slices.Contains(ids, j.ID) {
			out[j.ID] = j
		}
	}
	return out
}

// patientNodeState is a node's state as sinfo shows it ("" when the lab
// does not answer, as while it elects a leader).
func (r *Run) patientNodeState(node string) string {
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	resp, err := r.cl.Nodes(ctx)
	if err != nil {
		return ""
	}
	for _, n := range resp.Nodes {
		if n.Name == node {
			return n.State
		}
	}
	return ""
}
