package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
	"hpc/exec"
)

// strigger's routes and the leader's side of triggers: which events are
// due, the commit that they fired, and their programs. The events
// themselves are recorded by the FSM (fsm/triggers.go), except a job's
// time limit, which the leader sees on its clock.

func (d *Daemon) registerTriggerRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/trigger/set", d.leaderRoute(d.handleTriggerSet))
	mux.HandleFunc("GET /api/triggers", d.leaderRoute(d.handleTriggers))
	mux.HandleFunc("POST /api/trigger/clear", d.leaderRoute(d.handleTriggerClear))
}

// triggerProgramTime is how long a trigger's program may run before it is
// killed, with the processes it started (slurmctld's five minutes).
const triggerProgramTime = 5 * time.Minute

// slurmUserUID is the uid of SlurmUser: the daemon's own when slurm.conf
// names none.
func (d *Daemon) slurmUserUID() uint32 {
	if d.cfg.SlurmUser != "" {
		if u, err := user.Lookup(d.cfg.SlurmUser); err == nil {
			if id, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
				return uint32(id)
			}
		}
	}
	return uint32(os.Getuid())
}

// allowUserTriggers is SlurmctldParameters=allow_user_triggers.
func (d *Daemon) allowUserTriggers() bool {
	for _, item := range strings.Split(d.conf().RawValue("SlurmctldParameters"), ",") {
		if strings.EqualFold(strings.TrimSpace(item), "allow_user_triggers") {
			return true
		}
	}
	return false
}

// mayTrigger applies Slurm 22.05's rules for strigger --set: root or
// SlurmUser, or anyone with allow_user_triggers; and, since a program must
// run as the user who set it, only SlurmUser itself when SlurmUser is not
// root.
func (d *Daemon) mayTrigger(uid uint32) bool {
	slurm := d.slurmUserUID()
	if uid != 0 && uid != slurm && !d.allowUserTriggers() {
		return false
	}
	return slurm == 0 || uid == slurm
}

func (d *Daemon) handleTriggerSet(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var t api.Trigger
	if err := json.Unmarshal(body, &t); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	if !d.mayTrigger(id.UID) {
		d.log.Warn("trigger refused: caller may not set triggers", "uid", id.UID)
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrAccessDenied})
		return
	}
	t.ID, t.UID, t.GID = 0, id.UID, id.GID
	if err := checkTriggerProgram(t.Program, t.UID, t.GID); err != nil {
		d.log.Info("trigger refused", "program", t.Program, "err", err)
		peer.WriteErr(w, http.StatusForbidden, &api.Error{Message: api.ErrAccessDenied, Detail: err.Error()})
		return
	}
	if _, err := d.propose(&fsm.TriggerSet{Time: d.now(), Trigger: t}); err != nil {
		peer.UserErr(w, err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}

// handleTriggers answers strigger --get: every trigger waiting, as
// slurmctld lists them to anyone (strigger filters).
func (d *Daemon) handleTriggers(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	out := api.TriggerList{Triggers: []api.Trigger{}}
	d.fsm.View(func(st *fsm.State) {
		for _, t := range st.Triggers.All() {
			out.Triggers = append(out.Triggers, t.Trigger)
		}
	})
	peer.WriteJSON(w, out)
}

func (d *Daemon) handleTriggerClear(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	var req api.TriggerClearRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: api.ErrUnexpectedMessage, Detail: err.Error()})
		return
	}
	if _, err := d.propose(&fsm.TriggerClear{Time: d.now(), UID: id.UID, Clear: req}); err != nil {
		peer.UserErr(w, err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}

// checkTriggerProgram checks what slurmctld checks of a program: the path
// (up to the first blank) is a regular file that uid, gid may execute.
func checkTriggerProgram(program string, uid, gid uint32) error {
	path, _, _ := strings.Cut(program, " ")
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("trigger program %s not found", program)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("trigger program %s not a regular file", program)
	}
	perm := uint32(fi.Mode().Perm())
	var owner, group uint32
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner, group = st.Uid, st.Gid
	}
	switch {
	case owner == uid:
		perm >>= 6
	case group == gid:
		perm >>= 3
	}
	if perm&1 == 0 {
		return fmt.Errorf("trigger program %s not executable", program)
	}
	return nil
}

