package export

import (
	"fmt"
	"slices"
	"strings"

	"hpc/cluster/hostlist"
)

// gresConf is gres.conf: hpc's device lines, grouped by the devices they
// name, and a Count= line for a node's GRES that has no device line (so
// that its slurmd reports the count slurm.conf gives). "" when no node
// has GRES.
func gresConf(src Source, l layout) string {
	c := src.Config
	if len(gresNames(c)) == 0 {
		return ""
	}
	type group struct {
		name, typ, files string
		nodes            []string
	}
	var groups []*group
	find := func(name, typ, files string) *group {
		for _, g := range groups {
			if g.name == name && g.typ == typ && g.files == files {
				return g
			}
		}
		g := &group{name: name, typ: typ, files: files}
		groups = append(groups, g)
		return g
	}
	covered := map[string]int{} // node/name/type -> devices listed
	for _, d := range c.GresDevices {
		files := ""
		if !slices.Contains(d.Files, "") {
			files = hostlist.Compress(d.Files)
		}
		if files == "" {
			files = fmt.Sprintf("#%d", len(d.Files)) // Count= line
		}
		g := find(d.Name, d.Type, files)
		g.nodes = append(g.nodes, d.Node)
		covered[d.Node+"/"+d.Name+"/"+d.Type] += len(d.Files)
	}
	for _, n := range c.Nodes {
		for _, gr := range n.Gres {
			if covered[n.Name+"/"+gr.Name+"/"+gr.Type] > 0 || covered[n.Name+"/"+gr.Name+"/"] > 0 {
				continue
			}
			g := find(gr.Name, gr.Type, fmt.Sprintf("#%d", gr.Count))
			g.nodes = append(g.nodes, n.Name)
		}
	}
	var b strings.Builder
	b.WriteString(header(src, "gres.conf"))
	if l.fakeDevices {
		b.WriteString("# Some device files are not under /dev: the hpc lab's fake GPUs (links to\n")
		b.WriteString("# /dev/null). On real GPU nodes name /dev/nvidia0 ... here.\n")
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "NodeName=%s Name=%s", hostlist.Compress(g.nodes), g.name)
		if g.typ != "" {
			b.WriteString(" Type=" + g.typ)
		}
		if count, ok := strings.CutPrefix(g.files, "#"); ok {
			b.WriteString(" Count=" + count + "\n")
		} else {
			b.WriteString(" File=" + g.files + "\n")
		}
	}
	return b.String()
}

// topologyConf is topology.conf: hpc's switches as they are.
func topologyConf(src Source) string {
	var b strings.Builder
	b.WriteString(header(src, "topology.conf"))
	for _, sw := range src.Config.Topology {
		b.WriteString("SwitchName=" + sw.Name)
		if len(sw.Switches) > 0 {
			b.WriteString(" Switches=" + hostlist.Compress(sw.Switches))
		}
		if len(sw.Nodes) > 0 {
			b.WriteString(" Nodes=" + hostlist.Compress(sw.Nodes))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// cgroupConf is cgroup.conf: the limits hpc puts on its steps' cgroups (a
// cpuset of the job's cores, memory with no swap beyond it, only the
// job's GPUs among devices).
func cgroupConf(src Source, l layout) string {
	var b strings.Builder
	b.WriteString(header(src, "cgroup.conf"))
	b.WriteString(`# The limits hpc puts on its steps: the job's cores (a cpuset), its memory
# with no swap beyond it, and among devices only its GPUs. (hpc also sets
# a CPU quota of the job's CPU count; Slurm has no such limit.)
CgroupPlugin=autodetect
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
AllowedSwapSpace=0
`)
	switch {
	case l.fakeDevices:
		b.WriteString("# The GRES device files are not device nodes (README): the devices cgroup\n")
		b.WriteString("# would take /dev/null from the jobs. Set yes on real GPU nodes.\n")
		b.WriteString("ConstrainDevices=no\n")
	case len(gresNames(src.Config)) > 0:
		b.WriteString("ConstrainDevices=yes\n")
	default:
		b.WriteString("ConstrainDevices=no\n")
	}
	return b.String()
}
