package format

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
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
	// Summarize is -s: one line per partition with node counts by state.
	Summarize bool
	// ListReasons is -R: the nodes that are down, drained or failing,
	// grouped by reason. The caller passes only those nodes (see
	// ReasonStates).
	ListReasons bool
	// Format is a -o string ("%P %.5a %D"); LongFormat a -O string
	// ("partition:10,nodes"). They replace the default columns.
	Format     string
	LongFormat string
	// Now is the time the listing is made, for the -l date line.
	Now time.Time
	// Sort is -S: -o letters, last one first, each ascending or, after
	// '-', descending; "#P" is partitions in slurm.conf's order. ""
	// sorts as sinfo does by default ("#P,-t", or "N" with -N).
	Sort string
}

// ReasonStates are the node states sinfo -R lists by default.
var ReasonStates = []string{"down", "fail", "drain"}

// sinfoEntry is one output line: nodes of one partition that agree on
// every column that splits lines.
type sinfoEntry struct {
	part    api.Partition
	partIdx int
	nodes   []api.Node
	state   openapi.NodeState
	key     string
}

func (e *sinfoEntry) names() []string {
	out := make([]string, len(e.nodes))
	for i, n := range e.nodes {
		out[i] = n.Name
	}
	return out
}

// counts returns the allocated, idle, other and total nodes of the entry,
// as sinfo's A/I/O/T columns count them.
func (e *sinfoEntry) counts() (alloc, idle, other, total int) {
	for _, n := range e.nodes {
		st := openapi.EffectiveNodeState(n, true)
		switch b := st.Base(); {
		case b == openapi.NodeBaseAllocated || b == openapi.NodeBaseMixed || st.Has(openapi.FlagCompleting):
			alloc++
		case st.Has(openapi.FlagDrain) || b == openapi.NodeBaseDown:
			other++
		default:
			idle++
		}
		total++
	}
	return
}

// cpuCounts is the same for CPUs.
func (e *sinfoEntry) cpuCounts() (alloc, idle, other, total int) {
	for _, n := range e.nodes {
		st := openapi.EffectiveNodeState(n, true)
		alloc += n.AllocCPUs
		total += n.CPUs
		if st.Has(openapi.FlagDrain) || st.Base() == openapi.NodeBaseDown {
			other += n.CPUs - n.AllocCPUs
		} else {
			idle += n.CPUs - n.AllocCPUs
		}
	}
	return
}

// sinfoCol is one sinfo column. nodeKey or partKey, when set, make the
// column split lines: sinfo prints nodes (or partitions) on separate lines
// when the column would show them differently, as Slurm's match flags do.
type sinfoCol struct {
	header  string
	value   func(e *sinfoEntry) string
	nodeKey func(n api.Node) string
	partKey func(p api.Partition) string
}

// sinfoItem places a column in a format: width, justification, whether the
// width is computed from the data (partition and node list columns of the
// default formats), and the text after it.
type sinfoItem struct {
	col     sinfoCol
	width   int
	right   bool
	dynamic byte // 'P' partition width, 'N' node list width, 0 fixed
	suffix  string
}

func partName(p api.Partition) string { return p.Name }

