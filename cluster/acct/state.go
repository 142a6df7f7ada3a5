package acct

import (
	"encoding/json"
	"errors"
	"fmt"

	"hpc/cluster/api"
)

// Op is the payload of an opAcctmgr entry. Who asks is in the entry
// (identity from peer credentials), so Apply checks permissions
// deterministically against the records as they are.
type Op struct {
	Req     api.AcctmgrRequest `json:"req"`
	UID     uint32             `json:"uid"`
	User    string             `json:"user"`
	Version uint64             `json:"version"` // State.Version it was planned on
}

// ErrChanged: the records changed between planning and Apply.
var ErrChanged = errors.New("sacctmgr records changed during the request")

// State is the replicated sacctmgr data. Maps are keyed by name (an
// association by "account/user", "account/" for an account's own), so the
// JSON encoding is deterministic.
type State struct {
	// Version counts committed sacctmgr ops.
	Version   uint64                   `json:"version"`
	NextQOSID int                      `json:"next_qos_id"`
	QOS       map[string]*api.QOS      `json:"qos"`
	Accounts  map[string]*api.Account  `json:"accounts"`
	Users     map[string]*api.AcctUser `json:"users"`
	Assocs    map[string]*api.Assoc    `json:"assocs"`
}

const rootAccount = "root"

// New is the state of a new cluster, as a fresh Slurm database:
// the "normal" QoS, the root account with the root user under it.
func New() State {
	a := State{}
	a.FillDefaults()
	return a
}

// FillDefaults adds what a state restored from an older snapshot lacks.
func (a *State) FillDefaults() {
	if a.QOS == nil {
		a.QOS = map[string]*api.QOS{}
	}
	if a.Accounts == nil {
		a.Accounts = map[string]*api.Account{}
	}
	if a.Users == nil {
		a.Users = map[string]*api.AcctUser{}
	}
	if a.Assocs == nil {
		a.Assocs = map[string]*api.Assoc{}
	}
	if len(a.QOS) == 0 && a.Version == 0 {
		a.NextQOSID = 1
		a.QOS["normal"] = &api.QOS{ID: a.nextQOSID(), Name: "normal", Description: "Normal QOS default"}
	}
	for _, q := range a.QOS {
		a.NextQOSID = max(a.NextQOSID, q.ID+1)
	}
	if a.Accounts[rootAccount] == nil {
		a.Accounts[rootAccount] = &api.Account{Name: rootAccount, Description: "default root account", Organization: "root"}
	}
	if a.Assocs[assocKey(rootAccount, "")] == nil {
		var qos []string
		if a.QOS["normal"] != nil {
			qos = []string{"normal"}
		}
		a.Assocs[assocKey(rootAccount, "")] = &api.Assoc{Account: rootAccount, Shares: 1, QOS: qos}
	}
	if a.Version == 0 && a.Users["root"] == nil {
		a.Users["root"] = &api.AcctUser{Name: "root", DefaultAccount: rootAccount, AdminLevel: api.AdminAdministrator}
		a.Assocs[assocKey(rootAccount, "root")] = &api.Assoc{Account: rootAccount, User: "root", Shares: 1}
	}
}

func (a *State) nextQOSID() int {
	id := max(a.NextQOSID, 1)
	a.NextQOSID = id + 1
	return id
}

func assocKey(account, user string) string { return account + "/" + user }

// clone returns a deep copy.
func (a *State) Clone() State {
	data, err := json.Marshal(a)
	if err != nil {
		panic(fmt.Sprintf("State does not encode: %v", err))
	}
	var c State
	if err := json.Unmarshal(data, &c); err != nil {
		panic(fmt.Sprintf("State does not decode: %v", err))
	}
	c.FillDefaults()
	return c
}

// AddSlurmUser gives a new cluster's SlurmUser (the daemons' user, when
// not root) what root has: an association under the root account and
// AdminLevel Administrator, so that a lab started by a normal user can be
// used, and administered, by that user. Records made since are left as
// they are.
func (a *State) AddSlurmUser(name string) {
	if name == "" || name == "root" || a.Version != 0 || a.Users[name] != nil {
		return
	}
	a.Users[name] = &api.AcctUser{Name: name, DefaultAccount: rootAccount, AdminLevel: api.AdminAdministrator}
	a.Assocs[assocKey(rootAccount, name)] = &api.Assoc{Account: rootAccount, User: name, Shares: 1}
}
