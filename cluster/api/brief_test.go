package api

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"hpc/internal/randfill"
)

// TestBriefIsPartOfJob: every field of a brief is the field of the same
// name of the whole record, under the same JSON name, so that a brief's
// line reads into a Job.
func TestBriefIsPartOfJob(t *testing.T) {
	pairs := []struct{ brief, whole reflect.Type }{
		{reflect.TypeFor[JobBrief](), reflect.TypeFor[Job]()},
		{reflect.TypeFor[JobSpecBrief](), reflect.TypeFor[JobSpec]()},
		{reflect.TypeFor[NodeBrief](), reflect.TypeFor[NodeAlloc]()},
	}
	jsonName := func(f reflect.StructField) string { name, _, _ := strings.Cut(f.Tag.Get("json"), ","); return name }
	for _, p := range pairs {
		for i := range p.brief.NumField() {
			bf := p.brief.Field(i)
			wf, ok := p.whole.FieldByName(bf.Name)
			if !ok {
				t.Errorf("%s.%s: %s has no such field", p.brief.Name(), bf.Name, p.whole.Name())
				continue
			}
			if jsonName(bf) != jsonName(wf) {
				t.Errorf("%s.%s is %q in JSON, %s's %q", p.brief.Name(), bf.Name, jsonName(bf), p.whole.Name(), jsonName(wf))
			}
		}
	}
}

// TestBriefLineDecodesAsJob: a brief's line (AppendJSON's) reads as
// encoding/json's text of the brief, and, read as a job list's line, is
// the Job the brief stands for, whatever the whole job held.
func TestBriefLineDecodesAsJob(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var j Job
		randfill.Fill(rng, reflect.ValueOf(&j).Elem())
		b := j.Brief()
		// As the daemon writes it (cluster/joblist.go).
		line := bytes.NewBuffer(append(b.AppendJSON(nil), '\n'))
		// It reads as encoding/json's own text of the brief.
		var mine, theirs JobBrief
		std, _ := json.Marshal(&b)
		if err := json.Unmarshal(line.Bytes(), &mine); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, line.Bytes())
		}
		if err := json.Unmarshal(std, &theirs); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(mine, theirs) {
			t.Fatalf("seed %d: AppendJSON's\n%s\nreads otherwise than encoding/json's\n%s", seed, line.Bytes(), std)
		}
		// Read as a job list's line, it is the brief's Job: the brief's
		// fields as encoding/json reads them, the others zero.
		var want Job
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		readsAs(t, seed, line.Bytes(), want)
		if !reflect.DeepEqual(b.Job(), want) {
			t.Fatalf("seed %d: Job() is\n%+v\nwant\n%+v", seed, b.Job(), want)
		}
		whole, _ := json.Marshal(&j)
		if line.Len() > len(whole) {
			t.Fatalf("seed %d: the brief's line (%d bytes) is longer than its whole job's (%d)", seed, line.Len(), len(whole))
		}
	}
}
