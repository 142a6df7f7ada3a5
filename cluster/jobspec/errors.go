package jobspec

import (
	"strings"

	"hpc/cluster/api"
)

// UsageError is an error sbatch reports itself, before or instead of asking
// the controller. The command prints it with Format and exits with Code:
// 255 for a bad option or option value (Slurm's exit(-1)), 1 for a bad
// script.
type UsageError struct {
	Msg  string
	Code int
	// Getopt marks getopt's own messages ("unrecognized option '--bogus'"),
	// which Slurm prints as "sbatch: <Msg>" rather than "sbatch: error: <Msg>".
	Getopt bool
	// Fatal marks messages Slurm prints with fatal() ("sbatch: fatal: ...").
	Fatal bool
}

func (e *UsageError) Error() string { return e.Msg }

// Format returns what the command writes to stderr, prog being the command's
// name ("sbatch"): "sbatch: error: " before each line of Msg, or for getopt
// messages "sbatch: " before the first line only, as Slurm prints them.
func (e *UsageError) Format(prog string) string {
	if e.Getopt {
		return prog + ": " + e.Msg + "\n"
	}
	level := "error"
	if e.Fatal {
		level = "fatal"
	}
	var b strings.Builder
	for _, line := range strings.Split(e.Msg, "\n") {
		b.WriteString(prog + ": " + level + ": " + line + "\n")
	}
	return b.String()
}

func getoptError(msg string) *UsageError {
	return &UsageError{Msg: msg + "\n" + TryHelp("sbatch"), Code: 255, Getopt: true}
}

// Slurm's texts for scripts it refuses.
const (
	msgEmptyScript = api.ErrEmptyScript
	msgNoInterp    = api.ErrScriptNoInterp + "\n" +
		"line must start with #! followed by the path to an interpreter.\n" +
		"For instance: #!/bin/sh"
	msgNulInScript = "The Slurm controller does not allow scripts that contain a NULL character!"
	msgDOSBreaks   = "Batch script contains DOS line breaks (\\r\\n)\n" +
		"instead of expected UNIX line breaks (\\n)."
	msgWrapArgs = "Script arguments not permitted with --wrap option"
)
