package commands

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
	"hpc/commands/format"
)

// strigger: set, list and clear event triggers. Every option of Slurm
// 22.05's strigger is accepted. The events hpc raises are a node going
// DOWN (-d) or coming back UP from DOWN (-u), a node entering DRAIN (-D),
// any node state change (-r), a job's end (-f) and its time limit (-t),
// and a job's nodes going down or up (-j with -d/-u). hpc has no FAILING
// node state (-F), no idle-node tracking (-I), no backup controllers,
// slurmdbd, database connection, accounting buffer, burst buffers or front
// end nodes (-a -A -b -B -c -C -e -g -G -h -H --burst_buffer
// --front_end): those triggers are kept and listed but their events never
// happen. -M is accepted and ignored: hpc runs one cluster.

var striggerOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts(
		"primary_slurmctld_failure,a", "primary_slurmctld_resumed_operation,A",
		"primary_slurmctld_resumed_control,b", "backup_slurmctld_failure,B",
		"backup_slurmctld_resumed_operation,c", "backup_slurmctld_assumed_control,C",
		"down,d", "drained,D", "primary_slurmctld_acct_buffer_full,e", "fini,f", "fail,F",
		"primary_slurmdbd_failure,g", "primary_slurmdbd_resumed_operation,G",
		"primary_database_failure,h", "primary_database_resumed_operation,H",
		"id,i,:", "idle,I", "jobid,j,:", "cluster,M,:", "clusters,M,:", "node,n,::", "noheader,N",
		"offset,o,:", "program,p,:", "quiet,Q", "reconfig,r", "time,t", "up,u", "verbose,v", "version,V",
		"burst_buffer", "clear", "flags,,:", "front_end", "get", "help", "set", "usage", "user,,:",
	)
})

const striggerUsage = "Usage: strigger [--set | --get | --clear | --version] [-aAbBcCdDefFgGhHiIjnNopQrtuv]\n"

const striggerHelp = `Usage: strigger [--set | --get | --clear] [OPTIONS]
      --set           create a trigger
      --get           get trigger information
      --clear         delete a trigger (by --id, --jobid or --user)

      --burst_buffer  event: a burst buffer error (never raised by hpc)
      --front_end     event on front end nodes (hpc has none)
  -a, --primary_slurmctld_failure
                      event: the primary controller fails
  -A, --primary_slurmctld_resumed_operation
                      event: the primary controller works again
  -b, --primary_slurmctld_resumed_control
                      event: the primary controller takes control back
  -B, --backup_slurmctld_failure
                      event: a backup controller fails
  -c, --backup_slurmctld_resumed_operation
                      event: a backup controller works again
  -C, --backup_slurmctld_assumed_control
                      event: a backup controller takes control
  -d, --down          event: a node goes DOWN
  -D, --drained       event: a node is drained
  -e, --primary_slurmctld_acct_buffer_full
                      event: the controller's accounting buffer is full
  -F, --fail          event: a node is about to FAIL
  -f, --fini          event: the job ends
      --flags=perm    keep the trigger after it fires (perm: permanent)

  -g, --primary_slurmdbd_failure
                      event: slurmdbd fails
  -G, --primary_slurmdbd_resumed_operation
                      event: slurmdbd works again
  -h, --primary_database_failure
                      event: the database fails
  -H, --primary_database_resumed_operation
                      event: the database works again
  -i, --id=#          the trigger's number
  -I, --idle          event: a node stays IDLE for --offset seconds
  -j, --jobid=#       the job the trigger is about
  -M, --cluster=name  the cluster to talk to (hpc has one)
  -n, --node[=host]   the nodes the trigger is about (all when not given)
  -N, --noheader      leave out the header line
  -o, --offset=#      seconds after the event to act (negative: before)
  -p, --program=path  absolute path of the program to run, with arguments
  -Q, --quiet         do not report errors that are not fatal
  -r, --reconfig      event: the configuration or a node's state changes
  -t, --time          event: the job reaches its time limit
  -u, --up            event: a node returns to service from DOWN
      --user          a user name or uid whose triggers to list or clear
  -v, --verbose       print detailed messages of what is done
  -V, --version       print the version and exit

Help options:
  --help              print this help
  --usage             print a short usage line
`

