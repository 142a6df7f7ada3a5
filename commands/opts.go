package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/hostlist"
	"hpc/cluster/jobspec"
	"hpc/cluster/openapi"
)

// slurmVersion is what the Slurm-named commands print for -V/--version:
// the Slurm release whose behaviour they follow, spelled as Debian's
// slurm-wlm package prints it.
const slurmVersion = "slurm-wlm " + openapi.SlurmVersion

// quit stops option parsing with an exit status; whatever had to be said
// was printed.
type quit struct{ code int }

func (q quit) Error() string { return "exit " + strconv.Itoa(q.code) }

// parseOpts runs getopt over a Slurm command's arguments. getopt's own
// errors print "<prog>: <message>" and Slurm's "Try ... --help" line and
// end the command with status 1, as squeue, sinfo, scancel, sacct and
// scontrol do; fn may stop it with quit. done reports that the command is
// over, with status code.
func parseOpts(e *Env, prog string, g *jobspec.Getopt, args []string, fn func(o *jobspec.Opt, val string, has bool) error) (rest []string, code int, done bool) {
	rest, err := g.Parse(args, fn)
	var ge *jobspec.GetoptError
	var q quit
	switch {
	case err == nil:
		return rest, 0, false
	case errors.As(err, &ge):
		fmt.Fprintf(e.Stderr, "%s: %s\n", prog, ge.Msg)
		if prog != "sacct" { // sacct lets getopt speak and stops there
			fmt.Fprintln(e.Stderr, jobspec.TryHelp(prog))
		}
		return nil, 1, true
	case errors.As(err, &q):
		return nil, q.code, true
	}
	e.errorf(prog, "%v", err)
	return nil, 1, true
}

// opts builds a getopt table from "long,short,arg" shorthand: arg is one of
// "" (no argument), ":" (required) or "::" (optional). Rows sharing a
// short letter, or a key given after a fourth comma, are aliases.
func opts(rows ...string) *jobspec.Getopt {
	g := &jobspec.Getopt{Permute: true}
	for _, r := range rows {
		f := strings.Split(r, ",")
		o := jobspec.Opt{Long: f[0]}
		if len(f) > 1 && f[1] != "" {
			o.Short = f[1][0]
		}
		if len(f) > 2 {
			switch f[2] {
			case ":":
				o.Arg = jobspec.RequiredArg
			case "::":
				o.Arg = jobspec.OptionalArg
			}
		}
		if len(f) > 3 {
			o.Key = f[3]
		}
		g.Opts = append(g.Opts, o)
	}
	return g
}

// connect finds a node; the caller prints failures its own way.
func connect(e *Env) (*api.Client, context.Context, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cl, err := e.Client(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return cl, ctx, cancel, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// lookupUID resolves a user name or number to a uid, as Slurm's
// uid_from_string does.
func lookupUID(name string) (uint32, bool) {
	if u, err := user.Lookup(name); err == nil {
		if id, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			return uint32(id), true
		}
	}
	if id, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(id), true
	}
	return 0, false
}

// jobStates are Slurm's job state names and compact codes; job_state_num
// accepts either, in any case.
var jobStates = []struct{ name, code string }{
	{"PENDING", "PD"}, {"RUNNING", "R"}, {"SUSPENDED", "S"}, {"COMPLETED", "CD"},
	{"CANCELLED", "CA"}, {"FAILED", "F"}, {"TIMEOUT", "TO"}, {"NODE_FAIL", "NF"},
	{"PREEMPTED", "PR"}, {"BOOT_FAIL", "BF"}, {"DEADLINE", "DL"}, {"OUT_OF_MEMORY", "OOM"},
	{"COMPLETING", "CG"}, {"CONFIGURING", "CF"}, {"RESIZING", "RS"}, {"RESV_DEL_HOLD", "RD"},
	{"REQUEUED", "RQ"}, {"REQUEUE_FED", "RF"}, {"REQUEUE_HOLD", "RH"}, {"REVOKED", "RV"},
	{"SIGNALING", "SI"}, {"SPECIAL_EXIT", "SE"}, {"STAGE_OUT", "SO"}, {"STOPPED", "ST"},
}

// jobStateName returns the full state name for a name or code, "" if it is
// none.
func jobStateName(s string) string {
	for _, st := range jobStates {
		if strings.EqualFold(s, st.name) || strings.EqualFold(s, st.code) {
			return st.name
		}
	}
	return ""
}

// jobStateList is squeue's list of valid states, for its error message.
func jobStateList() string {
	names := make([]string, len(jobStates))
	for i, st := range jobStates {
		names[i] = st.name
	}
	return strings.Join(names, ",")
}

// expandHosts expands a hostlist, or returns nil and false.
func expandHosts(s string) ([]string, bool) {
	names, err := hostlist.Expand(s)
	return names, err == nil
}

func intersects(a, b []string) bool {
	set := map[string]bool{}
	for _, x := range a {
		set[x] = true
	}
	for _, y := range b {
		if set[y] {
			return true
		}
	}
	return false
}

// helpOrVersion answers --help with help, --usage with usage and
// -V/--version with Slurm's version, as the commands do; handled is false
// for any other option.
func helpOrVersion(e *Env, id, help, usage string) (handled bool, err error) {
	switch id {
	case "help":
		io.WriteString(e.Stdout, help)
		return true, quit{0}
	case "usage":
		io.WriteString(e.Stdout, usage)
		return true, quit{0}
	case "V":
		fmt.Fprintln(e.Stdout, slurmVersion)
		return true, quit{0}
	}
	return false, nil
}
