package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// FuzzReadJSONAsEncodingJSON: a submit's request, whatever a user sends,
// is refused by ReadJSON when encoding/json refuses it and reads as
// encoding/json reads it otherwise. The leader reads every submit with
// ReadJSON (cluster's newJob). Seeds: testdata/fuzz/FuzzReadJSONAsEncodingJSON
// and below.
func FuzzReadJSONAsEncodingJSON(f *testing.F) {
	f.Add(`{"spec":{"name":"a","script":"#!/bin/sh\ntrue\n","env":["A=1","B=\u00e9"],"hold":true,"time_limit_min":1},"token":"t"}`)
	f.Add(`{"SPEC":{"Name":"x","NAME":"y"},"Token":"u","unknown":[1,{"a":null}]}`)
	f.Add(`{"spec":{"name":"\xff\xfe","env":null},"token":null}`)
	f.Add(`{"spec":{"name":1}}`)
	f.Add(`{"spec":{"time_limit_min":1e400}}`)
	f.Add(`{"spec":{"env":["A"],"env":["B"]}}`)
	f.Add(`{"spec":{}} trailing`)
	f.Add(`[]`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, body string) {
		var want, got SubmitRequest
		werr := json.Unmarshal([]byte(body), &want)
		gerr := ReadJSON([]byte(body), &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json: %v; ReadJSON: %v", body, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: read\n%+v\nencoding/json reads\n%+v", body, got, want)
		}
	})
}

// BenchmarkReadSubmit: a submit's request as sbatch sends it (an
// environment of 60 variables), read by ReadJSON and by encoding/json.
func BenchmarkReadSubmit(b *testing.B) {
	req := SubmitRequest{Token: "3f9a1c0b8e7d6a5b", Spec: JobSpec{Name: "job.sh", NTasks: 4, TimeLimitMin: 90,
		WorkDir: "/home/alice/run", Script: "#!/bin/bash\n#SBATCH -n 4\nsrun hostname\n"}}
	for i := range 60 {
		req.Spec.Env = append(req.Spec.Env, fmt.Sprintf("VAR_%02d=/usr/local/lib/something/%d:/usr/lib/x86_64-linux-gnu", i, i))
	}
	body, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range []struct {
		name string
		read func([]byte, any) error
	}{{"ReadJSON", ReadJSON}, {"encoding-json", json.Unmarshal}} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var got SubmitRequest
				if err := r.read(body, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
