package commands

import (
	"encoding/json"
	"strings"
	"testing"
)

// jsonAnswer decodes an openapi answer, numbers as json.Number.
func jsonAnswer(t *testing.T, text string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, text)
	}
	return m
}

// pick finds the object of list whose key is want.
func pick(t *testing.T, list any, key, want string) map[string]any {
	t.Helper()
	for _, x := range list.([]any) {
		o := x.(map[string]any)
		if v, ok := o[key]; ok && jsonText(v) == want {
			return o
		}
	}
	t.Fatalf("no %s=%s in %v", key, want, list)
	return nil
}

// jsonText is a decoded value as text ("null" for null).
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// checkFields compares fields of o with their expected text.
func checkFields(t *testing.T, what string, o map[string]any, want map[string]string) {
	t.Helper()
	for k, w := range want {
		v, ok := o[k]
		if !ok {
			t.Errorf("%s: no %q", what, k)
		} else if got := jsonText(v); got != w {
			t.Errorf("%s: %s = %s, want %s", what, k, got, w)
		}
	}
}

// TestSqueueJSON: squeue --json prints openapi/v0.0.38's jobs answer, every
// job the controller gives (its filters and formats ignored), an array's
// pending tasks as one record.
func TestSqueueJSON(t *testing.T) {
	f, e, out, errb := newFake(t)
	for i, id := range []uint64{40, 41, 42} {
		j := pendingFor(refJob(id, "arr", "debug"), "Priority")
		j.ArrayJobID, j.ArrayTaskID, j.Spec.Array = 40, i+1, "1-3%2"
		f.jobs = append(f.jobs, j)
	}
	f.jobs[len(f.jobs)-3] = runningOn(f.jobs[len(f.jobs)-3], "node4")
	stdout, stderr, code := run(e, out, errb, "squeue", "--json", "-u", "nobody", "-t", "R", "-o", "%i")
	if code != 0 || stderr != "" {
		t.Fatalf("squeue --json: %d %q", code, stderr)
	}
	if strings.HasSuffix(stdout, "\n") || !strings.HasPrefix(stdout, "{\n  \"meta\": {\n    \"plugin\": {\n      \"type\": \"openapi\\/v0.0.38\",\n") {
		t.Errorf("squeue --json is not json-c's pretty text:\n%.300s", stdout)
	}
	m := jsonAnswer(t, stdout)
	meta := m["meta"].(map[string]any)
	if p := meta["plugin"].(map[string]any); p["type"] != "openapi/v0.0.38" || p["name"] != "Slurm OpenAPI v0.0.38" {
		t.Errorf("meta.plugin: %v", p)
	}
	if v := jsonText(meta["Slurm"]); v != `{"release":"22.05.8","version":{"major":22,"micro":8,"minor":5}}` {
		t.Errorf("meta.Slurm: %s", v)
	}
	if errs := m["errors"].([]any); len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
	jobs := m["jobs"].([]any)
	if len(jobs) != 11 { // 9 jobs, the running task, the array's record
		t.Fatalf("%d jobs, want 11", len(jobs))
	}
	checkFields(t, "job 15", pick(t, jobs, "job_id", "15"), map[string]string{
		"job_state": "RUNNING", "state_reason": "None", "name": "sleeper", "user_id": "0", "user_name": "root",
		"group_id": "0", "group_name": "root", "account": "root", "partition": "debug", "qos": "normal",
		"nodes": "node1", "node_count": "1", "cpus": "1", "tasks": "1", "batch_flag": "true", "batch_host": "node1",
		"submit_time": jsonText(at(4, 59, 28).Unix()), "start_time": jsonText(at(4, 59, 29).Unix()),
		"end_time": jsonText(at(5, 9, 29).Unix()), "time_limit": "10", "priority": "4294901745",
		"memory_per_cpu": "1000", "memory_per_node": "null", "exit_code": "0", "array_task_id": "null",
		"current_working_directory": "/tmp/w", "standard_output": "/tmp/w/slurm-15.out",
		"standard_input": "/dev/null", "tres_req_str": "cpu=1,mem=1000M,node=1,billing=1",
		"tres_alloc_str": "cpu=1,mem=1000M,node=1,billing=1", "billable_tres": "1.0", "cluster": "lab",
		"admin_comment": "", "nice": "null", "requeue": "true",
	})
	if r := pick(t, jobs, "job_id", "15")["job_resources"].(map[string]any); jsonText(r["allocated_hosts"]) != "1" || r["nodes"] != "node1" {
		t.Errorf("job 15 job_resources: %v", r)
	}
	pend := pick(t, jobs, "job_id", "20")
	checkFields(t, "job 20", pend, map[string]string{
		"job_state": "PENDING", "state_reason": "Resources", "nodes": "", "node_count": "2", "tasks": "4",
		"cpus": "4", "start_time": "0", "billable_tres": "null", "tres_alloc_str": "", "batch_host": "",
	})
	if _, ok := pend["job_resources"]; ok {
		t.Errorf("pending job 20 has job_resources")
	}
	checkFields(t, "job 26", pick(t, jobs, "job_id", "26"), map[string]string{"user_id": "65534", "user_name": "nobody"})
	checkFields(t, "job 14", pick(t, jobs, "job_id", "14"), map[string]string{"job_state": "COMPLETED", "end_time": jsonText(at(4, 59, 21).Unix())})
	checkFields(t, "array record", pick(t, jobs, "array_task_string", "2-3%2"), map[string]string{
		"job_id": "41", "array_job_id": "40", "array_task_id": "null", "array_max_tasks": "2", "job_state": "PENDING",
	})
	checkFields(t, "array task", pick(t, jobs, "job_id", "40"), map[string]string{
		"array_job_id": "40", "array_task_id": "1", "array_max_tasks": "0", "array_task_string": "", "nodes": "node4",
	})
	// Keys in the plugin's order.
	first := stdout[strings.Index(stdout, "\"jobs\""):]
	last := -1
	for _, k := range []string{"account", "accrue_time", "array_job_id", "batch_flag", "flags", "cluster", "job_id",
		"job_resources", "job_state", "name", "nodes", "cpus", "node_count", "partition", "memory_per_node",
		"priority", "qos", "state_reason", "standard_output", "submit_time", "time_limit", "tres_req_str",
		"user_name", "current_working_directory"} {
		i := strings.Index(first, "\n      \""+k+"\": ")
		if i <= last {
			t.Errorf("key %q out of order", k)
		}
		last = i
	}
}

