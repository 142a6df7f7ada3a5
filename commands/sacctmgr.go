package commands

// sacctmgr: QoS, accounts, users and associations, taken and printed as
// Slurm 22.05's sacctmgr does. Changes commit through the controller's Raft
// log; anyone may show, only operators and administrators may change
// (QoS and admin levels: administrators only).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

type mgrOpts struct {
	immediate, noHeader, parsable, parsable2, quiet bool
	withAssoc                                       bool // -s: show/list with associations
}

// mgrReq is one parsed sacctmgr command line.
type mgrReq struct {
	action, entity string // add modify delete show; qos account user assoc cluster
	names          []string
	accounts       []string // user: account(s)=; assoc: account filter
	users          []string // assoc: user filter
	clusters       []string
	format         string
	tree, withAssc bool
	set            api.AcctmgrSet
	given          []string // settings as typed, for messages
}

const sacctmgrHelp = `sacctmgr [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -i or --immediate: commit changes immediately (hpc always does)
     -n or --noheader:  no header will be added to the beginning of output
     -p or --parsable:  output will be '|' delimited with a '|' at the end
     -P or --parsable2: output will be '|' delimited without a '|' at the end
     -Q or --quiet:     print no messages other than error messages
     -s or --associations: show and list with the associations (as withassoc)
     -V or --version:   print the version
     -r or --readonly:  accepted, no effect
     -v or --verbose:   accepted, no effect
     -h or --help:      this screen (--usage prints it too)

  Valid <COMMAND> values are:
     add|create <ENTITY> <NAMES> [<SPECS>]
     modify|update <ENTITY> [where] <NAMES/CONDITIONS> set <SPECS>
     delete|remove <ENTITY> [where] <NAMES/CONDITIONS>
     show|list <ENTITY> [<NAMES/CONDITIONS>] [format=<FIELDS>] [tree] [withassoc]

  <ENTITY> may be account, association (show only), cluster (show only),
  qos or user: add account, add qos, add user; list associations, list
  clusters, show qos; modify account, modify qos, modify user (modify cluster
  and delete cluster are refused); delete account, delete qos, delete user.

  <SPECS> are different for each command entity pair:

  QOS settings: Description=, Priority=, MaxWall=, MaxJobsPerUser=,
     MaxSubmitJobsPerUser=, MaxTRESPerUser=, MaxTRESPerJob=, GrpTRES=,
     GrpJobs=, GrpSubmitJobs=, Preempt=[+-]=, PreemptMode=
  Account settings: Description=, Organization=, Parent=, and association
     settings
  User settings: Account(s)= (add), DefaultAccount=, AdminLevel=, and
     association settings
  Association settings: Fairshare=, GrpTRES=, GrpJobs=, GrpSubmitJobs=,
     MaxJobs=, MaxSubmitJobs=, MaxTRES=, MaxWall=, QOS=[+-]=, DefaultQOS=
  TRES are cpu=N,mem=N[KMGTP],node=N,gres/gpu=N; -1 clears a limit.
`

