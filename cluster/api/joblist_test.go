package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// readList reads a whole answer as Client.jobList does.
func readList(body string) ([]Job, error) {
	br := bufio.NewReader(strings.NewReader(body))
	head, _ := br.ReadBytes('\n')
	if n, ok := jobListHead(head); ok {
		return jobLines(br, n)
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
		fill(rng, reflect.ValueOf(&j).Elem(), 0)
		var line bytes.Buffer // as the daemon writes it (cluster/joblist.go)
		if err := json.NewEncoder(&line).Encode(&j); err != nil {
			t.Fatal(err)
		}
		var want Job
		if err := json.Unmarshal(line.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		got, err := readList("{\"count\":1,\"jobs\":[\n" + line.String() + "]}\n")
		if err != nil || len(got) != 1 {
			t.Fatalf("seed %d: %v\n%s", seed, err, line.Bytes())
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("seed %d: decoded\n%+v\nwant\n%+v\nfrom %s", seed, got[0], want, line.Bytes())
		}
	}
}

// fill sets v to random values: every field, most of them not zero.
func fill(rng *rand.Rand, v reflect.Value, depth int) {
	if rng.IntN(6) == 0 || depth > 6 {
		return // left zero
	}
	switch v.Kind() {
	case reflect.String:
		pieces := []string{"a", "node[1-4]", "\n", "\"", "\\", "\x00", "\xff", "é", "💡", "</script>", " "}
		var b strings.Builder
		for range rng.IntN(5) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		v.SetString(b.String())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.Uint64()) >> (64 - v.Type().Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(rng.Uint64() >> (64 - v.Type().Bits()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(rng.IntN(1e6)) / 8)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(rng, v.Elem(), depth+1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), rng.IntN(3), 3)
		for i := range s.Len() {
			fill(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(3) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(rng, k, depth+1)
			fill(rng, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(rng, v.Field(i), depth+1)
			}
		}
	}
}

// BenchmarkJobLines: squeue's decoding of 5,000 held jobs as sbatch
// --hold --wrap makes them, one core; encoding/json's own time for the
// same lines beside it.
func BenchmarkJobLines(b *testing.B) {
	const n = 5000
	var body bytes.Buffer
	body.WriteString("{\"count\":5000,\"jobs\":[\n")
	var lines [][]byte
	for i := range n {
		t := time.Date(2026, 12, 2, 8, 0, 0, i*1000, time.UTC)
		j := Job{ID: uint64(i + 1), UID: 1000, GID: 1000, User: "alice", Group: "alice", Account: "physics",
			State: StatePending, Reason: "JobHeldUser", SubmitTime: t, Hold: "user", Withheld: true,
			Spec: JobSpec{Name: "wrap", Partition: "debug", WorkDir: "/home/alice/run", Wrap: true,
				NTasks: 1, TimeLimitMin: 60, Hold: true, Output: "/home/alice/run/slurm-%j.out", QOS: "normal"}}
		line, _ := json.Marshal(&j)
		lines = append(lines, line)
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(line)
		body.WriteByte('\n')
	}
	body.WriteString("]}\n")
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
