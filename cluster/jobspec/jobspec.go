package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/internal/words"
)

// Options is a parsed sbatch command line, or (from Resolve) the command
// line merged with the SBATCH_* input variables and the script's directives.
type Options struct {
	Spec api.JobSpec
	// Set holds the long names of the options given ("job-name", "time"...),
	// so callers can tell "not given" from a zero value.
	Set        map[string]bool
	ScriptPath string   // the first non-option argument, "" if none
	ScriptArgs []string // the arguments after it
	Wrap       string   // --wrap command
	Wait       bool     // -W/--wait
	Parsable   bool     // --parsable
	Help       bool     // -h/--help or --usage
	Usage      bool     // --usage: the short form of the help
	Version    bool     // -V/--version
	Quiet      bool     // -Q/--quiet
	TestOnly   bool     // --test-only
	Verbose    int      // -v, once per -v
	// Other holds the options accepted but not interpreted yet (--nice,
	// --licenses, --reservation...), by long name, with the last value
	// given; "" for options without an argument.
	Other map[string]string
	// Notices are lines sbatch prints on stderr before submitting, without
	// its "sbatch: " prefix (for example about --mail-type).
	Notices []string

	begin string     // --begin as given; Resolve turns it into Spec.Begin
	given []givenOpt // command-line options in order, replayed over directives
	// from records where each option was last set: "cli", "script" or
	// "env" (for the memory options' mutual exclusion).
	from map[string]string
}

type givenOpt struct {
	opt *option
	val string
}

func newOptions() *Options {
	return &Options{Set: map[string]bool{}, Other: map[string]string{}, from: map[string]string{}}
}

func (o *Options) apply(opt *option, val string) error {
	o.Set[opt.Long] = true
	if opt.apply == nil {
		o.Other[opt.Long] = val
		return nil
	}
	return opt.apply(o, val)
}

// ParseArgs parses sbatch's arguments (without the program name) as
// getopt_long does with Slurm's option table: --opt=val, --opt val, -J name,
// -Jname, clustered flags (-WQ), and unambiguous prefixes of long names
// (--part=debug). Parsing stops at "--" or at the first argument that is not
// an option, the script path; the words after it are the script's arguments.
// Errors are *UsageError.
func ParseArgs(args []string) (*Options, error) {
	o := newOptions()
	rest, err := parseWords(args, func(opt *option, val string) error {
		o.given = append(o.given, givenOpt{opt, val})
		o.from[opt.Long] = "cli"
		return o.apply(opt, val)
	})
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		o.ScriptPath = rest[0]
		if len(rest) > 1 {
			o.ScriptArgs = slices.Clone(rest[1:])
		}
	}
	return o, nil
}

// parseWords runs getopt_long over words with sbatch's table, calling apply
// for each option, and returns the words left after the options. Getopt's
// own errors become *UsageError with sbatch's "Try" line.
func parseWords(args []string, apply func(*option, string) error) ([]string, error) {
	rest, err := sbatchGetopt().Parse(args, func(o *Opt, val string, _ bool) error {
		return apply(byLong()[o.Long], val)
	})
	var ge *GetoptError
	if errors.As(err, &ge) {
		return nil, getoptError(ge.Msg)
	}
	return rest, err
}

// directive is the option words of one #SBATCH line.
type directive struct {
	line  int // 1-based line number in the script
	words []string
}

// Directives returns the option words of the script's #SBATCH lines, in
// order, as Slurm reads them: only lines before the first one that is
// neither blank nor a comment count (the #! line is a comment); a directive
// is "#SBATCH" at the start of a line followed by whitespace; its words are
// split at whitespace, single or double quotes group words ("-J 'my job'"),
// and a word starting with '#' ends the line (an inline comment).
func Directives(script []byte) []string {
	var out []string
	for _, d := range directives(script) {
		out = append(out, d.words...)
	}
	return out
}