// sacctmgrMain is sacctmgr.
func sacctmgrMain(e *Env, prog string, args []string) int {
	var o mgrOpts
	var words []string
	for _, a := range args {
		switch a {
		case "-i", "--immediate":
			o.immediate = true
		case "-n", "--noheader":
			o.noHeader = true
		case "-p", "--parsable":
			o.parsable = true
		case "-P", "--parsable2":
			o.parsable2 = true
		case "-Q", "--quiet":
			o.quiet = true
		case "-s", "--associations":
			o.withAssoc = true
		case "-v", "--verbose", "-r", "--readonly":
		case "-V", "--version":
			fmt.Fprintln(e.Stdout, slurmVersion)
			return 0
		case "-h", "--help", "--usage":
			io.WriteString(e.Stdout, sacctmgrHelp)
			return 0
		default:
			if len(words) == 0 && strings.HasPrefix(a, "-") {
				fmt.Fprintf(e.Stderr, "%s: unrecognized option '%s'\nTry \"%s --help\" for more information\n", prog, a, prog)
				return 1
			}
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		e.errorf(prog, "no command given: hpc's sacctmgr has no interactive mode (try --help)")
		return 1
	}
	r := &mgrReq{withAssc: o.withAssoc}
	switch strings.ToLower(words[0]) {
	case "add", "create":
		r.action = "add"
	case "modify", "update":
		r.action = "modify"
	case "delete", "remove":
		r.action = "delete"
	case "show", "list":
		r.action = "show"
	default:
		fmt.Fprintf(e.Stderr, "invalid keyword: %s\n", words[0])
		return 1
	}
	if len(words) > 1 {
		r.entity = mgrEntity(words[1], r.action == "show")
	}
	if r.entity == "" {
		verb := map[string]string{"add": "add", "modify": "modify", "delete": "delete", "show": "list"}[r.action]
		fmt.Fprintf(e.Stderr, "No valid entity in %s command\n", verb)
		if r.action == "show" {
			fmt.Fprintln(e.Stderr, `Input line must include "Account", "Association", "Cluster", "QOS", or "User"`)
		} else {
			fmt.Fprintln(e.Stderr, `Input line must include "Account", "QOS", or "User"`)
		}
		return 1
	}
	if code, ok := r.parse(e, words[2:]); !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := e.Client(ctx)
	if err != nil {
		return mgrFail(e, prog, err)
	}
	if r.action == "show" {
		return r.show(ctx, e, prog, cl, &o)
	}
	if !o.immediate && !o.quiet {
		fmt.Fprintf(e.Stderr, "%s: note: hpc commits changes at once, without asking (as with -i)\n", prog)
	}
	return r.change(ctx, e, prog, cl, &o)
}

// mgrEntity names the entity a word means (Slurm takes prefixes).
func mgrEntity(w string, show bool) string {
	w = strings.ToLower(w)
	has := func(full string, min int) bool { return len(w) >= min && strings.HasPrefix(full, w) }
	switch {
	case has("qos", 1):
		return "qos"
	case has("users", 1):
		return "user"
	case has("accounts", 3):
		return "account"
	case show && (has("associations", 3) || w == "assocs"):
		return "assoc"
	case show && has("clusters", 2):
		return "cluster"
	}
	return ""
}

func mgrFail(e *Env, prog string, err error) int {
	var ae *api.Error
	if errors.As(err, &ae) {
		if ae.Detail != "" {
			e.errorf(prog, "%s", ae.Detail)
		}
		e.errorf(prog, "%s", ae.Message)
		return 1
	}
	e.errorf(prog, "%v", err)
	return 1
}

// parse reads the words after the entity: names, where/set, Key=Value.
func (r *mgrReq) parse(e *Env, words []string) (int, bool) {
	setting := r.action == "add"
	for _, w := range words {
		lw := strings.ToLower(w)
		if lw == "where" && r.action != "add" {
			setting = false
			continue
		}
		if lw == "set" && r.action == "modify" {
			setting = true
			continue
		}
		key, op, val, kv := mgrSplitKV(w)
		if !kv {
			if setting && r.action != "add" {
				fmt.Fprintf(e.Stdout, " Unknown option: %s\n Use keyword 'where' to modify condition\n", w)
				return 1, false
			}
			if r.action == "show" && (lw == "tree" || lw == "withassoc" || lw == "withassocs" || lw == "wassoc") {
				r.tree = r.tree || lw == "tree"
				r.withAssc = r.withAssc || lw != "tree"
				continue
			}
			if r.action == "show" && (lw == "withdeleted" || lw == "withcoord" || lw == "withcoordinators") {
				continue
			}
			r.names = append(r.names, mgrList(w)...)
			continue
		}
		if r.condition(key, op, val, setting) {
			continue
		}
		if !setting {
			fmt.Fprintf(e.Stdout, " Unknown condition: %s\n Use keyword 'set' to modify value\n", w)
			return 1, false
		}
		if code := r.setting(e, key, op, val, w); code != 0 {
			return code, false
		}
		r.given = append(r.given, w)
	}
	switch {
	case r.action == "add" && len(r.names) == 0:
		fmt.Fprintf(e.Stderr, " Need name of %s to add.\n", map[string]string{"qos": "qos", "account": "account", "user": "user"}[r.entity])
		return 1, false
	case r.action == "add" && r.entity == "user" && len(r.accounts) == 0:
		fmt.Fprintln(e.Stderr, " Need name of account to add user to.")
		return 1, false
	case r.action == "modify" && len(r.given) == 0:
		fmt.Fprintln(e.Stderr, " You didn't give me anything to set")
		return 1, false
	case r.action == "delete" && len(r.names) == 0:
		fmt.Fprintln(e.Stderr, " No conditions given to remove, not executing.")
		return 1, false
	}
	return 0, true
}

// mgrSplitKV splits Key=Value, Key+=Value and Key-=Value.
func mgrSplitKV(w string) (key, op, val string, ok bool) {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return "", "", "", false
	}
	key, op, val = w[:i], "=", w[i+1:]
	if strings.HasSuffix(key, "+") || strings.HasSuffix(key, "-") {
		op = key[len(key)-1:] + "="
		key = key[:len(key)-1]
	}
	return strings.ToLower(key), op, strings.Trim(val, `"'`), true
}

func mgrList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, strings.ToLower(f))
		}
	}
	return out
}

// condition takes the keys that select records (and, in an add, the
// names and a user's accounts). ok=false: not a condition.
func (r *mgrReq) condition(key, op, val string, setting bool) bool {
	if op != "=" {
		return false
	}
	isAdd := r.action == "add"
	switch {
	case key == "name" || key == "names":
		r.names = append(r.names, mgrList(val)...)
	case (key == "user" || key == "users") && (r.entity == "user" || r.entity == "assoc") && !setting:
		if r.entity == "user" {
			r.names = append(r.names, mgrList(val)...)
		} else {
			r.users = append(r.users, mgrList(val)...)
		}
	case (key == "account" || key == "accounts" || key == "acct" || key == "accts") && (r.entity == "user" || r.entity == "assoc") && (isAdd || !setting):
		r.accounts = append(r.accounts, mgrList(val)...)
	case (key == "account" || key == "accounts") && r.entity == "account" && !setting:
		r.names = append(r.names, mgrList(val)...)
	case key == "cluster" || key == "clusters":
		r.clusters = append(r.clusters, mgrList(val)...)
	case key == "format" && r.action == "show":
		r.format = val
	default:
		return false
	}
	return true
}

