package format

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
)

// SinfoOptions selects sinfo's view. Filtering (-p, -n, -t) is the caller's
// job: pass only the partitions and nodes to show. With no partitions only
// the header is printed, as sinfo -p nosuch does.
type SinfoOptions struct {
	// NodeCentric is -N: one line per node and partition.
	NodeCentric bool
	// Long is -l: more columns and a date line before the header.
	Long bool
	// NoHeader is -h: neither the header nor the date line.
	NoHeader bool
	// Now is the time the listing is made, for the -l date line.
	Now time.Time
}

// sinfoEntry is one output line: nodes of one partition in one state.
type sinfoEntry struct {
	part    api.Partition
	partIdx int
	nodes   []api.Node
	state   nodeState
}

func (e *sinfoEntry) names() []string {
	out := make([]string, len(e.nodes))
	for i, n := range e.nodes {
		out[i] = n.Name
	}
	return out
}

// sinfoCol is one sinfo column: its header and its value for an entry.
type sinfoCol struct {
	header string
	value  func(e *sinfoEntry) string
}

// sinfoItem places a column in a format: width, justification, whether the
// width is computed from the data (partition and node list columns), and
// the text after it.
type sinfoItem struct {
	col     sinfoCol
	width   int
	right   bool
	dynamic byte // 'P' partition width, 'N' node list width, 0 fixed
	suffix  string
}

var (
	colPartition = sinfoCol{"PARTITION", func(e *sinfoEntry) string {
		if e.part.Default {
			return e.part.Name + "*"
		}
		return e.part.Name
	}}
	colAvail = sinfoCol{"AVAIL", func(e *sinfoEntry) string {
		switch strings.ToUpper(e.part.State) {
		case "", "UP":
			return "up"
		case "DOWN":
			return "down"
		case "DRAIN":
			return "drain"
		case "INACTIVE":
			return "inactive"
		}
		return "unknown"
	}}
	colTime = sinfoCol{"TIMELIMIT", func(e *sinfoEntry) string {
		if e.part.MaxTimeMin < 0 {
			return "infinite"
		}
		return sinfoSecs(e.part.MaxTimeMin * 60)
	}}
	colSize       = sinfoCol{"JOB_SIZE", func(*sinfoEntry) string { return "1-infinite" }}
	colRoot       = sinfoCol{"ROOT", func(*sinfoEntry) string { return "no" }}
	colOver       = sinfoCol{"OVERSUBSCRIBE", func(*sinfoEntry) string { return "NO" }}
	colGrps       = sinfoCol{"GROUPS", func(*sinfoEntry) string { return "all" }}
	colNodes      = sinfoCol{"NODES", func(e *sinfoEntry) string { return strconv.Itoa(len(e.nodes)) }}
	colStateShort = sinfoCol{"STATE", func(e *sinfoEntry) string {
		if len(e.nodes) == 0 {
			return "n/a"
		}
		return strings.ToLower(e.state.name(true))
	}}
	colStateLong = sinfoCol{"STATE", func(e *sinfoEntry) string {
		if len(e.nodes) == 0 {
			return "n/a"
		}
		return strings.ToLower(e.state.name(false))
	}}
	colNodeList = sinfoCol{"NODELIST", func(e *sinfoEntry) string { return nodeList(e.names()) }}
	colCPUs     = sinfoCol{"CPUS", func(e *sinfoEntry) string {
		lo, hi := minMax(e.nodes, func(n api.Node) int64 { return int64(n.CPUs) })
		return rangePlus(lo, hi)
	}}
	colSCT = sinfoCol{"S:C:T", func(e *sinfoEntry) string {
		lo, hi := minMax(e.nodes, func(n api.Node) int64 { return int64(n.CPUs) })
		return "1:" + rangePlus(lo, hi) + ":1"
	}}
	colMemory = sinfoCol{"MEMORY", func(e *sinfoEntry) string {
		lo, hi := minMax(e.nodes, func(n api.Node) int64 { return n.MemMB })
		return rangePlus(lo, hi)
	}}
	colDisk     = sinfoCol{"TMP_DISK", func(*sinfoEntry) string { return "0" }}
	colWeight   = sinfoCol{"WEIGHT", func(*sinfoEntry) string { return "1" }}
	colFeatures = sinfoCol{"AVAIL_FEATURES", func(*sinfoEntry) string { return "(null)" }}
	colReason   = sinfoCol{"REASON", func(e *sinfoEntry) string {
		if len(e.nodes) == 0 || e.nodes[0].Reason == "" {
			return "none"
		}
		return e.nodes[0].Reason
	}}
)

func minMax(nodes []api.Node, f func(api.Node) int64) (int64, int64) {
	if len(nodes) == 0 {
		return 0, 0
	}
	lo, hi := f(nodes[0]), f(nodes[0])
	for _, n := range nodes[1:] {
		v := f(n)
		lo = min(lo, v)
		hi = max(hi, v)
	}
	return lo, hi
}

// rangePlus is sinfo's "2" or "2+" (the minimum, marked when values vary).
func rangePlus(lo, hi int64) string {
	if lo == hi {
		return strconv.FormatInt(lo, 10)
	}
	return strconv.FormatInt(lo, 10) + "+"
}

