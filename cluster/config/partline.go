package config

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"hpc/cluster/hostlist"
)

// ErrUnknownNode is the error of EditPartition for a node c does not have.
var ErrUnknownNode = errors.New("unknown node")

// EditPartition returns base changed by Key=Value pairs as a PartitionName
// line (or scontrol create/update partition) gives them; base nil is a new
// partition of that name with slurm.conf's defaults. Nodes=ALL is every
// node of c, and every node named must be one of c's (ErrUnknownNode).
// base is not changed: the result has slices of its own where they differ.
func (c *Config) EditPartition(base *Partition, name string, pairs [][2]string) (*Partition, error) {
	p := &parser{file: "partition " + name, cfg: c}
	kv := make(map[string]pair, len(pairs))
	for _, kvp := range pairs {
		lower := strings.ToLower(kvp[0])
		if prev, dup := kv[lower]; dup {
			return nil, p.errf(0, "%s given twice (%s and %s)", kvp[0], prev.value, kvp[1])
		}
		kv[lower] = pair{key: kvp[0], lower: lower, value: kvp[1]}
	}
	part := newPartition(name)
	if base != nil {
		cp := *base
		part = &cp
	}
	part.Name = name
	if err := p.setPartitionKeys(0, part, kv); err != nil {
		return nil, err
	}
	if v, ok := kv["nodes"]; ok && strings.EqualFold(v.value, "ALL") {
		part.Nodes = make([]string, len(c.Nodes))
		for i, n := range c.Nodes {
			part.Nodes[i] = n.Name
		}
	}
	for _, n := range part.Nodes {
		if c.Node(n) == nil {
			return nil, fmt.Errorf("%w %s in partition %s", ErrUnknownNode, n, name)
		}
	}
	return part, nil
}

// WithPartitions returns a copy of c whose partitions are parts (shared,
// not copied: neither may change afterwards).
func (c *Config) WithPartitions(parts []Partition) *Config {
	cp := *c
	cp.Partitions = parts
	return &cp
}

// Line prints the partition as a slurm.conf PartitionName line that parses
// back to it (keys at their defaults are left out).
func (p *Partition) Line() string {
	var b strings.Builder
	b.WriteString("PartitionName=" + p.Name)
	if len(p.Nodes) > 0 {
		b.WriteString(" Nodes=" + hostlist.Compress(p.Nodes))
	}
	if p.Default {
		b.WriteString(" Default=YES")
	}
	if p.MaxTimeMin != Unlimited {
		b.WriteString(" MaxTime=" + FormatTimeLong(p.MaxTimeMin))
	}
	if p.DefaultTimeMin != Unlimited {
		b.WriteString(" DefaultTime=" + FormatTimeLong(p.DefaultTimeMin))
	}
	if p.MaxNodes >= 0 {
		b.WriteString(" MaxNodes=" + strconv.Itoa(p.MaxNodes))
	}
	if p.PriorityJobFactor != 1 {
		b.WriteString(" PriorityJobFactor=" + strconv.Itoa(p.PriorityJobFactor))
	}
	if p.PriorityTier != 1 {
		b.WriteString(" PriorityTier=" + strconv.Itoa(p.PriorityTier))
	}
	if p.OverSubscribe != "" && p.OverSubscribe != "NO" {
		b.WriteString(" OverSubscribe=" + p.OverSubscribe)
	}
	if p.AllowAccounts != nil {
		b.WriteString(" AllowAccounts=" + strings.Join(p.AllowAccounts, ","))
	}
	if p.AllowQos != nil {
		b.WriteString(" AllowQos=" + strings.Join(p.AllowQos, ","))
	}
	if p.State != "" {
		b.WriteString(" State=" + p.State)
	}
	return b.String()
}

// WithPartitionLines returns slurm.conf text with its PartitionName lines
// (DEFAULT ones included, continuations joined) replaced by parts' lines,
// at the place of the first, or at the end: the file the running
// configuration would be read from.
func WithPartitionLines(text string, parts []Partition) string {
	var out []string
	placed := false
	place := func() {
		if !placed {
			for i := range parts {
				out = append(out, parts[i].Line())
			}
			placed = true
		}
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	cont := false // inside a partition line's continuation
	for sc.Scan() {
		line := sc.Text()
		if cont {
			cont = strings.HasSuffix(strings.TrimRight(stripComment(line), " \t\r"), `\`)
			continue
		}
		code := strings.TrimSpace(stripComment(line))
		if k, _, _ := strings.Cut(code, "="); strings.EqualFold(strings.TrimSpace(k), "PartitionName") {
			place()
			cont = strings.HasSuffix(code, `\`)
			continue
		}
		out = append(out, line)
	}
	place()
	return strings.Join(out, "\n") + "\n"
}