// setting takes one Key=Value of an add or modify.
func (r *mgrReq) setting(e *Env, key, op, val, word string) int {
	s := &r.set
	unknown := func() int {
		fmt.Fprintf(e.Stdout, " Unknown option: %s\n Use keyword 'where' to modify condition\n", word)
		return 1
	}
	if op != "=" && key != "preempt" && key != "qos" && key != "qoslevel" {
		return unknown()
	}
	num := func(canon string, dst **int) int {
		n, err := strconv.Atoi(val)
		if err != nil {
			fmt.Fprintf(e.Stderr, "sacctmgr: error: Invalid value for %s (%s)\n", canon, val)
			return 1
		}
		if n < 0 {
			n = -1
		}
		*dst = &n
		return 0
	}
	tres := func(dst *api.TRES) int {
		t, err := api.ParseTRES(val)
		if err != nil {
			fmt.Fprintf(e.Stderr, "sacctmgr: error: %v\n", err)
			return 1
		}
		*dst = t
		return 0
	}
	wall := func() int {
		m, err := config.ParseTime(val)
		if err != nil {
			fmt.Fprintf(e.Stderr, " Bad MaxWall time format: %s\n", word)
			return 1
		}
		if m < 0 {
			m = -1
		}
		s.MaxWallMin = &m
		return 0
	}
	lower := func(dst **string) int {
		v := strings.ToLower(val)
		*dst = &v
		return 0
	}
	listEdit := func(dst **api.ListEdit) int {
		*dst = &api.ListEdit{Op: op, Names: mgrList(val)}
		return 0
	}
	assoc := r.entity == "account" || r.entity == "user"
	switch {
	case (key == "description" || key == "desc" || key == "descr") && (r.entity == "qos" || r.entity == "account"):
		return lower(&s.Description)
	case (key == "organization" || key == "org") && r.entity == "account":
		return lower(&s.Organization)
	case key == "parent" && r.entity == "account":
		return lower(&s.Parent)
	case (key == "maxwall" || key == "maxwalldurationperjob") && (assoc || r.entity == "qos"):
		return wall()
	case (key == "grptres") && (assoc || r.entity == "qos"):
		return tres(&s.GrpTRES)
	case key == "grpjobs" && (assoc || r.entity == "qos"):
		return num("GrpJobs", &s.GrpJobs)
	case (key == "grpsubmitjobs" || key == "grpsubmit") && (assoc || r.entity == "qos"):
		return num("GrpSubmitJobs", &s.GrpSubmitJobs)
	case (key == "maxtresperjob" || key == "maxtres") && (assoc || r.entity == "qos"):
		return tres(&s.MaxTRESPerJob)
	}
	if r.entity == "qos" {
		switch key {
		case "priority":
			return num("Priority", &s.Priority)
		case "maxjobsperuser", "maxjobspu", "maxjobs":
			return num("MaxJobsPerUser", &s.MaxJobsPerUser)
		case "maxsubmitjobsperuser", "maxsubmitjobspu", "maxsubmitjobs", "maxsubmit":
			return num("MaxSubmitJobsPerUser", &s.MaxSubmitJobsPerUser)
		case "maxtresperuser", "maxtrespu":
			return tres(&s.MaxTRESPerUser)
		case "preempt":
			return listEdit(&s.Preempt)
		case "preemptmode":
			m := strings.ToLower(val)
			switch m {
			case "cluster", "off", "cancel", "requeue":
			default:
				fmt.Fprintf(e.Stderr, " Bad Preempt Mode given: %s\n", word)
				return 1
			}
			if m == "cluster" {
				m = ""
			}
			s.PreemptMode = &m
			return 0
		}
		return unknown()
	}
	switch key {
	case "fairshare", "shares":
		return num("Fairshare", &s.Fairshare)
	case "maxjobs":
		return num("MaxJobs", &s.MaxJobs)
	case "maxsubmitjobs", "maxsubmit":
		return num("MaxSubmitJobs", &s.MaxSubmitJobs)
	case "qos", "qoslevel":
		return listEdit(&s.QOS)
	case "defaultqos", "defqos":
		v := strings.ToLower(val)
		if v == "-1" {
			v = ""
		}
		s.DefaultQOS = &v
		return 0
	}
	if r.entity == "user" {
		switch key {
		case "defaultaccount", "defaultacct", "defacct":
			return lower(&s.DefaultAccount)
		case "adminlevel", "admin":
			v := val
			s.AdminLevel = &v
			return 0
		}
	}
	return unknown()
}

// ---- add, modify, delete ----

func (r *mgrReq) request() api.AcctmgrRequest {
	return api.AcctmgrRequest{Action: r.action, Entity: r.entity, Names: r.names, Accounts: r.accounts, Set: r.set}
}

func (r *mgrReq) change(ctx context.Context, e *Env, prog string, cl *api.Client, o *mgrOpts) int {
	if len(r.clusters) > 0 {
		st, err := cl.Acctmgr(ctx)
		if err != nil {
			return mgrFail(e, prog, err)
		}
		if !mgrHas(r.clusters, st.Cluster.Name) {
			fmt.Fprintln(e.Stdout, mgrNothing(r.action))
			return 1
		}
	}
	res, err := cl.AcctmgrChange(ctx, r.request())
	var ae *api.Error
	if errors.As(err, &ae) && ae.Message == api.ErrAccessDenied {
		if r.action == "add" {
			cluster := ""
			if st, err := cl.Acctmgr(ctx); err == nil {
				cluster = st.Cluster.Name
			}
			r.printAdded(e.Stdout, r.names, r.accountsFor(), cluster, false)
			what := map[string]string{"qos": "QOS", "account": "accounts", "user": "users"}[r.entity]
			fmt.Fprintf(e.Stderr, " Problem adding %s: %s\n", what, ae.Message)
			return 1
		}
		fmt.Fprintf(e.Stderr, "%s: error: %s\n Error with request: %s\n", prog, ae.Detail, ae.Message)
		return 1
	}
	if errors.As(err, &ae) && ae.Detail == "" && (strings.HasPrefix(ae.Message, " ") || strings.HasPrefix(ae.Message, prog+": error: ") || strings.HasPrefix(ae.Message, "sacctmgr: error: ")) {
		// Already in sacctmgr's words; a few of them go to stdout.
		out := e.Stderr
		if strings.HasPrefix(ae.Message, " Can't modify because") || strings.HasPrefix(ae.Message, " Unknown option") {
			out = e.Stdout
		}
		fmt.Fprintln(out, strings.Replace(ae.Message, "sacctmgr: ", prog+": ", 1))
		return 1
	}
	if err != nil {
		return mgrFail(e, prog, err)
	}
	if len(res.QOS)+len(res.Accounts)+len(res.Users)+len(res.Assocs)+len(res.UsersNoAssoc) == 0 {
		fmt.Fprintln(e.Stdout, mgrNothing(r.action))
		return 1
	}
	if o.quiet {
		return 0
	}
	w := e.Stdout
	switch r.action {
	case "add":
		var names []string
		switch r.entity {
		case "qos":
			names = res.QOS
		case "account":
			names = res.Accounts
		case "user":
			names = res.Users
		}
		r.printAddedResult(w, names, res)
	case "modify":
		switch r.entity {
		case "qos":
			mgrBlock(w, " Modified qos...", res.QOS)
		case "account":
			mgrBlock(w, " Modified accounts...", res.Accounts)
			mgrBlock(w, " Modified account associations...", mgrAssocLines(res.Assocs, res.Cluster, 20))
		case "user":
			mgrBlock(w, " Modified users...", res.Users)
			mgrBlock(w, " Modified user associations...", mgrAssocLines(res.Assocs, res.Cluster, 20))
		}
	case "delete":
		switch r.entity {
		case "qos":
			mgrBlock(w, " Deleting QOS(s)...", res.QOS)
		case "account":
			mgrBlock(w, " Deleting accounts...", res.Accounts)
		case "user":
			mgrBlock(w, " Deleting users...", res.Users)
			mgrBlock(w, " Deleting user associations...", mgrAssocLines(res.Assocs, res.Cluster, 10))
			mgrBlock(w, " Deleting users (No Associations)...", res.UsersNoAssoc)
		}
	}
	return 0
}