func directives(script []byte) []directive {
	var out []directive
	for n, line := range bytes.Split(script, []byte("\n")) {
		text := strings.TrimSuffix(string(line), "\r")
		if rest, ok := strings.CutPrefix(text, "#SBATCH"); ok && (rest == "" || isSpace(rest[0])) {
			if ws, _ := words.Split(rest, directiveWords); len(ws) > 0 {
				out = append(out, directive{line: n + 1, words: ws})
			}
			continue
		}
		trimmed := strings.TrimLeft(text, " \t\r\f\v")
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		break // the first command: Slurm stops looking for directives
	}
	return out
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

// directiveWords is how the text after "#SBATCH" splits into words: single
// and double quotes, '#' at the start of a word begins an inline comment,
// and an unterminated quote runs to the end of the line.
var directiveWords = words.Options{Space: isSpace, SingleQuotes: true, Comment: '#'}

// Input is what Resolve needs from the submitting process.
type Input struct {
	Cwd      string                       // working directory; relative paths are resolved against it
	Env      []string                     // the submitter's environment, KEY=VALUE
	ReadFile func(string) ([]byte, error) // reads the script file
	Stdin    io.Reader                    // the script when no path and no --wrap are given
	Hostname string                       // the submit host
	Now      time.Time                    // the submit time, for --begin=now+1hour and the like
	// Stat, when set, checks the --container-image and --container-mounts
	// paths on the submitting host (see CheckContainerPaths); nil leaves
	// them to the node.
	Stat func(string) (fs.FileInfo, error)
}

// Resolve does what sbatch does before contacting the controller: parse the
// command line; read the script (the file, --wrap's generated script, or
// stdin) and check it as Slurm does; apply its #SBATCH directives, then the
// SBATCH_* input variables of the environment over them, then the
// command-line options over both (the command line wins whatever the order;
// as in Slurm, a --wrap script is read for directives too); and fill in the
// job name (the script's base name, "wrap" or "sbatch" for stdin), the
// absolute working directory (-D against Cwd, else Cwd), the environment the
// job gets (--export), the begin time and the submit host. Output and Error
// stay unexpanded patterns.
//
// With --help or --version, Resolve returns after parsing the command line,
// reading nothing. Errors are *UsageError.
func Resolve(args []string, in Input) (*Options, error) {
	cl, err := ParseArgs(args)
	if err != nil {
		return nil, err
	}
	if cl.Help || cl.Version {
		return cl, nil
	}
	var script []byte
	var name string
	switch {
	case cl.Set["wrap"]:
		if cl.ScriptPath != "" {
			return nil, &UsageError{Msg: msgWrapArgs, Code: 1}
		}
		script = []byte("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n" + cl.Wrap + "\n")
		name = "wrap"
	case cl.ScriptPath != "":
		path := cl.ScriptPath
		if !filepath.IsAbs(path) && in.Cwd != "" {
			path = filepath.Join(in.Cwd, path)
		}
		if in.ReadFile == nil {
			return nil, &UsageError{Msg: "Unable to open file " + cl.ScriptPath, Code: 1}
		}
		if script, err = in.ReadFile(path); err != nil {
			return nil, &UsageError{Msg: "Unable to open file " + cl.ScriptPath, Code: 1}
		}
		name = filepath.Base(cl.ScriptPath)
	default:
		if in.Stdin != nil {
			if script, err = io.ReadAll(in.Stdin); err != nil {
				return nil, &UsageError{Msg: fmt.Sprintf("unable to read batch script from standard input: %v", err), Code: 1}
			}
		}
		name = "sbatch"
	}
	if err := checkScript(script); err != nil {
		return nil, err
	}

	o := newOptions()
	for _, d := range directives(script) {
		if err := applyDirective(o, d); err != nil {
			return nil, err
		}
	}
	if err := applyInputEnv(o, in.Env); err != nil {
		return nil, err
	}
	for _, g := range cl.given {
		o.from[g.opt.Long] = "cli"
		if err := o.apply(g.opt, g.val); err != nil {
			return nil, err // cannot happen: ParseArgs already applied them
		}
	}
	o.ScriptPath, o.ScriptArgs, o.given = cl.ScriptPath, cl.ScriptArgs, cl.given
	if err := checkMemOptions(o); err != nil {
		return nil, err
	}

	if !o.Set["job-name"] {
		o.Spec.Name = name
	}
	switch wd := o.Spec.WorkDir; {
	case wd == "":
		o.Spec.WorkDir = in.Cwd
	case filepath.IsAbs(wd):
		o.Spec.WorkDir = filepath.Clean(wd)
	default:
		o.Spec.WorkDir = filepath.Join(in.Cwd, wd)
	}
	if err := ResolveContainer(&o.Spec, in.Cwd); err != nil {
		return nil, err
	}
	if in.Stat != nil {
		if err := CheckContainerPaths(&o.Spec, in.Stat, in.ReadFile); err != nil {
			return nil, err
		}
	}
	if err := o.ResolveBegin(in.Now); err != nil {
		return nil, err
	}
	if o.Spec.MailType != "" || o.Spec.MailUser != "" {
		o.Notices = append(o.Notices, "notice: this cluster sends no mail; --mail-type and --mail-user are recorded only")
	}
	o.Spec.Script = string(script)
	o.Spec.Wrap = cl.Set["wrap"]
	o.Spec.Env = ExportEnv(o.Spec.Export, in.Env)
	o.Spec.SubmitHost = in.Hostname
	return o, nil
}

// EachGiven calls fn for each option given on the command line, in order,
// with its value ("" for none): sbatch -v lists them.
func (o *Options) EachGiven(fn func(opt *Opt, val string)) {
	for _, g := range o.given {
		fn(&g.opt.Opt, g.val)
	}
}

// ResolveBegin sets Spec.Begin from --begin, given relative to now (the
// submit time); without --begin it does nothing. Resolve calls it; srun
// and salloc, which parse with ParseArgs, call it themselves.
func (o *Options) ResolveBegin(now time.Time) error {
	if o.begin == "" {
		return nil
	}
	t, err := ParseBegin(o.begin, now)
	if err != nil {
		return &UsageError{Msg: "Invalid --begin specification", Code: 255}
	}
	o.Spec.Begin = t
	return nil
}

// checkMemOptions enforces that --mem, --mem-per-cpu and --mem-per-gpu
// exclude one another, as Slurm does: two given on the command line or in
// the script is an error; one given there clears the others set through
// SBATCH_* variables; two set only through variables is an error too.
func checkMemOptions(o *Options) error {
	names := []string{"mem", "mem-per-cpu", "mem-per-gpu"}
	var direct, env []string
	for _, n := range names {
		switch o.from[n] {
		case "cli", "script":
			direct = append(direct, n)
		case "env":
			env = append(env, n)
		}
	}
	switch {
	case len(direct) > 1:
		return &UsageError{Msg: "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.", Code: 1, Fatal: true}
	case len(direct) == 1:
		for _, n := range env {
			switch n {
			case "mem":
				o.Spec.MemPerNodeMB = 0
			case "mem-per-cpu":
				o.Spec.MemPerCPUMB = 0
			case "mem-per-gpu":
				o.Spec.MemPerGPUMB = 0
			}
			delete(o.Set, n)
		}
	case len(env) > 1:
		return &UsageError{Msg: "SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive.", Code: 1, Fatal: true}
	}
	return nil
}

// ExportEnv is the environment a job gets for an --export value, from the
// submitter's environment env: everything for "" or "ALL"; only the SLURM_*
// variables for "NONE"; and for a list ("ALL,A=1,B", "NONE,B" or "A=1,B"),
// the listed variables added to everything when ALL is in the list, or to
// the SLURM_* variables otherwise. A listed NAME takes its value from env;
// NAME=value sets it.
func ExportEnv(export string, env []string) []string {
	if export == "" || strings.EqualFold(export, "ALL") {
		return slices.Clone(env)
	}
	lookup := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		lookup[k] = v
	}
	all := false
	var listed []string
	for _, item := range strings.Split(export, ",") {
		switch {
		case strings.EqualFold(item, "ALL"):
			all = true
		case strings.EqualFold(item, "NONE"), item == "":
		default:
			listed = append(listed, item)
		}
	}
	var out []string
	for _, kv := range env {
		if all || strings.HasPrefix(kv, "SLURM_") {
			out = append(out, kv)
		}
	}
	set := func(k, v string) {
		for i, kv := range out {
			if strings.HasPrefix(kv, k+"=") {
				out[i] = k + "=" + v
				return
			}
		}
		out = append(out, k+"="+v)
	}
	for _, item := range listed {
		if k, v, ok := strings.Cut(item, "="); ok {
			set(k, v)
		} else if v, ok := lookup[item]; ok {
			set(item, v)
		}
	}
	return out
}

