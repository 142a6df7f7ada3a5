package commands

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// refused is how a command says it does not take an option (getopt's
// words, or hpc's own refusals).
var refused = regexp.MustCompile(`(?i)unrecognized option|invalid option|unknown option|not supported|not implemented|doesn't allow an argument|requires an argument`)

// TestManPageOptions walks the options Slurm 22.05's man pages document
// for each command (testdata/man-options, written by
// scripts/man-options.sh) and gives each to the command, by its long and its
// short name, with an argument where the page shows one, followed by
// --version: the command must take the option (it may still refuse the
// value "1", with its own message), never answer that it does not know it.
func TestManPageOptions(t *testing.T) {
	_, e, out, errb := newFake(t)
	files, err := filepath.Glob("../testdata/man-options/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no option lists in testdata/man-options: %v", err)
	}
	for _, file := range files {
		cmd := strings.TrimSuffix(filepath.Base(file), ".txt")
		if _, ok := slurmCommands[cmd]; !ok {
			t.Errorf("%s: hpc has no such command", cmd)
			continue
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		n := 0
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			arg := ""
			if last := fields[len(fields)-1]; last == "=" || last == "[=]" {
				arg, fields = last, fields[:len(fields)-1]
			}
			for _, name := range fields {
				var args []string
				switch {
				case strings.HasPrefix(name, "--") && arg == "=":
					args = []string{name + "=1"}
				case arg == "=":
					args = []string{name, "1"}
				default:
					args = []string{name}
				}
				_, stderr, _ := run(e, out, errb, append(append([]string{cmd}, args...), "--version")...)
				if m := refused.FindString(stderr); m != "" {
					t.Errorf("%s %s: %q", cmd, strings.Join(args, " "), strings.TrimSpace(stderr))
				}
				n++
			}
		}
		f.Close()
		if err := sc.Err(); err != nil || n == 0 {
			t.Errorf("%s: %d options read (%v)", cmd, n, err)
		}
	}
}