func mgrNothing(action string) string {
	switch action {
	case "add":
		return " Nothing new added."
	case "modify":
		return " Nothing modified"
	}
	return " Nothing deleted"
}

func mgrHas(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mgrBlock(w io.Writer, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintln(w, title)
	for _, it := range items {
		fmt.Fprintf(w, "  %s\n", it)
	}
}

// mgrAssocLines names associations as sacctmgr's modify and delete do.
func mgrAssocLines(refs []api.AssocRef, cluster string, acctWidth int) []string {
	var out []string
	for _, a := range refs {
		switch {
		case a.User != "":
			out = append(out, fmt.Sprintf("C = %-10.10s A = %-*.*s U = %-9.9s", cluster, acctWidth, acctWidth, a.Account, a.User))
		case a.Parent != "":
			out = append(out, fmt.Sprintf("C = %-10.10s A = %s of %s", cluster, a.Account, a.Parent))
		default:
			out = append(out, fmt.Sprintf("C = %-10.10s A = %s", cluster, a.Account))
		}
	}
	return out
}

// accountsFor is the accounts an add of users puts them under.
func (r *mgrReq) accountsFor() []string { return r.accounts }

// printAddedResult prints what an add did, from its result.
func (r *mgrReq) printAddedResult(w io.Writer, names []string, res *api.AcctmgrResult) {
	if r.entity != "user" {
		r.printAdded(w, names, nil, res.Cluster, true)
		return
	}
	var assocs []string
	for _, a := range res.Assocs {
		assocs = append(assocs, fmt.Sprintf("U = %-9.9s A = %-10.10s C = %-10.10s", a.User, a.Account, res.Cluster))
	}
	r.printUsersAdded(w, names, assocs)
}

// printAdded prints sacctmgr's report of an add: the names, then the
// settings as given.
func (r *mgrReq) printAdded(w io.Writer, names, accounts []string, cluster string, done bool) {
	switch r.entity {
	case "qos":
		mgrBlock(w, " Adding QOS(s)", names)
		fmt.Fprintln(w, " Settings")
		desc := ""
		if len(names) > 0 {
			desc = names[len(names)-1]
		}
		if r.set.Description != nil {
			desc = *r.set.Description
		}
		fmt.Fprintf(w, "  Description    = %s\n", desc)
		for _, l := range r.qosSettings() {
			fmt.Fprintln(w, l)
		}
	case "account":
		mgrBlock(w, " Adding Account(s)", names)
		fmt.Fprintln(w, " Settings")
		desc, org := "Account Name", "Parent/Account Name"
		if r.set.Description != nil {
			desc = *r.set.Description
		}
		if r.set.Organization != nil {
			org = *r.set.Organization
		}
		fmt.Fprintf(w, "  Description     = %s\n  Organization    = %s\n", desc, org)
		fmt.Fprintln(w, " Associations")
		for _, n := range names {
			fmt.Fprintf(w, "  A = %-10.10s C = %-10.10s\n", n, cluster)
		}
		if !done { // refused: sacctmgr stops before the association settings
			return
		}
		fmt.Fprintln(w, " Settings")
		for _, l := range r.assocSettings(true) {
			fmt.Fprintln(w, l)
		}
	case "user":
		var assocs []string
		for _, n := range names {
			for _, a := range accounts {
				assocs = append(assocs, fmt.Sprintf("U = %-9.9s A = %-10.10s C = %-10.10s", n, a, cluster))
			}
		}
		r.printUsersAdded(w, names, assocs)
	}
}

func (r *mgrReq) printUsersAdded(w io.Writer, names, assocs []string) {
	mgrBlock(w, " Adding User(s)", names)
	if len(names) > 0 && (r.set.DefaultAccount != nil || r.set.AdminLevel != nil) {
		fmt.Fprintln(w, " Settings =")
		if r.set.DefaultAccount != nil {
			fmt.Fprintf(w, "  Default Account = %s\n", *r.set.DefaultAccount)
		}
		if r.set.AdminLevel != nil {
			fmt.Fprintf(w, "  Admin Level     = %s\n", mgrAdminLevel(*r.set.AdminLevel))
		}
	}
	mgrBlock(w, " Associations =", assocs)
	fmt.Fprintln(w, " Non Default Settings")
	for _, l := range r.assocSettings(false) {
		fmt.Fprintln(w, l)
	}
}

func mgrAdminLevel(s string) string {
	switch strings.ToLower(s) {
	case "operator", "oper":
		return api.AdminOperator
	case "administrator", "admin":
		return api.AdminAdministrator
	case "none":
		return api.AdminNone
	}
	return s
}

func mgrCount(n *int) string {
	if *n < 0 {
		return "NONE"
	}
	return strconv.Itoa(*n)
}

func mgrWall(m *int64) string {
	if *m < 0 {
		return "NONE"
	}
	return config.FormatTimeLong(*m)
}

// qosSettings are the "  Key = Value" lines of an add qos, in sacctmgr's
// order and spacing (MaxJobsPerUser's is Slurm's own).
func (r *mgrReq) qosSettings() []string {
	s := &r.set
	var out []string
	add := func(k, v string) { out = append(out, fmt.Sprintf("  %-24s = %s", k, v)) }
	if s.GrpJobs != nil {
		add("GrpJobs", mgrCount(s.GrpJobs))
	}
	if s.GrpSubmitJobs != nil {
		add("GrpSubmitJobs", mgrCount(s.GrpSubmitJobs))
	}
	if s.GrpTRES != nil {
		add("GrpTRES", s.GrpTRES.String())
	}
	if s.MaxJobsPerUser != nil {
		out = append(out, "  MaxJobsPerUser = "+mgrCount(s.MaxJobsPerUser))
	}
	if s.MaxSubmitJobsPerUser != nil {
		add("MaxSubmitJobsPerUser", mgrCount(s.MaxSubmitJobsPerUser))
	}
	if s.MaxTRESPerJob != nil {
		add("MaxTRESPerJob", s.MaxTRESPerJob.String())
	}
	if s.MaxTRESPerUser != nil {
		add("MaxTRESPerUser", s.MaxTRESPerUser.String())
	}
	if s.MaxWallMin != nil {
		add("MaxWall", mgrWall(s.MaxWallMin))
	}
	if s.Preempt != nil {
		p := append([]string{}, s.Preempt.Names...)
		sort.Strings(p)
		add("Preempt", strings.Join(p, ","))
	}
	if s.PreemptMode != nil {
		m := strings.ToUpper(*s.PreemptMode)
		if m == "" {
			m = "CLUSTER"
		}
		add("PreemptMode", m)
	}
	if s.Priority != nil {
		add("Priority", mgrCount(s.Priority))
	}
	return out
}

// assocSettings are the association "  Key = Value" lines of an add.
func (r *mgrReq) assocSettings(account bool) []string {
	s := &r.set
	var out []string
	add := func(k, v string) { out = append(out, fmt.Sprintf("  %-13s = %s", k, v)) }
	if s.Fairshare != nil {
		add("Fairshare", mgrCount(s.Fairshare))
	}
	if s.GrpJobs != nil {
		add("GrpJobs", mgrCount(s.GrpJobs))
	}
	if s.GrpSubmitJobs != nil {
		add("GrpSubmitJobs", mgrCount(s.GrpSubmitJobs))
	}
	if s.GrpTRES != nil {
		add("GrpTRES", s.GrpTRES.String())
	}
	if s.MaxJobs != nil {
		add("MaxJobs", mgrCount(s.MaxJobs))
	}
	if s.MaxSubmitJobs != nil {
		add("MaxSubmitJobs", mgrCount(s.MaxSubmitJobs))
	}
	if s.MaxTRESPerJob != nil {
		add("MaxTRES", s.MaxTRESPerJob.String())
	}
	if s.MaxWallMin != nil {
		add("MaxWall", mgrWall(s.MaxWallMin))
	}
	if account {
		parent := "root"
		if s.Parent != nil && *s.Parent != "" {
			parent = *s.Parent
		}
		add("Parent", parent)
	}
	if s.QOS != nil {
		q := append([]string{}, s.QOS.Names...)
		sort.Strings(q)
		add("QOS", s.QOS.Op[:len(s.QOS.Op)-1]+strings.Join(q, ","))
	}
	if s.DefaultQOS != nil {
		add("DefQOS", *s.DefaultQOS)
	}
	return out
}

// ---- show ----

// mgrRow is one line of a show: the records it prints from.
type mgrRow struct {
	qos     *api.QOS
	account *api.Account
	user    *api.AcctUser
	assoc   *api.Assoc
	cluster *api.AcctCluster
	tree    bool
}

// mgrField is one column sacctmgr can print.
type mgrField struct {
	names  []string // format= names, the first canonical
	header string
	width  int // negative: left-aligned
	assoc  bool
	get    func(r *mgrRow) string
}

func pInt(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}

func pWall(m *int64) string {
	if m == nil {
		return ""
	}
	return config.FormatTimeLong(*m)
}

func tresOf(t api.TRES, key string) string {
	v, ok := t[key]
	if !ok {
		return ""
	}
	if key == "mem" {
		return api.FormatMB(v)
	}
	return strconv.FormatInt(v, 10)
}

func assocField(f func(a *api.Assoc) string) func(r *mgrRow) string {
	return func(r *mgrRow) string {
		if r.assoc == nil {
			return ""
		}
		return f(r.assoc)
	}
}

func blank(*mgrRow) string { return "" }

// mgrQOSFields are the columns of show qos.
var mgrQOSFields = []mgrField{
	{[]string{"name"}, "Name", 10, false, func(r *mgrRow) string { return r.qos.Name }},
	{[]string{"priority"}, "Priority", 10, false, func(r *mgrRow) string { return strconv.Itoa(r.qos.Priority) }},
	{[]string{"gracetime"}, "GraceTime", 10, false, func(r *mgrRow) string { return "00:00:00" }},
	{[]string{"preempt"}, "Preempt", 10, false, func(r *mgrRow) string { return strings.Join(r.qos.Preempt, ",") }},
	{[]string{"preemptexempttime"}, "PreemptExemptTime", 19, false, blank},
	{[]string{"preemptmode"}, "PreemptMode", 11, false, func(r *mgrRow) string {
		if r.qos.PreemptMode == "" {
			return "cluster"
		}
		return strings.ToLower(r.qos.PreemptMode)
	}},
	{[]string{"flags"}, "Flags", 40, false, blank},
	{[]string{"usagethreshold", "usagethres"}, "UsageThres", 10, false, blank},
	{[]string{"usagefactor"}, "UsageFactor", 11, false, func(r *mgrRow) string { return "1.000000" }},
	{[]string{"grptres"}, "GrpTRES", 13, false, func(r *mgrRow) string { return r.qos.GrpTRES.String() }},
	{[]string{"grptresmins"}, "GrpTRESMins", 13, false, blank},
	{[]string{"grptresrunmins", "grptresrunmin"}, "GrpTRESRunMins", 13, false, blank},
	{[]string{"grpjobs"}, "GrpJobs", 7, false, func(r *mgrRow) string { return pInt(r.qos.GrpJobs) }},
	{[]string{"grpsubmitjobs", "grpsubmit"}, "GrpSubmit", 9, false, func(r *mgrRow) string { return pInt(r.qos.GrpSubmitJobs) }},
	{[]string{"grpwall"}, "GrpWall", 11, false, blank},
	{[]string{"maxtresperjob", "maxtres"}, "MaxTRES", 13, false, func(r *mgrRow) string { return r.qos.MaxTRESPerJob.String() }},
	{[]string{"maxtrespernode"}, "MaxTRESPerNode", 14, false, blank},
	{[]string{"maxtresmins"}, "MaxTRESMins", 13, false, blank},
	{[]string{"maxwalldurationperjob", "maxwall"}, "MaxWall", 11, false, func(r *mgrRow) string { return pWall(r.qos.MaxWallMin) }},
	{[]string{"maxtresperuser", "maxtrespu"}, "MaxTRESPU", 13, false, func(r *mgrRow) string { return r.qos.MaxTRESPerUser.String() }},
	{[]string{"maxjobsperuser", "maxjobspu"}, "MaxJobsPU", 9, false, func(r *mgrRow) string { return pInt(r.qos.MaxJobsPerUser) }},
	{[]string{"maxsubmitjobsperuser", "maxsubmitpu", "maxsubmitjobspu"}, "MaxSubmitPU", 11, false, func(r *mgrRow) string { return pInt(r.qos.MaxSubmitJobsPerUser) }},
	{[]string{"maxtresperaccount", "maxtrespa"}, "MaxTRESPA", 13, false, blank},
	{[]string{"maxjobsperaccount", "maxjobspa"}, "MaxJobsPA", 9, false, blank},
	{[]string{"maxsubmitjobsperaccount", "maxsubmitpa"}, "MaxSubmitPA", 11, false, blank},
	{[]string{"mintresperjob", "mintres"}, "MinTRES", 13, false, blank},
	{[]string{"description"}, "Descr", 20, false, func(r *mgrRow) string { return r.qos.Description }},
	{[]string{"minpriothreshold", "minprio"}, "MinPrioThres", 12, false, blank},
	{[]string{"id"}, "ID", 6, false, func(r *mgrRow) string { return strconv.Itoa(r.qos.ID) }},
}

// mgrAssocFields are the association columns (show assoc, and show user,
// account and cluster with associations).
var mgrAssocFields = []mgrField{
	{[]string{"cluster"}, "Cluster", 10, true, func(r *mgrRow) string {
		if r.cluster == nil {
			return ""
		}
		return r.cluster.Name
	}},
	{[]string{"account"}, "Account", 10, true, assocField(func(a *api.Assoc) string { return a.Account })},
	{[]string{"user"}, "User", 10, true, assocField(func(a *api.Assoc) string { return a.User })},
	{[]string{"partition"}, "Partition", 10, true, blank},
	{[]string{"parentname"}, "ParentName", 10, true, assocField(func(a *api.Assoc) string {
		if a.User != "" {
			return ""
		}
		return a.Parent
	})},
	{[]string{"fairshare", "shares"}, "Share", 9, true, assocField(func(a *api.Assoc) string { return strconv.Itoa(a.Shares) })},
	{[]string{"priority"}, "Priority", 10, true, blank},
	{[]string{"grpjobs"}, "GrpJobs", 7, true, assocField(func(a *api.Assoc) string { return pInt(a.GrpJobs) })},
	{[]string{"grptres"}, "GrpTRES", 13, true, assocField(func(a *api.Assoc) string { return a.GrpTRES.String() })},
	{[]string{"grpsubmitjobs", "grpsubmit"}, "GrpSubmit", 9, true, assocField(func(a *api.Assoc) string { return pInt(a.GrpSubmitJobs) })},
	{[]string{"grpwall"}, "GrpWall", 11, true, blank},
	{[]string{"grptresmins"}, "GrpTRESMins", 13, true, blank},
	{[]string{"grptresrunmins", "grptresrunmin"}, "GrpTRESRunMins", 13, true, blank},
	{[]string{"grpnodes"}, "GrpNodes", 8, true, assocField(func(a *api.Assoc) string { return tresOf(a.GrpTRES, "node") })},
	{[]string{"grpcpus"}, "GrpCPUs", 8, true, assocField(func(a *api.Assoc) string { return tresOf(a.GrpTRES, "cpu") })},
	{[]string{"grpmem"}, "GrpMem", 7, true, assocField(func(a *api.Assoc) string { return tresOf(a.GrpTRES, "mem") })},
	{[]string{"grpcpumins"}, "GrpCPUMins", 11, true, blank},
	{[]string{"maxjobs"}, "MaxJobs", 7, true, assocField(func(a *api.Assoc) string { return pInt(a.MaxJobs) })},
	{[]string{"maxtresperjob", "maxtres"}, "MaxTRES", 13, true, assocField(func(a *api.Assoc) string { return a.MaxTRESPerJob.String() })},
	{[]string{"maxtrespernode"}, "MaxTRESPerNode", 14, true, blank},
	{[]string{"maxsubmitjobs", "maxsubmit"}, "MaxSubmit", 9, true, assocField(func(a *api.Assoc) string { return pInt(a.MaxSubmitJobs) })},
	{[]string{"maxwalldurationperjob", "maxwall"}, "MaxWall", 11, true, assocField(func(a *api.Assoc) string { return pWall(a.MaxWallMin) })},
	{[]string{"maxtresmins"}, "MaxTRESMins", 13, true, blank},
	{[]string{"maxtresperuser", "maxtrespu"}, "MaxTRESPU", 13, true, blank},
	{[]string{"maxnodes"}, "MaxNodes", 8, true, assocField(func(a *api.Assoc) string { return tresOf(a.MaxTRESPerJob, "node") })},
	{[]string{"maxcpus"}, "MaxCPUs", 8, true, assocField(func(a *api.Assoc) string { return tresOf(a.MaxTRESPerJob, "cpu") })},
	{[]string{"maxcpumins"}, "MaxCPUMins", 11, true, blank},
	{[]string{"qos", "qoslevel"}, "QOS", 20, true, assocField(func(a *api.Assoc) string { return strings.Join(a.QOS, ",") })},
	{[]string{"defaultqos", "defqos"}, "Def QOS", 9, true, assocField(func(a *api.Assoc) string { return a.DefaultQOS })},
}

var mgrUserFields = []mgrField{
	{[]string{"user", "name"}, "User", 10, false, func(r *mgrRow) string { return r.user.Name }},
	{[]string{"defaultaccount", "defacct"}, "Def Acct", 10, false, func(r *mgrRow) string { return r.user.DefaultAccount }},
	{[]string{"adminlevel", "admin"}, "Admin", 9, false, func(r *mgrRow) string { return r.user.AdminLevel }},
}

var mgrAccountFields = []mgrField{
	{[]string{"account", "name"}, "Account", 10, false, func(r *mgrRow) string { return r.account.Name }},
	{[]string{"description", "descr"}, "Descr", 20, false, func(r *mgrRow) string { return r.account.Description }},
	{[]string{"organization", "org"}, "Org", 20, false, func(r *mgrRow) string { return r.account.Organization }},
}

var mgrClusterFields = []mgrField{
	{[]string{"cluster", "name"}, "Cluster", 10, false, func(r *mgrRow) string { return r.cluster.Name }},
	{[]string{"controlhost"}, "ControlHost", 15, false, func(r *mgrRow) string { return r.cluster.ControlHost }},
	{[]string{"controlport"}, "ControlPort", 12, false, func(r *mgrRow) string { return strconv.Itoa(r.cluster.ControlPort) }},
	{[]string{"rpc"}, "RPC", 5, false, func(r *mgrRow) string { return strconv.Itoa(r.cluster.RPC) }},
}

// mgrDefaults are the columns each show prints without format=.
var mgrDefaults = map[string]string{
	"qos": "Name,Priority,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags,UsageThres,UsageFactor,GrpTRES,GrpTRESMins," +
		"GrpTRESRunMin,GrpJobs,GrpSubmit,GrpWall,MaxTRES,MaxTRESPerNode,MaxTRESMins,MaxWall,MaxTRESPU,MaxJobsPU,MaxSubmitPU," +
		"MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES",
	"assoc": "Cluster,Account,User,Partition,Share,Priority,GrpJobs,GrpTRES,GrpSubmit,GrpWall,GrpTRESMins,MaxJobs,MaxTRES," +
		"MaxTRESPerNode,MaxSubmit,MaxWall,MaxTRESMins,QOS,DefQOS,GrpTRESRunMin",
	"user":          "User,DefAcct,Admin",
	"user+assoc":    "User,DefAcct,Admin,Cluster,Account,Partition,Share,Priority,MaxJobs,MaxNodes,MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,DefQOS",
	"account":       "Account,Descr,Org",
	"account+assoc": "Account,Descr,Org,Cluster,ParentName,User,Share,Priority,GrpJobs,GrpNodes,GrpCPUs,GrpMem,GrpSubmit,GrpWall,GrpCPUMins,MaxJobs,MaxNodes,MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,DefQOS",
	"cluster":       "Cluster,ControlHost,ControlPort,RPC,Share,GrpJobs,GrpTRES,GrpSubmit,MaxJobs,MaxTRES,MaxSubmit,MaxWall,QOS,DefQOS",
}

// mgrColumn is a field chosen for printing, with its width.
type mgrColumn struct {
	f     mgrField
	width int
}

// columns resolves a format= list against the tables of the entity.
func (r *mgrReq) columns() ([]mgrColumn, error) {
	var tables [][]mgrField
	switch r.entity {
	case "qos":
		tables = [][]mgrField{mgrQOSFields}
	case "assoc":
		tables = [][]mgrField{mgrAssocFields}
	case "user":
		tables = [][]mgrField{mgrUserFields, mgrAssocFields}
	case "account":
		tables = [][]mgrField{mgrAccountFields, mgrAssocFields}
	case "cluster":
		tables = [][]mgrField{mgrClusterFields, mgrAssocFields}
	}
	spec := r.format
	if spec == "" {
		key := r.entity
		if r.withAssc && (key == "user" || key == "account") {
			key += "+assoc"
		}
		spec = mgrDefaults[key]
	}
	var out []mgrColumn
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, width, hasWidth := item, 0, false
		if i := strings.IndexByte(item, '%'); i >= 0 {
			n, err := strconv.Atoi(item[i+1:])
			if err != nil || n == 0 {
				return nil, fmt.Errorf("Invalid field width in '%s'", item)
			}
			name, width, hasWidth = item[:i], n, true
		}
		f, ok := mgrFindField(tables, strings.ToLower(strings.ReplaceAll(name, " ", "")))
		if !ok {
			return nil, fmt.Errorf("Unknown field '%s'", name)
		}
		if !hasWidth {
			width = f.width
			if r.tree && f.names[0] == "account" && f.assoc {
				width = -20
			}
		}
		out = append(out, mgrColumn{f, width})
	}
	return out, nil
}