func partAvail(p api.Partition) string {
	switch strings.ToUpper(p.State) {
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
}

func partTime(p api.Partition) string {
	if p.MaxTimeMin < 0 {
		return "infinite"
	}
	return sinfoSecs(p.MaxTimeMin * 60)
}

func stateLong(n api.Node) string  { return openapi.EffectiveNodeState(n, true).Name(false) }
func stateShort(n api.Node) string { return openapi.EffectiveNodeState(n, true).Name(true) }
func nodeReason(n api.Node) string {
	if n.Reason == "" {
		return "none"
	}
	return n.Reason
}
func nodeCPUs(n api.Node) string { return strconv.Itoa(n.CPUs) }
func nodeMem(n api.Node) string  { return strconv.FormatInt(n.MemMB, 10) }
func nodeGres(n api.Node) string { return orNull(n.Gres) }
func nodeAddr(n api.Node) string {
	if h, _, ok := strings.Cut(n.Addr, ":"); ok || h != "" {
		return h
	}
	return n.Name
}

var (
	colPartition = sinfoCol{"PARTITION", func(e *sinfoEntry) string {
		if e.part.Default {
			return e.part.Name + "*"
		}
		return e.part.Name
	}, nil, partName}
	colPartitionName = sinfoCol{"PARTITION", func(e *sinfoEntry) string { return e.part.Name }, nil, partName}
	colAvail         = sinfoCol{"AVAIL", func(e *sinfoEntry) string { return partAvail(e.part) }, nil, partAvail}
	colTime          = sinfoCol{"TIMELIMIT", func(e *sinfoEntry) string { return partTime(e.part) }, nil, partTime}
	colDefaultTime   = sinfoCol{"DEFAULTTIME", func(*sinfoEntry) string { return "n/a" }, nil, nil}
	colSize          = sinfoCol{"JOB_SIZE", func(*sinfoEntry) string { return "1-infinite" }, nil, nil}
	colRoot          = sinfoCol{"ROOT", func(*sinfoEntry) string { return "no" }, nil, nil}
	colOver          = sinfoCol{"OVERSUBSCRIBE", func(*sinfoEntry) string { return "NO" }, nil, nil}
	colGrps          = sinfoCol{"GROUPS", func(*sinfoEntry) string { return "all" }, nil, nil}
	colNodes         = sinfoCol{"NODES", func(e *sinfoEntry) string { return strconv.Itoa(len(e.nodes)) }, nil, nil}
	colNodesAI       = sinfoCol{"NODES(A/I)", func(e *sinfoEntry) string {
		a, i, _, _ := e.counts()
		return fmt.Sprintf("%d/%d", a, i)
	}, nil, nil}
	colNodesAIOT = sinfoCol{"NODES(A/I/O/T)", func(e *sinfoEntry) string {
		a, i, o, t := e.counts()
		return fmt.Sprintf("%d/%d/%d/%d", a, i, o, t)
	}, nil, nil}
	colCPUsAIOT = sinfoCol{"CPUS(A/I/O/T)", func(e *sinfoEntry) string {
		a, i, o, t := e.cpuCounts()
		return fmt.Sprintf("%d/%d/%d/%d", a, i, o, t)
	}, nodeCPUs, nil}
	colStateShort = sinfoCol{"STATE", func(e *sinfoEntry) string {
		if len(e.nodes) == 0 {
			return "n/a"
		}
		return strings.ToLower(e.state.Name(true))
	}, stateLong, nil}
	colStateLong = sinfoCol{"STATE", func(e *sinfoEntry) string {
		if len(e.nodes) == 0 {
			return "n/a"
		}
		return strings.ToLower(e.state.Name(false))
	}, stateLong, nil}
	colStateComplete = sinfoCol{"STATECOMPLETE", func(e *sinfoEntry) string {
		if len(e.nodes) == 0 {
			return "n/a"
		}
		return strings.ToLower(e.state.Complete())
	}, func(n api.Node) string { return openapi.EffectiveNodeState(n, true).Complete() }, nil}
	colNodeList  = sinfoCol{"NODELIST", func(e *sinfoEntry) string { return openapi.NodeList(e.names()) }, nil, nil}
	colHostnames = sinfoCol{"HOSTNAMES", func(e *sinfoEntry) string { return openapi.NodeList(e.names()) }, nil, nil}
	colNodeAddr  = sinfoCol{"NODE_ADDR", func(e *sinfoEntry) string {
		var addrs []string
		for _, n := range e.nodes {
			addrs = append(addrs, nodeAddr(n))
		}
		return openapi.NodeList(addrs)
	}, nodeAddr, nil}
	colCPUs = sinfoCol{"CPUS", func(e *sinfoEntry) string {
		lo, hi := minMax(e.nodes, func(n api.Node) int64 { return int64(n.CPUs) })
		return rangePlus(lo, hi)
	}, nodeCPUs, nil}
	colSCT = sinfoCol{"S:C:T", func(e *sinfoEntry) string {
		lo, hi := minMax(e.nodes, func(n api.Node) int64 { return int64(n.CPUs) })
		return "1:" + rangePlus(lo, hi) + ":1"
	}, nodeCPUs, nil}
	colSockets = sinfoCol{"SOCKETS", func(*sinfoEntry) string { return "1" }, nil, nil}
	colCores   = sinfoCol{"CORES", func(e *sinfoEntry) string {
		lo, hi := minMax(e.nodes, func(n api.Node) int64 { return int64(n.CPUs) })
		return rangePlus(lo, hi)
	}, nodeCPUs, nil}
	colThreads = sinfoCol{"THREADS", func(*sinfoEntry) string { return "1" }, nil, nil}
	colMemory  = sinfoCol{"MEMORY", func(e *sinfoEntry) string {
		lo, hi := minMax(e.nodes, func(n api.Node) int64 { return n.MemMB })
		return rangePlus(lo, hi)
	}, nodeMem, nil}
	colAllocMem = sinfoCol{"ALLOCMEM", func(e *sinfoEntry) string {
		var sum int64
		for _, n := range e.nodes {
			sum += n.AllocMemMB
		}
		return strconv.FormatInt(sum, 10)
	}, func(n api.Node) string { return strconv.FormatInt(n.AllocMemMB, 10) }, nil}
	colFreeMem     = sinfoCol{"FREE_MEM", func(*sinfoEntry) string { return "N/A" }, nil, nil}
	colCPULoad     = sinfoCol{"CPU_LOAD", func(*sinfoEntry) string { return "N/A" }, nil, nil}
	colDisk        = sinfoCol{"TMP_DISK", func(*sinfoEntry) string { return "0" }, nil, nil}
	colWeight      = sinfoCol{"WEIGHT", func(*sinfoEntry) string { return "1" }, nil, nil}
	colFeatures    = sinfoCol{"AVAIL_FEATURES", func(*sinfoEntry) string { return "(null)" }, nil, nil}
	colFeaturesAct = sinfoCol{"ACTIVE_FEATURES", func(*sinfoEntry) string { return "(null)" }, nil, nil}
	colGres        = sinfoCol{"GRES", func(e *sinfoEntry) string {
		if len(e.nodes) == 0 {
			return "(null)"
		}
		return nodeGres(e.nodes[0])
	}, nodeGres, nil}
	colGresUsed = sinfoCol{"GRES_USED", func(*sinfoEntry) string { return "N/A" }, nil, nil}
	colReason   = sinfoCol{"REASON", func(e *sinfoEntry) string {
		if len(e.nodes) == 0 {
			return "none"
		}
		return nodeReason(e.nodes[0])
	}, nodeReason, nil}
	// hpc records no user or time with a node's reason yet.
	colTimestamp   = sinfoCol{"TIMESTAMP", func(e *sinfoEntry) string { return reasonTime(e.nodes[0]) }, nil, nil}
	colUser        = sinfoCol{"USER", func(e *sinfoEntry) string { return reasonUser(e.nodes[0]) }, nil, nil}
	colUserLong    = sinfoCol{"USER", func(e *sinfoEntry) string { return reasonUser(e.nodes[0]) }, nil, nil}
	colMaxCPUs     = sinfoCol{"MAX_CPUS_PER_NODE", func(*sinfoEntry) string { return "UNLIMITED" }, nil, nil}
	colPrioFactor  = sinfoCol{"PRIO_JOB_FACTOR", func(*sinfoEntry) string { return "1" }, nil, nil}
	colPrioTier    = sinfoCol{"PRIO_TIER", func(*sinfoEntry) string { return "1" }, nil, nil}
	colPreemptMode = sinfoCol{"PREEMPT_MODE", func(*sinfoEntry) string { return "OFF" }, nil, nil}
	colAllocNodes  = sinfoCol{"ALLOCNODES", func(*sinfoEntry) string { return "all" }, nil, nil}
	colVersion     = sinfoCol{"VERSION", func(*sinfoEntry) string { return openapi.SlurmVersion }, nil, nil}
	colCluster     = sinfoCol{"CLUSTER", func(*sinfoEntry) string { return "N/A" }, nil, nil}
	colComment     = sinfoCol{"COMMENT", func(*sinfoEntry) string { return "(null)" }, nil, nil}
	colPort        = sinfoCol{"PORT", func(e *sinfoEntry) string {
		if len(e.nodes) > 0 {
			if _, p, ok := strings.Cut(e.nodes[0].Addr, ":"); ok {
				return p
			}
		}
		return "0"
	}, nil, nil}
)

// sinfoLetters() are sinfo's -o letters.
var sinfoLetters = sync.OnceValue(func() map[byte]sinfoCol {
	return map[byte]sinfoCol{
		'a': colAvail, 'A': colNodesAI, 'b': colFeaturesAct, 'B': colMaxCPUs, 'c': colCPUs,
		'C': colCPUsAIOT, 'd': colDisk, 'D': colNodes, 'e': colFreeMem, 'E': colReason,
		'f': colFeatures, 'F': colNodesAIOT, 'g': colGrps, 'G': colGres, 'h': colOver,
		'H': colTimestamp, 'I': colPrioFactor, 'l': colTime, 'L': colDefaultTime, 'm': colMemory,
		'M': colPreemptMode, 'n': colHostnames, 'N': colNodeList, 'o': colNodeAddr, 'O': colCPULoad,
		'p': colPrioTier, 'P': colPartition, 'r': colRoot, 'R': colPartitionName, 's': colSize,
		'S': colAllocNodes, 't': colStateShort, 'T': colStateLong, 'u': colUser, 'U': colUserLong,
		'v': colVersion, 'V': colCluster, 'w': colWeight, 'X': colSockets, 'Y': colCores,
		'Z': colThreads, 'z': colSCT,
	}
})

// sinfoNames() are sinfo's -O names.
var sinfoNames = sync.OnceValue(func() map[string]sinfoCol {
	return map[string]sinfoCol{
		"allocmem": colAllocMem, "allocnodes": colAllocNodes, "available": colAvail, "cluster": colCluster,
		"comment": colComment, "cpus": colCPUs, "cpusload": colCPULoad, "freemem": colFreeMem,
		"cpusstate": colCPUsAIOT, "cores": colCores, "defaulttime": colDefaultTime, "disk": colDisk,
		"features": colFeatures, "features_act": colFeaturesAct, "groups": colGrps, "gres": colGres,
		"gresused": colGresUsed, "maxcpuspernode": colMaxCPUs, "memory": colMemory, "nodes": colNodes,
		"nodeaddr": colNodeAddr, "nodeai": colNodesAI, "nodeaiot": colNodesAIOT, "nodehost": colHostnames,
		"nodelist": colNodeList, "partition": colPartition, "partitionname": colPartitionName,
		"port": colPort, "preemptmode": colPreemptMode, "priorityjobfactor": colPrioFactor,
		"prioritytier": colPrioTier, "reason": colReason, "root": colRoot, "oversubscribe": colOver,
		"share": colOver, "size": colSize, "statecompact": colStateShort, "statecomplete": colStateComplete,
		"statelong": colStateLong, "sockets": colSockets, "socketcorethread": colSCT, "time": colTime,
		"timestamp": colTimestamp, "threads": colThreads, "user": colUser, "userlong": colUserLong,
		"version": colVersion, "weight": colWeight,
	}
})

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

// The default formats of sinfo 22.05 (src/sinfo/opts.c), as -O strings;
// their partition and node list columns are sized to the data.
const (
	sinfoDefault        = "partition:9 ,available:.5 ,time:.10 ,nodes:.6 ,statecompact:.6 ,nodelist:0"
	sinfoDefaultLong    = "partition:9 ,available:.5 ,time:.10 ,size:.10 ,root:.4 ,oversubscribe:.8 ,groups:.10 ,nodes:.6 ,statelong:.11 ,nodelist:0"
	sinfoSummarize      = "partition:9 ,available:.5 ,time:.10 ,nodeaiot:.16 ,nodelist:0"
	sinfoNodeFormat     = "nodelist:0 ,nodes:.6 ,partition:.9 ,statecompact:6"
	sinfoNodeFormatLong = "nodelist:0 ,nodes:.6 ,partition:.9 ,statelong:.11 ,cpus:4 ,socketcorethread:.8 ,memory:.6 ,disk:.8 ,weight:.6 ,features:.8 ,reason:20"
	sinfoReasons        = "reason:20 ,user:9 ,timestamp:19 ,nodelist:0"
	sinfoReasonsLong    = "reason:20 ,userlong:12 ,timestamp:19 ,statecompact:6 ,nodelist:0"
)

// ParseSinfoFormat reads a sinfo -o string ("%9P %.5a %D"). Unknown letters
// print literally and are reported, one line each, as "Invalid node format
// specification: X"; the items are usable even then.
func ParseSinfoFormat(s string) ([]sinfoItem, error) {
	fields, err := parsePercentFormat(s, func(c byte) bool { _, ok := sinfoLetters()[c]; return ok }, "Invalid node format specification")
	var items []sinfoItem
	for _, f := range fields {
		it := sinfoItem{width: f.Width, right: f.Right, suffix: f.Text}
		if f.Letter != 0 {
			it.col = sinfoLetters()[f.Letter]
		}
		items = append(items, it)
	}
	return items, err
}

// ParseSinfoLongFormat reads a sinfo -O string ("partition:10 ,nodes").
// Fields without a width are 20 wide; unknown names are reported as
// "Invalid node format specification: name".
func ParseSinfoLongFormat(s string) ([]sinfoItem, error) {
	var items []sinfoItem
	var errs []error
	for _, tok := range strings.Split(s, ",") {
		if tok == "" {
			continue
		}
		name, spec, hasSpec := strings.Cut(tok, ":")
		it := sinfoItem{width: 20}
		if hasSpec {
			if strings.HasPrefix(spec, ".") {
				it.right = true
				spec = spec[1:]
			}
			i := 0
			for i < len(spec) && spec[i] >= '0' && spec[i] <= '9' {
				i++
			}
			it.width, _ = strconv.Atoi(spec[:i])
			it.suffix = spec[i:]
		}
		col, ok := sinfoNames()[strings.ToLower(name)]
		if !ok {
			errs = append(errs, fmt.Errorf("Invalid node format specification: %s", name))
		}
		it.col = col
		items = append(items, it)
	}
	return items, errors.Join(errs...)
}

// sinfoItems picks the columns for o: its format strings, or the default
// format of its view (with the partition and node list columns sized to
// the data).
func sinfoItems(o SinfoOptions) []sinfoItem {
	if o.Format != "" {
		items, _ := ParseSinfoFormat(o.Format)
		return items
	}
	if o.LongFormat != "" {
		items, _ := ParseSinfoLongFormat(o.LongFormat)
		return items
	}
	var def string
	dynNodes, dynParts := false, true
	switch {
	case o.Summarize:
		def = sinfoSummarize
	case o.NodeCentric && o.Long:
		def, dynNodes = sinfoNodeFormatLong, true
	case o.NodeCentric:
		def, dynNodes = sinfoNodeFormat, true
	case o.ListReasons && o.Long:
		def, dynParts = sinfoReasonsLong, false
	case o.ListReasons:
		def, dynParts = sinfoReasons, false
	case o.Long:
		def = sinfoDefaultLong
	default:
		def = sinfoDefault
	}
	items, _ := ParseSinfoLongFormat(def)
	for i := range items {
		switch items[i].col.header {
		case "PARTITION":
			if dynParts {
				items[i].dynamic = 'P'
			}
		case "NODELIST":
			if dynNodes {
				items[i].dynamic = 'N'
			}
		}
	}
	return items
}

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
//
// With a format (-o, -O), lines are split by the columns shown, as sinfo's
// match flags split them: nodes whose state, CPUs, memory, reason, ... would
// print differently get lines of their own, and partitions merge when no
// partition column tells them apart. -s prints one line per partition; -R
// groups the nodes given by reason, whatever their partition.
func Sinfo(parts []api.Partition, nodes []api.Node, o SinfoOptions) string {
	items := sinfoItems(o)
	entries := buildSinfo(parts, nodes, items, o)

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
			if it.col.value != nil {
				// sinfo never cuts the NODELIST header; other headers are cut.
				b.WriteString(pad(it.col.header, width(it), it.right, it.col.header != "NODELIST"))
			}
			b.WriteString(it.suffix)
		}
		b.WriteString("\n")
	}
	for _, e := range entries {
		for _, it := range items {
			if it.col.value != nil {
				b.WriteString(pad(it.col.value(e), width(it), it.right, true))
			}
			b.WriteString(it.suffix)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// buildSinfo groups nodes into lines the way sinfo's _build_sinfo_data
// does, then sorts them (summary: partition order, then state descending;
// -N: node name). Sorting is stable, so equal lines keep their build order.
func buildSinfo(parts []api.Partition, nodes []api.Node, items []sinfoItem, o SinfoOptions) []*sinfoEntry {
	partKey := func(p api.Partition) string {
		if o.ListReasons {
			return "" // sinfo -R does not care about partitions
		}
		var k []string
		for _, it := range items {
			if it.col.partKey != nil {
				k = append(k, it.col.partKey(p))
			}
		}
		return strings.Join(k, "\x00")
	}
	nodeKey := func(n api.Node) string {
		var k []string
		for _, it := range items {
			if it.col.nodeKey != nil {
				k = append(k, it.col.nodeKey(n))
			}
		}
		return strings.Join(k, "\x00")
	}
	// As sinfo does, every partition gets a line even without nodes when
	// the partition is shown (state n/a); the first node of a partition
	// fills that line.
	hasPartCol := false
	for _, it := range items {
		if it.col.header == "PARTITION" {
			hasPartCol = true
		}
	}
	var entries []*sinfoEntry
	if !o.NodeCentric && !o.ListReasons && hasPartCol {
		for i, p := range parts {
			entries = append(entries, &sinfoEntry{part: p, partIdx: i})
		}
	}
	for i, p := range parts {
		members := partitionMembers(p, nodes)
		pk := partKey(p)
		for _, n := range nodes {
			if !members[n.Name] {
				continue
			}
			key := pk + "\x01" + nodeKey(n)
			var hit *sinfoEntry
			if !o.NodeCentric {
				for _, e := range entries {
					if (len(e.nodes) == 0 && e.partIdx == i) || (len(e.nodes) > 0 && e.key == key) {
						hit = e
						break
					}
				}
			}
			if hit == nil {
				hit = &sinfoEntry{part: p, partIdx: i}
				entries = append(entries, hit)
			}
			if len(hit.nodes) == 0 {
				hit.key, hit.state = key, openapi.EffectiveNodeState(n, true)
			}
			if !hasNode(hit.nodes, n.Name) {
				hit.nodes = append(hit.nodes, n)
			}
		}
	}
	if o.Sort != "" {
		sortSinfo(entries, o.Sort)
	} else if o.NodeCentric {
		sort.SliceStable(entries, func(a, b int) bool {
			return openapi.LessHost(entries[a].nodes[0].Name, entries[b].nodes[0].Name)
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

// NodeStateMatches reports whether a node is in one of the states sinfo -t
// names (case ignored): a base state (idle, alloc/allocated, mix/mixed,
// down, unknown, future), a flag (drain, drained, draining, fail,
// completing, maint, no_respond, power_down, reserved, ...) or their sinfo
// spellings. It returns an error for a name sinfo does not know.
func NodeStateMatches(n api.Node, states []string) (bool, error) {
	st := openapi.EffectiveNodeState(n, true)
	for _, s := range states {
		name := strings.ToLower(strings.TrimSpace(s))
		if (name == "alloc" || name == "allocated") && n.AllocCPUs > 0 {
			return true, nil // sinfo counts any node with allocated CPUs
		}
		ok, known := nodeStateIs(st, name)
		if !known {
			return false, fmt.Errorf("invalid node state %q", s)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// NodeStateNames are the names sinfo -t accepts.
var NodeStateNames = []string{
	"alloc", "allocated", "comp", "completing", "down", "drain", "drained", "draining",
	"fail", "failing", "future", "idle", "maint", "mix", "mixed", "no_respond",
	"npc", "perfctrs", "planned", "power_down", "powering_down", "powered_down",
	"powering_up", "reboot", "reboot_requested", "reboot_issued", "resv", "reserved",
	"unk", "unknown", "cloud", "error",
}

func nodeStateIs(st openapi.NodeState, s string) (match, known bool) {
	base := st.Base()
	busy := base == openapi.NodeBaseAllocated || base == openapi.NodeBaseMixed
	switch s {
	case "alloc", "allocated":
		return base == openapi.NodeBaseAllocated, true
	case "mix", "mixed":
		return base == openapi.NodeBaseMixed, true
	case "idle":
		return base == openapi.NodeBaseIdle, true
	case "down":
		return base == openapi.NodeBaseDown, true
	case "unk", "unknown":
		return base == openapi.NodeBaseUnknown, true
	case "future":
		return base == openapi.NodeBaseFuture, true
	case "drain":
		return st.Has(openapi.FlagDrain), true
	case "drained":
		return st.Has(openapi.FlagDrain) && !busy && !st.Has(openapi.FlagCompleting), true
	case "draining":
		return st.Has(openapi.FlagDrain) && (busy || st.Has(openapi.FlagCompleting)), true
	case "fail", "failing":
		return st.Has(openapi.FlagFail), true
	case "comp", "completing":
		return st.Has(openapi.FlagCompleting), true
	case "maint":
		return st.Has(openapi.FlagMaint), true
	case "no_respond":
		return st.Has(openapi.FlagNoRespond), true
	case "npc", "perfctrs":
		return st.Has(openapi.FlagPerfCtrs), true
	case "planned":
		return st.Has(openapi.FlagPlanned), true
	case "power_down":
		return st.Has(openapi.FlagPowerDown), true
	case "powering_down":
		return st.Has(openapi.FlagPoweringDown), true
	case "powered_down":
		return st.Has(openapi.FlagPoweredDown), true
	case "powering_up":
		return st.Has(openapi.FlagPoweringUp), true
	case "reboot":
		return st.Has(openapi.FlagRebootReq) || st.Has(openapi.FlagRebootIssued), true
	case "reboot_requested":
		return st.Has(openapi.FlagRebootReq), true
	case "reboot_issued":
		return st.Has(openapi.FlagRebootIssued), true
	case "cloud":
		return st.Has(openapi.FlagCloud), true
	case "error":
		return false, true
	case "resv", "reserved":
		return st.Has(openapi.FlagReserved), true
	}
	return false, false
}

// reasonUser and reasonTime are who set a node's reason and when (sinfo
// -R), "Unknown" when not known.
func reasonUser(n api.Node) string {
	if n.ReasonUser == "" {
		return "Unknown"
	}
	return n.ReasonUser
}

func reasonTime(n api.Node) string {
	if n.ReasonTime.IsZero() {
		return "Unknown"
	}
	return ISOTime(n.ReasonTime)
}

// sortSinfo sorts lines by -S keys as sinfo's sort_sinfo_list does: one
// stable sort per key, the last key first, so the first key decides.
// Letters sinfo does not sort by, and columns hpc prints the same for
// every line, change nothing.
func sortSinfo(entries []*sinfoEntry, keys string) {
	for i := len(keys) - 1; i >= 0; i-- {
		c := keys[i]
		if c == ',' || c == '#' || c == '+' || c == '-' {
			continue
		}
		reverse := i > 0 && keys[i-1] == '-'
		partOrder := i > 0 && keys[i-1] == '#'
		key := sinfoSortKey(c, partOrder)
		if key == nil {
			continue
		}
		sort.SliceStable(entries, func(a, b int) bool {
			if reverse {
				return key(entries[b], entries[a]) < 0
			}
			return key(entries[a], entries[b]) < 0
		})
	}
}

// sinfoSortKey is the comparison of one -S letter; nil for none.
func sinfoSortKey(c byte, partOrder bool) func(x, y *sinfoEntry) int {
	num := func(f func(e *sinfoEntry) int64) func(x, y *sinfoEntry) int {
		return func(x, y *sinfoEntry) int { return cmp.Compare(f(x), f(y)) }
	}
	str := func(f func(e *sinfoEntry) string) func(x, y *sinfoEntry) int {
		return func(x, y *sinfoEntry) int { return strings.Compare(f(x), f(y)) }
	}
	minOf := func(f func(api.Node) int64) func(e *sinfoEntry) int64 {
		return func(e *sinfoEntry) int64 { lo, _ := minMax(e.nodes, f); return lo }
	}
	firstHost := func(x, y *sinfoEntry) int {
		a, b := "", ""
		if len(x.nodes) > 0 {
			a = x.nodes[0].Name
		}
		if len(y.nodes) > 0 {
			b = y.nodes[0].Name
		}
		switch {
		case a == b:
			return 0
		case openapi.LessHost(a, b):
			return -1
		}
		return 1
	}
	switch c {
	case 'a':
		return str(func(e *sinfoEntry) string { return partAvail(e.part) })
	case 'A', 'F':
		return num(func(e *sinfoEntry) int64 { a, _, _, _ := e.counts(); return int64(a) })
	case 'c', 'Y', 'z':
		return num(minOf(func(n api.Node) int64 { return int64(n.CPUs) }))
	case 'D':
		return num(func(e *sinfoEntry) int64 { return int64(len(e.nodes)) })
	case 'E':
		return str(colReason.value)
	case 'l':
		return num(func(e *sinfoEntry) int64 {
			if e.part.MaxTimeMin < 0 {
				return math.MaxInt64
			}
			return e.part.MaxTimeMin
		})
	case 'm':
		return num(minOf(func(n api.Node) int64 { return n.MemMB }))
	case 'n', 'N', 'o':
		return firstHost
	case 'P', 'R':
		if partOrder {
			return num(func(e *sinfoEntry) int64 { return int64(e.partIdx) })
		}
		return str(func(e *sinfoEntry) string { return e.part.Name })
	case 't', 'T':
		return num(func(e *sinfoEntry) int64 { return int64(e.state) })
	}
	return nil
}
