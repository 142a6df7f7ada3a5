package acct

import (
	"fmt"
	"hpc/cluster/api"
	"sort"
	"strings"
)

const (
	levelNone = iota
	levelOperator
	levelAdmin
)

func (a *State) level(uid uint32, user string) int {
	if uid == 0 {
		return levelAdmin
	}
	if u := a.Users[user]; u != nil {
		switch u.AdminLevel {
		case api.AdminAdministrator:
			return levelAdmin
		case api.AdminOperator:
			return levelOperator
		}
	}
	return levelNone
}

// IsOperator reports whether the caller is root or a user of AdminLevel
// Operator or Administrator: slurmctld's validate_operator, who sees every
// job whole whatever PrivateData says.
func (a *State) IsOperator(uid uint32, user string) bool {
	return a.level(uid, user) >= levelOperator
}

func errDenied(why string) error {
	return &api.Error{Message: api.ErrAccessDenied, Detail: why}
}

// WhyNoPrivilege is the detail of sacctmgr's access denied error.
const WhyNoPrivilege = "Your user doesn't have privilege to perform this action"

func acctErr(format string, args ...any) error {
	return &api.Error{Message: fmt.Sprintf(format, args...)}
}

func (a *State) badQOS(name string) error {
	return acctErr("sacctmgr: error: You gave a bad qos '%s'. Valid QOS's are %s", name, strings.Join(a.qosNames(), ","))
}

// qosNames lists the QoS in creation order.
func (a *State) qosNames() []string {
	qs := a.qosList()
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name
	}
	return out
}

func (a *State) qosList() []*api.QOS {
	out := make([]*api.QOS, 0, len(a.QOS))
	for _, q := range a.QOS {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