// mgrFindField matches a format= name: an exact name first, then the first
// field (in table order) a name is a prefix of, as sacctmgr does.
func mgrFindField(tables [][]mgrField, name string) (mgrField, bool) {
	for _, t := range tables {
		for _, f := range t {
			for _, n := range f.names {
				if n == name || strings.EqualFold(strings.ReplaceAll(f.header, " ", ""), name) {
					return f, true
				}
			}
		}
	}
	if len(name) < 2 {
		return mgrField{}, false
	}
	for _, t := range tables {
		for _, f := range t {
			for _, n := range f.names {
				if strings.HasPrefix(n, name) {
					return f, true
				}
			}
		}
	}
	return mgrField{}, false
}

func (r *mgrReq) show(ctx context.Context, e *Env, prog string, cl *api.Client, o *mgrOpts) int {
	cols, err := r.columns()
	if err != nil {
		fmt.Fprintln(e.Stderr, err)
		return 1
	}
	st, err := cl.Acctmgr(ctx)
	if err != nil {
		return mgrFail(e, prog, err)
	}
	clusterOK := len(r.clusters) == 0 || mgrHas(r.clusters, st.Cluster.Name)
	pick := func(list []string, v string) bool { return len(list) == 0 || mgrHas(list, v) }
	var rows []*mgrRow
	switch r.entity {
	case "qos":
		for i := range st.QOS {
			if pick(r.names, st.QOS[i].Name) {
				rows = append(rows, &mgrRow{qos: &st.QOS[i]})
			}
		}
		if len(r.names) > 0 { // sacctmgr lists QoS it was asked for by name
			sort.SliceStable(rows, func(i, j int) bool { return rows[i].qos.Name < rows[j].qos.Name })
		}
	case "cluster":
		if pick(r.names, st.Cluster.Name) && clusterOK {
			row := &mgrRow{cluster: &st.Cluster}
			for i := range st.Assocs {
				if st.Assocs[i].Account == "root" && st.Assocs[i].User == "" {
					a := st.Assocs[i]
					a.Account = ""
					row.assoc = &a
				}
			}
			rows = append(rows, row)
		}
	case "assoc":
		for i := range st.Assocs {
			a := &st.Assocs[i]
			if clusterOK && pick(r.names, a.Account) && pick(r.accounts, a.Account) && (len(r.users) == 0 || mgrHas(r.users, a.User)) {
				rows = append(rows, &mgrRow{assoc: a, cluster: &st.Cluster, tree: r.tree})
			}
		}
	case "user":
		for i := range st.Users {
			u := &st.Users[i]
			if !pick(r.names, u.Name) {
				continue
			}
			if !r.withAssc {
				rows = append(rows, &mgrRow{user: u})
				continue
			}
			for j := range st.Assocs {
				a := &st.Assocs[j]
				if a.User == u.Name && clusterOK && pick(r.accounts, a.Account) {
					rows = append(rows, &mgrRow{user: u, assoc: a, cluster: &st.Cluster})
				}
			}
		}
	case "account":
		for i := range st.Accounts {
			acct := &st.Accounts[i]
			if !pick(r.names, acct.Name) {
				continue
			}
			if !r.withAssc {
				rows = append(rows, &mgrRow{account: acct})
				continue
			}
			// The account's own association, then its users (sacctmgr
			// lists them last first).
			var users []*mgrRow
			for j := range st.Assocs {
				a := &st.Assocs[j]
				if a.Account != acct.Name || !clusterOK {
					continue
				}
				row := &mgrRow{account: acct, assoc: a, cluster: &st.Cluster}
				if a.User == "" {
					rows = append(rows, row)
				} else {
					users = append(users, row)
				}
			}
			for j := len(users) - 1; j >= 0; j-- {
				rows = append(rows, users[j])
			}
		}
	}
	mgrPrint(e.Stdout, cols, rows, o)
	return 0
}

