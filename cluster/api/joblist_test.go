package api

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"hpc/internal/randfill"
)

// readList reads a whole answer as Client.jobList does.
func readList(body string) ([]Job, error) {
	br := bufio.NewReader(strings.NewReader(body))
	head, _ := br.ReadBytes('\n')
	if n, ok := briefListHead(head); ok {
		return readRecords(br, n, briefRecord, briefDecoder)
	}
	if n, ok := jobListHead(head); ok {
		return readRecords(br, n, jsonLine, jsonDecoder)
	}
	return jobListJSON(bytes.NewReader(append(head, readRest(br)...)))
}

func readRest(br *bufio.Reader) []byte {
	var b bytes.Buffer
	_, _ = b.ReadFrom(br)
	return b.Bytes()
}

func TestJobListFraming(t *testing.T) {
	framed := "{\"count\":3,\"jobs\":[\n{\"id\":1,\"state\":\"PENDING\"}\n,{\"id\":2,\"spec\":{\"script\":\"a\\nb\"}}\n,{\"id\":3}\n]}\n"
	jobs, err := readList(framed)
	if err != nil || len(jobs) != 3 || jobs[0].ID != 1 || jobs[1].Spec.Script != "a\nb" || jobs[2].ID != 3 {
		t.Fatalf("framed: %+v %v", jobs, err)
	}
	for name, body := range map[string]string{
		"cut short":        "{\"count\":3,\"jobs\":[\n{\"id\":1}\n,{\"id\":2}\n",
		"fewer than count": "{\"count\":3,\"jobs\":[\n{\"id\":1}\n]}\n",
		"more than count":  "{\"count\":1,\"jobs\":[\n{\"id\":1}\n,{\"id\":2}\n]}\n",
		"no comma":         "{\"count\":2,\"jobs\":[\n{\"id\":1}\n{\"id\":2}\n]}\n",
		"bad job":          "{\"count\":1,\"jobs\":[\n{\"id\":\"x\"}\n]}\n",
		"not an object":    "[1,2]",
		"jobs not a list":  `{"jobs":3}`,
	} {
		if jobs, err := readList(body); err == nil {
			t.Errorf("%s: read %d jobs, no error", name, len(jobs))
		}
	}
	// Lists of briefs: records after their head, nothing after the count.
	one, two := JobBrief{ID: 1, State: StatePending}, JobBrief{ID: 2, User: "alice"}
	r1, r2 := one.AppendBinary(nil), two.AppendBinary(nil)
	if jobs, err := readList(briefList(r1, r2)); err != nil || len(jobs) != 2 || jobs[0].State != StatePending || jobs[1].User != "alice" {
		t.Fatalf("briefs: %+v %v", jobs, err)
	}
	both := briefList(r1, r2)
	for name, body := range map[string]string{
		"briefs cut short":          both[:len(both)-2],
		"briefs fewer than count":   strings.Replace(briefList(r1), " 1\n", " 2\n", 1),
		"briefs more than count":    strings.Replace(both, " 2\n", " 1\n", 1),
		"brief not a record":        briefList([]byte{0xff}),
		"brief time tag not 0 or 1": briefList(append(append([]byte{1}, make([]byte, 11)...), 2, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
		"brief record too long":     BriefListHead(1) + string(binary.AppendUvarint(nil, 1<<30)),
		"briefs count not a number": "hpc-briefs 1 x\n",
	} {
		if jobs, err := readList(body); err == nil {
			t.Errorf("%s: read %d jobs, no error", name, len(jobs))
		}
	}
	// Plain JSON (any order, any spacing, null) is read too.
	for body, want := range map[string]int{
		`{"jobs":[{"id":5},{"id":6}],"count":2}`: 2,
		`{"count":0,"jobs":null}`:                0,
		`{"jobs":[]}`:                            0,
		`{"other":{"a":[1]},"jobs":[{"id":1}]}`:  1,
	} {
		jobs, err := readList(body)
		if err != nil || len(jobs) != want || jobs == nil {
			t.Errorf("%s: %d jobs (nil %v), %v", body, len(jobs), jobs == nil, err)
		}
	}
}

// FuzzJobList: no answer, however malformed, panics or hangs the reader.
func FuzzJobList(f *testing.F) {
	f.Add("{\"count\":2,\"jobs\":[\n{\"id\":1}\n,{\"id\":2}\n]}\n")
	f.Add(`{"count":1,"jobs":[{"id":1}]}`)
	f.Add("{\"count\":99999999,\"jobs\":[\n]}\n")
	f.Fuzz(func(t *testing.T, body string) {
		head, _, _ := strings.Cut(body, "\n")
		if n, ok := jobListHead([]byte(head + "\n")); ok && n > 1<<16 {
			t.Skip("the daemon's count is trusted: a client makes room for that many jobs")
		}
		_, _ = readList(body)
	})
}

// The lines of a list are read with the JSON package that becomes
// encoding/json/v2 in encoding/json's semantics, and the daemon writes
// them with encoding/json: every job it can write comes back as
// encoding/json itself would read it, whatever its fields hold (invalid
// UTF-8, control characters, HTML, empty and nil lists, zero and far
// times, durations).
func TestJobListDecodesAsEncodingJSON(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var j Job
		randfill.Fill(rng, reflect.ValueOf(&j).Elem())
		var line bytes.Buffer // as the daemon writes it (cluster/joblist.go)
		if err := json.NewEncoder(&line).Encode(&j); err != nil {
			t.Fatal(err)
		}
		var want Job
		if err := json.Unmarshal(line.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		readsAs(t, seed, line.Bytes(), want)
	}
}

// readsAs checks a job's line, alone in a list, reads as want.
func readsAs(t *testing.T, seed uint64, line []byte, want Job) {
	t.Helper()
	got, err := readList("{\"count\":1,\"jobs\":[\n" + string(line) + "]}\n")
	if err != nil || len(got) != 1 {
		t.Fatalf("seed %d: %v\n%s", seed, err, line)
	}
	if !reflect.DeepEqual(got[0], want) {
		t.Fatalf("seed %d: decoded\n%+v\nwant\n%+v\nfrom %s", seed, got[0], want, line)
	}
}

// BenchmarkJobLines: squeue's decoding of 5,000 held jobs as sbatch
// --hold --wrap makes them, one core: their briefs (squeue's), the whole
// jobs, and encoding/json's own time for those.
func BenchmarkJobLines(b *testing.B) {
	const n = 5000
	var body, briefs bytes.Buffer
	body.WriteString("{\"count\":5000,\"jobs\":[\n")
	briefs.WriteString(BriefListHead(n))
	var lines [][]byte
	for i := range n {
		t := time.Date(2026, 12, 2, 8, 0, 0, i*1000, time.UTC)
		j := Job{ID: uint64(i + 1), UID: 1000, GID: 1000, User: "alice", Group: "alice", Account: "physics",
			State: StatePending, Reason: "JobHeldUser", SubmitTime: t, Hold: "user", Withheld: true,
			Spec: JobSpec{Name: "wrap", Partition: "debug", WorkDir: "/home/alice/run", Wrap: true,
				NTasks: 1, TimeLimitMin: 60, Hold: true, Output: "/home/alice/run/slurm-%j.out", QOS: "normal"}}
		line, _ := json.Marshal(&j)
		lines = append(lines, line)
		brief := j.Brief()
		rec := brief.AppendBinary(nil)
		briefs.Write(binary.AppendUvarint(nil, uint64(len(rec))))
		briefs.Write(rec)
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(line)
		body.WriteByte('\n')
	}
	body.WriteString("]}\n")
	b.Run("briefs", func(b *testing.B) {
		for b.Loop() {
			if jobs, err := readList(briefs.String()); err != nil || len(jobs) != n {
				b.Fatal(len(jobs), err)
			}
		}
	})
	b.Run("jobLines", func(b *testing.B) {
		for b.Loop() {
			if jobs, err := readList(body.String()); err != nil || len(jobs) != n {
				b.Fatal(len(jobs), err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			for _, l := range lines {
				var j Job
				if err := json.Unmarshal(l, &j); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// A line with two jobs is not two lines: the list is refused.
func TestJobLineHoldsOneJob(t *testing.T) {
	for _, body := range []string{
		"{\"count\":2,\"jobs\":[\n{\"id\":1} {\"id\":2}\n,{\"id\":3}\n]}\n",
		"{\"count\":1,\"jobs\":[\n{\"id\":1}{\"id\":2}\n]}\n",
	} {
		if jobs, err := readList(body); err == nil {
			t.Errorf("%q read as %d jobs", body, len(jobs))
		}
	}
}