// TestSqueueYAML: --yaml dumps the same tree as a YAML document; strings
// Slurm leaves unset are null there.
func TestSqueueYAML(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.jobs = f.jobs[1:2] // job 15
	f.jobs[0].Spec.Gres = "gpu:1"
	stdout, stderr, code := run(e, out, errb, "squeue", "--yaml")
	if code != 0 || stderr != "" {
		t.Fatalf("squeue --yaml: %d %q", code, stderr)
	}
	for _, want := range []string{
		"---\nmeta:\n  plugin:\n    type: openapi/v0.0.38\n    name: Slurm OpenAPI v0.0.38\n",
		"errors: []\njobs:\n- account: root\n  accrue_time: ", "  admin_comment: null\n",
		"  array_task_id: null\n", "  billable_tres: 1.000000\n", "  job_id: 15\n  job_resources:\n    nodes: node1\n",
		"    allocated_nodes:\n    - sockets: {}\n      nodename: node1\n", "  job_state: RUNNING\n",
		"  show_flags:\n  - SHOW_ALL\n  - SHOW_DETAIL\n  - SHOW_LOCAL\n", "  tres_per_node: \"gres:gpu:1\"\n",
		"  current_working_directory: /tmp/w\n...\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("squeue --yaml lacks\n%s\nin\n%s", want, stdout)
		}
	}
	if !strings.HasSuffix(stdout, "...\n") {
		t.Errorf("squeue --yaml does not end the document")
	}
}

// TestSqueueJSONError: when the jobs cannot be loaded the answer says so
// in its errors, as the plugin does.
func TestSqueueJSONError(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.fail = "Unable to contact slurm controller (connect failure)"
	stdout, _, code := run(e, out, errb, "squeue", "--json")
	m := jsonAnswer(t, stdout)
	errs := m["errors"].([]any)
	if code != 0 || len(errs) != 1 || len(m["jobs"].([]any)) != 0 {
		t.Fatalf("squeue --json on failure: %d %s", code, stdout)
	}
	checkFields(t, "error", errs[0].(map[string]any), map[string]string{
		"source": "slurm_load_jobs", "error": f.fail, "description": "Failed while looking for jobs",
	})
}
