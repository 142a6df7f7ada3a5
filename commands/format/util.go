package format

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"hpc/cluster/hostlist"
)

// pad fits s into a column the way Slurm's _print_str does: a zero width
// prints s as is; otherwise s is padded with spaces on the left (right
// justified) or right to width. A longer value is cut to its first width
// characters when cut is true, and printed whole when it is false (Slurm
// never cuts node lists and durations).
func pad(s string, width int, right, cut bool) string {
	if width <= 0 {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n >= width {
		if n > width && cut {
			return truncRunes(s, width)
		}
		return s
	}
	fill := strings.Repeat(" ", width-n)
	if right {
		return fill + s
	}
	return s + fill
}

// truncRunes returns the first n characters of s.
func truncRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// splitNum splits a host name into its prefix and numeric suffix.
func splitNum(name string) (string, string) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	return name[:i], name[i:]
}

// lessHost orders host names as Slurm's hostlist sort does: by prefix, then
// by the value of the numeric suffix ("node2" before "node10"), then by the
// suffix's width (zero padding).
func lessHost(a, b string) bool {
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

// compareHost is lessHost as a three-way comparison.
func compareHost(a, b string) int {
	switch {
	case lessHost(a, b):
		return -1
	case lessHost(b, a):
		return 1
	}
	return 0
}

// nodeList returns the sorted, de-duplicated hostlist Slurm prints for a set
// of node names (its hostset ranged string), e.g. "node[2-3]".
func nodeList(names []string) string {
	if len(names) == 0 {
		return ""
	}
	s := append([]string(nil), names...)
	sort.SliceStable(s, func(i, j int) bool { return lessHost(s[i], s[j]) })
	return hostlist.Compress(s)
}

// expandNames expands every entry of a list that may hold hostlist
// expressions ("node[1-4]") into plain names, keeping order. Entries that do
// not parse are kept as they are.
func expandNames(list []string) []string {
	var out []string
	for _, e := range list {
		if !strings.ContainsAny(e, "[,") {
			out = append(out, e)
			continue
		}
		names, err := hostlist.Expand(e)
		if err != nil {
			out = append(out, e)
			continue
		}
		out = append(out, names...)
	}
	return out
}

// convertMB prints a size in megabytes with Slurm's exact unit conversion:
// 4000 → "4000M", 4096 → "4G", 0 → "0".
func convertMB(mb int64) string {
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

// gresCount is one generic resource and its count, from a gres string.
type gresCount struct {
	name  string
	count int64
}

// parseGres reads a gres string such as "gpu:2", "gpu:tesla:2,mps:100" or
// "gpu" (count 1) into per-name totals, in first-seen order. "" and "(null)"
// hold nothing.
func parseGres(s string) []gresCount {
	if s == "" || s == "(null)" {
		return nil
	}
	var out []gresCount
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
			out[i].count += count
			continue
		}
		idx[name] = len(out)
		out = append(out, gresCount{name, count})
	}
	return out
}

// tresString builds a Slurm TRES string in Slurm's TRES order, leaving out
// zero counts as Slurm does: "cpu=2,mem=4000M,node=1,billing=2,gres/gpu=2".
// It is "" when every count is zero.
func tresString(cpus, memMB, nodes, billing int64, gres []gresCount) string {
	var items []string
	add := func(name string, v int64, text string) {
		if v != 0 {
			items = append(items, name+"="+text)
		}
	}
	add("cpu", cpus, strconv.FormatInt(cpus, 10))
	add("mem", memMB, convertMB(memMB))
	add("node", nodes, strconv.FormatInt(nodes, 10))
	add("billing", billing, strconv.FormatInt(billing, 10))
	for _, g := range gres {
		add("gres/"+g.name, g.count, strconv.FormatInt(g.count, 10))
	}
	return strings.Join(items, ",")
}

// orNull is how Slurm prints an unset string with printf("%s"): "(null)".
func orNull(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}
