package fsm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// testdata/legacy-log.jsonl is a log written in the untyped format, before
// typed entries existed, covering every operation (and a refused cancel
// and an unknown op); legacy-state.json, legacy-acct.json and
// legacy-results.json are the state, the accounting rows and the Apply
// errors the code of that time produced from it. The log must still
// replay to exactly that, and so must the same log re-encoded as typed
// entries.
func TestLegacyLogReplays(t *testing.T) {
	entries := readLegacyLog(t)
	var wantState, wantAcct any
	var wantErrs []string
	readJSON(t, "testdata/legacy-state.json", &wantState)
	readJSON(t, "testdata/legacy-acct.json", &wantAcct)
	readJSON(t, "testdata/legacy-results.json", &wantErrs)
	if len(wantErrs) != len(entries) {
		t.Fatalf("%d entries, %d results", len(entries), len(wantErrs))
	}

	typed := make([][]byte, len(entries))
	for i, e := range entries {
		op, err := Decode(e)
		if err != nil {
			if !strings.Contains(err.Error(), wantErrs[i]) || wantErrs[i] == "" {
				t.Fatalf("entry %d: %v, the old code said %q", i+1, err, wantErrs[i])
			}
			typed[i] = e // undecodable either way
			continue
		}
		if typed[i], err = Encode(op); err != nil {
			t.Fatal(err)
		}
		if typed[i][0] == '{' {
			t.Fatalf("entry %d: a typed entry begins with '{'", i+1)
		}
	}
	for name, log := range map[string][][]byte{"legacy": entries, "typed": typed} {
		t.Run(name, func(t *testing.T) {
			f, store := testFSM(t, testConfig(t))
			for i, data := range log {
				r := f.Apply(&raft.Log{Index: uint64(i + 1), Data: data}).(Result)
				got := ""
				if r.Err != nil {
					got = r.Err.Error()
				}
				if (got == "") != (wantErrs[i] == "") || !strings.Contains(got, wantErrs[i]) {
					t.Errorf("entry %d: error %q, the old code said %q", i+1, got, wantErrs[i])
				}
			}
			var gotState any
			snapshotState(t, persisted(t, f), &gotState)
			if !reflect.DeepEqual(gotState, wantState) {
				a, _ := json.MarshalIndent(gotState, "", " ")
				t.Errorf("state differs from the old code's:\n%s", a)
			}
			var gotAcct any
			rows, _ := json.Marshal(acctDump(t, store))
			roundTrip(t, rows, &gotAcct)
			if !reflect.DeepEqual(gotAcct, wantAcct) {
				t.Errorf("accounting rows differ from the old code's:\n%s", rows)
			}
		})
	}
}

func readLegacyLog(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/legacy-log.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, data, v)
}

func roundTrip(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// snapshotState decodes the state of a persisted snapshot, the first of
// its JSON values (the accounting rows follow).
func snapshotState(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// persisted is the snapshot of f as Persist writes it.
func persisted(t *testing.T, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	return []byte(sink.String())
}
