package api

import (
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// JobBrief is a job as squeue's common listings need it: the fields its
// default and -l formats print, sort and filter on, and little else.
// Its JSON is a part of Job's, under the same names, so a brief line
// decodes into a Job whose other fields are zero; a list of 5,000 jobs
// is then a fraction of the whole list's text to write and to read
// (squeue asks for it when its format, sort and filters are all
// answered by these fields: commands/format's BriefSuffices).
type JobBrief struct {
	ID          uint64       `json:"id"`
	Spec        JobSpecBrief `json:"spec"`
	UID         uint32       `json:"uid,omitempty"`
	User        string       `json:"user,omitempty"`
	Account     string       `json:"account,omitempty"`
	State       JobState     `json:"state"`
	Reason      string       `json:"reason,omitempty"`
	StartTime   time.Time    `json:"start_time,omitzero"`
	EndTime     time.Time    `json:"end_time,omitzero"`
	Alloc       []NodeBrief  `json:"alloc,omitempty"`
	ArrayJobID  uint64       `json:"array_job_id,omitempty"`
	ArrayTaskID int          `json:"array_task_id,omitempty"`
	Hold        string       `json:"hold,omitempty"`
	Restarts    int          `json:"restarts,omitempty"`
	Priority    uint32       `json:"priority,omitempty"`
}

// JobSpecBrief is the part of a JobSpec a JobBrief carries.
type JobSpecBrief struct {
	Name         string `json:"name,omitempty"`
	Partition    string `json:"partition,omitempty"`
	Nodes        int    `json:"nodes,omitempty"`
	TimeLimitMin int64  `json:"time_limit_min,omitempty"`
	Account      string `json:"account,omitempty"`
	QOS          string `json:"qos,omitempty"`
}

// NodeBrief is a node of a job's allocation, by name only.
type NodeBrief struct {
	Node string `json:"node"`
}

// Brief returns the job's JobBrief.
func (j *Job) Brief() JobBrief {
	b := JobBrief{
		ID: j.ID,
		Spec: JobSpecBrief{
			Name: j.Spec.Name, Partition: j.Spec.Partition, Nodes: j.Spec.Nodes,
			TimeLimitMin: j.Spec.TimeLimitMin, Account: j.Spec.Account, QOS: j.Spec.QOS,
		},
		UID: j.UID, User: j.User, Account: j.Account, State: j.State, Reason: j.Reason,
		StartTime: j.StartTime, EndTime: j.EndTime,
		ArrayJobID: j.ArrayJobID, ArrayTaskID: j.ArrayTaskID, Hold: j.Hold,
		Restarts: j.Restarts, Priority: j.Priority,
	}
	if len(j.Alloc) > 0 {
		b.Alloc = make([]NodeBrief, len(j.Alloc))
		for i, a := range j.Alloc {
			b.Alloc[i].Node = a.Node
		}
	}
	return b
}

// Job is the Job a brief's line reads as (squeue's): the brief's fields,
// the others zero.
func (b *JobBrief) Job() Job {
	var j Job
	_ = jsonv2.Unmarshal(b.AppendJSON(nil), &j, listJSON) // AppendJSON writes a valid object
	return j
}

// AppendJSON appends the brief's JSON, as encoding/json writes it but
// for the escaping of strings (RFC 8785's, which reads back the same),
// without reflection: a daemon writes 5,000 of them for one squeue.
func (b *JobBrief) AppendJSON(dst []byte) []byte {
	dst = strconv.AppendUint(append(dst, `{"id":`...), b.ID, 10)
	dst = append(dst, `,"spec":{`...)
	mark := len(dst)
	dst = appendStringField(dst, mark, "name", b.Spec.Name)
	dst = appendStringField(dst, mark, "partition", b.Spec.Partition)
	dst = appendIntField(dst, mark, "nodes", int64(b.Spec.Nodes))
	dst = appendIntField(dst, mark, "time_limit_min", b.Spec.TimeLimitMin)
	dst = appendStringField(dst, mark, "account", b.Spec.Account)
	dst = appendStringField(dst, mark, "qos", b.Spec.QOS)
	dst = append(dst, '}')
	mark = len(dst) - 1 // every field from here on follows another
	dst = appendIntField(dst, mark, "uid", int64(b.UID))
	dst = appendStringField(dst, mark, "user", b.User)
	dst = appendStringField(dst, mark, "account", b.Account)
	dst, _ = jsontext.AppendQuote(append(dst, `,"state":`...), string(b.State))
	dst = appendStringField(dst, mark, "reason", b.Reason)
	dst = appendTimeField(dst, "start_time", b.StartTime)
	dst = appendTimeField(dst, "end_time", b.EndTime)
	if len(b.Alloc) > 0 {
		dst = append(dst, `,"alloc":[`...)
		for i, a := range b.Alloc {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, _ = jsontext.AppendQuote(append(dst, `{"node":`...), a.Node)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendUintField(dst, mark, "array_job_id", b.ArrayJobID)
	dst = appendIntField(dst, mark, "array_task_id", int64(b.ArrayTaskID))
	dst = appendStringField(dst, mark, "hold", b.Hold)
	dst = appendIntField(dst, mark, "restarts", int64(b.Restarts))
	dst = appendIntField(dst, mark, "priority", int64(b.Priority))
	return append(dst, '}')
}

// appendName appends a field's name, after a comma unless it is the
// first of its object (the object's fields start at mark).
func appendName(dst []byte, mark int, name string) []byte {
	if len(dst) > mark {
		dst = append(dst, ',')
	}
	return append(append(append(dst, '"'), name...), `":`...)
}

// appendStringField appends an omitempty string field.
func appendStringField(dst []byte, mark int, name, v string) []byte {
	if v == "" {
		return dst
	}
	dst, _ = jsontext.AppendQuote(appendName(dst, mark, name), v) // invalid UTF-8 becomes U+FFFD, as encoding/json writes it
	return dst
}

// appendIntField appends an omitempty number field.
func appendIntField(dst []byte, mark int, name string, v int64) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(appendName(dst, mark, name), v, 10)
}

// appendUintField appends an omitempty unsigned number field.
func appendUintField(dst []byte, mark int, name string, v uint64) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendUint(appendName(dst, mark, name), v, 10)
}

// appendTimeField appends an omitzero time field after another field,
// as time.Time's MarshalJSON writes it.
func appendTimeField(dst []byte, name string, t time.Time) []byte {
	if t.IsZero() {
		return dst
	}
	dst = append(appendName(dst, -1, name), '"')
	return append(t.AppendFormat(dst, time.RFC3339Nano), '"')
}
