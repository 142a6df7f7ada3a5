package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

func installLinksCommand(e *Env) *cli.Command {
	return &cli.Command{
		Name:      "install-links",
		Usage:     "make sbatch, squeue, sinfo, ... links to this binary (default: next to it)",
		ArgsUsage: "[DIR]",
		Description: "Creates " + strings.Join(LinkNames, ", ") + " in DIR as symbolic links to\n" +
			"this binary; invoked by those names it acts as those commands. Links that\n" +
			"already point here are left alone, other links are replaced, and files that\n" +
			"are not links (a real Slurm, say) are never touched.",
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				fmt.Fprintln(e.Stderr, "hpc install-links: error: give at most one directory")
				return exit(1)
			}
			return exit(installLinks(e, c.Args().First()))
		},
	}
}

// installLinks creates the Slurm-named links in dir (default: the binary's
// own directory) and says what it did and how to put them on PATH.
func installLinks(e *Env, dir string) int {
	exe, err := e.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err == nil {
		exe, err = filepath.Abs(exe)
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "hpc install-links: error: cannot tell where this binary is: %v\n", err)
		return 1
	}
	if dir == "" {
		dir = filepath.Dir(exe)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(e.Cwd, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(e.Stderr, "hpc install-links: error: %v\n", err)
		return 1
	}
	status := 0
	var made, kept []string
	for _, name := range LinkNames {
		path := filepath.Join(dir, name)
		switch state, err := linkState(path, exe); {
		case err != nil:
			fmt.Fprintf(e.Stderr, "hpc install-links: error: %v\n", err)
			status = 1
			continue
		case state == linkOurs:
			kept = append(kept, name)
			continue
		case state == linkForeign:
			fmt.Fprintf(e.Stderr, "hpc install-links: error: %s exists and is not a link; leaving it alone\n", path)
			status = 1
			continue
		case state == linkOther:
			if err := os.Remove(path); err != nil {
				fmt.Fprintf(e.Stderr, "hpc install-links: error: %v\n", err)
				status = 1
				continue
			}
		}
		if err := os.Symlink(exe, path); err != nil {
			fmt.Fprintf(e.Stderr, "hpc install-links: error: %v\n", err)
			status = 1
			continue
		}
		made = append(made, name)
	}
	if len(made) > 0 {
		fmt.Fprintf(e.Stdout, "Linked %s in %s to %s\n", strings.Join(made, " "), dir, exe)
	}
	if len(kept) > 0 {
		fmt.Fprintf(e.Stdout, "Already linked: %s\n", strings.Join(kept, " "))
	}
	var missing []string
	for _, n := range LinkNames {
		if _, ok := slurmCommands[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(e.Stdout, "Not implemented yet (they say so and exit 1): %s\n", strings.Join(missing, " "))
	}
	if !slices.Contains(filepath.SplitList(e.Getenv("PATH")), dir) {
		fmt.Fprintf(e.Stdout, "To use them in this shell:\n  export PATH=%s:$PATH\n", dir)
	}
	return status
}

type linkKind int

const (
	linkAbsent  linkKind = iota
	linkOurs             // a link to this binary
	linkOther            // a link to something else: replaced
	linkForeign          // a file or directory that is not a link: left alone
)

func linkState(path, exe string) (linkKind, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return linkAbsent, nil
	}
	if err != nil {
		return 0, err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return linkForeign, nil
	}
	if target, err := filepath.EvalSymlinks(path); err == nil && target == exe {
		return linkOurs, nil
	}
	return linkOther, nil
}
