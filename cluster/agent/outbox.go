package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
)

// A job's end is what the controller cannot learn again once the node has
// forgotten the job: its batch step's exit status and usage. So the batch
// host writes it to its outbox, <Dir>/outbox/<job id>.<run>.json (root's
// only), before it forgets the job (running/<job id>.json, reattach.go) and
// before it reports it, and removes it only once the leader has committed
// it (POST /internal/job-end answers after the End entry is applied). Until
// then the report is resent: by the daemon that wrote it, and, should that
// daemon die or stop, by the next one, first thing after it starts
// (Reattach), before it decides that a job the controller thinks running
// here is missing. Each end carries its run (api.JobEnd.Run, the job's
// StartTime), so an end resent after its answer was lost never ends a later
// run of a requeued job: the FSM ignores it, and ignores a second copy of
// an end it applied.
//
// An entry is written whole or not at all: a temporary file, fsync'd, then
// renamed into place (and the directory fsync'd). A temporary file left by
// a daemon that died while writing is never read.

// outbox is a node's job ends not yet committed.
type outbox struct {
	dir string
	log *slog.Logger
}

// outboxEntry is one pending end and its file.
type outboxEntry struct {
	path string
	end  api.JobEnd
}

// outboxTemp prefixes the temporary files of entries being written.
const outboxTemp = ".end-"

// outboxTempAge is the age past which a temporary file is a dead daemon's.
const outboxTempAge = time.Minute

func (ag *Agent) outbox() *outbox {
	return &outbox{dir: filepath.Join(ag.dir, "outbox"), log: ag.log}
}

func (o *outbox) path(e *api.JobEnd) string {
	run := int64(0)
	if !e.Run.IsZero() {
		run = e.Run.UnixNano()
	}
	return filepath.Join(o.dir, fmt.Sprintf("%d.%d.json", e.JobID, run))
}

// put writes e durably and returns its file. An entry for the same job and
// run is replaced.
func (o *outbox) put(e api.JobEnd) (string, error) {
	p := o.path(&e)
	return p, writeWhole(p, e)
}

// writeWhole writes v's JSON to p whole or not at all.
func writeWhole(p string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, outboxTemp+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// remove drops a committed entry.
func (o *outbox) remove(path string) {
	if path != "" && os.Remove(path) == nil {
		syncDir(filepath.Dir(path))
	}
}

// pending returns the entries the outbox holds, oldest first. Temporary
// files older than a minute (a dead daemon's torn writes) and files that
// do not hold an end are removed.
func (o *outbox) pending() []outboxEntry {
	var out []outboxEntry
	readEntries(o, o.dir, "job end", o.path, func(p string, e api.JobEnd) bool {
		if e.JobID == 0 {
			return false
		}
		out = append(out, outboxEntry{path: p, end: e})
		return true
	})
	return out
}

// readEntries reads the entries of dir: each file that holds a T whose
// file it is (named by path), given to keep; keep's false, an unreadable
// file and an old temporary file are removed.
func readEntries[T any](o *outbox, dir, what string, path func(*T) string, keep func(string, T) bool) {
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		p := filepath.Join(dir, ent.Name())
		if strings.HasPrefix(ent.Name(), outboxTemp) {
			if fi, err := ent.Info(); err == nil && time.Since(fi.ModTime()) > outboxTempAge {
				os.Remove(p)
			}
			continue
		}
		if !strings.HasSuffix(ent.Name(), ".json") || !ent.Type().IsRegular() {
			continue
		}
		var v T
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil || p != path(&v) || !keep(p, v) {
			o.log.Warn("removing an unreadable "+what+" from the outbox", "file", p, "err", err)
			os.Remove(p)
		}
	}
}

// has tells whether an end of job id waits in the outbox.
func (o *outbox) has(id uint64) bool {
	m, _ := filepath.Glob(filepath.Join(o.dir, strconv.FormatUint(id, 10)+".*.json"))
	return len(m) > 0
}

// hasRun tells whether the end of the run of job id that started at run
// waits in the outbox.
func (o *outbox) hasRun(id uint64, run time.Time) bool {
	_, err := os.Lstat(o.path(&api.JobEnd{JobID: id, Run: run}))
	return err == nil
}

// deliver sends e until send succeeds (the leader committed it), then
// removes its entry; it returns false, the entry kept for the next daemon,
// if ctx ends first.
func (o *outbox) deliver(ctx context.Context, path string, e api.JobEnd, send func(context.Context, api.JobEnd) error) bool {
	return o.resend(ctx, path, fmt.Sprint(e.JobID), func(ctx context.Context) error { return send(ctx, e) })
}

