package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"hpc/cluster/api"
)

// restDoc is one of Slurm's OpenAPI documents (testdata/openapi), loaded
// for validating answers.
type restDoc struct {
	doc    *openapi3.T
	prefix string // the server's path: /slurm/v0.0.38 or /slurmdb/v0.0.38
	meta   string // the meta schema's name
	errs   string // the errors schema's name
}

// loadRESTDoc loads a document and relaxes it where Slurm 22.05's own
// answers differ from it, so that an answer slurmrestd would give passes:
//   - every value may be null: the plugins write null for what is unset
//     (a NO_VAL number, a NULL string: data_set_null), and the documents
//     never say nullable;
//   - meta's Slurm.version.major, minor and micro are integers: the
//     plugins write them as numbers (data_convert_type to int64), the
//     documents say string;
//   - where dbv0.0.38's plugin writes another type than its document says
//     (restQuirks): a job's allocation_nodes is a count, a step's task an
//     object (its distribution);
//   - dbv0.0.38.json refers to v0.0.38_meta, the slurmctld document's,
//     which it does not hold: it is given its own dbv0.0.38_meta (the
//     same object) under that name, so that its references resolve.
//
// The files are not edited.
func loadRESTDoc(t *testing.T, name, prefix, schemaPrefix string) restDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "openapi", name))
	if err != nil {
		t.Fatal(err)
	}
	doc := &openapi3.T{}
	if err := json.Unmarshal(data, doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Components.Schemas["v0.0.38_meta"]; !ok {
		doc.Components.Schemas["v0.0.38_meta"] = doc.Components.Schemas[schemaPrefix+"_meta"]
	}
	if err := openapi3.NewLoader().ResolveRefsIn(doc, nil); err != nil {
		t.Fatal(err)
	}
	seen := map[*openapi3.Schema]bool{}
	var nullable func(*openapi3.SchemaRef)
	nullable = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		s.Nullable = true
		for _, p := range s.Properties {
			nullable(p)
		}
		nullable(s.Items)
		nullable(s.AdditionalProperties.Schema)
		for _, l := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for _, x := range l {
				nullable(x)
			}
		}
	}
	for _, s := range doc.Components.Schemas {
		nullable(s)
	}
	meta := doc.Components.Schemas[schemaPrefix+"_meta"]
	if meta == nil {
		t.Fatalf("%s has no %s_meta", name, schemaPrefix)
	}
	version := meta.Value.Properties["Slurm"].Value.Properties["version"].Value
	for _, k := range []string{"major", "minor", "micro"} {
		version.Properties[k].Value.Type = &openapi3.Types{openapi3.TypeInteger}
	}
	for _, q := range restQuirks {
		if sc := doc.Components.Schemas[q.schema]; sc != nil && sc.Value.Properties[q.prop] != nil {
			sc.Value.Properties[q.prop] = openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{q.typ}, Nullable: true})
		}
	}
	return restDoc{doc: doc, prefix: prefix, meta: schemaPrefix + "_meta", errs: schemaPrefix + "_errors"}
}

// restQuirks are the properties dbv0.0.38's plugin writes with another
// type than its document gives them.
var restQuirks = []struct{ schema, prop, typ string }{
	{"dbv0.0.38_job", "allocation_nodes", openapi3.TypeInteger},
	{"dbv0.0.38_job_step", "task", openapi3.TypeObject},
}

// restCall is one REST request and its answer.
type restCall struct {
	req    *http.Request
	status int
	header http.Header
	body   []byte
}