// striggerEvents maps strigger's event options to the event names and the
// resource type they force (empty: the job or node the trigger names).
var striggerEvents = map[string][2]string{
	"a": {"primary_slurmctld_failure", api.TrigResSlurmctld},
	"A": {"primary_slurmctld_resumed_operation", api.TrigResSlurmctld},
	"b": {"primary_slurmctld_resumed_control", api.TrigResSlurmctld},
	"e": {"primary_slurmctld_acct_buffer_full", api.TrigResSlurmctld},
	"B": {"backup_slurmctld_failure", api.TrigResSlurmctld},
	"c": {"backup_slurmctld_resumed_operation", api.TrigResSlurmctld},
	"C": {"backup_slurmctld_assumed_control", api.TrigResSlurmctld},
	"g": {"primary_slurmdbd_failure", api.TrigResSlurmdbd},
	"G": {"primary_slurmdbd_resumed_operation", api.TrigResSlurmdbd},
	"h": {"primary_database_failure", api.TrigResDatabase},
	"H": {"primary_database_resumed_operation", api.TrigResDatabase},
	"d": {api.TrigDown, ""}, "D": {api.TrigDrained, ""}, "F": {api.TrigFail, ""},
	"I": {api.TrigIdle, ""}, "u": {api.TrigUp, ""}, "r": {api.TrigReconfig, ""},
	"f": {api.TrigFini, ""}, "t": {api.TrigTime, ""}, "burst_buffer": {api.TrigBurstBuf, ""},
}

// striggerOrder is the order strigger combines events in (its bit order).
var striggerOrder = []string{"u", "d", "F", "D", "I", "t", "f", "r", "burst_buffer",
	"a", "A", "b", "e", "B", "c", "C", "g", "G", "h", "H"}

// striggerParams are strigger's options once parsed.
type striggerParams struct {
	set, get, clear bool
	events          map[string]bool
	frontEnd, perm  bool
	noHeader, quiet bool
	verbose         int
	id              uint32
	jobID           uint64
	node            *string
	offset          int
	program         string
	uid             uint32
	userSet         bool
}

// atoi reads a number as C's atoi does: leading blanks, a sign, digits;
// 0 when there are none.
func atoi(s string) int64 {
	s = strings.TrimLeft(s, " \t\n")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, _ := strconv.ParseInt(s[:end], 10, 64)
	return n
}

// striggerParse reads strigger's options; code is set when the command
// is over.
func striggerParse(e *Env, prog string, args []string) (*striggerParams, int, bool) {
	p := &striggerParams{events: map[string]bool{}}
	_, code, done := parseOpts(e, prog, striggerOpts(), args, func(o *jobspec.Opt, val string, has bool) error {
		id := o.ID()
		if _, ok := striggerEvents[id]; ok {
			p.events[id] = true
			return nil
		}
		switch id {
		case "i":
			p.id = uint32(atoi(val))
		case "j":
			n := atoi(val)
			if n <= 0 {
				e.errorf(prog, "Invalid jobid %s", val)
				return quit{1}
			}
			p.jobID = uint64(n)
		case "M": // one cluster
		case "n":
			host := "*"
			if has {
				host = val
			}
			p.node = &host
		case "N":
			p.noHeader = true
		case "o":
			p.offset = int(atoi(val))
		case "p":
			p.program = val
		case "Q":
			p.quiet = true
		case "v":
			p.verbose++
		case "clear":
			p.clear = true
		case "get":
			p.get = true
		case "set":
			p.set = true
		case "front_end":
			p.frontEnd = true
		case "flags":
			if len(val) < 4 || !strings.EqualFold(val[:4], "perm") {
				e.errorf(prog, "Invalid flags %s", val)
				return quit{1}
			}
			p.perm = true
		case "user":
			uid, ok := lookupUID(val)
			if !ok {
				e.errorf(prog, "Invalid user %s", val)
				return quit{1}
			}
			p.uid, p.userSet = uid, true
		default:
			if handled, err := helpOrVersion(e, id, striggerHelp, striggerUsage); handled {
				return err
			}
		}
		return nil
	})
	if done {
		return nil, code, true
	}
	if msg := p.validate(); msg != "" {
		e.errorf(prog, "%s", msg)
		return nil, 1, true
	}
	return p, 0, false
}