// resend calls send until it succeeds, then removes path; false if ctx
// ends first.
func (o *outbox) resend(ctx context.Context, path, what string, send func(context.Context) error) bool {
	delay := 100 * time.Millisecond
	for {
		err := send(ctx)
		if err == nil {
			o.remove(path)
			return true
		}
		o.log.Warn("reporting an end failed; retrying", "of", what, "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// sendEnd reports a job's end through this node's API to the leader; nil
// once the leader has committed it.
func (ag *Agent) sendEnd(ctx context.Context, e api.JobEnd) error {
	addr, err := ag.localAPI()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return ag.peers.CallNode(ctx, addr, "/internal/job-end", e, nil)
}

// resendEnds reports what the outbox holds, as a daemon starts: it waits
// until each is committed, or until the deadline (those left go on being
// resent in the background).
func (ag *Agent) resendEnds(deadline time.Time) {
	ob := ag.outbox()
	ents := ob.pending()
	steps := ob.pendingSteps()
	if len(ents)+len(steps) == 0 {
		return
	}
	done := make(chan struct{}, len(ents)+len(steps))
	for _, en := range ents {
		ag.log.Info("resending a job end kept by the previous daemon", "job", en.end.JobID)
		go func() {
			ob.deliver(ag.ctx, en.path, en.end, ag.sendEnd)
			done <- struct{}{}
		}()
	}
	for _, st := range steps {
		ag.log.Info("resending a step end kept by the previous daemon", "job", st.rep.JobID, "step", st.rep.Step.ID)
		go func() {
			ob.resend(ag.ctx, st.path, stepName(&st.rep), ag.stepSender(st.rep))
			done <- struct{}{}
		}()
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for range len(ents) + len(steps) {
		select {
		case <-done:
		case <-timer.C:
			return
		case <-ag.ctx.Done():
			return
		}
	}
}

// The ends of srun steps are kept the same way, by the node that launched
// the step for its srun (its launcher), in <Dir>/outbox/steps/<job
// id>.<step id>.json: a step id is never reused within a job, across its
// runs too, so it names the run, and the FSM ignores the end of a step
// that has ended.

// stepEntry is one pending step end and its file.
type stepEntry struct {
	path string
	rep  api.StepEndReport
}

func (o *outbox) stepPath(r *api.StepEndReport) string {
	return filepath.Join(o.dir, "steps", fmt.Sprintf("%d.%d.json", r.JobID, r.Step.ID))
}

func stepName(r *api.StepEndReport) string { return fmt.Sprintf("%d.%d", r.JobID, r.Step.ID) }

// pendingSteps returns the step ends the outbox holds.
func (o *outbox) pendingSteps() []stepEntry {
	var out []stepEntry
	readEntries(o, filepath.Join(o.dir, "steps"), "step end", o.stepPath, func(p string, r api.StepEndReport) bool {
		if r.JobID == 0 {
			return false
		}
		out = append(out, stepEntry{path: p, rep: r})
		return true
	})
	return out
}

// stepEndWait is how long ReportStepEnd waits for the commit before it
// answers without it (srun is told then; the end goes on being resent).
const stepEndWait = time.Minute

// ReportStepEnd keeps a step's end in the outbox and reports it to the
// leader until it is committed, and returns the step as recorded. If that
// takes longer than stepEndWait it returns the last error and goes on
// resending in the background (and the next daemon, after a restart).
func (ag *Agent) ReportStepEnd(r api.StepEndReport) (api.Step, error) {
	ob := ag.outbox()
	path := ob.stepPath(&r)
	if err := writeWhole(path, r); err != nil {
		ag.log.Warn("cannot keep a step's end on disk; it will not survive a restart of this daemon", "step", stepName(&r), "err", err)
		path = ""
	}
	deadline := time.Now().Add(stepEndWait)
	delay := 100 * time.Millisecond
	for {
		got, err := ag.sendStepEnd(ag.ctx, r)
		if err == nil || refused(err) {
			// Committed, or refused (the job is gone): done with it.
			ob.remove(path)
			return got, err
		}
		if ag.ctx.Err() != nil {
			return got, err // kept for the next daemon
		}
		if time.Now().After(deadline) {
			ag.wg.Add(1)
			go func() {
				defer ag.wg.Done()
				ob.resend(ag.ctx, path, stepName(&r), ag.stepSender(r))
			}()
			return got, err
		}
		select {
		case <-ag.ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// refused tells an answer of the leader's that resending cannot change
// (the job is gone) from a failure to reach it.
func refused(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Message != api.ErrNoLeader
}

// stepSender is the send of r for resend: a refusal ends it too.
func (ag *Agent) stepSender(r api.StepEndReport) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := ag.sendStepEnd(ctx, r); err != nil && !refused(err) {
			return err
		}
		return nil
	}
}

// sendStepEnd reports a step's end through this node's API to the leader.
func (ag *Agent) sendStepEnd(ctx context.Context, r api.StepEndReport) (api.Step, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var got api.Step
	err := ag.peers.CallNode(ctx, ag.addr(ag.conf().APIPort), "/internal/step/end", r, &got)
	return got, err
}
