package openapi

import (
	"sort"
	"strconv"
	"strings"

	"hpc/cluster/hostlist"
)

// splitNum splits a host name into its prefix and numeric suffix.
func splitNum(name string) (string, string) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	return name[:i], name[i:]
}

// LessHost orders host names as Slurm's hostlist sort does: by prefix, then
// by the value of the numeric suffix ("node2" before "node10"), then by the
// suffix's width (zero padding).
func LessHost(a, b string) bool {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	if pa != pb {
		return pa < pb
	}
	if na == "" || nb == "" {
		return na < nb
	}
	va, ea := strconv.ParseUint(na, 10, 64)
	vb, eb := strconv.ParseUint(nb, 10, 64)
	if ea == nil && eb == nil && va != vb {
		return va < vb
	}
	if len(na) != len(nb) {
		return len(na) < len(nb)
	}
	return na < nb
}

// NodeList returns the sorted, de-duplicated hostlist Slurm prints for a set
// of node names (its hostset ranged string), e.g. "node[2-3]".
func NodeList(names []string) string {
	if len(names) == 0 {
		return ""
	}
	s := append([]string(nil), names...)
	sort.SliceStable(s, func(i, j int) bool { return LessHost(s[i], s[j]) })
	return hostlist.Compress(s)
}

// ConvertMB prints a size in megabytes with Slurm's exact unit conversion:
// 4000 → "4000M", 4096 → "4G", 0 → "0".
func ConvertMB(mb int64) string {
	if mb == 0 {
		return "0"
	}
	units := "MGTPE"
	u := 0
	for mb%1024 == 0 && u < len(units)-1 {
		mb /= 1024
		u++
	}
	return strconv.FormatInt(mb, 10) + units[u:u+1]
}

// GresCount is one generic resource and its count, from a gres string.
type GresCount struct {
	Name  string
	Count int64
}

// ParseGres reads a gres string such as "gpu:2", "gpu:tesla:2,mps:100" or
// "gpu" (count 1) into per-name totals, in first-seen order. "" and "(null)"
// hold nothing.
func ParseGres(s string) []GresCount {
	if s == "" || s == "(null)" {
		return nil
	}
	var out []GresCount
	idx := map[string]int{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		// Drop a "(S:0-1)" socket suffix.
		if p := strings.IndexByte(item, '('); p >= 0 {
			item = item[:p]
		}
		parts := strings.Split(item, ":")
		name := parts[0]
		var count int64 = 1
		if len(parts) > 1 {
			if v, err := strconv.ParseInt(parts[len(parts)-1], 10, 64); err == nil {
				count = v
			}
		}
		if i, ok := idx[name]; ok {
			out[i].Count += count
			continue
		}
		idx[name] = len(out)
		out = append(out, GresCount{name, count})
	}
	return out
}

// TRESString builds a Slurm TRES string in Slurm's TRES order, leaving out
// zero counts as Slurm does: "cpu=2,mem=4000M,node=1,billing=2,gres/gpu=2".
// It is "" when every count is zero.
func TRESString(cpus, memMB, nodes, billing int64, gres []GresCount) string {
	var items []string
	add := func(name string, v int64, text string) {
		if v != 0 {
			items = append(items, name+"="+text)
		}
	}
	add("cpu", cpus, strconv.FormatInt(cpus, 10))
	add("mem", memMB, ConvertMB(memMB))
	add("node", nodes, strconv.FormatInt(nodes, 10))
	add("billing", billing, strconv.FormatInt(billing, 10))
	for _, g := range gres {
		add("gres/"+g.Name, g.Count, strconv.FormatInt(g.Count, 10))
	}
	return strings.Join(items, ",")
}
