package openapi

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// Every job property hpc reads is one of v0.0.38_job_properties in
// Slurm's document, and stands for an sbatch option.
func TestJobPropertiesAreSlurms(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "openapi", "v0.0.38.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	props := doc.Components.Schemas["v0.0.38_job_properties"].Properties
	for name, p := range jobProperties {
		if _, ok := props[name]; !ok {
			t.Errorf("%s is not a property of v0.0.38_job_properties", name)
		}
		if _, ok := jobspec.SbatchOption(p.long); !ok {
			t.Errorf("%s: --%s is not an sbatch option", name, p.long)
		}
	}
}

// A submission's properties become the job sbatch's options make.
func TestDecodeSubmission(t *testing.T) {
	body := `{"script": "#!/bin/sh\ntrue\n", "job": {"name": "j", "partition": "debug", "nodes": [1, 2],
		"tasks": 4, "cpus_per_task": 2, "time_limit": 90, "memory_per_node": 2048, "hold": true,
		"requeue_unused": null, "standard_output": "/tmp/o-%j", "account": "physics", "qos": "high",
		"environment": {"PATH": "/bin", "N": 3}}}`
	body = strings.Replace(body, `"requeue_unused": null, `, "", 1)
	sub, err := DecodeSubmission([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := sub.JobSpec("/home/u", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := api.JobSpec{Name: "j", Partition: "debug", Nodes: 1, MaxNodes: 2, NTasks: 4, CPUsPerTask: 2,
		TimeLimitMin: 90, MemPerNodeMB: 2048, Hold: true, Output: "/tmp/o-%j", Account: "physics", QOS: "high",
		WorkDir: "/home/u", Script: "#!/bin/sh\ntrue\n", Env: []string{"N=3", "PATH=/bin"}}
	got, _ := json.Marshal(spec)
	w, _ := json.Marshal(want)
	if string(got) != string(w) {
		t.Errorf("spec:\n got %s\nwant %s", got, w)
	}
}

// FuzzDecodeSubmission: whatever the body, the decoder answers without
// panicking; an error is Slurm's (an *api.Error), and a submission it
// accepts gives a job whose script and environment are the body's and
// whose working directory is absolute.
func FuzzDecodeSubmission(f *testing.F) {
	f.Add([]byte(`{"script": "#!/bin/sh\n", "job": {"environment": {"A": "1"}, "nodes": "1-2", "time_limit": "1:00:00"}}`))
	f.Add([]byte(`{"script": "#!/bin/sh\n", "job": {"environment": ["A=1"], "nodes": [2], "begin_time": 1700000000}}`))
	f.Add([]byte(`{"script": "x", "jobs": [{}]}`))
	f.Add([]byte(`{"job": {"environment": {}, "current_working_directory": "rel"}, "script": "s"}`))
	f.Add([]byte(`{"job": {"environment": {}, "name": "--partition=x"}, "script": "s"} {}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		sub, err := DecodeSubmission(body)
		if err != nil {
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Message == "" {
				t.Fatalf("not Slurm's error: %v", err)
			}
			return
		}
		spec, err := sub.JobSpec("/home/u", time.Unix(1700000000, 0))
		if err != nil {
			var ae *api.Error
			if !errors.As(err, &ae) {
				t.Fatalf("not Slurm's error: %v", err)
			}
			return
		}
		if spec.Script != sub.Script || len(spec.Env) != len(sub.Env) || !strings.HasPrefix(spec.WorkDir, "/") {
			t.Fatalf("spec %+v from %+v", spec, sub)
		}
	})
}