// triggerFire is an event due: the trigger, the event's key and the
// program's argument.
type triggerFire struct {
	t        fsm.Trigger
	key, arg string
}

// runTriggers is the leader loop's pass over the triggers: for each event
// due, it commits TriggerFired and then, only if that commit succeeded,
// runs the program. A new leader finds the events its predecessor did not
// commit as fired and runs them; none is run twice (at most once).
func (d *Daemon) runTriggers() {
	now := d.now()
	var due []triggerFire
	d.fsm.View(func(st *fsm.State) {
		for _, t := range st.Triggers.All() {
			if t.Event != nil {
				if !t.Event.Due.After(now) {
					due = append(due, triggerFire{*t, t.Event.Key, t.Event.Arg})
				}
				continue
			}
			if t.ResType != api.TrigResJob || !t.Has(api.TrigTime) {
				continue
			}
			// The time limit is reached when what is left of it is no
			// more than -offset: the offset moves the event.
			key, at, ok := fsm.TimeLimitEvent(st.Jobs[t.JobID])
			if ok && key != t.Fired && !at.Add(time.Duration(t.Offset)*time.Second).After(now) {
				due = append(due, triggerFire{*t, key, strconv.FormatUint(t.JobID, 10)})
			}
		}
	})
	for _, f := range due {
		if _, err := d.propose(&fsm.TriggerFired{Time: now, ID: f.t.ID, Key: f.key}); err != nil {
			if !errors.Is(err, fsm.ErrTriggerStale) {
				d.log.Warn("trigger fired commit failed", "trigger", f.t.ID, "err", err)
			}
			continue
		}
		d.log.Info("trigger fired", "trigger", f.t.ID, "type", f.t.TypeName(), "arg", f.arg, "uid", f.t.UID)
		go d.runTriggerProgram(f.t.Trigger, f.arg)
	}
}

// runTriggerProgram runs a trigger's program as its owner (never as root
// for a user's trigger), in a session of its own, with the words of
// Program after the path and then the event's argument (node names or a
// job id) as its arguments; it is killed after triggerProgramTime.
func (d *Daemon) runTriggerProgram(t api.Trigger, arg string) {
	cmd, err := triggerCommand(t, arg)
	if err != nil {
		d.log.Warn("trigger program not run", "trigger", t.ID, "program", t.Program, "err", err)
		return
	}
	if err := cmd.Start(); err != nil {
		d.log.Warn("trigger program did not start", "trigger", t.ID, "program", t.Program, "err", err)
		return
	}
	pid := cmd.Process.Pid
	kill := time.AfterFunc(triggerProgramTime, func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	err = cmd.Wait()
	kill.Stop()
	if err != nil {
		d.log.Info("trigger program ended", "trigger", t.ID, "program", t.Program, "err", err)
	}
}

// triggerCommand builds the command of a trigger's program for its owner.
func triggerCommand(t api.Trigger, arg string) (*osexec.Cmd, error) {
	words := strings.Fields(t.Program)
	if len(words) == 0 || !strings.HasPrefix(words[0], "/") {
		return nil, fmt.Errorf("bad program %q", t.Program)
	}
	if err := checkTriggerProgram(words[0], t.UID, t.GID); err != nil {
		return nil, err
	}
	args := append([]string{filepath.Base(words[0])}, words[1:]...)
	cmd := &osexec.Cmd{Path: words[0], Args: append(args, arg), Dir: "/"}
	attr := &syscall.SysProcAttr{Setsid: true}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if u, err := user.LookupId(strconv.FormatUint(uint64(t.UID), 10)); err == nil {
		env = append(env, "HOME="+u.HomeDir, "USER="+u.Username, "LOGNAME="+u.Username)
	}
	if self := uint32(os.Getuid()); t.UID != self {
		if self != 0 {
			return nil, fmt.Errorf("the daemon (uid %d) cannot run a program as uid %d", self, t.UID)
		}
		attr.Credential = &syscall.Credential{Uid: t.UID, Gid: t.GID, Groups: exec.GroupsOrPrimary(t.UID, t.GID)}
	}
	cmd.SysProcAttr, cmd.Env = attr, env
	return cmd, nil
}
