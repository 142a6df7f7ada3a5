package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// POST /slurm/v0.0.38/job/submit's body (v0.0.38_job_submission): the
// script and the job's properties (v0.0.38_job_properties), or "jobs" for
// a heterogeneous job, which hpc refuses. Each property hpc models is
// given to sbatch's option parser as the option it stands for, so a
// property is checked and read exactly as that sbatch option is; the
// script's #SBATCH lines are not read, as slurmrestd does not read them.

// propOpt is the sbatch option a job property stands for, and how its
// JSON value becomes the option's argument.
type propOpt struct {
	long string
	kind propKind
}

type propKind int

const (
	propString propKind = iota // a string (a number is taken as its digits)
	propFlag                   // a boolean: true gives the option
	propTime                   // Unix seconds, or a string sbatch reads
	propNodes                  // a count, "min-max", or [min, max]
)

// jobProperties are the properties hpc models.
var jobProperties = map[string]propOpt{
	"account":                   {"account", propString},
	"array":                     {"array", propString},
	"begin_time":                {"begin", propTime},
	"comment":                   {"comment", propString},
	"constraints":               {"constraint", propString},
	"cpus_per_task":             {"cpus-per-task", propString},
	"current_working_directory": {"chdir", propString},
	"dependency":                {"dependency", propString},
	"gpus":                      {"gpus", propString},
	"gpus_per_node":             {"gpus-per-node", propString},
	"gpus_per_task":             {"gpus-per-task", propString},
	"gres":                      {"gres", propString},
	"hold":                      {"hold", propFlag},
	"licenses":                  {"licenses", propString},
	"mail_type":                 {"mail-type", propString},
	"mail_user":                 {"mail-user", propString},
	"memory_per_cpu":            {"mem-per-cpu", propString},
	"memory_per_gpu":            {"mem-per-gpu", propString},
	"memory_per_node":           {"mem", propString},
	"minimum_cpus_per_node":     {"mincpus", propString},
	"name":                      {"job-name", propString},
	"nice":                      {"nice", propString},
	"nodes":                     {"nodes", propNodes},
	"open_mode":                 {"open-mode", propString},
	"partition":                 {"partition", propString},
	"qos":                       {"qos", propString},
	"reservation":               {"reservation", propString},
	"signal":                    {"signal", propString},
	"standard_error":            {"error", propString},
	"standard_input":            {"input", propString},
	"standard_output":           {"output", propString},
	"tasks":                     {"ntasks", propString},
	"tasks_per_node":            {"ntasks-per-node", propString},
	"time_limit":                {"time", propString},
	"time_minimum":              {"time-min", propString},
	"wckey":                     {"wckey", propString},
}

// Submission is a decoded job/submit body.
type Submission struct {
	Script string
	// Args are the sbatch options the properties stand for, in the
	// properties' name order.
	Args []string
	// Env is the job's environment, KEY=VALUE, sorted.
	Env []string
}

