package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"hpc/cluster/hostlist"
	"hpc/internal/words"
)

// GresDevice is one gres.conf device line, expanded per node: the devices
// a node's GRES count stands for. File may be any path (File=/dev/null is
// allowed, as in Slurm's documentation, for fake GPUs in a lab).
type GresDevice struct {
	Node  string
	Name  string
	Type  string
	Files []string // one per device, in index order
}

// Switch is one topology.conf line: a leaf switch lists Nodes, an upper
// switch lists child Switches.
type Switch struct {
	Name     string
	Switches []string
	Nodes    []string
}

// LoadAll reads slurm.conf and, next to it, gres.conf and topology.conf
// when they exist.
func LoadAll(path string) (*Config, error) {
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if f, err := os.Open(filepath.Join(dir, "gres.conf")); err == nil {
		defer f.Close()
		if c.GresDevices, err = ParseGres(f, c); err != nil {
			return nil, err
		}
	}
	if f, err := os.Open(filepath.Join(dir, "topology.conf")); err == nil {
		defer f.Close()
		if c.Topology, err = ParseTopology(f, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func fileErr(file string) func(int, string, ...any) error {
	return func(line int, format string, args ...any) error {
		return &ParseError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
}

// keyValues splits a logical line into lowercased keys and values.
func keyValues(n int, text string, errf func(int, string, ...any) error) (map[string]string, error) {
	ws, unterminated := words.Split(text, lineWords)
	if unterminated {
		return nil, errf(n, "unterminated double quote")
	}
	kv := map[string]string{}
	for _, w := range ws {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, errf(n, "expected Key=Value, found %q", w)
		}
		kv[strings.ToLower(k)] = v
	}
	return kv, nil
}

// ParseGres reads gres.conf lines (NodeName=node[3-4] Name=gpu [Type=a100]
// File=/dev/nvidia[0-1] or Count=N). Every listed node must exist in c and
// carry that GRES; the device count must match the node's Gres= count.
func ParseGres(r io.Reader, c *Config) ([]GresDevice, error) {
	errf := fileErr("gres.conf")
	var out []GresDevice
	err := scanLines(r, errf, func(n int, text string) error {
		kv, err := keyValues(n, text, errf)
		if err != nil || len(kv) == 0 {
			return err
		}
		for k := range kv {
			switch k {
			case "nodename", "name", "type", "file", "count", "autodetect", "cores", "links", "flags":
			default:
				return errf(n, "unknown gres.conf option %s", k)
			}
		}
		if a, ok := kv["autodetect"]; ok && !strings.EqualFold(a, "off") {
			return errf(n, "AutoDetect=%s is not supported: list the devices with File=", a)
		}
		name := kv["name"]
		if name == "" {
			return errf(n, "Name= is required")
		}
		nodes := []string{}
		if kv["nodename"] == "" {
			for _, nd := range c.Nodes {
				nodes = append(nodes, nd.Name)
			}
		} else if nodes, err = hostlist.Expand(kv["nodename"]); err != nil {
			return errf(n, "NodeName: %v", err)
		}
		var files []string
		if f := kv["file"]; f != "" {
			if files, err = hostlist.Expand(f); err != nil {
				return errf(n, "File: %v", err)
			}
		} else if cnt := kv["count"]; cnt != "" {
			k, err := strconv.Atoi(cnt)
			if err != nil || k < 1 {
				return errf(n, "invalid Count=%s", cnt)
			}
			files = make([]string, k)
		} else {
			return errf(n, "File= or Count= is required")
		}
		for _, nm := range nodes {
			nd := c.Node(nm)
			if nd == nil {
				if kv["nodename"] == "" {
					continue
				}
				return errf(n, "unknown node %s", nm)
			}
			have := 0
			for _, g := range nd.Gres {
				if g.Name == name && (kv["type"] == "" || g.Type == kv["type"]) {
					have += g.Count
				}
			}
			if have != len(files) {
				return errf(n, "node %s has Gres=%s count %d in slurm.conf but %d devices here", nm, name, have, len(files))
			}
			out = append(out, GresDevice{Node: nm, Name: name, Type: kv["type"], Files: files})
		}
		return nil
	})
	return out, err
}

// ParseTopology reads topology.conf (SwitchName=s1 Nodes=node[1-4],
// SwitchName=top Switches=s[1-2]) and checks that it forms a tree over
// known nodes.
func ParseTopology(r io.Reader, c *Config) ([]Switch, error) {
	errf := fileErr("topology.conf")
	var out []Switch
	lines := map[string]int{}
	err := scanLines(r, errf, func(n int, text string) error {
		kv, err := keyValues(n, text, errf)
		if err != nil || len(kv) == 0 {
			return err
		}
		sw := Switch{Name: kv["switchname"]}
		if sw.Name == "" {
			return errf(n, "SwitchName= is required")
		}
		if _, dup := lines[sw.Name]; dup {
			return errf(n, "switch %s defined twice", sw.Name)
		}
		lines[sw.Name] = n
		for k, v := range kv {
			switch k {
			case "switchname", "linkspeed":
			case "nodes":
				if sw.Nodes, err = hostlist.Expand(v); err != nil {
					return errf(n, "Nodes: %v", err)
				}
				for _, nm := range sw.Nodes {
					if c.Node(nm) == nil {
						return errf(n, "unknown node %s in switch %s", nm, sw.Name)
					}
				}
			case "switches":
				if sw.Switches, err = hostlist.Expand(v); err != nil {
					return errf(n, "Switches: %v", err)
				}
			default:
				return errf(n, "unknown topology.conf option %s", k)
			}
		}
		out = append(out, sw)
		return nil
	})
	if err != nil {
		return nil, err
	}
	parent := map[string]string{}
	for _, sw := range out {
		for _, ch := range sw.Switches {
			if _, ok := lines[ch]; !ok {
				return nil, errf(lines[sw.Name], "switch %s lists unknown switch %s", sw.Name, ch)
			}
			if p, ok := parent[ch]; ok {
				return nil, errf(lines[sw.Name], "switch %s has two parents (%s and %s)", ch, p, sw.Name)
			}
			parent[ch] = sw.Name
		}
	}
	for _, sw := range out {
		seen := map[string]bool{sw.Name: true}
		for p := parent[sw.Name]; p != ""; p = parent[p] {
			if seen[p] {
				return nil, errf(lines[sw.Name], "switches form a loop through %s", p)
			}
			seen[p] = true
		}
	}
	return out, nil
}
