package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"

	"hpc/cluster/api"
)

// Job lists are the daemon's longest answers (squeue of 100,000 pending
// jobs is 35 MB of JSON): they are encoded by every core at once, a chunk
// of jobs each, and written in order as the client reads them. The
// answer is one JSON object whose lines a client may also read one by one
// (api.Client's jobList decodes them side by side):
//
//	{"count":N,"jobs":[
//	{...job...}
//	,{...job...}
//	]}
//
// (JSON's strings escape newlines, so each job is one line.)
//
// The briefs squeue asks for (api.JobBrief) are binary records instead,
// under their own head line (api's brief.go).

// jobListChunk is how many jobs one encoder takes at a time; encoders
// run at most jobListAhead chunks ahead of what the client has read.
const (
	jobListChunk = 256
	jobListAhead = 8
)

// binaryAppender is a record written as a binary record (api.JobBrief).
type binaryAppender interface{ AppendBinary([]byte) []byte }

// writeJobList writes {"count":N,"jobs":[...]}, or a list of binary
// records when T is one: each record as see shows it to the caller (an
// api.Job, or the api.JobBrief squeue asks for). see must be safe to call
// from several goroutines.
func writeJobList[T any](w http.ResponseWriter, jobs []*api.Job, see func(*api.Job) T) {
	_, records := any(new(T)).(binaryAppender)
	head, tail := fmt.Sprintf("{\"count\":%d,\"jobs\":[\n", len(jobs)), "]}\n"
	if records {
		head, tail = api.BriefListHead(len(jobs)), ""
		w.Header().Set("Content-Type", "application/octet-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	chunks := (len(jobs) + jobListChunk - 1) / jobListChunk
	done := make([]chan *bytes.Buffer, chunks)
	for i := range done {
		done[i] = make(chan *bytes.Buffer, 1)
	}
	// A worker takes a slot before it encodes a chunk; the writer gives
	// one back for each chunk written.
	slots := make(chan struct{}, jobListAhead)
	quit := make(chan struct{})
	defer close(quit)
	var next atomic.Int64
	pool := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	workers := min(runtime.GOMAXPROCS(0), chunks)
	for range workers {
		go func() {
			seen := new(T) // the worker's copy of each job in turn (Encode's argument lives on the heap)
			appender, _ := any(seen).(binaryAppender)
			var rec []byte
			for {
				select {
				case <-quit:
					return
				default:
				}
				select {
				case slots <- struct{}{}:
				case <-quit:
					return
				}
				c := int(next.Add(1)) - 1
				if c >= chunks {
					return
				}
				buf := pool.Get().(*bytes.Buffer)
				buf.Reset()
				enc := json.NewEncoder(buf)
				for i := c * jobListChunk; i < min(len(jobs), (c+1)*jobListChunk); i++ {
					*seen = see(jobs[i])
					if records {
						rec = appender.AppendBinary(rec[:0])
						buf.Write(binary.AppendUvarint(buf.AvailableBuffer(), uint64(len(rec))))
						buf.Write(rec)
						continue
					}
					if i > 0 {
						buf.WriteByte(',')
					}
					_ = enc.Encode(seen) // api.Job always encodes; Encode ends it with a newline
				}
				done[c] <- buf
			}
		}()
	}
	if _, err := io.WriteString(w, head); err != nil {
		return
	}
	for c := range chunks {
		buf := <-done[c]
		_, err := w.Write(buf.Bytes())
		pool.Put(buf)
		<-slots
		if err != nil {
			return // the client went away; the workers stop at quit
		}
	}
	_, _ = io.WriteString(w, tail)
}
