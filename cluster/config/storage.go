package config

import (
	"path/filepath"
	"strings"
)

// Storage are a lab's storage areas, as HPC centres lay them out, shared by
// every node of a one-machine lab (the lab's config: HpcHomeDir,
// HpcScratchDir, HpcProjectDir, kept in Raw):
//
//	Home     users' home directories
//	Scratch  1777; a user's first job makes scratch/<user> (0700): $SCRATCH
//	Project  a group's first job makes project/<group> (2770): $PROJECT
type Storage struct {
	Home, Scratch, Project string
}

// Storage reads the lab's storage areas for a lab whose root is root: a
// relative path is taken from the root, an unset key means <root>/home,
// <root>/scratch and <root>/project.
func (c *Config) Storage(root string) Storage {
	get := func(key, def string) string {
		v := strings.TrimSpace(c.RawValue(key))
		if v == "" {
			return filepath.Join(root, def)
		}
		if !filepath.IsAbs(v) {
			v = filepath.Join(root, v)
		}
		return filepath.Clean(v)
	}
	return Storage{Home: get("HpcHomeDir", "home"), Scratch: get("HpcScratchDir", "scratch"), Project: get("HpcProjectDir", "project")}
}

// RawValue is the value of a slurm.conf key hpc keeps but does not
// interpret (Raw), the key's case ignored as Slurm ignores it; "" if unset.
func (c *Config) RawValue(key string) string {
	for k, v := range c.Raw {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}