// DecodeSubmission reads a job/submit body. Its errors are *api.Error
// with Slurm's text and a description of what is wrong.
func DecodeSubmission(body []byte) (*Submission, error) {
	bad := func(msg, format string, args ...any) error {
		return &api.Error{Message: msg, Detail: fmt.Sprintf(format, args...)}
	}
	var in struct {
		Script *string                    `json:"script"`
		Job    map[string]json.RawMessage `json:"job"`
		Jobs   json.RawMessage            `json:"jobs"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, bad(ErrRESTFailParsing, "the body is not a job submission (v0.0.38_job_submission): %v", err)
	}
	if dec.More() {
		return nil, bad(ErrRESTFailParsing, "the body holds more than one JSON value")
	}
	switch {
	case in.Jobs != nil:
		return nil, bad(ErrNotSupported, "heterogeneous jobs (\"jobs\") are not supported: submit one job with \"job\"")
	case in.Job == nil:
		return nil, bad(ErrRESTInvalidJobsDesc, "the body has no \"job\" object")
	case in.Script == nil || *in.Script == "":
		return nil, bad(api.ErrJobScriptMissing, "the body has no \"script\"")
	}
	s := &Submission{Script: *in.Script}
	names := make([]string, 0, len(in.Job))
	for name := range in.Job {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		raw := in.Job[name]
		if name == "environment" {
			env, err := decodeEnv(raw)
			if err != nil {
				return nil, bad(ErrRESTFailParsing, "job property environment: %v", err)
			}
			s.Env = env
			continue
		}
		p, ok := jobProperties[name]
		if !ok {
			return nil, bad(ErrRESTFailParsing, "job property %q is unknown or not supported", name)
		}
		arg, err := propArg(p, raw)
		if err != nil {
			return nil, bad(ErrRESTFailParsing, "job property %s: %v", name, err)
		}
		if arg != "" {
			s.Args = append(s.Args, arg)
		}
	}
	if s.Env == nil {
		return nil, bad(ErrRESTFailParsing, "job property environment is required (v0.0.38_job_properties)")
	}
	return s, nil
}

// propArg is the sbatch argument for one property's JSON value; "" when
// the value asks for nothing (false, null).
func propArg(p propOpt, raw json.RawMessage) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if v == nil {
		return "", nil
	}
	switch p.kind {
	case propFlag:
		b, ok := v.(bool)
		if !ok {
			return "", errors.New("not a boolean")
		}
		if !b {
			return "", nil
		}
		return "--" + p.long, nil
	case propTime:
		if n, ok := v.(json.Number); ok {
			secs, err := n.Int64()
			if err != nil {
				return "", errors.New("not a time in seconds")
			}
			return "--" + p.long + "=" + time.Unix(secs, 0).Format("2006-01-02T15:04:05"), nil
		}
	case propNodes:
		if list, ok := v.([]any); ok {
			if len(list) < 1 || len(list) > 2 {
				return "", errors.New("not [min] or [min, max]")
			}
			var parts []string
			for _, x := range list {
				n, ok := x.(json.Number)
				if !ok {
					return "", errors.New("not a list of counts")
				}
				parts = append(parts, n.String())
			}
			return "--" + p.long + "=" + strings.Join(parts, "-"), nil
		}
	}
	switch x := v.(type) {
	case string:
		return "--" + p.long + "=" + x, nil
	case json.Number:
		return "--" + p.long + "=" + x.String(), nil
	}
	return "", errors.New("not a string or a number")
}

// decodeEnv reads the environment: an object of names and values (as the
// document has it), or a list of NAME=value strings.
func decodeEnv(raw json.RawMessage) ([]string, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err == nil {
		env := make([]string, 0, len(m))
		for k, v := range m {
			if k == "" || strings.Contains(k, "=") {
				return nil, fmt.Errorf("invalid variable name %q", k)
			}
			switch x := v.(type) {
			case string:
				env = append(env, k+"="+x)
			case float64:
				env = append(env, k+"="+strconv.FormatFloat(x, 'f', -1, 64))
			case bool:
				env = append(env, k+"="+strconv.FormatBool(x))
			default:
				return nil, fmt.Errorf("variable %s is not a string", k)
			}
		}
		sort.Strings(env)
		return env, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("not an object of variables nor a list of NAME=value")
	}
	for _, e := range list {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return nil, fmt.Errorf("%q is not NAME=value", e)
		}
	}
	return list, nil
}

// JobSpec is the job a submission asks for: its options read by sbatch's
// parser, begin times against now, the working directory home when none
// is given. Errors are *api.Error.
func (s *Submission) JobSpec(home string, now time.Time) (api.JobSpec, error) {
	o, err := jobspec.ParseArgs(s.Args)
	if err != nil {
		msg := err.Error()
		var ue *jobspec.UsageError
		if errors.As(err, &ue) {
			msg, _, _ = strings.Cut(ue.Msg, "\n") // drop getopt's "Try sbatch --help"
		}
		return api.JobSpec{}, &api.Error{Message: ErrRESTFailParsing, Detail: msg}
	}
	if o.ScriptPath != "" {
		return api.JobSpec{}, &api.Error{Message: ErrRESTFailParsing, Detail: "unexpected argument " + o.ScriptPath}
	}
	if err := o.ResolveBegin(now); err != nil {
		return api.JobSpec{}, &api.Error{Message: ErrRESTFailParsing, Detail: "invalid begin_time"}
	}
	spec := o.Spec
	if spec.WorkDir == "" {
		spec.WorkDir = home
	}
	if !strings.HasPrefix(spec.WorkDir, "/") {
		return api.JobSpec{}, &api.Error{Message: ErrRESTFailParsing,
			Detail: fmt.Sprintf("current_working_directory %q is not an absolute path", spec.WorkDir)}
	}
	spec.Script = s.Script
	spec.Env = s.Env
	return spec, nil
}
