package acct

import (
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
	return a.SubmitAssoc(user, account, qos, Enforce{Associations: true, QOS: true})
}

// Enforce is what slurm.conf's AccountingStorageEnforce makes slurmctld
// check of a job's association and QoS at submit.
type Enforce struct {
	Associations bool // the user must have an association (of the account asked for)
	QOS          bool // the QoS must be one the association may use
}

// SubmitAssoc resolves the account and QoS of a job of user that asked
// for account and qos ("" for none), as slurmctld's job_create does. The
// association is the user's under the account asked for, else under the
// user's default account. Without one, e.Associations refuses the job;
// otherwise a job asking for an account the user has no association with
// gets the user's default account, and a user with no association at all
// keeps the account asked for. The QoS is the one asked for, else the
// association's default; one that does not exist is refused, and with
// e.QOS so is one the association may not use. Errors are Slurm's submit
// errors.
func (a *State) SubmitAssoc(user, account, qos string, e Enforce) (string, string, error) {
	asked := account
	account, qos = strings.ToLower(account), strings.ToLower(qos)
	assoc := a.userAssoc(user, account)
	switch {
	case assoc == nil && e.Associations:
		return "", "", &api.Error{Message: api.ErrInvalidAccount}
	case assoc == nil && account != "":
		assoc = a.userAssoc(user, "")
	}
	if assoc == nil {
		account = asked
	} else {
		account = assoc.Account
		if qos == "" {
			qos = defaultQOS(assoc)
		}
	}
	if (qos != "" && a.QOS[qos] == nil) || (e.QOS && assoc != nil && (qos == "" || !slices.Contains(assoc.QOS, qos))) {
		return "", "", &api.Error{Message: api.ErrInvalidQOS}
	}
	return account, qos, nil
}

// userAssoc is user's association (resolved: with what it inherits) under
// account, or under the user's default account for ""; nil if none.
func (a *State) userAssoc(user, account string) *api.Assoc {
	if account == "" {
		u := a.Users[user]
		if u == nil {
			return nil
		}
		account = u.DefaultAccount
	}
	return a.resolve(account, user)
}
