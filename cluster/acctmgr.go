package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/sched"
)

// What sacctmgr manages (QoS, accounts, users, associations) lives here:
// the replicated records, their Raft op and API routes, and their
// conversion into the scheduler's inputs.
//
// An add, modify or delete is planned on the leader against a copy of the
// records (that is where permissions, validation and the answer come
// from) and committed as one opAcctmgr entry that carries the version of
// the records it was planned on. Apply replays the same plan on a copy and
// swaps it in, so an op is all or nothing; if another sacctmgr op was
// committed in between, Apply refuses it and the leader plans again.

const opAcctmgr = "acctmgr" // an sacctmgr add, modify or delete

// acctOp is the payload of an opAcctmgr entry. Who asks is in the entry
// (identity from peer credentials), so Apply checks permissions
// deterministically against the records as they are.
type acctOp struct {
	Req     api.AcctmgrRequest `json:"req"`
	UID     uint32             `json:"uid"`
	User    string             `json:"user"`
	Version uint64             `json:"version"` // acctState.Version it was planned on
}

// errAcctChanged: the records changed between planning and Apply.
var errAcctChanged = errors.New("sacctmgr records changed during the request")

// acctState is the replicated sacctmgr data. Maps are keyed by name (an
// association by "account/user", "account/" for an account's own), so the
// JSON encoding is deterministic.
type acctState struct {
	// Version counts committed sacctmgr ops.
	Version   uint64                   `json:"version"`
	NextQOSID int                      `json:"next_qos_id"`
	QOS       map[string]*api.QOS      `json:"qos"`
	Accounts  map[string]*api.Account  `json:"accounts"`
	Users     map[string]*api.AcctUser `json:"users"`
	Assocs    map[string]*api.Assoc    `json:"assocs"`
}

const rootAccount = "root"

// newAcctState is the state of a new cluster, as a fresh Slurm database:
// the "normal" QoS, the root account with the root user under it.
func newAcctState() acctState {
	a := acctState{}
	a.fillDefaults()
	return a
}