// checkScript refuses what Slurm's sbatch refuses.
func checkScript(script []byte) error {
	switch {
	case len(script) == 0:
		return &UsageError{Msg: msgEmptyScript, Code: 1}
	case !bytes.HasPrefix(script, []byte("#!")):
		return &UsageError{Msg: msgNoInterp, Code: 1}
	case bytes.IndexByte(script, 0) >= 0:
		return &UsageError{Msg: msgNulInScript, Code: 1}
	case bytes.Contains(script, []byte("\r\n")):
		return &UsageError{Msg: msgDOSBreaks, Code: 1}
	}
	return nil
}

// applyDirective applies one #SBATCH line; errors name the line.
func applyDirective(o *Options, d directive) error {
	lineErr := func(err error) error {
		msg := err.Error()
		code := 255
		if ue, ok := err.(*UsageError); ok {
			msg, _, _ = strings.Cut(ue.Msg, "\n") // drop getopt's "Try sbatch --help"
			code = ue.Code
		}
		return &UsageError{Msg: fmt.Sprintf("batch script line %d: %s", d.line, msg), Code: code}
	}
	rest, err := parseWords(d.words, func(opt *option, val string) error {
		if opt.Long == "wrap" {
			return fmt.Errorf("--wrap cannot be used in a batch script")
		}
		o.from[opt.Long] = "script"
		return o.apply(opt, val)
	})
	if err != nil {
		return lineErr(err)
	}
	if len(rest) > 0 {
		return lineErr(fmt.Errorf("invalid #SBATCH directive %q: options start with '-'", rest[0]))
	}
	return nil
}

// ParseTime reads a time limit in Slurm's syntax, in minutes (see
// config.ParseTime); -1 means UNLIMITED.
func ParseTime(s string) (int64, error) { return config.ParseTime(s) }

// ParseMem reads a memory size with an optional K/M/G/T suffix, in MB (see
// config.ParseMem).
func ParseMem(s string) (int64, error) { return config.ParseMem(s) }

// FormatTime prints minutes as squeue and sinfo do ("10:00", "1-00:00:00",
// "UNLIMITED"); see config.FormatTime.
func FormatTime(min int64) string { return config.FormatTime(min) }