// validate checks the options as strigger does before it asks anything.
func (p *striggerParams) validate() string {
	modes := 0
	for _, m := range []bool{p.set, p.get, p.clear} {
		if m {
			modes++
		}
	}
	switch {
	case modes != 1:
		return "You must use exactly one of the following options: --set, --get or --clear"
	case p.clear && !p.userSet && p.id == 0 && p.jobID == 0:
		return "You must specify a --id, --jobid, or --user to clear"
	case p.set && len(p.events) == 0:
		return "You must specify a trigger (--down, --up, --reconfig, --time, --fini, --burst_buffer,\n" +
			"--primary_slurmctld_failure,\n--primary_slurmctld_resumed_operation,\n" +
			"--primary_slurmctld_resumed_control,\n--primary_slurmctld_acct_buffer_full,\n" +
			"--backup_slurmctld_failure,\n--backup_slurmctld_resumed_operation,\n" +
			"--backup_slurmctld_as_ctrl,\n--primary_slurmdbd_failure,\n" +
			"--primary_slurmdbd_resumed_operation,\n--primary_database_failure, or \n" +
			"--primary_database_resumed_operation)\n"
	case p.set && p.program == "":
		return "You must specify a --program value"
	case (p.events["f"] || p.events["t"]) && p.jobID == 0:
		return "You must specify a --jobid value"
	case p.program != "" && !strings.HasPrefix(p.program, "/"):
		return `The --program value must start with "/"`
	}
	if p.program != "" {
		path := p.program
		if i := strings.IndexAny(path, " \t\n\v\f\r"); i >= 0 {
			path = path[:i]
		}
		fi, err := os.Stat(path)
		if err != nil {
			return "Invalid --program value, file not found"
		}
		if !fi.Mode().IsRegular() {
			return "Invalid --program value, not regular file"
		}
	}
	if p.offset < -32000 || p.offset > 32000 {
		return "The --offset parameter must be between +/-32000"
	}
	return ""
}

