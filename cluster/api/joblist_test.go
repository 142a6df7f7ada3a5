package api

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
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
