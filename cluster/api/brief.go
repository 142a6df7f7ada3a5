package api

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// JobBrief is a job as squeue's common listings need it: the fields its
// default and -l formats print, sort and filter on, and little else.
// Its fields are Job's, under the same names; a list of them travels as
// binary records (AppendBinary) that the client reads into Jobs whose
// other fields are zero, a fraction of the whole list's text to write
// and to read (squeue asks for it when its format, sort and filters are
// all answered by these fields: commands/format's BriefSuffices).
type JobBrief struct {
	ID          uint64
	Spec        JobSpecBrief
	UID         uint32
	User        string
	Account     string
	State       JobState
	Reason      string
	StartTime   time.Time
	EndTime     time.Time
	Alloc       []NodeBrief
	ArrayJobID  uint64
	ArrayTaskID int
	Hold        string
	Restarts    int
	Priority    uint32
}

// JobSpecBrief is the part of a JobSpec a JobBrief carries.
type JobSpecBrief struct {
	Name         string
	Partition    string
	Nodes        int
	TimeLimitMin int64
	Account      string
	QOS          string
}

// NodeBrief is a node of a job's allocation, by name only.
type NodeBrief struct {
	Node string
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

// Job is the Job a brief reads as on the client (squeue's): the brief's
// fields as its record carries them, the others zero.
func (b *JobBrief) Job() Job {
	var j Job
	var r briefReader
	_ = r.read(b.AppendBinary(nil), &j) // AppendBinary writes a record that reads
	return j
}

// A list of briefs travels as binary records rather than JSON: reading
// 100,000 JSON lines was most of squeue's time. The answer to
// GET /api/jobs?brief=2 (cluster's joblist.go) is a head line, then count
// records, each its length (a uvarint) and its fields in the order
// AppendBinary writes them:
//
//	hpc-briefs 1 <count>\n
//
// Numbers are varints (encoding/binary's), strings a length and their
// bytes, a time a uvarint 0 when it is zero, else 1, its Unix seconds
// (varint) and nanoseconds (uvarint), the allocation a count and its
// nodes' names. A daemon that does not know brief=2 answers with whole
// jobs in JSON, which the client reads as well.
const briefHead = "hpc-briefs 1 "

// BriefListHead is the head line of a list of n briefs.
func BriefListHead(n int) string { return briefHead + strconv.Itoa(n) + "\n" }

// AppendBinary appends the brief's record, without its length.
func (b *JobBrief) AppendBinary(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, b.ID)
	dst = appendString(dst, b.Spec.Name)
	dst = appendString(dst, b.Spec.Partition)
	dst = binary.AppendVarint(dst, int64(b.Spec.Nodes))
	dst = binary.AppendVarint(dst, b.Spec.TimeLimitMin)
	dst = appendString(dst, b.Spec.Account)
	dst = appendString(dst, b.Spec.QOS)
	dst = binary.AppendUvarint(dst, uint64(b.UID))
	dst = appendString(dst, b.User)
	dst = appendString(dst, b.Account)
	dst = appendString(dst, string(b.State))
	dst = appendString(dst, b.Reason)
	dst = appendTime(dst, b.StartTime)
	dst = appendTime(dst, b.EndTime)
	dst = binary.AppendUvarint(dst, uint64(len(b.Alloc)))
	for _, a := range b.Alloc {
		dst = appendString(dst, a.Node)
	}
	dst = binary.AppendUvarint(dst, b.ArrayJobID)
	dst = binary.AppendVarint(dst, int64(b.ArrayTaskID))
	dst = appendString(dst, b.Hold)
	dst = binary.AppendVarint(dst, int64(b.Restarts))
	return binary.AppendUvarint(dst, uint64(b.Priority))
}

// appendString appends a string's length and bytes, each byte that is
// not UTF-8 as U+FFFD: the string a whole job's JSON would give the
// client (encoding/json writes such a byte so), so that squeue prints a
// brief as it prints the whole job.
func appendString(dst []byte, s string) []byte {
	if !utf8.ValidString(s) {
		var b []byte
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
		s = string(b)
	}
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

func appendTime(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(dst, 0)
	}
	return binary.AppendUvarint(binary.AppendVarint(append(dst, 1), t.Unix()), uint64(t.Nanosecond()))
}

// briefReader reads records into Jobs. Each string field keeps the last
// value it read: a list's jobs mostly share their partition, user,
// state and reason, which then cost no allocation.
type briefReader struct {
	rec  []byte
	bad  bool
	last [10]string
}

// read reads one record (without its length) into j, a zero Job.
func (r *briefReader) read(rec []byte, j *Job) error {
	r.rec, r.bad = rec, false
	j.ID = r.uvarint()
	j.Spec.Name = r.str(0)
	j.Spec.Partition = r.str(1)
	j.Spec.Nodes = int(r.varint())
	j.Spec.TimeLimitMin = r.varint()
	j.Spec.Account = r.str(2)
	j.Spec.QOS = r.str(3)
	j.UID = uint32(r.uvarint())
	j.User = r.str(4)
	j.Account = r.str(5)
	j.State = JobState(r.str(6))
	j.Reason = r.str(7)
	j.StartTime = r.time()
	j.EndTime = r.time()
	if n := r.uvarint(); n > 0 && n <= uint64(len(r.rec)) { // each name takes a byte at least
		j.Alloc = make([]NodeAlloc, n)
		for i := range j.Alloc {
			j.Alloc[i].Node = r.str(8)
		}
	} else if n > 0 {
		r.bad = true
	}
	j.ArrayJobID = r.uvarint()
	j.ArrayTaskID = int(r.varint())
	j.Hold = r.str(9)
	j.Restarts = int(r.varint())
	j.Priority = uint32(r.uvarint())
	if r.bad || len(r.rec) != 0 {
		return fmt.Errorf("job %d: a brief record of %d bytes that is not one", j.ID, len(rec))
	}
	return nil
}

func (r *briefReader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }

func (r *briefReader) varint() int64 { return readVarint(r, binary.Varint) }

// readVarint reads a number with binary's Uvarint or Varint; a record
// that holds none marks the record bad.
func readVarint[T uint64 | int64](r *briefReader, read func([]byte) (T, int)) T {
	v, n := read(r.rec)
	if n <= 0 {
		r.bad, r.rec = true, nil
		return 0
	}
	r.rec = r.rec[n:]
	return v
}

// str reads a string, the field's last one when it is the same.
func (r *briefReader) str(field int) string {
	n := r.uvarint()
	if n > uint64(len(r.rec)) {
		r.bad, r.rec = true, nil
		return ""
	}
	b := r.rec[:n]
	r.rec = r.rec[n:]
	if string(b) != r.last[field] { // compared without a copy
		r.last[field] = string(b)
	}
	return r.last[field]
}

// time reads a time: a tag 0 (zero) or 1, then its seconds and
// nanoseconds.
func (r *briefReader) time() time.Time {
	if len(r.rec) == 0 || r.rec[0] > 1 {
		r.bad = true
		return time.Time{}
	}
	tag := r.rec[0]
	r.rec = r.rec[1:]
	if tag == 0 {
		return time.Time{}
	}
	sec := r.varint()
	nsec := r.uvarint()
	if nsec >= 1e9 {
		r.bad = true
	}
	return time.Unix(sec, int64(nsec)).UTC() // as a JSON time with "Z" reads
}
