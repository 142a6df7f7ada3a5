package cluster

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

// scontrol create, update and delete partition, reconfigure and write
// config. The live partitions and configuration are part of the replicated
// state (cluster/fsm/partitions.go): the leader plans a change from its
// live configuration and commits the whole result through Raft, so every
// controller, a new leader after a failover, and a restarted one (snapshot
// and log) go by the same partitions. Readers ask d.conf().

// conf is the live configuration: the FSM's on a controller, the one the
// daemon started with elsewhere. It never changes; a change replaces it.
func (d *Daemon) conf() *config.Config {
	if d.fsm != nil {
		return d.fsm.Config()
	}
	return d.cfg
}

func (d *Daemon) registerPartitionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/partition", d.leaderRoute(d.handlePartition))
	mux.HandleFunc("POST /api/reconfigure", d.leaderRoute(d.handleReconfigure))
	mux.HandleFunc("GET /api/config/file", d.leaderRoute(d.handleConfigFile))
	mux.HandleFunc("GET /api/pidinfo", d.localRoute(d.handlePidInfo))
}

// superUser is slurmctld's validate_super_user: root, SlurmUser, or an
// sacctmgr Administrator.
func (d *Daemon) superUser(id peer.Identity) bool {
	if id.UID == 0 {
		return true
	}
	cfg := d.conf()
	if cfg.SlurmUser != "" && id.User == cfg.SlurmUser {
		return true
	}
	admin := false
	d.fsm.View(func(st *fsm.State) {
		if u := st.Acct.Users[id.User]; u != nil && !id.Node {
			admin = u.AdminLevel == api.AdminAdministrator
		}
	})
	return admin
}

// partitionMu makes each partition change plan on the result of the one
// before (an update is planned from the partition as it is).
var partitionMu sync.Mutex

// handlePartition is scontrol create, update and delete partition: for
// root, SlurmUser and Administrators only (Slurm's "Invalid user id").
func (d *Daemon) handlePartition(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.PartitionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	if !d.superUser(id) {
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrUserIDMissing, Detail: "partitions are changed by root, SlurmUser and administrators"})
		return
	}
	partitionMu.Lock()
	defer partitionMu.Unlock()
	op, err := planPartition(d.conf(), req)
	if err == nil {
		op.Time, op.UID = d.now(), id.UID
		_, err = d.propose(op)
	}
	if err != nil {
		peer.UserErr(w, err)
		return
	}
	d.log.Info("partition changed", "action", req.Action, "partition", req.Name, "uid", id.UID)
	peer.WriteJSON(w, struct{}{})
}

// planPartition turns a request into the operation that commits it,
// checked against cfg, the live configuration.
func planPartition(cfg *config.Config, req api.PartitionRequest) (*fsm.PartitionChange, error) {
	op := &fsm.PartitionChange{Action: req.Action}
	var base *config.Partition
	switch req.Action {
	case api.PartitionCreate:
		if cfg.Partition(req.Name) != nil {
			return nil, &api.Error{Message: api.ErrInvalidPartition, Detail: "partition " + req.Name + " exists"}
		}
	case api.PartitionUpdate, api.PartitionDelete:
		if base = cfg.Partition(req.Name); base == nil {
			return nil, &api.Error{Message: api.ErrInvalidPartition, Detail: "no partition " + req.Name}
		}
		if req.Action == api.PartitionDelete {
			op.Partition.Name = req.Name
			return op, nil
		}
	default:
		return nil, &api.Error{Message: api.ErrUnexpectedMessage, Detail: "unknown partition action " + req.Action}
	}
	p, err := cfg.EditPartition(base, req.Name, req.Set)
	switch {
	case errors.Is(err, config.ErrUnknownNode):
		return nil, &api.Error{Message: api.ErrInvalidNodeName, Detail: err.Error()}
	case err != nil:
		var pe *config.ParseError
		if errors.As(err, &pe) {
			return nil, &api.Error{Message: pe.Msg}
		}
		return nil, &api.Error{Message: err.Error()}
	}
	op.Partition = *p
	return op, nil
}

// handleConfigFile is scontrol write config: the running configuration as
// slurm.conf text, the live partitions in place of the file's.
func (d *Daemon) handleConfigFile(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	cfg := d.conf()
	peer.WriteJSON(w, api.ConfigFile{Text: config.WithPartitionLines(cfg.Text, cfg.Partitions), LastUpdate: time.Now()})
}
