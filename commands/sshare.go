package commands

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"sync"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sshareOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts("all,a", "accounts,A,:", "helpformat,e", "users,u,:", "Users,U", "long,l", "partition,m",
		"cluster,M,:", "clusters,M,:", "noheader,n", "format,o,:", "parsable,p", "parsable2,P", "verbose,v",
		"help", "usage", "version,V")
})

const sshareUsage = "Usage: sshare [-a] [-A accounts] [-u users] [-U] [-l] [-m] [-n] [-o fields]\n" +
	"              [-p|-P] [-M cluster] [-v] [--help] [--usage] [-V]\n"

const sshareHelp = `Usage: sshare [OPTIONS]
  -a, --all                every user's associations, not only yours
  -A, --accounts=accounts  only these accounts and their users
  -e, --helpformat         list the fields -o accepts
  -l, --long               also the normalized usage
  -m, --partition          a Partition column (hpc's associations have none)
  -M, --cluster, --clusters=name
                           the cluster to ask (hpc runs one: its name or all)
  -n, --noheader           no header lines
  -o, --format=fields      these fields, Name%width to size one
  -p, --parsable           fields separated by '|', with a '|' at the end
  -P, --parsable2          fields separated by '|', nothing at the end
  -u, --users=users        only these users' associations
  -U, --Users              only user associations, no account lines
  -v, --verbose            say which users and accounts were asked for

Help options:
      --help               print this help
      --usage              print a short list of the options
  -V, --version            print the Slurm version hpc follows
`

// sshareMain is sshare: each association's shares, usage and Fair Tree
// fair-share factor, from the leader.
func sshareMain(e *Env, prog string, args []string) int {
	v := shareView{accts: map[string]bool{}, users: map[string]bool{}}
	var acctList, userList []string
	verbose := 0
	cluster := ""
	_, code, done := parseOpts(e, prog, sshareOpts(), args, func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "a":
			v.all = true
		case "A":
			for _, s := range splitList(val) {
				v.accts[s] = true
				acctList = append(acctList, s)
			}
		case "e":
			fmt.Fprint(e.Stdout, sshareHelpFormat())
			return quit{0}
		case "u":
			if val == "-1" {
				v.all = true
				break
			}
			v.all = false
			for _, s := range splitList(val) {
				v.users[s] = true
				userList = append(userList, s)
			}
		case "U":
			v.usersOnly = true
		case "l":
			v.long = true
		case "m":
			v.partition = true
		case "M":
			name, ok := resolveClusters(e, prog, val)
			if !ok {
				return quit{1}
			}
			cluster = name
		case "o":
			v.fields = append(v.fields, splitList(val)...)
		case "v":
			verbose++
		case "n":
			v.noHeader = true
		case "p":
			v.sep, v.trailing = "|", true
		case "P":
			v.sep, v.trailing = "|", false
		default:
			if handled, err := helpOrVersion(e, o.ID(), sshareHelp, sshareUsage); handled {
				return err
			}
		}
		return nil
	})
	if done {
		return code
	}
	if _, err := shareColumns(v); err != nil {
		e.errorf(prog, "%v", err)
		return 1
	}
	if !v.all && len(v.users) == 0 {
		if u, err := user.LookupId(strconv.Itoa(e.UID)); err == nil {
			v.users[u.Username] = true
			userList = []string{u.Username}
		} else {
			v.all = true
		}
	}
	if verbose > 0 {
		sshareVerbose(e, v.all, userList, acctList)
	}
	cl, ctx, cancel, err := connect(e)
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	defer cancel()
	resp, err := cl.Share(ctx)
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	if cluster != "" {
		fmt.Fprintf(e.Stdout, "CLUSTER: %s\n", cluster)
	}
	fmt.Fprint(e.Stdout, formatSshare(resp, v))
	return 0
}

// sshareVerbose is what sshare -v says on stderr: the users and accounts
// asked for.
func sshareVerbose(e *Env, all bool, users, accts []string) {
	list := func(title string, names []string) {
		fmt.Fprintf(e.Stderr, "%s requested:\n", title)
		for _, n := range names {
			fmt.Fprintf(e.Stderr, "\t: %s\n", n)
		}
	}
	if all {
		list("Users", []string{"all"})
	} else {
		list("Users", users)
	}
	if len(accts) == 0 {
		accts = []string{"all"}
	}
	list("Accounts", accts)
}

type shareView struct {
	all, long, noHeader bool
	usersOnly           bool // -U
	partition           bool // -m
	fields              []string
	accts, users        map[string]bool
	sep                 string // "" for fixed-width columns
	trailing            bool   // -p: a separator after the last field too
}

