package fsm

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/internal/randfill"
)

// TestDecodeAsEncodingJSON: every kind of entry, whatever its fields
// hold, decodes as encoding/json reads what Encode wrote; and an entry
// cut short or with a field of the wrong type fails in both.
func TestDecodeAsEncodingJSON(t *testing.T) {
	for typ, mk := range newOp {
		for seed := range uint64(150) {
			rng := rand.New(rand.NewPCG(seed, uint64(typ)))
			op := mk()
			randfill.Fill(rng, reflect.ValueOf(op).Elem())
			data, err := Encode(op)
			if err != nil {
				continue // a value encoding/json cannot write
			}
			want := mk()
			if err := json.Unmarshal(data[1:], want); err != nil {
				t.Fatalf("type %d seed %d: encoding/json: %v", typ, seed, err)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("type %d seed %d: %v\n%s", typ, seed, err, data)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("type %d seed %d: decoded\n%+v\nwant\n%+v\nfrom %s", typ, seed, got, want, data)
			}
			if len(data) > 2 {
				cut := data[:len(data)/2+1]
				if _, err := Decode(cut); err == nil && json.Unmarshal(cut[1:], mk()) != nil {
					t.Fatalf("type %d seed %d: %q decodes, encoding/json refuses it", typ, seed, cut)
				}
			}
		}
	}
	if _, err := Decode(append([]byte{byte(TypeSubmit)}, `{"job":{"id":"x"}}`...)); err == nil {
		t.Error("a job id that is a string decodes")
	}
}

// BenchmarkDecode: one submit's entry as sbatch makes it (an environment
// of 60 variables), read by Decode and by encoding/json.
func BenchmarkDecode(b *testing.B) {
	env := make([]string, 60)
	for i := range env {
		env[i] = fmt.Sprintf("VAR_%02d=/usr/local/lib/something/%d:/usr/lib/x86_64-linux-gnu", i, i)
	}
	op := &Submit{Time: time.Unix(2e9, 0).UTC(), Token: "0123456789abcdef0123456789abcdef", Job: &api.Job{
		ID: 42, UID: 1000, GID: 1000, User: "alice", Account: "physics", State: api.StatePending,
		Spec: api.JobSpec{Name: "wrap", Partition: "debug", WorkDir: "/home/alice/run", Wrap: true, NTasks: 1,
			TimeLimitMin: 60, Output: "/home/alice/run/slurm-%j.out", Script: "#!/bin/sh\ntrue\n", Env: env},
	}}
	data, err := Encode(op)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if err := json.Unmarshal(data[1:], new(Submit)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
