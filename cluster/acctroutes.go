package cluster

import (
	"encoding/json"
	"errors"
	"hpc/cluster/acct"
	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
	"net/http"
)

// registerAcctRoutes adds the sacctmgr routes to the API.
func (d *Daemon) registerAcctRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/acctmgr", d.leaderRoute(d.handleAcctmgrShow))
	mux.HandleFunc("POST /api/acctmgr", d.leaderRoute(d.handleAcctmgrChange))
}

// acctCluster describes this controller for sacctmgr show cluster.
func (d *Daemon) acctCluster() api.AcctCluster {
	c := api.AcctCluster{Name: d.cfg.ClusterName, ControlPort: d.cfg.APIPort, RPC: slurmRPCVersion}
	if addr, ok := d.cfg.HostAddr(d.o.Name); ok {
		c.ControlHost = addr
	}
	return c
}

// slurmRPCVersion is the RPC column Slurm 22.05 prints in show cluster.
const slurmRPCVersion = 9728

func (d *Daemon) handleAcctmgrShow(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var out api.AcctmgrState
	d.fsm.View(func(st *fsm.State) { out = st.Acct.View(d.acctCluster()) })
	peer.WriteJSON(w, out)
}

func (d *Daemon) handleAcctmgrChange(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.AcctmgrRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	for try := 0; ; try++ {
		var plan acct.State
		d.fsm.View(func(st *fsm.State) { plan = st.Acct.Clone() })
		op := &acct.Op{Req: req, UID: id.UID, User: id.User, Version: plan.Version}
		res, err := plan.Apply(op, d.cfg.ClusterName)
		if err != nil {
			var ae *api.Error
			if errors.As(err, &ae) && ae.Message == api.ErrAccessDenied {
				peer.WriteErr(w, http.StatusForbidden, err)
				return
			}
			peer.UserErr(w, err)
			return
		}
		if len(res.QOS)+len(res.Accounts)+len(res.Users)+len(res.Assocs)+len(res.UsersNoAssoc) == 0 {
			peer.WriteJSON(w, res) // nothing matched: nothing to commit
			return
		}
		_, err = d.propose(&fsm.Acctmgr{Time: d.now(), Op: *op})
		if errors.Is(err, acct.ErrChanged) && try < 10 {
			continue
		}
		if err != nil {
			peer.UserErr(w, err)
			return
		}
		peer.WriteJSON(w, res)
		return
	}
}
