package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hpc/cluster/api"
)

// labDir is where `hpc up` keeps the lab: $HPC_DIR, else /var/lib/hpc for
// root, else ~/.local/share/hpc.
func labDir() string {
	if d := os.Getenv("HPC_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/hpc"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "hpc")
	}
	return filepath.Join(os.TempDir(), "hpc")
}

// clientDirs are the lab directories a client looks in, in order.
func clientDirs() []string {
	if d := os.Getenv("HPC_DIR"); d != "" {
		return []string{d}
	}
	dirs := []string{"/var/lib/hpc"}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".local", "share", "hpc"))
	}
	return dirs
}

// sockets lists the node sockets of a lab directory.
func sockets(dir string) []string {
	// One directory read and one stat a node: every command starts here
	// (filepath.Glob would open and list each node's directory, and read
	// any of [*?\\ in dir as a pattern).
	ents, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil
	}
	var m []string
	for _, e := range ents {
		s := filepath.Join(dir, e.Name(), "hpc.sock")
		if _, err := os.Lstat(s); err == nil {
			m = append(m, s)
		}
	}
	return m
}

// client finds a node to talk to: $HPC_SOCKET, else the first node of the
// lab whose daemon accepts connections (asking it nothing: every command
// starts here, and even the local node's status costs a millisecond).
func client(ctx context.Context) (*api.Client, error) {
	if s := os.Getenv("HPC_SOCKET"); s != "" {
		return api.NewClient(s), nil
	}
	var tried []string
	for _, dir := range clientDirs() {
		for _, s := range sockets(dir) {
			c := api.NewClient(s)
			if err := c.Listening(ctx); err == nil {
				return c, nil
			}
			tried = append(tried, s)
		}
	}
	if len(tried) == 0 {
		return nil, &api.Error{Message: api.ErrNoLeader, Detail: fmt.Sprintf("no hpc node found (looked in %s); start one with `hpc up`", strings.Join(clientDirs(), ", "))}
	}
	return nil, &api.Error{Message: api.ErrNoLeader, Detail: "no node answers at " + strings.Join(tried, ", ")}
}

// errText splits a client error into Slurm's lines.
func errText(err error) (detail, msg string) {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Detail, ae.Message
	}
	return "", err.Error()
}
