package acct

import (
	"fmt"
	"hpc/cluster/api"
	"slices"
	"sort"
	"strings"
)

// view is what GET /api/acctmgr answers.
func (a *State) View(cluster api.AcctCluster) api.AcctmgrState {
	out := api.AcctmgrState{Cluster: cluster}
	for _, q := range a.qosList() {
		out.QOS = append(out.QOS, *q)
	}
	for _, n := range sortedKeys(a.Accounts) {
		out.Accounts = append(out.Accounts, *a.Accounts[n])
	}
	for _, n := range sortedKeys(a.Users) {
		out.Users = append(out.Users, *a.Users[n])
	}
	for _, r := range a.Resolved() {
		out.Assocs = append(out.Assocs, *r)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// JobAssoc resolves the account and QoS of a job of user that asked for
// account and qos ("" for none), as Slurm does when it enforces
// associations and QoS: the user's default account, the association's
// default QoS. Its errors are Slurm's submit errors.
func (a *State) JobAssoc(user, account, qos string) (string, string, error) {
	account, qos = strings.ToLower(account), strings.ToLower(qos)
	if account == "" {
		u := a.Users[user]
		if u == nil {
			return "", "", &api.Error{Message: api.ErrInvalidAccount, Detail: fmt.Sprintf("user %s has no association (sacctmgr add user %s account=...)", user, user)}
		}
		account = u.DefaultAccount
	}
	var assoc *api.Assoc
	for _, r := range a.Resolved() {
		if r.Account == account && r.User == user {
			assoc = r
			break
		}
	}
	if assoc == nil {
		return "", "", &api.Error{Message: api.ErrInvalidAccount}
	}
	if qos == "" {
		qos = defaultQOS(assoc)
	}
	if qos == "" || a.QOS[qos] == nil || !slices.Contains(assoc.QOS, qos) {
		return "", "", &api.Error{Message: api.ErrInvalidQOS}
	}
	return account, qos, nil
}
