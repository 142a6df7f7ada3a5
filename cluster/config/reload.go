package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// Files are the texts of a configuration: slurm.conf and, when they
// exist, gres.conf and topology.conf beside it. scontrol reconfigure
// carries them through Raft, so every controller parses the same text.
type Files struct {
	Slurm    string `json:"slurm"`
	Gres     string `json:"gres,omitempty"`
	Topology string `json:"topology,omitempty"`
}

// ReadFiles reads slurm.conf at path and the gres.conf and topology.conf
// beside it (absent ones are "").
func ReadFiles(path string) (Files, error) {
	var f Files
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	f.Slurm = string(b)
	dir := filepath.Dir(path)
	for _, x := range []struct {
		name string
		to   *string
	}{{"gres.conf", &f.Gres}, {"topology.conf", &f.Topology}} {
		b, err := os.ReadFile(filepath.Join(dir, x.name))
		switch {
		case err == nil:
			*x.to = string(b)
		case !errors.Is(err, fs.ErrNotExist):
			return f, err
		}
	}
	return f, nil
}

// ParseFiles parses the texts as LoadAll parses the files.
func ParseFiles(f Files) (*Config, error) {
	c, err := Parse(strings.NewReader(f.Slurm))
	if err != nil {
		return nil, err
	}
	if f.Gres != "" {
		if c.GresDevices, err = ParseGres(strings.NewReader(f.Gres), c); err != nil {
			return nil, err
		}
	}
	if f.Topology != "" {
		if c.Topology, err = ParseTopology(strings.NewReader(f.Topology), c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// NeedsRestart reports whether c differs from running in what only a
// restart of the daemons changes (as Slurm 22.05, which needs one when
// nodes are added or removed): the nodes, the controllers, the submit hosts
// and the ports.
func (c *Config) NeedsRestart(running *Config) bool {
	return !reflect.DeepEqual(c.Nodes, running.Nodes) || !reflect.DeepEqual(c.ControlHosts, running.ControlHosts) ||
		!reflect.DeepEqual(c.SubmitHosts, running.SubmitHosts) ||
		c.APIPort != running.APIPort || c.RaftPort != running.RaftPort || c.GossipPort != running.GossipPort
}

// KeepRestartKeys sets on c what only a restart changes, from boot (the
// configuration the daemon started with): the nodes, the controllers, the
// submit hosts, the ports and SlurmUser.
func (c *Config) KeepRestartKeys(boot *Config) {
	c.Nodes, c.nodeIndex = boot.Nodes, boot.nodeIndex
	c.ControlHosts, c.SubmitHosts = boot.ControlHosts, boot.SubmitHosts
	c.APIPort, c.RaftPort, c.GossipPort = boot.APIPort, boot.RaftPort, boot.GossipPort
	c.SlurmUser = boot.SlurmUser
}
