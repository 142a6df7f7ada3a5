package api

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"hpc/internal/randfill"
)

// TestBriefIsPartOfJob: every field of a brief is the field of the same
// name and type of the whole record, which Job() fills.
func TestBriefIsPartOfJob(t *testing.T) {
	pairs := []struct{ brief, whole reflect.Type }{
		{reflect.TypeFor[JobBrief](), reflect.TypeFor[Job]()},
		{reflect.TypeFor[JobSpecBrief](), reflect.TypeFor[JobSpec]()},
		{reflect.TypeFor[NodeBrief](), reflect.TypeFor[NodeAlloc]()},
	}
	for _, p := range pairs {
		for i := range p.brief.NumField() {
			bf := p.brief.Field(i)
			wf, ok := p.whole.FieldByName(bf.Name)
			if !ok {
				t.Errorf("%s.%s: %s has no such field", p.brief.Name(), bf.Name, p.whole.Name())
				continue
			}
			if bf.Type != wf.Type && bf.Type.Kind() != reflect.Struct && bf.Type.Kind() != reflect.Slice {
				t.Errorf("%s.%s is a %s, %s's a %s", p.brief.Name(), bf.Name, bf.Type, p.whole.Name(), wf.Type)
			}
		}
	}
}

// TestBriefRecordReadsAsJob: a brief's record, alone in a list, reads
// as the brief's Job, whatever the whole job held; it is shorter than
// the whole job's JSON; and every record cut short, or with a byte
// more, is refused.
func TestBriefRecordReadsAsJob(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var j Job
		randfill.Fill(rng, reflect.ValueOf(&j).Elem())
		b := j.Brief()
		rec := b.AppendBinary(nil)
		got, err := readList(briefList(rec))
		if err != nil || len(got) != 1 {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// What the client would read of the brief's fields in the whole
		// job's JSON.
		whole, _ := json.Marshal(&j)
		var read Job
		if err := json.Unmarshal(whole, &read); err != nil {
			t.Fatal(err)
		}
		want := briefFields(read.Brief())
		if !sameJob(got[0], want) {
			t.Fatalf("seed %d: read\n%+v\nwant\n%+v", seed, got[0], want)
		}
		if !sameJob(b.Job(), want) {
			t.Fatalf("seed %d: Job() is\n%+v\nwant\n%+v", seed, b.Job(), want)
		}
		if len(rec) > len(whole) {
			t.Fatalf("seed %d: the brief's record (%d bytes) is longer than its whole job's JSON (%d)", seed, len(rec), len(whole))
		}
		var r briefReader
		for cut := range len(rec) {
			if err := r.read(rec[:cut], new(Job)); err == nil {
				t.Fatalf("seed %d: a record cut to %d of %d bytes reads", seed, cut, len(rec))
			}
		}
		if err := r.read(append(rec, 0), new(Job)); err == nil {
			t.Fatalf("seed %d: a record with a byte more reads", seed)
		}
	}
}

// briefFields is the Job holding a brief's fields, the others zero.
func briefFields(b JobBrief) Job {
	j := Job{
		ID: b.ID,
		Spec: JobSpec{
			Name: b.Spec.Name, Partition: b.Spec.Partition, Nodes: b.Spec.Nodes,
			TimeLimitMin: b.Spec.TimeLimitMin, Account: b.Spec.Account, QOS: b.Spec.QOS,
		},
		UID: b.UID, User: b.User, Account: b.Account, State: b.State, Reason: b.Reason,
		StartTime: b.StartTime, EndTime: b.EndTime,
		ArrayJobID: b.ArrayJobID, ArrayTaskID: b.ArrayTaskID, Hold: b.Hold,
		Restarts: b.Restarts, Priority: b.Priority,
	}
	for _, a := range b.Alloc {
		j.Alloc = append(j.Alloc, NodeAlloc{Node: a.Node})
	}
	return j
}

// sameJob compares two jobs with their times as instants (a record's
// times read in UTC).
func sameJob(a, b Job) bool {
	for _, j := range []*Job{&a, &b} {
		for _, t := range []*time.Time{&j.StartTime, &j.EndTime} {
			if !t.IsZero() {
				*t = t.UTC()
			}
		}
	}
	return reflect.DeepEqual(a, b)
}

// briefList is a list of briefs holding the records given.
func briefList(recs ...[]byte) string {
	out := []byte(BriefListHead(len(recs)))
	for _, r := range recs {
		out = append(binary.AppendUvarint(out, uint64(len(r))), r...)
	}
	return string(out)
}