// sshareFields are sshare's fields, in its order (which decides what a
// prefix names): width, and whether values are left-justified.
var sshareFields = []column{
	{"Account", 20, true}, {"Cluster", 10, false}, {"EffectvUsage", 13, false}, {"FairShare", 10, false},
	{"GrpTRESMins", 30, false}, {"GrpTRESRaw", 30, false}, {"ID", 6, false}, {"LevelFS", 10, false},
	{"NormShares", 11, false}, {"NormUsage", 11, false}, {"Partition", 12, false}, {"RawShares", 10, false},
	{"RawUsage", 11, false}, {"TRESRunMins", 30, false}, {"User", 10, false},
}

// sshareHelpFormat is sshare -e: the field names, four to a line.
func sshareHelpFormat() string {
	var b strings.Builder
	for i, f := range sshareFields {
		switch {
		case i&3 != 0:
			b.WriteString(" ")
		case i > 0:
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%-17s", f.title)
	}
	return b.String() + "\n"
}

// shareColumns resolves the fields to print: -o's (names matched by
// prefix, case-insensitively, "Name%N" setting a width) or the default
// set of -l and -m.
func shareColumns(v shareView) ([]column, error) {
	names := v.fields
	if len(names) == 0 {
		names = []string{"Account", "User"}
		if v.partition {
			names = append(names, "Partition")
		}
		names = append(names, "RawShares", "NormShares", "RawUsage")
		if v.long {
			names = append(names, "NormUsage")
		}
		names = append(names, "EffectvUsage", "FairShare")
		if v.long {
			names = append(names, "LevelFS")
		}
	}
	var cols []column
	for _, n := range names {
		name, width, _ := strings.Cut(n, "%")
		found := false
		for _, f := range sshareFields {
			if len(name) <= len(f.title) && strings.EqualFold(f.title[:len(name)], name) {
				if w, err := strconv.Atoi(width); err == nil && w != 0 {
					f.width, f.left = absInt(w), w < 0
				}
				cols = append(cols, f)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("Invalid field requested: \"%s\"", name)
		}
	}
	return cols, nil
}

func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// formatSshare prints sshare's table: accounts always (those under -A when
// given; none with -U), user associations of the selected users (all with
// -a).
func formatSshare(resp *api.ShareResponse, v shareView) string {
	cols, _ := shareColumns(v)
	t := &tableWriter{cols: cols, sep: v.sep, trailing: v.trailing, noHeader: v.noHeader}
	t.header()
	// Under -A, an account's subtree is shown (its depth marks it).
	inAcct := -1
	for _, r := range resp.Rows {
		if len(v.accts) > 0 {
			if inAcct >= 0 && r.Depth <= inAcct {
				inAcct = -1
			}
			if inAcct < 0 && r.User == "" && v.accts[r.Account] {
				inAcct = r.Depth
			}
			if inAcct < 0 {
				continue
			}
		}
		if (r.User != "" && !v.all && !v.users[r.User]) || (r.User == "" && v.usersOnly) {
			continue
		}
		vals := make([]string, len(cols))
		for i, c := range cols {
			vals[i] = shareValue(resp, r, c.title)
		}
		t.line(vals, false)
	}
	return t.b.String()
}

// shareValue is one field of an association's line.
func shareValue(resp *api.ShareResponse, r api.ShareRow, field string) string {
	f6 := func(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
	switch field {
	case "Account":
		return strings.Repeat(" ", r.Depth) + r.Account
	case "Cluster":
		return resp.Cluster
	case "User":
		return r.User
	case "RawShares":
		switch {
		case r.Depth == 0:
			return "" // root has no share of its own
		case r.RawShares < 0:
			return "0"
		}
		return strconv.Itoa(r.RawShares)
	case "NormShares":
		if r.Depth == 0 {
			return f6(0)
		}
		return f6(r.NormShares)
	case "RawUsage":
		return strconv.FormatInt(int64(r.RawUsage), 10)
	case "NormUsage":
		return f6(r.NormUsage)
	case "EffectvUsage":
		return f6(r.EffectvUsage)
	case "FairShare":
		if r.User == "" {
			return ""
		}
		return f6(r.FairShare)
	case "LevelFS":
		switch {
		case r.Depth == 0:
			return ""
		case r.LevelFS < 0:
			return "inf"
		}
		return f6(r.LevelFS)
	}
	// ID, Partition, GrpTRESMins, GrpTRESRaw, TRESRunMins: hpc's
	// associations have no id, partition or TRES limits.
	return ""
}
