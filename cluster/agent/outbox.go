package agent

import (
	"context"
	"encoding/json"
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
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(o.dir, outboxTemp+"*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	p := o.path(&e)
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	syncDir(o.dir)
	return p, nil
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
		syncDir(o.dir)
	}
}

// pending returns the entries the outbox holds, oldest first. Temporary
// files older than a minute (a dead daemon's torn writes) and files that
// do not hold an end are removed.
func (o *outbox) pending() []outboxEntry {
	ents, _ := os.ReadDir(o.dir)
	var out []outboxEntry
	for _, ent := range ents {
		p := filepath.Join(o.dir, ent.Name())
		if strings.HasPrefix(ent.Name(), outboxTemp) {
			if fi, err := ent.Info(); err == nil && time.Since(fi.ModTime()) > outboxTempAge {
				os.Remove(p)
			}
			continue
		}
		if !strings.HasSuffix(ent.Name(), ".json") || !ent.Type().IsRegular() {
			continue
		}
		var e api.JobEnd
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &e)
		}
		if err != nil || e.JobID == 0 || p != o.path(&e) {
			o.log.Warn("removing an unreadable job end from the outbox", "file", p, "err", err)
			os.Remove(p)
			continue
		}
		out = append(out, outboxEntry{path: p, end: e})
	}
	return out
}

// has tells whether an end of job id waits in the outbox.
func (o *outbox) has(id uint64) bool {
	m, _ := filepath.Glob(filepath.Join(o.dir, strconv.FormatUint(id, 10)+".*.json"))
	return len(m) > 0
}

// deliver sends e until send succeeds (the leader committed it), then
// removes its entry; it returns false, the entry kept for the next daemon,
// if ctx ends first.
func (o *outbox) deliver(ctx context.Context, path string, e api.JobEnd, send func(context.Context, api.JobEnd) error) bool {
	delay := 100 * time.Millisecond
	for {
		err := send(ctx, e)
		if err == nil {
			o.remove(path)
			return true
		}
		o.log.Warn("reporting job end failed; retrying", "job", e.JobID, "err", err)
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
	if len(ents) == 0 {
		return
	}
	done := make(chan struct{}, len(ents))
	for _, en := range ents {
		ag.log.Info("resending a job end kept by the previous daemon", "job", en.end.JobID)
		go func() {
			ob.deliver(ag.ctx, en.path, en.end, ag.sendEnd)
			done <- struct{}{}
		}()
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for range ents {
		select {
		case <-done:
		case <-timer.C:
			return
		case <-ag.ctx.Done():
			return
		}
	}
}
