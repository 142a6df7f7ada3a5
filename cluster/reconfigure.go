package cluster

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

// scontrol reconfigure: the leader reads slurm.conf (with gres.conf and
// topology.conf) and checks it, and commits the files' texts through Raft;
// every controller parses the same texts (fsm.Reconfigure), so none goes
// by a configuration of its own. What only a restart changes (nodes,
// controllers, ports) is refused with Slurm's ESLURM_NEED_RESTART text.
// Partitions become slurm.conf's unless ReconfigFlags keeps them, as in
// Slurm. Jobs go on as they are.

// confPath is the slurm.conf the daemon reads: its lab directory's, the
// parent of its node's state directory (where hpc up copies --config).
func (d *Daemon) confPath() string {
	p := filepath.Join(filepath.Dir(d.o.Dir), "slurm.conf")
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// handleReconfigure is scontrol reconfigure, for root, SlurmUser and
// Administrators only.
func (d *Daemon) handleReconfigure(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	if !d.superUser(id) {
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrUserIDMissing, Detail: "reconfigure is for root, SlurmUser and administrators"})
		return
	}
	files, err := d.readConfig()
	if err == nil {
		_, err = d.propose(&fsm.Reconfigure{Time: d.now(), UID: id.UID, Files: files})
	}
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	d.log.Info("reconfigured", "file", d.confPath(), "uid", id.UID)
	d.reconfigureNodes(r.Context())
	peer.WriteJSON(w, struct{}{})
}

// reconfigureNodes tells every node to re-read its slurm.conf, as
// slurmctld tells the slurmds; a node that cannot is logged (it keeps the
// config it has, and says why in its own log).
func (d *Daemon) reconfigureNodes(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range d.cfg.Nodes {
		wg.Go(func() {
			addr, err := d.peers.API(n.Name)
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err = d.peers.CallNode(cctx, addr, "/internal/reconfigure", struct{}{}, nil)
				cancel()
			}
			if err != nil {
				d.log.Warn("node not reconfigured", "node", n.Name, "err", err)
			}
		})
	}
	wg.Wait()
}

// readConfig reads and checks the configuration files for a reconfigure.
func (d *Daemon) readConfig() (config.Files, error) {
	files, err := config.ReadFiles(d.confPath())
	if err != nil {
		return files, &api.Error{Message: "cannot read configuration: " + err.Error()}
	}
	next, err := config.ParseFiles(files)
	if err != nil {
		var pe *config.ParseError
		if errors.As(err, &pe) {
			return files, &api.Error{Message: err.Error()}
		}
		return files, err
	}
	if next.NeedsRestart(d.cfg) {
		return files, &api.Error{Message: api.ErrNeedRestart, Detail: "nodes, controllers or ports differ from those the daemons run with"}
	}
	return files, nil
}
