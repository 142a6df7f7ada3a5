package cluster

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// handleTakeover is scontrol takeover: the leader hands Raft leadership to
// the named controller (the node the client talks to, by default) and
// waits until that node leads. Only root may do it.
func (d *Daemon) handleTakeover(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.TakeoverRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	if id.UID != 0 {
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrAccessDenied})
		return
	}
	// The voters are Raft's configuration: the SlurmctldHosts, and the
	// controllers hpc controller added or removed since.
	servers, _, err := d.raftServers()
	if err != nil || !slices.Contains(voterNames(servers), req.Node) {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: "Node " + req.Node + " is not a controller (SlurmctldHost)"})
		return
	}
	if req.Node == d.o.Name {
		peer.WriteJSON(w, struct{}{}) // already the primary
		return
	}
	host, _ := d.cfg.HostAddr(req.Node)
	if err := d.await(d.raft.LeadershipTransferToServer(raft.ServerID(req.Node), d.raftAddr(host))); err != nil {
		peer.WriteErr(w, http.StatusServiceUnavailable, &api.Error{Message: "takeover failed: " + err.Error()})
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, lid := d.raft.LeaderWithID(); string(lid) == req.Node {
			peer.WriteJSON(w, struct{}{})
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	peer.WriteErr(w, http.StatusServiceUnavailable, &api.Error{Message: "takeover failed: " + req.Node + " did not become the leader"})
}