// The default formats of sinfo 22.05 (src/sinfo/opts.c), as items.
var (
	sinfoSummary = []sinfoItem{
		{colPartition, 9, false, 'P', " "},
		{colAvail, 5, true, 0, " "},
		{colTime, 10, true, 0, " "},
		{colNodes, 6, true, 0, " "},
		{colStateShort, 6, true, 0, " "},
		{colNodeList, 0, false, 0, ""},
	}
	sinfoSummaryLong = []sinfoItem{
		{colPartition, 9, false, 'P', " "},
		{colAvail, 5, true, 0, " "},
		{colTime, 10, true, 0, " "},
		{colSize, 10, true, 0, " "},
		{colRoot, 4, true, 0, " "},
		{colOver, 8, true, 0, " "},
		{colGrps, 10, true, 0, " "},
		{colNodes, 6, true, 0, " "},
		{colStateLong, 11, true, 0, " "},
		{colNodeList, 0, false, 0, ""},
	}
	sinfoNode = []sinfoItem{
		{colNodeList, 0, false, 'N', " "},
		{colNodes, 6, true, 0, " "},
		{colPartition, 9, true, 'P', " "},
		{colStateShort, 6, false, 0, ""},
	}
	sinfoNodeLong = []sinfoItem{
		{colNodeList, 0, false, 'N', " "},
		{colNodes, 6, true, 0, " "},
		{colPartition, 9, true, 'P', " "},
		{colStateLong, 11, true, 0, " "},
		{colCPUs, 4, false, 0, " "},
		{colSCT, 8, true, 0, " "},
		{colMemory, 6, true, 0, " "},
		{colDisk, 8, true, 0, " "},
		{colWeight, 6, true, 0, " "},
		{colFeatures, 8, true, 0, " "},
		{colReason, 20, false, 0, ""},
	}
)

// Sinfo renders partitions and nodes as sinfo does.
//
// The summary (default) view prints, per partition in the order given (the
// configuration order), one line per node state: nodes are grouped by their
// long state name ("allocated", "idle", "down*"), a partition without nodes
// gets one "n/a" line, and within a partition lines are ordered by Slurm's
// numeric node state, highest first (so down* and drained nodes come before
// mixed, allocated, idle and down ones). The partition column is at least 9
// wide, wider for a longer name; the default partition is marked '*'.
//
// The -N view prints one line per node and partition, ordered by node name
// (node2 before node10); a node in several partitions gets its lines in
// partition order. (Real sinfo builds those lines in racing threads, so its
// order among one node's partitions varies from run to run.)
func Sinfo(parts []api.Partition, nodes []api.Node, o SinfoOptions) string {
	items := sinfoSummary
	switch {
	case o.NodeCentric && o.Long:
		items = sinfoNodeLong
	case o.NodeCentric:
		items = sinfoNode
	case o.Long:
		items = sinfoSummaryLong
	}
	entries := buildSinfo(parts, nodes, o.NodeCentric)

	partWidth, nodeWidth := 9, 9
	for _, e := range entries {
		partWidth = max(partWidth, len(colPartition.value(e)))
		nodeWidth = max(nodeWidth, len(colNodeList.value(e)))
	}
	width := func(it sinfoItem) int {
		switch it.dynamic {
		case 'P':
			return partWidth
		case 'N':
			return nodeWidth
		}
		return it.width
	}

	var b strings.Builder
	if !o.NoHeader {
		if o.Long {
			b.WriteString(CTime(o.Now) + "\n")
		}
		for _, it := range items {
			// sinfo never cuts the NODELIST header; other headers are cut.
			b.WriteString(pad(it.col.header, width(it), it.right, it.col.header != "NODELIST"))
			b.WriteString(it.suffix)
		}
		b.WriteString("\n")
	}
	for _, e := range entries {
		for _, it := range items {
			b.WriteString(pad(it.col.value(e), width(it), it.right, true))
			b.WriteString(it.suffix)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// buildSinfo groups nodes into lines the way sinfo's _build_sinfo_data does,
// then sorts them (summary: partition order, then state descending; -N: node
// name). Sorting is stable, so equal lines keep their build order.
func buildSinfo(parts []api.Partition, nodes []api.Node, nodeCentric bool) []*sinfoEntry {
	var entries []*sinfoEntry
	if !nodeCentric {
		for i, p := range parts {
			entries = append(entries, &sinfoEntry{part: p, partIdx: i})
		}
	}
	for i, p := range parts {
		members := partitionMembers(p, nodes)
		for _, n := range nodes {
			if !members[n.Name] {
				continue
			}
			st := effectiveNodeState(n, true)
			var hit *sinfoEntry
			if !nodeCentric {
				for _, e := range entries {
					if e.partIdx != i {
						continue
					}
					if len(e.nodes) == 0 || e.state.name(false) == st.name(false) {
						hit = e
						break
					}
				}
			}
			if hit == nil {
				hit = &sinfoEntry{part: p, partIdx: i}
				entries = append(entries, hit)
			}
			if hasNode(hit.nodes, n.Name) {
				continue
			}
			if len(hit.nodes) == 0 {
				hit.state = st
			}
			hit.nodes = append(hit.nodes, n)
		}
	}
	if nodeCentric {
		sort.SliceStable(entries, func(a, b int) bool {
			return lessHost(entries[a].nodes[0].Name, entries[b].nodes[0].Name)
		})
	} else {
		sort.SliceStable(entries, func(a, b int) bool {
			x, y := entries[a], entries[b]
			if x.partIdx != y.partIdx {
				return x.partIdx < y.partIdx
			}
			return x.state > y.state
		})
	}
	return entries
}

func hasNode(nodes []api.Node, name string) bool {
	for _, n := range nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}

// partitionMembers is the set of node names in p: its Nodes list (plain names
// or hostlist expressions), or, when that is empty, the nodes that name p in
// their Partitions.
func partitionMembers(p api.Partition, nodes []api.Node) map[string]bool {
	m := map[string]bool{}
	for _, name := range expandNames(p.Nodes) {
		m[name] = true
	}
	if len(p.Nodes) == 0 {
		for _, n := range nodes {
			for _, pn := range n.Partitions {
				if pn == p.Name {
					m[n.Name] = true
				}
			}
		}
	}
	return m
}
