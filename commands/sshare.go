package commands

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sshareOpts = opts("all,a", "accounts,A,:", "users,u,:", "long,l", "noheader,n", "parsable,p", "parsable2,P",
	"help", "usage", "version,V")

const sshareUsage = "Usage: sshare [-a] [-A accounts] [-u users] [-l] [-n] [-p|-P] [--help]\n" +
	"              [--usage] [-V]\n"

const sshareHelp = `Usage: sshare [OPTIONS]
  -a, --all                every user's associations, not only yours
  -A, --accounts=accounts  only these accounts and their users
  -l, --long               also the normalized usage
  -n, --noheader           no header lines
  -p, --parsable           fields separated by '|', with a '|' at the end
  -P, --parsable2          fields separated by '|', nothing at the end
  -u, --users=users        only these users' associations

Help options:
      --help               print this help
      --usage              print a short list of the options
  -V, --version            print the Slurm version hpc follows
`

// sshareMain is sshare: each association's shares, usage and Fair Tree
// fair-share factor, from the leader.
func sshareMain(e *Env, prog string, args []string) int {
	v := shareView{accts: map[string]bool{}, users: map[string]bool{}}
	_, code, done := parseOpts(e, prog, sshareOpts, args, func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "a":
			v.all = true
		case "A":
			for _, s := range splitList(val) {
				v.accts[s] = true
			}
		case "u":
			for _, s := range splitList(val) {
				v.users[s] = true
			}
		case "l":
			v.long = true
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
	if !v.all && len(v.users) == 0 {
		if u, err := user.LookupId(strconv.Itoa(e.UID)); err == nil {
			v.users[u.Username] = true
		} else {
			v.all = true
		}
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
	fmt.Fprint(e.Stdout, formatSshare(resp, v))
	return 0
}

type shareView struct {
	all, long, noHeader bool
	accts, users        map[string]bool
	sep                 string // "" for fixed-width columns
	trailing            bool   // -p: a separator after the last field too
}

// formatSshare prints sshare's table: accounts always (those under -A when
// given), user associations of the selected users (all with -a).
func formatSshare(resp *api.ShareResponse, v shareView) string {
	cols := []column{{"Account", 20, true}, {"User", 10, false}, {"RawShares", 10, false},
		{"NormShares", 11, false}, {"RawUsage", 11, false}}
	if v.long {
		cols = append(cols, column{"NormUsage", 11, false})
	}
	cols = append(cols, column{"EffectvUsage", 13, false}, column{"FairShare", 10, false})
	if v.long {
		cols = append(cols, column{"LevelFS", 10, false})
	}
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
		if r.User != "" && !v.all && !v.users[r.User] {
			continue
		}
		f6 := func(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
		name := strings.Repeat(" ", r.Depth) + r.Account
		raw := strconv.Itoa(r.RawShares)
		if r.RawShares < 0 {
			raw = "0"
		}
		fs := ""
		if r.User != "" {
			fs = f6(r.FairShare)
		}
		vals := []string{name, r.User, raw, f6(r.NormShares), strconv.FormatInt(int64(r.RawUsage), 10)}
		if r.Depth == 0 {
			vals[2], vals[3] = "", f6(0) // root has no share of its own
		}
		if v.long {
			vals = append(vals, f6(r.NormUsage))
		}
		vals = append(vals, f6(r.EffectvUsage), fs)
		if v.long {
			lfs := ""
			switch {
			case r.Depth == 0:
			case r.LevelFS < 0:
				lfs = "inf"
			default:
				lfs = f6(r.LevelFS)
			}
			vals = append(vals, lfs)
		}
		t.line(vals, false)
	}
	return t.b.String()
}