// rest sends a REST request to d's web side with a token ("" for none).
func rest(t *testing.T, d *Daemon, method, path, token string, body []byte) restCall {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+d.addr(d.cfg.APIPort)+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set(hdrSlurmToken, token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return restCall{req: req, status: resp.StatusCode, header: resp.Header, body: b}
}

// validate checks an answer against the document's operation for
// docPath: a 200 against its response, a failure's errors against the
// errors schema (the documents give a failure a bare array; Slurm answers
// with the plugin's object, meta and errors).
func (rd restDoc) validate(t *testing.T, c restCall, docPath string, params map[string]string) {
	t.Helper()
	item := rd.doc.Paths.Value(docPath)
	if item == nil {
		t.Fatalf("no path %s in the document", docPath)
	}
	op := item.GetOperation(c.req.Method)
	if op == nil {
		t.Fatalf("no %s %s in the document", c.req.Method, docPath)
	}
	if c.status != http.StatusOK {
		var v struct {
			Meta   any `json:"meta"`
			Errors any `json:"errors"`
		}
		if err := json.Unmarshal(c.body, &v); err != nil {
			t.Fatalf("%s %s: %d %s: not JSON: %v", c.req.Method, c.req.URL.Path, c.status, c.body, err)
		}
		if err := rd.doc.Components.Schemas[rd.errs].Value.VisitJSON(v.Errors); err != nil {
			t.Errorf("%s %s: errors: %v\n%s", c.req.Method, c.req.URL.Path, err, c.body)
		}
		if err := rd.doc.Components.Schemas[rd.meta].Value.VisitJSON(v.Meta); err != nil {
			t.Errorf("%s %s: meta: %v\n%s", c.req.Method, c.req.URL.Path, err, c.body)
		}
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request: c.req, PathParams: params,
		Route:   &routers.Route{Spec: rd.doc, Path: docPath, PathItem: item, Method: c.req.Method, Operation: op},
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: c.status, Header: c.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(c.body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s does not validate against %s: %v\n%.2000s", c.req.Method, c.req.URL.Path, docPath, err, c.body)
	}
}

// restErrors are an answer's errors.
func restErrors(t *testing.T, c restCall) []map[string]any {
	t.Helper()
	var v struct {
		Errors []map[string]any `json:"errors"`
	}
	if err := json.Unmarshal(c.body, &v); err != nil {
		t.Fatalf("%s: %v", c.body, err)
	}
	return v.Errors
}

// submitBody is a job/submit body.
func submitBody(job map[string]any, script string) []byte {
	b, _ := json.Marshal(map[string]any{"job": job, "script": script})
	return b
}

// restJobIDs are the job ids of a jobs answer.
func restJobIDs(t *testing.T, c restCall) []uint64 {
	t.Helper()
	var v struct {
		Jobs []struct {
			JobID uint64 `json:"job_id"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(c.body, &v); err != nil {
		t.Fatalf("%s: %v", c.body, err)
	}
	var ids []uint64
	for _, j := range v.Jobs {
		ids = append(ids, j.JobID)
	}
	return ids
}

// Slurm's REST API on a node's web side: every route answers, and each
// answer validates against Slurm 22.05's documents; a job submitted
// through it runs as the token's user and shows in squeue's list and
// sacct's rows; scancel's permissions hold; a request without a token and
// a body that cannot be read are refused.
func TestRESTAPI(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	slurm := loadRESTDoc(t, "v0.0.38.json", restPrefix, "v0.0.38")
	db := loadRESTDoc(t, "dbv0.0.38.json", restDBPrefix, "dbv0.0.38")
	root, err := cl.Token(ctx, api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}

	// No token, even from the machine itself: 401, as slurmrestd answers.
	c := rest(t, d, http.MethodGet, restPrefix+"/jobs", "", nil)
	if c.status != http.StatusUnauthorized || !strings.Contains(string(c.body), "Invalid authentication credential") {
		t.Errorf("no token: %d %s", c.status, c.body)
	}
	slurm.validate(t, c, "/jobs/", nil)

	// Root submits a job that runs until cancelled.
	dir := t.TempDir()
	c = rest(t, d, http.MethodPost, restPrefix+"/job/submit", root, submitBody(map[string]any{
		"name": "rest-root", "time_limit": 10, "tasks": 1, "nodes": []int{1, 1},
		"current_working_directory": dir, "standard_output": dir + "/out-%j",
		"environment": map[string]string{"PATH": "/bin:/usr/bin", "REST": "yes"},
	}, "#!/bin/sh\necho $REST\nexec sleep 300\n"))
	slurm.validate(t, c, "/job/submit", nil)
	var sub struct {
		JobID  uint64 `json:"job_id"`
		StepID string `json:"step_id"`
	}
	if err := json.Unmarshal(c.body, &sub); err != nil || c.status != http.StatusOK || sub.JobID == 0 || sub.StepID != "BATCH" {
		t.Fatalf("submit: %d %s", c.status, c.body)
	}
	j := waitJob(t, cl, sub.JobID, api.StateRunning)
	if j.Spec.Name != "rest-root" || j.Spec.WorkDir != dir || j.UID != 0 || j.Spec.TimeLimitMin != 10 {
		t.Errorf("the job as submitted: %+v", j.Spec)
	}
	for _, p := range []struct{ path, doc string }{
		{"/ping", "/ping/"}, {"/diag", "/diag/"}, {"/jobs", "/jobs/"}, {"/jobs/", "/jobs/"},
		{"/nodes", "/nodes/"}, {"/partitions", "/partitions/"},
	} {
		c := rest(t, d, http.MethodGet, restPrefix+p.path, root, nil)
		if c.status != http.StatusOK {
			t.Errorf("GET %s: %d %s", p.path, c.status, c.body)
		}
		slurm.validate(t, c, p.doc, nil)
	}
	c = rest(t, d, http.MethodGet, restPrefix+"/jobs", root, nil)
	if ids := restJobIDs(t, c); len(ids) != 1 || ids[0] != sub.JobID {
		t.Errorf("GET jobs: %v, want [%d]", ids, sub.JobID)
	}
	c = rest(t, d, http.MethodGet, fmt.Sprintf("%s/job/%d", restPrefix, sub.JobID), root, nil)
	slurm.validate(t, c, "/job/{job_id}", map[string]string{"job_id": fmt.Sprint(sub.JobID)})
	if ids := restJobIDs(t, c); len(ids) != 1 || ids[0] != sub.JobID || !strings.Contains(string(c.body), `"job_state": "RUNNING"`) {
		t.Errorf("GET job: %s", c.body)
	}
	c = rest(t, d, http.MethodGet, restPrefix+"/node/node1", root, nil)
	slurm.validate(t, c, "/node/{node_name}", map[string]string{"node_name": "node1"})
	c = rest(t, d, http.MethodGet, restPrefix+"/node/nosuch", root, nil)
	if c.status != http.StatusInternalServerError || !strings.Contains(string(c.body), "Invalid node name specified") {
		t.Errorf("GET node/nosuch: %d %s", c.status, c.body)
	}
	slurm.validate(t, c, "/node/{node_name}", map[string]string{"node_name": "nosuch"})
	part := d.conf().Partitions[0].Name
	c = rest(t, d, http.MethodGet, restPrefix+"/partition/"+part, root, nil)
	slurm.validate(t, c, "/partition/{partition_name}", map[string]string{"partition_name": part})
	if !strings.Contains(string(c.body), `"name": "`+part+`"`) {
		t.Errorf("GET partition/%s: %s", part, c.body)
	}

	// squeue's list has it; another user may not cancel it.
	if jobs, err := cl.Jobs(ctx); err != nil || len(jobs) != 1 || jobs[0].ID != sub.JobID {
		t.Errorf("squeue's list: %v %+v", err, jobs)
	}
	if os.Getuid() == 0 {
		nobody, err := cl.Token(ctx, api.TokenRequest{User: "nobody"})
		if err != nil {
			t.Fatal(err)
		}
		c = rest(t, d, http.MethodDelete, fmt.Sprintf("%s/job/%d", restPrefix, sub.JobID), nobody, nil)
		if errs := restErrors(t, c); c.status != http.StatusInternalServerError || len(errs) != 1 ||
			errs[0]["error"] != api.ErrAccessDenied || errs[0]["error_number"] != float64(2002) {
			t.Errorf("nobody's DELETE: %d %s", c.status, c.body)
		}
		slurm.validate(t, c, "/job/{job_id}", nil)
		if j := waitJob(t, cl, sub.JobID, api.StateRunning); j.State != api.StateRunning {
			t.Errorf("nobody's DELETE touched the job: %s", j.State)
		}
	}
	c = rest(t, d, http.MethodDelete, fmt.Sprintf("%s/job/%d", restPrefix, sub.JobID), root, nil)
	if c.status != http.StatusOK {
		t.Errorf("root's DELETE: %d %s", c.status, c.body)
	}
	slurm.validate(t, c, "/job/{job_id}", map[string]string{"job_id": fmt.Sprint(sub.JobID)})
	waitJob(t, cl, sub.JobID, api.StateCancelled)
	if out, _ := os.ReadFile(fmt.Sprintf("%s/out-%d", dir, sub.JobID)); strings.TrimSpace(string(out)) != "yes" {
		t.Errorf("the job's output: %q, want its environment's REST=yes", out)
	}

	// sacct's rows, through dbv0.0.38.
	c = rest(t, d, http.MethodGet, fmt.Sprintf("%s/job/%d", restDBPrefix, sub.JobID), root, nil)
	db.validate(t, c, "/job/{job_id}", map[string]string{"job_id": fmt.Sprint(sub.JobID)})
	if ids := restJobIDs(t, c); len(ids) != 1 || ids[0] != sub.JobID || !strings.Contains(string(c.body), `"current": "CANCELLED"`) {
		t.Errorf("GET slurmdb job: %d %s", c.status, c.body)
	}
	c = rest(t, d, http.MethodGet, restDBPrefix+"/jobs", root, nil)
	db.validate(t, c, "/jobs/", nil)
	if ids := restJobIDs(t, c); len(ids) != 1 || ids[0] != sub.JobID {
		t.Errorf("GET slurmdb jobs: %v", ids)
	}
	rows, err := cl.Acct(ctx, api.AcctQuery{JobIDs: []uint64{sub.JobID}})
	if err != nil || len(rows) == 0 || rows[0].JobName != "rest-root" {
		t.Errorf("sacct's rows: %v %+v", err, rows)
	}
}

// A body job/submit cannot read is refused with 400 and a clear error,
// and nothing is submitted.
func TestRESTSubmitRefused(t *testing.T) {
	d, cl := startOne(t)
	ctx := context.Background()
	slurm := loadRESTDoc(t, "v0.0.38.json", restPrefix, "v0.0.38")
	root, err := cl.Token(ctx, api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": "/bin"}
	for name, c := range map[string]struct {
		body []byte
		want string
	}{
		"not JSON":           {[]byte(`{"job": {"name": "x"`), "Failure during parsing"},
		"heterogeneous":      {[]byte(`{"jobs": [{"environment": {}}, {"environment": {}}], "script": "#!/bin/sh\n"}`), "heterogeneous jobs"},
		"no job":             {[]byte(`{"script": "#!/bin/sh\n"}`), `no \"job\" object`},
		"no script":          {submitBody(map[string]any{"environment": env}, ""), "Job script not specified"},
		"unknown property":   {submitBody(map[string]any{"environment": env, "colour": "blue"}, "#!/bin/sh\n"), `job property \"colour\"`},
		"a bad time limit":   {submitBody(map[string]any{"environment": env, "time_limit": "soon"}, "#!/bin/sh\n"), "time"},
		"no environment":     {submitBody(map[string]any{"name": "x"}, "#!/bin/sh\n"), "environment is required"},
		"a relative cwd":     {submitBody(map[string]any{"environment": env, "current_working_directory": "tmp"}, "#!/bin/sh\n"), "not an absolute path"},
		"a boolean for name": {submitBody(map[string]any{"environment": env, "name": true}, "#!/bin/sh\n"), "job property name"},
	} {
		r := rest(t, d, http.MethodPost, restPrefix+"/job/submit", root, c.body)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: %d %s, want 400 and %q", name, r.status, r.body, c.want)
		}
		slurm.validate(t, r, "/job/submit", nil)
	}
	// What the controller refuses is refused as Slurm refuses it.
	r := rest(t, d, http.MethodPost, restPrefix+"/job/submit", root, submitBody(map[string]any{"environment": env, "partition": "nosuch"}, "#!/bin/sh\ntrue\n"))
	if r.status != http.StatusInternalServerError || !strings.Contains(string(r.body), api.ErrInvalidPartition) || !strings.Contains(string(r.body), `"error_number": 2000`) {
		t.Errorf("an unknown partition: %d %s", r.status, r.body)
	}
	slurm.validate(t, r, "/job/submit", nil)
	if jobs, err := cl.Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Errorf("refused bodies submitted jobs: %v %+v", err, jobs)
	}
}

// A job submitted with a token for nobody runs as nobody.
func TestRESTSubmitAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("making a token for another user and running its job needs root")
	}
	// The node's directory where nobody may reach its job's storage:
	// t.TempDir's parents are root's alone.
	state, err := os.MkdirTemp("", "rest-node-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	if err := os.Chmod(state, 0o755); err != nil {
		t.Fatal(err)
	}
	d, cl := startOneWith(t, func(o *Options) { o.Dir = state })
	ctx := context.Background()
	slurm := loadRESTDoc(t, "v0.0.38.json", restPrefix, "v0.0.38")
	nobody, err := cl.Token(ctx, api.TokenRequest{User: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "account", Names: []string{"tests"}})
	acctmgr(t, d, api.AcctmgrRequest{Action: "add", Entity: "user", Names: []string{"nobody"}, Accounts: []string{"tests"}})
	// A directory nobody may write in: t.TempDir's parents are root's alone.
	dir, err := os.MkdirTemp("", "rest-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	c := rest(t, d, http.MethodPost, restPrefix+"/job/submit", nobody, submitBody(map[string]any{
		"name": "as-nobody", "current_working_directory": dir, "environment": map[string]string{"PATH": "/bin:/usr/bin"},
	}, "#!/bin/sh\nid -u\n"))
	slurm.validate(t, c, "/job/submit", nil)
	var sub struct {
		JobID uint64 `json:"job_id"`
	}
	if err := json.Unmarshal(c.body, &sub); err != nil || sub.JobID == 0 {
		t.Fatalf("submit as nobody: %d %s", c.status, c.body)
	}
	j := waitFinal(t, cl, sub.JobID)
	out, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("slurm-%d.out", sub.JobID)))
	if j.State != api.StateCompleted {
		t.Fatalf("nobody's job ended %s: %q", j.State, out)
	}
	if j.UID != 65534 || j.User != "nobody" {
		t.Errorf("the job's owner: %d %s", j.UID, j.User)
	}
	if err != nil || strings.TrimSpace(string(out)) != "65534" {
		t.Errorf("the job ran as %q (%v), want nobody's uid 65534", out, err)
	}
	// Its user sees it through the REST API, in squeue's and sacct's shapes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c = rest(t, d, http.MethodGet, fmt.Sprintf("%s/job/%d", restDBPrefix, sub.JobID), nobody, nil)
		if strings.Contains(string(c.body), `"current": "COMPLETED"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(string(c.body), `"user": "nobody"`) || !strings.Contains(string(c.body), `"current": "COMPLETED"`) {
		t.Errorf("nobody's job in accounting: %d %s", c.status, c.body)
	}
}

// waitFinal waits for a job to end and returns its record.
func waitFinal(t *testing.T, cl *api.Client, id uint64) api.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		jobs, err := cl.Jobs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.ID == id && j.State.Final() {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d never ended: %+v", id, jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