// mgrPrint prints rows as sacctmgr's print_fields does: right-aligned
// columns of fixed width (a '+' marks a cut value), or '|'-separated.
func mgrPrint(w io.Writer, cols []mgrColumn, rows []*mgrRow, o *mgrOpts) {
	var b strings.Builder
	line := func(cells []string, header bool) {
		for i, c := range cells {
			wd := cols[i].width
			switch {
			case o.parsable2 && i == len(cells)-1:
				b.WriteString(c)
			case o.parsable || o.parsable2:
				b.WriteString(c)
				b.WriteByte('|')
			default:
				n := max(wd, -wd)
				if len(c) > n {
					if header {
						c = c[:n]
					} else {
						c = c[:n-1] + "+"
					}
				}
				if wd < 0 {
					fmt.Fprintf(&b, "%-*s ", n, c)
				} else {
					fmt.Fprintf(&b, "%*s ", n, c)
				}
			}
		}
		b.WriteByte('\n')
	}
	if !o.noHeader {
		var hs, dashes []string
		for _, c := range cols {
			hs = append(hs, c.f.header)
			dashes = append(dashes, strings.Repeat("-", max(c.width, -c.width)))
		}
		line(hs, true)
		if !o.parsable && !o.parsable2 {
			line(dashes, true)
		}
	}
	for _, r := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			if c.f.assoc && r.assoc == nil && c.f.names[0] != "cluster" {
				continue
			}
			v := c.f.get(r)
			if r.tree && c.f.assoc && c.f.names[0] == "account" {
				v = strings.Repeat(" ", r.assoc.Depth) + v
			}
			cells[i] = v
		}
		line(cells, false)
	}
	io.WriteString(w, b.String())
}
