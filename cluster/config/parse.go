package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"hpc/cluster/hostlist"
	"hpc/internal/words"
)

// ParseError is a configuration error; Line is 0 when the problem is not on
// one line (a missing section).
type ParseError struct {
	File string // base name of the file, "slurm.conf" for Parse
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Parse reads slurm.conf syntax from r. Errors are *ParseError and name the
// line: "slurm.conf line 12: unknown node node9 in partition debug".
func Parse(r io.Reader) (*Config, error) {
	return parse(r, "slurm.conf")
}

// Load reads and parses the file at path; errors name the file's base name.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read configuration: %w", err)
	}
	defer f.Close()
	return parse(f, filepath.Base(path))
}

// pair is one Key=Value word of a line.
type pair struct {
	key   string // as written
	lower string // lowercased, for matching
	value string
}

type parser struct {
	file string
	cfg  *Config

	nodeDefaults map[string]pair // from NodeName=DEFAULT lines, by lowercased key
	partDefaults map[string]pair // from PartitionName=DEFAULT lines
	nodeLine     map[string]int  // node name -> line that defined it
	partLines    []int           // line of each partition
	partAll      []bool          // partition said Nodes=ALL
	hpcPortLine  map[string]int  // port key -> line, to name lines in errors
	submitLines  []int           // line of each HpcSubmitHost
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &ParseError{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func parse(r io.Reader, file string) (*Config, error) {
	p := &parser{
		file: file,
		cfg: &Config{
			KillWait:            DefaultKillWait,
			MinJobAge:           DefaultMinJobAge,
			JobRequeue:          1,
			SlurmdTimeout:       DefaultSlurmdTimeout,
			PrologEpilogTimeout: DefaultPrologEpilogTimeout,
			Priority:            Priority{Type: "priority/basic", MaxAgeMin: 7 * 24 * 60, DecayHalfLifeMin: 7 * 24 * 60},
			PreemptType:         "preempt/none",
			PreemptMode:         "OFF",
			SchedulerParameters: map[string]string{},
			MaxJobCount:         DefaultMaxJobCount,
			MaxArraySize:        DefaultMaxArraySize,
			EnforcePartLimits:   DefaultEnforcePartLimits,
			APIPort:             DefaultAPIPort,
			RaftPort:            DefaultRaftPort,
			GossipPort:          DefaultGossipPort,
			Raw:                 map[string]string{},
		},
		nodeDefaults: map[string]pair{},
		partDefaults: map[string]pair{},
		nodeLine:     map[string]int{},
		hpcPortLine:  map[string]int{},
	}
	var text strings.Builder
	if err := scanLines(io.TeeReader(r, &text), p.errf, p.line); err != nil {
		return nil, err
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	p.cfg.Text = text.String()
	return p.cfg, nil
}

// scanLines calls fn for every logical line of a slurm.conf-syntax file:
// comments stripped, "\" continuations joined; n is the first line's number.
func scanLines(r io.Reader, errf func(int, string, ...any) error, fn func(n int, text string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	lineNo, start := 0, 0
	var logical strings.Builder
	for sc.Scan() {
		lineNo++
		text := stripComment(sc.Text())
		text = strings.TrimRight(text, " \t\r")
		if logical.Len() == 0 {
			start = lineNo
		}
		if strings.HasSuffix(text, `\`) {
			logical.WriteString(strings.TrimSuffix(text, `\`))
			continue
		}
		logical.WriteString(text)
		if err := fn(start, logical.String()); err != nil {
			return err
		}
		logical.Reset()
	}
	if err := sc.Err(); err != nil {
		return errf(lineNo+1, "%v", err)
	}
	if logical.Len() > 0 {
		return fn(start, logical.String())
	}
	return nil
}

// stripComment removes a '#' comment; "\#" is a literal '#', and a '#'
// inside double quotes is kept.
func stripComment(s string) string {
	if !strings.Contains(s, "#") {
		return s
	}
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '#':
			b.WriteByte('#')
			i++
		case c == '"':
			quoted = !quoted
			b.WriteByte(c)
		case c == '#' && !quoted:
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// lineWords is how a logical line splits into words: at whitespace
// outside double quotes.
var lineWords = words.Options{Space: func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }}

func (p *parser) line(n int, text string) error {
	ws, unterminated := words.Split(text, lineWords)
	if unterminated {
		return p.errf(n, "unterminated double quote")
	}
	if len(ws) == 0 {
		return nil
	}
	if strings.EqualFold(ws[0], "include") {
		return p.errf(n, "Include is not supported by hpc: copy the included lines into this file")
	}
	pairs := make([]pair, 0, len(ws))
	for _, w := range ws {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return p.errf(n, "expected Key=Value, found %q", w)
		}
		pairs = append(pairs, pair{key: k, lower: strings.ToLower(k), value: v})
	}
	switch pairs[0].lower {
	case "nodename":
		return p.nodeLineDef(n, pairs)
	case "partitionname":
		return p.partitionLine(n, pairs)
	case "nodeset", "downnodes", "frontendname", "switchname":
		return p.errf(n, "%s lines are not supported by hpc", pairs[0].key)
	}
	for _, kv := range pairs {
		if err := p.topKey(n, kv); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) topKey(n int, kv pair) error {
	if strings.HasPrefix(kv.lower, "priority") {
		return p.priorityKey(n, kv)
	}
	if handled, err := p.limitKey(n, kv); handled {
		return err
	}
	if handled, err := p.propagateKey(n, kv); handled {
		return err
	}
	c := p.cfg
	switch kv.lower {
	case "nodename", "partitionname":
		return p.errf(n, "%s must start its line", kv.key)
	case "clustername":
		if kv.value == "" || strings.ContainsAny(kv.value, ",()") {
			return p.errf(n, "invalid ClusterName=%q", kv.value)
		}
		c.ClusterName = strings.ToLower(kv.value)
	case "slurmctldhost":
		h, err := parseControlHost(kv.value)
		if err != nil {
			return p.errf(n, "%v", err)
		}
		if c.IsController(h.Name) {
			return p.errf(n, "SlurmctldHost %s is listed twice", h.Name)
		}
		c.ControlHosts = append(c.ControlHosts, h)
	case "hpcsubmithost":
		h, err := parseHost(kv.key, kv.value)
		if err != nil {
			return p.errf(n, "%v", err)
		}
		if c.IsSubmitHost(h.Name) {
			return p.errf(n, "%s %s is listed twice", kv.key, h.Name)
		}
		c.SubmitHosts = append(c.SubmitHosts, h)
		p.submitLines = append(p.submitLines, n)
	case "defmempercpu":
		v, err := ParseMem(kv.value)
		if err != nil {
			return p.errf(n, "invalid DefMemPerCPU=%s: expected megabytes", kv.value)
		}
		c.DefMemPerCPU = v
	case "killwait":
		v, err := nonNegInt(kv.value)
		if err != nil {
			return p.errf(n, "invalid KillWait=%s: expected seconds", kv.value)
		}
		c.KillWait = v
	case "preempttype":
		switch v := strings.ToLower(kv.value); v {
		case "preempt/none", "preempt/qos":
			c.PreemptType = v
		default:
			return p.errf(n, "invalid PreemptType=%s: hpc supports preempt/none and preempt/qos", kv.value)
		}
	case "preemptmode":
		switch v := strings.ToUpper(kv.value); v {
		case "OFF", "REQUEUE", "CANCEL":
			c.PreemptMode = v
		default:
			return p.errf(n, "invalid PreemptMode=%s: hpc supports OFF, REQUEUE and CANCEL", kv.value)
		}
	case "schedulerparameters":
		for _, item := range strings.Split(kv.value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				k, v, _ := strings.Cut(item, "=")
				c.SchedulerParameters[strings.ToLower(k)] = v
			}
		}
		c.Raw[kv.key] = kv.value
	case "jobrequeue":
		if kv.value != "0" && kv.value != "1" {
			return p.errf(n, "invalid JobRequeue=%s: expected 0 or 1", kv.value)
		}
		c.JobRequeue = int(kv.value[0] - '0')
		c.Raw[kv.key] = kv.value
	case "minjobage":
		v, err := nonNegInt(kv.value)
		if err != nil {
			return p.errf(n, "invalid MinJobAge=%s: expected seconds", kv.value)
		}
		c.MinJobAge = v
	case "slurmdtimeout":
		v, err := nonNegInt(kv.value)
		if err != nil {
			return p.errf(n, "invalid SlurmdTimeout=%s: expected seconds", kv.value)
		}
		c.SlurmdTimeout = v
	case "prolog", "epilog":
		if !strings.HasPrefix(kv.value, "/") {
			return p.errf(n, "invalid %s=%s: expected an absolute path", kv.key, kv.value)
		}
		if kv.lower == "prolog" {
			c.Prolog = kv.value
		} else {
			c.Epilog = kv.value
		}
	case "prologepilogtimeout":
		v, err := positiveInt(kv.value)
		if err != nil {
			return p.errf(n, "invalid PrologEpilogTimeout=%s: expected seconds", kv.value)
		}
		c.PrologEpilogTimeout = v
	case "enforcepartlimits":
		switch v := strings.ToUpper(kv.value); v {
		case "ALL", "ANY", "NO":
			c.EnforcePartLimits = v
		case "YES":
			c.EnforcePartLimits = "ALL"
		default:
			return p.errf(n, "invalid EnforcePartLimits=%s: expected ALL, ANY or NO", kv.value)
		}
	case "privatedata":
		v, err := ParsePrivateData(kv.value)
		if err != nil {
			return p.errf(n, "invalid PrivateData=%s: %v", kv.value, err)
		}
		c.PrivateData = v
	case "accountingstorageenforce":
		v, err := ParseAccountingEnforce(kv.value)
		if err != nil {
			return p.errf(n, "invalid AccountingStorageEnforce=%s: %v", kv.value, err)
		}
		c.AccountingStorageEnforce = v
	case "hpcapiport", "hpcraftport", "hpcgossipport":
		v, err := strconv.Atoi(kv.value)
		if err != nil || v < 1 || v > 65535 {
			return p.errf(n, "invalid %s=%s: expected a TCP port (1-65535)", kv.key, kv.value)
		}
		switch kv.lower {
		case "hpcapiport":
			c.APIPort = v
		case "hpcraftport":
			c.RaftPort = v
		default:
			c.GossipPort = v
		}
		p.hpcPortLine[kv.lower] = n
	default:
		c.Raw[kv.key] = kv.value
	}
	return nil
}

// priorityKey reads the Priority* keys.
func (p *parser) priorityKey(n int, kv pair) error {
	c := p.cfg
	switch kv.lower {
	case "prioritytype":
		switch v := strings.ToLower(kv.value); v {
		case "priority/basic", "priority/multifactor":
			c.Priority.Type = v
		default:
			return p.errf(n, "invalid PriorityType=%s: expected priority/basic or priority/multifactor", kv.value)
		}
	case "priorityweightage", "priorityweightfairshare", "priorityweightjobsize", "priorityweightpartition", "priorityweightqos":
		v, err := strconv.ParseUint(kv.value, 10, 32)
		if err != nil {
			return p.errf(n, "invalid %s=%s: expected a number", kv.key, kv.value)
		}
		w := map[string]*uint32{
			"priorityweightage": &c.Priority.WeightAge, "priorityweightfairshare": &c.Priority.WeightFairshare,
			"priorityweightjobsize": &c.Priority.WeightJobSize, "priorityweightpartition": &c.Priority.WeightPartition,
			"priorityweightqos": &c.Priority.WeightQOS,
		}[kv.lower]
		*w = uint32(v)
	case "prioritymaxage", "prioritydecayhalflife", "prioritycalcperiod":
		v, err := ParseTime(kv.value)
		if err != nil || v < 0 {
			return p.errf(n, "invalid %s=%s: expected [days-]hours:minutes", kv.key, kv.value)
		}
		switch kv.lower {
		case "prioritymaxage":
			c.Priority.MaxAgeMin = v
		case "prioritydecayhalflife":
			c.Priority.DecayHalfLifeMin = v
		default:
			c.Priority.CalcPeriodMin = v
		}
	case "priorityfavorsmall":
		switch strings.ToUpper(kv.value) {
		case "YES":
			c.Priority.FavorSmall = true
		case "NO":
			c.Priority.FavorSmall = false
		default:
			return p.errf(n, "invalid PriorityFavorSmall=%s: expected YES or NO", kv.value)
		}
	default:
		c.Raw[kv.key] = kv.value
	}
	return nil
}

// parseControlHost reads "node1" or "node1(127.0.1.1)".
func parseControlHost(v string) (ControlHost, error) { return parseHost("SlurmctldHost", v) }

// parseHost reads the value of key, "node1" or "node1(127.0.1.1)".
func parseHost(key, v string) (ControlHost, error) {
	name, addr := v, ""
	if i := strings.IndexByte(v, '('); i >= 0 {
		if !strings.HasSuffix(v, ")") || strings.Count(v, "(") != 1 || strings.Count(v, ")") != 1 {
			return ControlHost{}, fmt.Errorf("invalid %s=%s: expected name or name(address)", key, v)
		}
		name, addr = v[:i], v[i+1:len(v)-1]
		if addr == "" {
			return ControlHost{}, fmt.Errorf("invalid %s=%s: empty address", key, v)
		}
	}
	if name == "" || strings.ContainsAny(name, "[],)") {
		return ControlHost{}, fmt.Errorf("invalid %s=%s: expected name or name(address)", key, v)
	}
	return ControlHost{Name: name, Addr: addr}, nil
}

func positiveInt(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("not a positive number")
	}
	return v, nil
}

func nonNegInt(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("not a number")
	}
	return v, nil
}

// collect turns a line's pairs into a map by lowercased key, refusing repeats.
func (p *parser) collect(n int, pairs []pair) (map[string]pair, error) {
	m := make(map[string]pair, len(pairs))
	for _, kv := range pairs {
		if prev, dup := m[kv.lower]; dup {
			return nil, p.errf(n, "%s given twice on one line (%s and %s)", kv.key, prev.value, kv.value)
		}
		m[kv.lower] = kv
	}
	return m, nil
}

// Node line keys hpc accepts but does not use (Slurm's meaning is kept
// elsewhere or does not apply).
var ignoredNodeKeys = map[string]bool{
	"port": true, "state": true, "tmpdisk": true, "reason": true,
	"corespeccount": true, "cpuspeclist": true, "memspeclimit": true,
	"cpubind": true, "bcastaddr": true, "resumetimeout": true,
	"suspendtime": true, "arch": true, "os": true,
}

func (p *parser) nodeLineDef(n int, pairs []pair) error {
	kv, err := p.collect(n, pairs)
	if err != nil {
		return err
	}
	nameSpec := kv["nodename"].value
	if strings.EqualFold(nameSpec, "DEFAULT") {
		// Check the values now, so errors name this line.
		if _, err := p.buildNodes(n, []string{"DEFAULT"}, kv); err != nil {
			return err
		}
		for k, v := range kv {
			if k != "nodename" {
				p.nodeDefaults[k] = v
			}
		}
		return nil
	}
	names, err := hostlist.Expand(nameSpec)
	if err != nil {
		return p.errf(n, "NodeName: %v", err)
	}
	if len(names) == 0 {
		return p.errf(n, "NodeName is empty")
	}
	merged := make(map[string]pair, len(p.nodeDefaults)+len(kv))
	for k, v := range p.nodeDefaults {
		merged[k] = v
	}
	for k, v := range kv {
		merged[k] = v
	}
	nodes, err := p.buildNodes(n, names, merged)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		if first, dup := p.nodeLine[node.Name]; dup {
			return p.errf(n, "node %s is defined twice (first on line %d)", node.Name, first)
		}
		if len(p.cfg.Nodes) >= MaxNodes {
			return p.errf(n, "more than %d nodes", MaxNodes)
		}
		p.nodeLine[node.Name] = n
		p.cfg.Nodes = append(p.cfg.Nodes, node)
	}
	return nil
}

// perNode expands a NodeHostname or NodeAddr hostlist: one value per node,
// or a single value shared by all.
func (p *parser) perNode(n int, kv pair, count int) ([]string, error) {
	vals, err := hostlist.Expand(kv.value)
	if err != nil {
		return nil, p.errf(n, "%s: %v", kv.key, err)
	}
	switch len(vals) {
	case count:
		return vals, nil
	case 1:
		out := make([]string, count)
		for i := range out {
			out[i] = vals[0]
		}
		return out, nil
	}
	return nil, p.errf(n, "%s=%s names %d hosts for %d nodes: give one per node, or one for all", kv.key, kv.value, len(vals), count)
}

func (p *parser) buildNodes(n int, names []string, kv map[string]pair) ([]Node, error) {
	t := Node{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1, RealMemoryMB: 1, Weight: 1}
	boards, socketsPerBoard := 1, 0
	cpusSet, topoSet := false, false
	var hostnames, addrs []string
	bad := func(kv pair, want string) error {
		return p.errf(n, "invalid %s=%s: expected %s", kv.key, kv.value, want)
	}
	for _, k := range sortedKeys(kv) {
		v := kv[k]
		var err error
		switch k {
		case "nodename":
		case "nodehostname":
			hostnames, err = p.perNode(n, v, len(names))
		case "nodeaddr":
			addrs, err = p.perNode(n, v, len(names))
		case "cpus", "procs":
			if t.CPUs, err = positiveInt(v.value); err != nil {
				return nil, bad(v, "a positive number")
			}
			cpusSet = true
		case "sockets":
			t.Sockets, err = positiveInt(v.value)
			topoSet = true
		case "boards":
			boards, err = positiveInt(v.value)
		case "socketsperboard":
			socketsPerBoard, err = positiveInt(v.value)
			topoSet = true
		case "corespersocket":
			t.CoresPerSocket, err = positiveInt(v.value)
			topoSet = true
		case "threadspercore":
			t.ThreadsPerCore, err = positiveInt(v.value)
			topoSet = true
		case "realmemory":
			var mb int64
			if mb, err = strconv.ParseInt(v.value, 10, 64); err == nil && mb < 1 {
				err = fmt.Errorf("not positive")
			}
			if err != nil {
				return nil, bad(v, "megabytes (a positive number)")
			}
			t.RealMemoryMB = mb
		case "gres":
			if t.Gres, err = parseGres(v.value); err != nil {
				return nil, p.errf(n, "invalid Gres=%s: %v", v.value, err)
			}
		case "features", "feature", "availablefeatures":
			t.Features = nil
			if v.value != "" && v.value != "(null)" {
				for _, f := range strings.Split(v.value, ",") {
					if f == "" {
						return nil, bad(v, "a comma-separated list of features")
					}
					t.Features = append(t.Features, f)
				}
			}
		case "weight":
			if t.Weight, err = nonNegInt(v.value); err != nil {
				return nil, bad(v, "a number")
			}
		default:
			if !ignoredNodeKeys[k] {
				return nil, p.errf(n, "unknown NodeName option %s", v.key)
			}
		}
		if err != nil {
			if pe, ok := err.(*ParseError); ok {
				return nil, pe
			}
			return nil, bad(v, "a positive number")
		}
	}
	if socketsPerBoard > 0 { // SocketsPerBoard wins over Sockets, as in Slurm
		t.Sockets = boards * socketsPerBoard
	}
	threads := t.Sockets * t.CoresPerSocket * t.ThreadsPerCore
	switch {
	case !cpusSet:
		t.CPUs = threads
	case !topoSet:
		// Only CPUs given: as Slurm, one core per socket.
		t.Sockets, t.CoresPerSocket, t.ThreadsPerCore = t.CPUs, 1, 1
	case t.CPUs != threads && t.CPUs != t.Sockets*t.CoresPerSocket:
		return nil, p.errf(n, "CPUs=%d does not match Sockets*CoresPerSocket*ThreadsPerCore=%d", t.CPUs, threads)
	}
	if names[0] == "DEFAULT" && len(names) == 1 {
		return nil, nil
	}
	if hostnames == nil {
		hostnames = names
	}
	if addrs == nil {
		addrs = hostnames
	}
	nodes := make([]Node, len(names))
	for i, name := range names {
		node := t
		node.Name, node.Hostname, node.Addr = name, hostnames[i], addrs[i]
		node.Gres = append([]Gres(nil), t.Gres...)
		node.Features = append([]string(nil), t.Features...)
		nodes[i] = node
	}
	return nodes, nil
}

// sortedKeys returns kv's keys sorted, so that the first error found in a
// line does not depend on map order.
func sortedKeys(kv map[string]pair) []string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// parseGres reads "gpu:2", "gpu:tesla:2", "gpu" (one), "gpu:2,mps:100" and
// ignores a socket binding such as "gpu:2(S:0-1)".
func parseGres(s string) ([]Gres, error) {
	if s == "" || s == "(null)" {
		return nil, nil
	}
	var out []Gres
	depth, start := 0, 0
	var items []string
	for i := 0; i <= len(s); i++ {
		if i == len(s) || (s[i] == ',' && depth == 0) {
			items = append(items, s[start:i])
			start = i + 1
			continue
		}
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
	}
	for _, it := range items {
		if i := strings.IndexByte(it, '('); i >= 0 {
			if !strings.HasSuffix(it, ")") {
				return nil, fmt.Errorf("bad socket binding in %q", it)
			}
			it = it[:i]
		}
		f := strings.Split(it, ":")
		g := Gres{Name: f[0], Count: 1}
		if g.Name == "" || len(f) > 3 {
			return nil, fmt.Errorf("expected name[:type][:count], found %q", it)
		}
		countStr := ""
		switch len(f) {
		case 2:
			if _, err := strconv.Atoi(f[1]); err == nil {
				countStr = f[1]
			} else {
				g.Type = f[1]
			}
		case 3:
			g.Type, countStr = f[1], f[2]
		}
		if countStr != "" {
			c, err := nonNegInt(countStr)
			if err != nil {
				return nil, fmt.Errorf("bad count %q in %q", countStr, it)
			}
			g.Count = c
		}
		if g.Type == "" && len(f) == 3 {
			return nil, fmt.Errorf("empty type in %q", it)
		}
		out = append(out, g)
	}
	return out, nil
}

// Partition line keys hpc accepts but does not use yet.
var ignoredPartKeys = map[string]bool{
	"allowgroups": true, "allocnodes": true,
	"alternate": true, "cpubind": true, "defcpupergpu": true, "defmempercpu": true,
	"defmempergpu": true, "defmempernode": true, "denyaccounts": true, "denyqos": true,
	"disablerootjobs": true, "exclusiveuser": true, "gracetime": true, "hidden": true,
	"lln": true, "maxcpuspernode": true, "maxcpuspersocket": true, "maxmempercpu": true,
	"maxmempernode": true, "minnodes": true, "overtimelimit": true,
	"preemptmode": true, "qos": true,
	"reqresv": true, "rootonly": true, "selecttypeparameters": true,
	"tresbillingweights": true, "suspendtime": true, "suspendtimeout": true,
	"resumetimeout": true, "powerdownonidle": true,
}

func (p *parser) partitionLine(n int, pairs []pair) error {
	kv, err := p.collect(n, pairs)
	if err != nil {
		return err
	}
	name := kv["partitionname"].value
	if strings.EqualFold(name, "DEFAULT") {
		if _, err := p.buildPartition(n, kv); err != nil {
			return err
		}
		for k, v := range kv {
			if k != "partitionname" {
				p.partDefaults[k] = v
			}
		}
		return nil
	}
	if name == "" || strings.ContainsAny(name, ",[]") {
		return p.errf(n, "invalid PartitionName=%q", name)
	}
	for i, q := range p.cfg.Partitions {
		if q.Name == name {
			return p.errf(n, "partition %s is defined twice (first on line %d)", name, p.partLines[i])
		}
	}
	merged := make(map[string]pair, len(p.partDefaults)+len(kv))
	for k, v := range p.partDefaults {
		merged[k] = v
	}
	for k, v := range kv {
		merged[k] = v
	}
	part, err := p.buildPartition(n, merged)
	if err != nil {
		return err
	}
	all := false
	if v, ok := merged["nodes"]; ok && strings.EqualFold(v.value, "ALL") {
		all = true
	}
	p.cfg.Partitions = append(p.cfg.Partitions, *part)
	p.partLines = append(p.partLines, n)
	p.partAll = append(p.partAll, all)
	return nil
}

// newPartition is a partition of that name with slurm.conf's defaults.
func newPartition(name string) *Partition {
	return &Partition{Name: name, MaxTimeMin: Unlimited, DefaultTimeMin: Unlimited, MaxNodes: -1, State: "UP",
		PriorityTier: 1, PriorityJobFactor: 1, OverSubscribe: "NO"}
}

func (p *parser) buildPartition(n int, kv map[string]pair) (*Partition, error) {
	part := newPartition(kv["partitionname"].value)
	if err := p.setPartitionKeys(n, part, kv); err != nil {
		return nil, err
	}
	return part, nil
}

// setPartitionKeys sets the partition line's keys of kv on part, replacing
// (never writing into) its slices. Nodes=ALL is left for the caller.
func (p *parser) setPartitionKeys(n int, part *Partition, kv map[string]pair) error {
	for _, k := range sortedKeys(kv) {
		v := kv[k]
		switch k {
		case "partitionname":
		case "nodes":
			if strings.EqualFold(v.value, "ALL") {
				continue // filled in when every node is known
			}
			part.Nodes = nil
			names, err := hostlist.Expand(v.value)
			if err != nil {
				return p.errf(n, "Nodes: %v", err)
			}
			seen := make(map[string]bool, len(names))
			for _, nm := range names {
				if !seen[nm] {
					seen[nm] = true
					part.Nodes = append(part.Nodes, nm)
				}
			}
		case "default":
			switch strings.ToUpper(v.value) {
			case "YES":
				part.Default = true
			case "NO":
				part.Default = false
			default:
				return p.errf(n, "invalid Default=%s: expected YES or NO", v.value)
			}
		case "maxtime", "defaulttime":
			var m int64 = Unlimited
			var err error
			if !(k == "defaulttime" && strings.EqualFold(v.value, "NONE")) {
				m, err = ParseTime(v.value)
			}
			if err != nil || m < Unlimited {
				return p.errf(n, "invalid %s=%s: expected minutes, [days-]hours:minutes:seconds or UNLIMITED", v.key, v.value)
			}
			if k == "maxtime" {
				part.MaxTimeMin = m
			} else {
				part.DefaultTimeMin = m
			}
		case "maxnodes":
			switch strings.ToUpper(v.value) {
			case "UNLIMITED", "INFINITE":
				part.MaxNodes = -1
			default:
				m, err := nonNegInt(v.value)
				if err != nil {
					return p.errf(n, "invalid MaxNodes=%s: expected a number or UNLIMITED", v.value)
				}
				part.MaxNodes = m
			}
		case "prioritytier", "priorityjobfactor":
			m, err := nonNegInt(v.value)
			if err != nil {
				return p.errf(n, "invalid %s=%s: expected a number", v.key, v.value)
			}
			if k == "prioritytier" {
				part.PriorityTier = m
			} else {
				part.PriorityJobFactor = m
			}
		case "oversubscribe", "shared":
			switch s, _, _ := strings.Cut(strings.ToUpper(v.value), ":"); s {
			case "NO":
				part.OverSubscribe = "NO"
			case "EXCLUSIVE":
				part.OverSubscribe = "EXCLUSIVE"
			default:
				return p.errf(n, "invalid OverSubscribe=%s: hpc supports NO and EXCLUSIVE", v.value)
			}
		case "allowaccounts", "allowqos":
			var list []string
			if !strings.EqualFold(v.value, "ALL") {
				for _, a := range strings.Split(v.value, ",") {
					if a = strings.TrimSpace(a); a != "" {
						list = append(list, a)
					}
				}
			}
			if k == "allowaccounts" {
				part.AllowAccounts = list
			} else {
				part.AllowQos = list
			}
		case "state":
			switch s := strings.ToUpper(v.value); s {
			case "UP", "DOWN", "DRAIN", "INACTIVE":
				part.State = s
			default:
				return p.errf(n, "invalid State=%s: expected UP, DOWN, DRAIN or INACTIVE", v.value)
			}
		default:
			if !ignoredPartKeys[k] {
				return p.errf(n, "unknown PartitionName option %s", v.key)
			}
		}
	}
	if part.DefaultTimeMin != Unlimited && part.MaxTimeMin != Unlimited && part.DefaultTimeMin > part.MaxTimeMin {
		return p.errf(n, "DefaultTime=%s exceeds MaxTime=%s", FormatTimeLong(part.DefaultTimeMin), FormatTimeLong(part.MaxTimeMin))
	}
	return nil
}

// finish checks the whole file and fills in what depends on all of it.
func (p *parser) finish() error {
	c := p.cfg
	if len(c.Nodes) == 0 {
		return p.errf(0, "no nodes defined: add a line such as NodeName=node1 CPUs=2 RealMemory=4000")
	}
	if len(c.ControlHosts) == 0 {
		return p.errf(0, "no SlurmctldHost defined: name the controller nodes, e.g. SlurmctldHost=node1")
	}
	if c.ClusterName == "" {
		c.ClusterName = DefaultClusterName
	}
	c.nodeIndex = make(map[string]int, len(c.Nodes))
	all := make([]string, len(c.Nodes))
	for i, nd := range c.Nodes {
		c.nodeIndex[nd.Name] = i
		all[i] = nd.Name
	}
	defaultAt := -1
	for i := range c.Partitions {
		part := &c.Partitions[i]
		if p.partAll[i] {
			part.Nodes = append([]string(nil), all...)
		}
		for _, nm := range part.Nodes {
			if _, ok := c.nodeIndex[nm]; !ok {
				return p.errf(p.partLines[i], "unknown node %s in partition %s", nm, part.Name)
			}
		}
		if part.Default {
			if defaultAt >= 0 {
				return p.errf(p.partLines[i], "partition %s has Default=YES but partition %s (line %d) already has: only one partition can be the default",
					part.Name, c.Partitions[defaultAt].Name, p.partLines[defaultAt])
			}
			defaultAt = i
		}
	}
	if defaultAt < 0 && len(c.Partitions) > 0 {
		c.Partitions[0].Default = true
	}
	for i := range c.SubmitHosts {
		h := &c.SubmitHosts[i]
		if c.Node(h.Name) != nil || c.IsController(h.Name) {
			return p.errf(p.submitLines[i], "HpcSubmitHost %s is also a node or a controller: a submit host runs neither jobs nor a controller", h.Name)
		}
		if h.Addr == "" {
			h.Addr = h.Name
		}
	}
	for i := range c.ControlHosts {
		h := &c.ControlHosts[i]
		if h.Addr == "" {
			h.Addr = h.Name
			if nd := c.Node(h.Name); nd != nil {
				h.Addr = nd.Addr
			}
		}
	}
	ports := []struct {
		key  string
		port int
	}{{"HpcApiPort", c.APIPort}, {"HpcRaftPort", c.RaftPort}, {"HpcGossipPort", c.GossipPort}}
	for i := range ports {
		for j := i + 1; j < len(ports); j++ {
			if ports[i].port == ports[j].port {
				line := max(p.hpcPortLine[strings.ToLower(ports[i].key)], p.hpcPortLine[strings.ToLower(ports[j].key)])
				return p.errf(line, "%s and %s are both %d: each needs its own port", ports[i].key, ports[j].key, ports[i].port)
			}
		}
	}
	return nil
}