// fillDefaults adds what a state restored from an older snapshot lacks.
func (a *acctState) fillDefaults() {
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

func (a *acctState) nextQOSID() int {
	id := max(a.NextQOSID, 1)
	a.NextQOSID = id + 1
	return id
}

func assocKey(account, user string) string { return account + "/" + user }

// clone returns a deep copy.
func (a *acctState) clone() acctState {
	data, err := json.Marshal(a)
	if err != nil {
		panic(fmt.Sprintf("acctState does not encode: %v", err))
	}
	var c acctState
	if err := json.Unmarshal(data, &c); err != nil {
		panic(fmt.Sprintf("acctState does not decode: %v", err))
	}
	c.fillDefaults()
	return c
}

// applyAcctOp applies the sacctmgr ops; ok=false for ops it does not know.
// Called with f.mu held.
func (f *FSM) applyAcctOp(c *command) (applyResult, bool) {
	if c.Op != opAcctmgr {
		return applyResult{}, false
	}
	if c.Acct == nil {
		return applyResult{Err: errors.New("acctmgr entry without a payload")}, true
	}
	if c.Acct.Version != f.st.Acct.Version {
		return applyResult{Err: errAcctChanged}, true
	}
	next := f.st.Acct.clone()
	if _, err := next.apply(c.Acct, f.cfg.ClusterName); err != nil {
		return applyResult{Err: err}, true
	}
	next.Version++
	f.st.Acct = next
	return applyResult{}, true
}

// ---- permissions ----

const (
	levelNone = iota
	levelOperator
	levelAdmin
)

func (a *acctState) level(uid uint32, user string) int {
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

func errDenied(why string) error {
	return &api.Error{Message: api.ErrAccessDenied, Detail: why}
}

const whyNoPrivilege = "Your user doesn't have privilege to perform this action"

// ---- errors in sacctmgr's words ----

func acctErr(format string, args ...any) error {
	return &api.Error{Message: fmt.Sprintf(format, args...)}
}

func (a *acctState) badQOS(name string) error {
	return acctErr("sacctmgr: error: You gave a bad qos '%s'. Valid QOS's are %s", name, strings.Join(a.qosNames(), ","))
}

// qosNames lists the QoS in creation order.
func (a *acctState) qosNames() []string {
	qs := a.qosList()
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name
	}
	return out
}

func (a *acctState) qosList() []*api.QOS {
	out := make([]*api.QOS, 0, len(a.QOS))
	for _, q := range a.QOS {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ---- apply ----

// apply runs one op on a (a copy: on error the caller drops it) and says
// what it changed. Empty result: nothing matched, nothing changed.
func (a *acctState) apply(op *acctOp, cluster string) (api.AcctmgrResult, error) {
	req := &op.Req
	res := api.AcctmgrResult{Cluster: cluster}
	names, err := cleanNames(req.Names)
	if err != nil {
		return res, err
	}
	accounts, err := cleanNames(req.Accounts)
	if err != nil {
		return res, err
	}
	if err := checkFields(req); err != nil {
		return res, err
	}
	lvl := a.level(op.UID, op.User)
	need := levelOperator
	if req.Entity == "qos" || req.Set.AdminLevel != nil {
		need = levelAdmin
	}
	if lvl < need {
		why := whyNoPrivilege
		if req.Set.AdminLevel != nil && req.Entity == "user" && lvl == levelOperator {
			why = "You must be a super user to modify a users admin level"
		}
		return res, errDenied(why)
	}
	switch req.Action + " " + req.Entity {
	case "add qos":
		err = a.addQOS(&res, names, &req.Set)
	case "modify qos":
		err = a.modifyQOS(&res, names, &req.Set)
	case "delete qos":
		err = a.deleteQOS(&res, names, cluster)
	case "add account":
		err = a.addAccounts(&res, names, &req.Set, cluster)
	case "modify account":
		err = a.modifyAccounts(&res, names, &req.Set)
	case "delete account":
		err = a.deleteAccounts(&res, names, cluster)
	case "add user":
		err = a.addUsers(&res, names, accounts, &req.Set)
	case "modify user":
		err = a.modifyUsers(&res, names, accounts, &req.Set)
	case "delete user":
		err = a.deleteUsers(&res, names, accounts)
	default:
		err = acctErr("sacctmgr: error: unknown request %q on %q", req.Action, req.Entity)
	}
	return res, err
}

// cleanNames lowercases names (Slurm keeps QoS, account and user names in
// lower case) and refuses ones that cannot be names.
func cleanNames(in []string) ([]string, error) {
	var out []string
	for _, n := range in {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		if strings.ContainsAny(n, "/,= \t\n'\"") {
			return nil, acctErr(" Invalid name: %q", n)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// checkFields refuses settings that do not belong to the entity.
func checkFields(req *api.AcctmgrRequest) error {
	s := &req.Set
	type field struct {
		name string
		set  bool
		ok   []string // entities it belongs to
	}
	assoc := []string{"account", "user"}
	fields := []field{
		{"Description", s.Description != nil, []string{"qos", "account"}},
		{"Organization", s.Organization != nil, []string{"account"}},
		{"Priority", s.Priority != nil, []string{"qos"}},
		{"MaxWall", s.MaxWallMin != nil, []string{"qos", "account", "user"}},
		{"MaxJobsPerUser", s.MaxJobsPerUser != nil, []string{"qos"}},
		{"MaxSubmitJobsPerUser", s.MaxSubmitJobsPerUser != nil, []string{"qos"}},
		{"MaxTRESPerUser", s.MaxTRESPerUser != nil, []string{"qos"}},
		{"MaxTRESPerJob", s.MaxTRESPerJob != nil, []string{"qos", "account", "user"}},
		{"GrpTRES", s.GrpTRES != nil, []string{"qos", "account", "user"}},
		{"GrpJobs", s.GrpJobs != nil, []string{"qos", "account", "user"}},
		{"GrpSubmitJobs", s.GrpSubmitJobs != nil, []string{"qos", "account", "user"}},
		{"Preempt", s.Preempt != nil, []string{"qos"}},
		{"PreemptMode", s.PreemptMode != nil, []string{"qos"}},
		{"Fairshare", s.Fairshare != nil, assoc},
		{"MaxJobs", s.MaxJobs != nil, assoc},
		{"MaxSubmitJobs", s.MaxSubmitJobs != nil, assoc},
		{"QOS", s.QOS != nil, assoc},
		{"DefaultQOS", s.DefaultQOS != nil, assoc},
		{"Parent", s.Parent != nil, []string{"account"}},
		{"DefaultAccount", s.DefaultAccount != nil, []string{"user"}},
		{"AdminLevel", s.AdminLevel != nil, []string{"user"}},
	}
	given := false
	for _, f := range fields {
		if !f.set {
			continue
		}
		given = true
		if !slices.Contains(f.ok, req.Entity) || req.Action == "delete" {
			return acctErr(" Unknown option: %s\n Use keyword 'where' to modify condition", f.name)
		}
	}
	if req.Action == "modify" && !given {
		return acctErr(" You didn't give me anything to set")
	}
	return nil
}

// setCount applies a count setting: negative clears the limit.
func setCount(dst **int, v *int) {
	if v == nil {
		return
	}
	if *v < 0 {
		*dst = nil
		return
	}
	n := *v
	*dst = &n
}

func setMinutes(dst **int64, v *int64) {
	if v == nil {
		return
	}
	if *v < 0 {
		*dst = nil
		return
	}
	n := *v
	*dst = &n
}

// mergeTRES applies a TRES setting: keys merge in, -1 removes one.
func mergeTRES(dst api.TRES, v api.TRES) (api.TRES, error) {
	if v == nil {
		return dst, nil
	}
	out := api.TRES{}
	for k, n := range dst {
		out[k] = n
	}
	for k, n := range v {
		if !slices.Contains(api.TRESNames, k) {
			return nil, acctErr("sacctmgr: error: slurmdb_format_tres_str: no TRES known by type %s", k)
		}
		if n < 0 {
			delete(out, k)
		} else {
			out[k] = n
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// editList applies a ListEdit to a list of QoS names, checking they exist.
func (a *acctState) editList(cur []string, e *api.ListEdit) ([]string, error) {
	var names []string
	for _, n := range e.Names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		if a.QOS[n] == nil {
			return nil, a.badQOS(n)
		}
		names = append(names, n)
	}
	var out []string
	switch e.Op {
	case "=":
		out = []string{}
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	case "+=":
		out = append([]string{}, cur...)
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	case "-=":
		out = []string{}
		for _, n := range cur {
			if !slices.Contains(names, n) {
				out = append(out, n)
			}
		}
	default:
		return nil, acctErr("sacctmgr: error: bad list operator %q", e.Op)
	}
	sort.Strings(out)
	return out, nil
}

// ---- QoS ----

func (a *acctState) setQOS(q *api.QOS, s *api.AcctmgrSet) error {
	var err error
	if s.Description != nil {
		q.Description = *s.Description
	}
	if s.Priority != nil {
		q.Priority = max(*s.Priority, 0)
	}
	setMinutes(&q.MaxWallMin, s.MaxWallMin)
	setCount(&q.MaxJobsPerUser, s.MaxJobsPerUser)
	setCount(&q.MaxSubmitJobsPerUser, s.MaxSubmitJobsPerUser)
	setCount(&q.GrpJobs, s.GrpJobs)
	setCount(&q.GrpSubmitJobs, s.GrpSubmitJobs)
	if q.MaxTRESPerUser, err = mergeTRES(q.MaxTRESPerUser, s.MaxTRESPerUser); err != nil {
		return err
	}
	if q.MaxTRESPerJob, err = mergeTRES(q.MaxTRESPerJob, s.MaxTRESPerJob); err != nil {
		return err
	}
	if q.GrpTRES, err = mergeTRES(q.GrpTRES, s.GrpTRES); err != nil {
		return err
	}
	if s.Preempt != nil {
		p, err := a.editList(q.Preempt, s.Preempt)
		if err != nil {
			return err
		}
		if slices.Contains(p, q.Name) {
			return acctErr("sacctmgr: error: QOS %s can not preempt itself", q.Name)
		}
		q.Preempt = p
		if len(p) == 0 {
			q.Preempt = nil
		}
	}
	if s.PreemptMode != nil {
		m := strings.ToUpper(*s.PreemptMode)
		switch m {
		case "", "CLUSTER":
			m = ""
		case api.PreemptModeOff, api.PreemptModeCancel, api.PreemptModeRequeue:
		default:
			return acctErr(" Bad Preempt Mode given: PreemptMode=%s", *s.PreemptMode)
		}
		q.PreemptMode = m
	}
	return nil
}

func (a *acctState) addQOS(res *api.AcctmgrResult, names []string, s *api.AcctmgrSet) error {
	if len(names) == 0 {
		return acctErr(" Need name of qos to add.")
	}
	for _, n := range names {
		if a.QOS[n] != nil {
			continue
		}
		q := &api.QOS{ID: a.nextQOSID(), Name: n, Description: n}
		if err := a.setQOS(q, s); err != nil {
			return err
		}
		a.QOS[n] = q
		res.QOS = append(res.QOS, n)
	}
	return nil
}

func (a *acctState) modifyQOS(res *api.AcctmgrResult, names []string, s *api.AcctmgrSet) error {
	for _, q := range a.qosList() {
		if len(names) > 0 && !slices.Contains(names, q.Name) {
			continue
		}
		if err := a.setQOS(q, s); err != nil {
			return err
		}
		res.QOS = append(res.QOS, q.Name)
	}
	return nil
}

func (a *acctState) deleteQOS(res *api.AcctmgrResult, names []string, cluster string) error {
	if len(names) == 0 {
		return acctErr(" No conditions given to remove, not executing.")
	}
	var gone []string
	for _, q := range a.qosList() {
		if slices.Contains(names, q.Name) {
			gone = append(gone, q.Name)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	// A QoS that an association uses as its default stays.
	var lines []string
	for _, r := range a.resolved() {
		own := a.Assocs[assocKey(r.Account, r.User)]
		def := own.DefaultQOS
		if def == "" && own.QOS != nil {
			def = defaultQOS(r)
		}
		if def == "" || !slices.Contains(gone, def) {
			continue
		}
		line := fmt.Sprintf("  DefQOS = %-10.10s C = %-10.10s A = %-20.20s", def, cluster, r.Account)
		if r.User != "" {
			line += fmt.Sprintf(" U = %-9.9s", r.User)
		}
		lines = append(lines, line)
	}
	if len(lines) > 0 {
		return acctErr(" Associations listed below have these as their Default QOS.\n%s\n"+
			" Please either remove the qos' listed above from list and resubmit,\n"+
			" or change the default qos to remove the qos.\n Changes Discarded", strings.Join(lines, "\n"))
	}
	for _, n := range gone {
		delete(a.QOS, n)
	}
	for _, q := range a.QOS {
		q.Preempt = slices.DeleteFunc(q.Preempt, func(n string) bool { return slices.Contains(gone, n) })
		if len(q.Preempt) == 0 {
			q.Preempt = nil
		}
	}
	for _, as := range a.Assocs {
		if as.QOS != nil {
			as.QOS = slices.DeleteFunc(as.QOS, func(n string) bool { return slices.Contains(gone, n) })
		}
	}
	res.QOS = gone
	return nil
}

// defaultQOS is the QoS a job of a (resolved) association gets when it
// names none: its DefaultQOS, else "normal" when allowed, else its only
// QoS; "" when there is no such QoS.
func defaultQOS(r *api.Assoc) string {
	switch {
	case r.DefaultQOS != "":
		return r.DefaultQOS
	case slices.Contains(r.QOS, "normal"):
		return "normal"
	case len(r.QOS) == 1:
		return r.QOS[0]
	}
	return ""
}

// ---- associations ----

// setAssoc applies association settings to as (checkDefaults then checks
// the default QoS against the QoS lists).
func (a *acctState) setAssoc(as *api.Assoc, s *api.AcctmgrSet) error {
	var err error
	if s.Fairshare != nil {
		as.Shares = *s.Fairshare
		if as.Shares < 0 {
			as.Shares = 1
		}
	}
	setCount(&as.GrpJobs, s.GrpJobs)
	setCount(&as.GrpSubmitJobs, s.GrpSubmitJobs)
	setCount(&as.MaxJobs, s.MaxJobs)
	setCount(&as.MaxSubmitJobs, s.MaxSubmitJobs)
	setMinutes(&as.MaxWallMin, s.MaxWallMin)
	if as.GrpTRES, err = mergeTRES(as.GrpTRES, s.GrpTRES); err != nil {
		return err
	}
	if as.MaxTRESPerJob, err = mergeTRES(as.MaxTRESPerJob, s.MaxTRESPerJob); err != nil {
		return err
	}
	if s.QOS != nil {
		cur := as.QOS
		if cur == nil { // += and -= start from what it inherits
			cur = a.inheritedQOS(as)
		}
		if as.QOS, err = a.editList(cur, s.QOS); err != nil {
			return err
		}
	}
	if s.DefaultQOS != nil {
		d := strings.ToLower(*s.DefaultQOS)
		if d != "" && a.QOS[d] == nil {
			return a.badQOS(d)
		}
		as.DefaultQOS = d
	}
	return nil
}

// inheritedQOS is the QoS list an association gets from its parents.
func (a *acctState) inheritedQOS(as *api.Assoc) []string {
	parent := as.Account
	if as.User == "" {
		parent = as.Parent
	}
	for i := 0; parent != "" && i < 64; i++ {
		p := a.Assocs[assocKey(parent, "")]
		if p == nil {
			break
		}
		if p.QOS != nil {
			return p.QOS
		}
		parent = p.Parent
	}
	return nil
}

// checkDefaults refuses associations whose default QoS they may not use.
func (a *acctState) checkDefaults() error {
	for _, r := range a.resolved() {
		if r.DefaultQOS != "" && !slices.Contains(r.QOS, r.DefaultQOS) {
			who := "account " + r.Account
			if r.User != "" {
				who = "user " + r.User + " of account " + r.Account
			}
			return acctErr("sacctmgr: error: Default QOS '%s' of %s is not in its QOS list (%s)", r.DefaultQOS, who, strings.Join(r.QOS, ","))
		}
	}
	return nil
}

// resolved lists copies of the associations in tree order (an account,
// its users by name, then its sub-accounts by name) with what they
// inherit filled in and Depth set.
func (a *acctState) resolved() []*api.Assoc {
	kids := map[string][]string{}  // account -> sub-accounts
	users := map[string][]string{} // account -> users
	for _, as := range a.Assocs {
		if as.User != "" {
			users[as.Account] = append(users[as.Account], as.User)
		} else if as.Account != rootAccount {
			kids[as.Parent] = append(kids[as.Parent], as.Account)
		}
	}
	var out []*api.Assoc
	var walk func(acct string, parent *api.Assoc, depth int)
	walk = func(acct string, parent *api.Assoc, depth int) {
		own := a.Assocs[assocKey(acct, "")]
		if own == nil || depth > 64 {
			return
		}
		r := inherit(own, parent, depth)
		out = append(out, r)
		us := users[acct]
		sort.Strings(us)
		for _, u := range us {
			out = append(out, inherit(a.Assocs[assocKey(acct, u)], r, depth+1))
		}
		ks := kids[acct]
		sort.Strings(ks)
		for _, k := range ks {
			walk(k, r, depth+1)
		}
	}
	walk(rootAccount, nil, 0)
	return out
}

// inherit copies own and fills in what it inherits from its (resolved)
// parent: Max limits (MaxTRES per TRES), QoS list and default QoS.
func inherit(own, parent *api.Assoc, depth int) *api.Assoc {
	r := *own
	r.Depth = depth
	r.QOS = slices.Clone(own.QOS)
	if parent == nil {
		return &r
	}
	if r.MaxJobs == nil {
		r.MaxJobs = parent.MaxJobs
	}
	if r.MaxSubmitJobs == nil {
		r.MaxSubmitJobs = parent.MaxSubmitJobs
	}
	if r.MaxWallMin == nil {
		r.MaxWallMin = parent.MaxWallMin
	}
	if len(parent.MaxTRESPerJob) > 0 {
		m := api.TRES{}
		for k, v := range parent.MaxTRESPerJob {
			m[k] = v
		}
		for k, v := range own.MaxTRESPerJob {
			m[k] = v
		}
		r.MaxTRESPerJob = m
	}
	if own.QOS == nil {
		r.QOS = slices.Clone(parent.QOS)
	}
	if r.DefaultQOS == "" {
		r.DefaultQOS = parent.DefaultQOS
	}
	return &r
}

// ---- accounts ----

func (a *acctState) addAccounts(res *api.AcctmgrResult, names []string, s *api.AcctmgrSet, cluster string) error {
	if len(names) == 0 {
		return acctErr(" Need name of account to add.")
	}
	parent := rootAccount
	if s.Parent != nil && *s.Parent != "" {
		parent = strings.ToLower(*s.Parent)
	}
	if a.Assocs[assocKey(parent, "")] == nil {
		return acctErr(" Parent account '%s' doesn't exist on cluster %s\n        Contact your admin to add this account.\n No associations created.", parent, cluster)
	}
	for _, n := range names {
		if a.Accounts[n] != nil {
			continue
		}
		acct := &api.Account{Name: n, Description: n, Organization: n}
		if parent != rootAccount {
			acct.Organization = parent
		}
		if s.Description != nil {
			acct.Description = *s.Description
		}
		if s.Organization != nil {
			acct.Organization = *s.Organization
		}
		a.Accounts[n] = acct
		as := &api.Assoc{Account: n, Parent: parent, Shares: 1}
		a.Assocs[assocKey(n, "")] = as
		if err := a.setAssoc(as, s); err != nil {
			return err
		}
		res.Accounts = append(res.Accounts, n)
		res.Assocs = append(res.Assocs, api.AssocRef{Account: n, Parent: parent})
	}
	return a.checkDefaults()
}

// inheritable reports whether the settings change anything sub-associations
// inherit.
func inheritable(s *api.AcctmgrSet) bool {
	return s.MaxJobs != nil || s.MaxSubmitJobs != nil || s.MaxTRESPerJob != nil ||
		s.MaxWallMin != nil || s.QOS != nil || s.DefaultQOS != nil
}

func assocSettings(s *api.AcctmgrSet) bool {
	return inheritable(s) || s.Fairshare != nil || s.GrpJobs != nil || s.GrpSubmitJobs != nil || s.GrpTRES != nil
}

func (a *acctState) modifyAccounts(res *api.AcctmgrResult, names []string, s *api.AcctmgrSet) error {
	var matched []string
	for n := range a.Accounts {
		if len(names) == 0 || slices.Contains(names, n) {
			matched = append(matched, n)
		}
	}
	sort.Strings(matched)
	if len(matched) == 0 {
		return nil
	}
	if s.Description != nil || s.Organization != nil {
		for _, n := range matched {
			acct := a.Accounts[n]
			if s.Description != nil {
				acct.Description = *s.Description
			}
			if s.Organization != nil {
				acct.Organization = *s.Organization
			}
		}
		res.Accounts = matched
	}
	if !assocSettings(s) && s.Parent == nil {
		return nil
	}
	before := a.resolved()
	for _, n := range matched {
		as := a.Assocs[assocKey(n, "")]
		res.Assocs = append(res.Assocs, api.AssocRef{Account: n, Parent: as.Parent})
		if err := a.setAssoc(as, s); err != nil {
			return err
		}
		if s.Parent != nil {
			if err := a.reparent(as, strings.ToLower(*s.Parent)); err != nil {
				return err
			}
		}
	}
	if inheritable(s) {
		// User associations below that inherit what changed are modified
		// too (listed, as sacctmgr lists them, last first).
		var below []api.AssocRef
		for _, r := range before {
			if r.User == "" || !a.under(r.Account, matched) {
				continue
			}
			if inheritsAny(a.Assocs[assocKey(r.Account, r.User)], s) {
				below = append(below, api.AssocRef{Account: r.Account, User: r.User})
			}
		}
		slices.Reverse(below)
		res.Assocs = append(res.Assocs, below...)
	}
	return a.checkDefaults()
}

// under reports whether account acct is one of accts or below one.
func (a *acctState) under(acct string, accts []string) bool {
	for i := 0; acct != "" && i < 64; i++ {
		if slices.Contains(accts, acct) {
			return true
		}
		p := a.Assocs[assocKey(acct, "")]
		if p == nil {
			return false
		}
		acct = p.Parent
	}
	return false
}

func inheritsAny(own *api.Assoc, s *api.AcctmgrSet) bool {
	return (s.MaxJobs != nil && own.MaxJobs == nil) || (s.MaxSubmitJobs != nil && own.MaxSubmitJobs == nil) ||
		(s.MaxWallMin != nil && own.MaxWallMin == nil) || s.MaxTRESPerJob != nil ||
		(s.QOS != nil && own.QOS == nil) || (s.DefaultQOS != nil && own.DefaultQOS == "")
}

func (a *acctState) reparent(as *api.Assoc, parent string) error {
	if as.Account == rootAccount || a.Assocs[assocKey(parent, "")] == nil || a.under(parent, []string{as.Account}) {
		return acctErr("sacctmgr: error: Invalid parent account '%s' for account %s", parent, as.Account)
	}
	as.Parent = parent
	return nil
}

func (a *acctState) deleteAccounts(res *api.AcctmgrResult, names []string, cluster string) error {
	if len(names) == 0 {
		return acctErr(" No conditions given to remove, not executing.")
	}
	if slices.Contains(names, rootAccount) {
		return acctErr(" You are not allowed to remove the root account.\n Use remove cluster instead.")
	}
	var gone []string
	for _, n := range names {
		if a.Accounts[n] != nil {
			gone = append(gone, n)
		}
	}
	sort.Strings(gone)
	if len(gone) == 0 {
		return nil
	}
	// Users and sub-accounts must go first (hpc is stricter than Slurm
	// here, which removes them along with the account).
	var lines []string
	for _, r := range a.resolved() {
		switch {
		case r.User != "" && slices.Contains(gone, r.Account):
			lines = append(lines, fmt.Sprintf("  C = %-10.10s A = %-20.20s U = %-9.9s", cluster, r.Account, r.User))
		case r.User == "" && slices.Contains(gone, r.Parent) && !slices.Contains(gone, r.Account):
			lines = append(lines, fmt.Sprintf("  C = %-10.10s A = %s of %s", cluster, r.Account, r.Parent))
		}
	}
	if len(lines) > 0 {
		return acctErr(" Associations listed below are under the accounts to remove.\n%s\n"+
			" Please remove them first (sacctmgr delete user ... account=...).\n Changes Discarded", strings.Join(lines, "\n"))
	}
	for _, n := range gone {
		delete(a.Accounts, n)
		delete(a.Assocs, assocKey(n, ""))
	}
	res.Accounts = gone
	return nil
}

// ---- users ----

func adminLevel(s string) (string, error) {
	switch strings.ToLower(s) {
	case "none":
		return api.AdminNone, nil
	case "operator", "oper":
		return api.AdminOperator, nil
	case "administrator", "admin":
		return api.AdminAdministrator, nil
	}
	return "", acctErr("sacctmgr: error: Invalid AdminLevel '%s' (None, Operator or Administrator)", s)
}

func (a *acctState) addUsers(res *api.AcctmgrResult, names, accounts []string, s *api.AcctmgrSet) error {
	if len(names) == 0 {
		return acctErr(" Need name of user to add.")
	}
	if len(accounts) == 0 {
		return acctErr(" Need name of account to add user to.")
	}
	for _, acct := range accounts {
		if a.Accounts[acct] == nil {
			return acctErr(" This account '%s' doesn't exist.\n        Contact your admin to add this account.\n No associations or wckeys created.", acct)
		}
	}
	level := api.AdminNone
	if s.AdminLevel != nil {
		var err error
		if level, err = adminLevel(*s.AdminLevel); err != nil {
			return err
		}
	}
	def := accounts[0]
	if s.DefaultAccount != nil && *s.DefaultAccount != "" {
		def = strings.ToLower(*s.DefaultAccount)
		if !slices.Contains(accounts, def) {
			return acctErr(" Default account '%s' is not among the accounts given (%s).", def, strings.Join(accounts, ","))
		}
	}
	for _, n := range names {
		if a.Users[n] == nil {
			a.Users[n] = &api.AcctUser{Name: n, DefaultAccount: def, AdminLevel: level}
			res.Users = append(res.Users, n)
		}
		for _, acct := range accounts {
			key := assocKey(acct, n)
			if a.Assocs[key] != nil {
				continue
			}
			as := &api.Assoc{Account: acct, User: n, Shares: 1}
			a.Assocs[key] = as
			if err := a.setAssoc(as, s); err != nil {
				return err
			}
			res.Assocs = append(res.Assocs, api.AssocRef{Account: acct, User: n})
		}
	}
	return a.checkDefaults()
}

// userAccounts lists the accounts a user has associations under.
func (a *acctState) userAccounts(user string) []string {
	var out []string
	for _, as := range a.Assocs {
		if as.User == user {
			out = append(out, as.Account)
		}
	}
	sort.Strings(out)
	return out
}

func (a *acctState) modifyUsers(res *api.AcctmgrResult, names, accounts []string, s *api.AcctmgrSet) error {
	var matched []string
	for n := range a.Users {
		if len(names) == 0 || slices.Contains(names, n) {
			matched = append(matched, n)
		}
	}
	sort.Strings(matched)
	if len(matched) == 0 {
		return nil
	}
	if s.DefaultAccount != nil || s.AdminLevel != nil {
		if s.DefaultAccount != nil {
			def := strings.ToLower(*s.DefaultAccount)
			var bad []string
			for _, n := range matched {
				if a.Assocs[assocKey(def, n)] == nil {
					bad = append(bad, "  U = "+n+" C = "+res.Cluster)
				}
			}
			if len(bad) > 0 {
				return acctErr(" Can't modify because these users aren't associated with new default account '%s'...\n%s", def, strings.Join(bad, "\n"))
			}
			for _, n := range matched {
				a.Users[n].DefaultAccount = def
			}
		}
		if s.AdminLevel != nil {
			level, err := adminLevel(*s.AdminLevel)
			if err != nil {
				return err
			}
			for _, n := range matched {
				a.Users[n].AdminLevel = level
			}
		}
		res.Users = matched
	}
	if !assocSettings(s) {
		return nil
	}
	for _, r := range a.resolved() {
		if r.User == "" || !slices.Contains(matched, r.User) || (len(accounts) > 0 && !slices.Contains(accounts, r.Account)) {
			continue
		}
		if err := a.setAssoc(a.Assocs[assocKey(r.Account, r.User)], s); err != nil {
			return err
		}
		res.Assocs = append(res.Assocs, api.AssocRef{Account: r.Account, User: r.User})
	}
	if len(res.Assocs) == 0 && len(res.Users) == 0 {
		return nil
	}
	return a.checkDefaults()
}

func (a *acctState) deleteUsers(res *api.AcctmgrResult, names, accounts []string) error {
	if len(names) == 0 {
		return acctErr(" No conditions given to remove, not executing.")
	}
	sorted := slices.Clone(names)
	sort.Strings(sorted)
	for _, n := range sorted {
		if a.Users[n] == nil {
			continue
		}
		if len(accounts) == 0 {
			for _, acct := range a.userAccounts(n) {
				delete(a.Assocs, assocKey(acct, n))
			}
			delete(a.Users, n)
			res.Users = append(res.Users, n)
			continue
		}
		for _, acct := range accounts {
			if a.Assocs[assocKey(acct, n)] != nil {
				delete(a.Assocs, assocKey(acct, n))
				res.Assocs = append(res.Assocs, api.AssocRef{Account: acct, User: n})
			}
		}
		left := a.userAccounts(n)
		switch {
		case len(left) == 0:
			delete(a.Users, n)
			res.UsersNoAssoc = append(res.UsersNoAssoc, n)
		case !slices.Contains(left, a.Users[n].DefaultAccount):
			// As Slurm: no default until one is set again.
			a.Users[n].DefaultAccount = ""
		}
	}
	return nil
}

// ---- reading ----

// view is what GET /api/acctmgr answers.
func (a *acctState) view(cluster api.AcctCluster) api.AcctmgrState {
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
	for _, r := range a.resolved() {
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

// jobAssoc resolves the account and QoS of a job of user that asked for
// account and qos ("" for none), as Slurm does when it enforces
// associations and QoS: the user's default account, the association's
// default QoS. Its errors are Slurm's submit errors.
func (a *acctState) jobAssoc(user, account, qos string) (string, string, error) {
	account, qos = strings.ToLower(account), strings.ToLower(qos)
	if account == "" {
		u := a.Users[user]
		if u == nil {
			return "", "", &api.Error{Message: api.ErrInvalidAccount, Detail: fmt.Sprintf("user %s has no association (sacctmgr add user %s account=...)", user, user)}
		}
		account = u.DefaultAccount
	}
	var assoc *api.Assoc
	for _, r := range a.resolved() {
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

// ---- the scheduler's inputs ----

// hasSubmitLimits reports whether any QoS or association sets a submit
// limit (MaxSubmitJobsPerUser, MaxSubmitJobs, GrpSubmitJobs), so that a
// cluster without them checks nothing at submit.
func (a *acctState) hasSubmitLimits() bool {
	for _, q := range a.QOS {
		if q.MaxSubmitJobsPerUser != nil || q.GrpSubmitJobs != nil {
			return true
		}
	}
	for _, as := range a.Assocs {
		if as.MaxSubmitJobs != nil || as.GrpSubmitJobs != nil {
			return true
		}
	}
	return false
}

// schedInputs converts the records into the scheduler's QoS list (creation
// order) and association tree (tree order). Association Max limits are
// given as resolved (inherited from the nearest account that sets them).
// A limit that is not set (nil, or a TRES not listed) is sched's 0; a limit
// of 0, which in Slurm allows nothing, is sched.LimitZero. Fairshare=0 is
// passed as a negative share (no share).
func (a *acctState) schedInputs() (qos []sched.QOS, assocs []sched.Assoc) {
	for _, q := range a.qosList() {
		sq := sched.QOS{
			Name:     q.Name,
			Priority: q.Priority,
			Preempt:  slices.Clone(q.Preempt),
			Limits: sched.Limits{
				MaxWall:              minutes(q.MaxWallMin),
				MaxJobsPerUser:       count(q.MaxJobsPerUser),
				MaxSubmitJobsPerUser: count(q.MaxSubmitJobsPerUser),
				MaxTRESPerUser:       schedTRES(q.MaxTRESPerUser),
				MaxTRESPerJob:        schedTRES(q.MaxTRESPerJob),
				GrpTRES:              schedTRES(q.GrpTRES),
				GrpJobs:              count(q.GrpJobs),
				GrpSubmitJobs:        count(q.GrpSubmitJobs),
			},
		}
		if q.PreemptMode != "" {
			sq.PreemptMode = sched.PreemptMode(q.PreemptMode)
		}
		qos = append(qos, sq)
	}
	for _, r := range a.resolved() {
		sa := sched.Assoc{
			Account: r.Account,
			User:    r.User,
			Shares:  r.Shares,
			Limits: sched.Limits{
				MaxWall:              minutes(r.MaxWallMin),
				MaxJobsPerUser:       count(r.MaxJobs),
				MaxSubmitJobsPerUser: count(r.MaxSubmitJobs),
				MaxTRESPerJob:        schedTRES(r.MaxTRESPerJob),
				GrpTRES:              schedTRES(r.GrpTRES),
				GrpJobs:              count(r.GrpJobs),
				GrpSubmitJobs:        count(r.GrpSubmitJobs),
			},
		}
		if r.User == "" {
			sa.Parent = r.Parent
		}
		if r.Shares == 0 {
			sa.Shares = -1 // Fairshare=0: no share (sched reads 0 as 1)
		}
		assocs = append(assocs, sa)
	}
	return qos, assocs
}

// minutes is a MaxWall limit for sched: 0 when unset, negative when 0.
func minutes(m *int64) time.Duration {
	switch {
	case m == nil:
		return 0
	case *m == 0:
		return sched.LimitZero
	}
	return time.Duration(*m) * time.Minute
}

// count is a count limit for sched: 0 when unset, sched.LimitZero when 0.
func count(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return sched.LimitZero
	}
	return *n
}

// schedTRES is a TRES limit for sched: a TRES not listed is no limit, one
// listed as 0 is sched.LimitZero.
func schedTRES(t api.TRES) sched.TRES {
	one := func(key string) int64 {
		v, ok := t[key]
		if ok && v == 0 {
			return sched.LimitZero
		}
		return v
	}
	return sched.TRES{CPU: one("cpu"), MemMB: one("mem"), Node: one("node"), GPU: one("gres/gpu")}
}

// ---- API ----

// registerAcctRoutes adds the sacctmgr routes to the API.
func (d *Daemon) registerAcctRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/acctmgr", d.leaderRoute(d.handleAcctmgrShow))
	mux.HandleFunc("POST /api/acctmgr", d.leaderRoute(d.handleAcctmgrChange))
}

// acctCluster describes this controller for sacctmgr show cluster.
func (d *Daemon) acctCluster() api.AcctCluster {
	c := api.AcctCluster{Name: d.cfg.ClusterName, ControlPort: d.cfg.APIPort, RPC: slurmRPCVersion}
	if n := d.cfg.Node(d.o.Name); n != nil {
		c.ControlHost = n.Addr
	}
	return c
}

// slurmRPCVersion is the RPC column Slurm 22.05 prints in show cluster.
const slurmRPCVersion = 9728

func (d *Daemon) handleAcctmgrShow(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	var out api.AcctmgrState
	d.fsm.view(func(st *state) { out = st.Acct.view(d.acctCluster()) })
	writeJSON(w, out)
}

func (d *Daemon) handleAcctmgrChange(w http.ResponseWriter, r *http.Request, id Identity, body []byte) {
	var req api.AcctmgrRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	for try := 0; ; try++ {
		var plan acctState
		d.fsm.view(func(st *state) { plan = st.Acct.clone() })
		op := &acctOp{Req: req, UID: id.UID, User: id.User, Version: plan.Version}
		res, err := plan.apply(op, d.cfg.ClusterName)
		if err != nil {
			var ae *api.Error
			if errors.As(err, &ae) && ae.Message == api.ErrAccessDenied {
				writeErr(w, http.StatusForbidden, err)
				return
			}
			userErr(w, err)
			return
		}
		if len(res.QOS)+len(res.Accounts)+len(res.Users)+len(res.Assocs)+len(res.UsersNoAssoc) == 0 {
			writeJSON(w, res) // nothing matched: nothing to commit
			return
		}
		_, err = d.propose(command{Op: opAcctmgr, Time: d.now(), Acct: op})
		if errors.Is(err, errAcctChanged) && try < 10 {
			continue
		}
		if err != nil {
			userErr(w, err)
			return
		}
		writeJSON(w, res)
		return
	}
}