// striggerMain is strigger: --set, --get or --clear event triggers.
func striggerMain(e *Env, prog string, args []string) int {
	p, code, done := striggerParse(e, prog, args)
	if done {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	perror := func(call string, err error) {
		_, msg := errText(err)
		fmt.Fprintf(e.Stderr, "%s: %s\n", call, msg)
	}
	verbose := func(format string, args ...any) {
		if p.verbose > 0 {
			fmt.Fprintf(e.Stderr, "%s: %s\n", prog, fmt.Sprintf(format, args...))
		}
	}
	cl, err := e.Client(ctx)
	switch {
	case err != nil && p.clear:
		if p.quiet {
			return 0
		}
		perror("slurm_clear_trigger", err)
		return 1
	case err != nil && p.set:
		perror("slurm_set_trigger", err)
		return 1
	case err != nil:
		perror("slurm_get_triggers", err)
		return 1
	case p.set:
		return striggerSet(e, ctx, cl, p, perror, verbose)
	case p.clear:
		return striggerClear(ctx, cl, p, perror, verbose)
	}
	ts, err := cl.Triggers(ctx)
	if err != nil {
		perror("slurm_get_triggers", err)
		return 1
	}
	verbose("Read %d trigger records", len(ts))
	format.Triggers(e.Stdout, p.filter(ts), p.noHeader, userName)
	return 0
}

// striggerSet is strigger --set; it tries again while the controller
// says it has too many triggers, as strigger does.
func striggerSet(e *Env, ctx context.Context, cl *api.Client, p *striggerParams, perror func(string, error), verbose func(string, ...any)) int {
	t := p.trigger()
	for {
		err := cl.SetTrigger(ctx, t)
		if err == nil {
			break
		}
		perror("slurm_set_trigger", err)
		if _, msg := errText(err); msg != api.ErrTryAgain {
			return 1
		}
		time.Sleep(5 * time.Second)
	}
	verbose("trigger set")
	return 0
}

func striggerClear(ctx context.Context, cl *api.Client, p *striggerParams, perror func(string, error), verbose func(string, ...any)) int {
	req := api.TriggerClearRequest{ID: p.id, JobID: p.jobID, UID: p.uid, UserSet: p.userSet}
	if err := cl.ClearTrigger(ctx, req); err != nil {
		if p.quiet {
			return 0
		}
		perror("slurm_clear_trigger", err)
		return 1
	}
	switch {
	case p.jobID != 0:
		verbose("triggers for job %d cleared", p.jobID)
	case p.userSet:
		verbose("triggers for user %d cleared", p.uid)
	default:
		verbose("trigger %d cleared", p.id)
	}
	return 0
}

// trigger is the trigger --set asks for.
func (p *striggerParams) trigger() api.Trigger {
	t := api.Trigger{Offset: p.offset, Program: p.program, Perm: p.perm}
	switch {
	case p.jobID != 0:
		t.ResType, t.ResID = api.TrigResJob, strconv.FormatUint(p.jobID, 10)
	case p.frontEnd:
		t.ResType = api.TrigResFrontEnd
	case p.events["burst_buffer"]:
		t.ResType = api.TrigResOther
	default:
		t.ResType, t.ResID = api.TrigResNode, "*"
		if p.node != nil {
			t.ResID = *p.node
		}
	}
	for _, id := range striggerOrder {
		if !p.events[id] {
			continue
		}
		ev := striggerEvents[id]
		if (id == "f" || id == "t") && p.jobID == 0 {
			continue
		}
		t.Types = append(t.Types, ev[0])
		if ev[1] != "" {
			t.ResType = ev[1]
		}
	}
	return t
}

// filter keeps the triggers --get's options select, as strigger filters
// what the controller sends.
func (p *striggerParams) filter(ts []api.Trigger) []api.Trigger {
	var out []api.Trigger
	for _, t := range ts {
		if p.keep(&t) {
			out = append(out, t)
		}
	}
	return out
}

func (p *striggerParams) keep(t *api.Trigger) bool {
	node := t.ResType == api.TrigResNode
	for id := range p.events {
		ev := striggerEvents[id]
		typeOK := t.TypeName() == ev[0]
		switch {
		case id == "d" || id == "u":
			typeOK = typeOK && (node || t.ResType == api.TrigResFrontEnd)
		case id == "D" || id == "F" || id == "I":
			typeOK = typeOK && node
		case id == "t":
			typeOK = typeOK && t.ResType == api.TrigResJob
		case ev[1] != "":
			typeOK = typeOK && t.ResType == ev[1]
		}
		if !typeOK {
			return false
		}
	}
	if p.jobID != 0 && (t.ResType != api.TrigResJob || uint64(atoi(t.ResID)) != p.jobID) {
		return false
	}
	if p.node != nil && !node {
		return false
	}
	if p.id != 0 && p.id != t.ID {
		return false
	}
	return !p.userSet || p.uid == t.UID
}

// userName is the USER column: the uid's name, or "unknown".
func userName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return u.Username
	}
	return "unknown"
}
