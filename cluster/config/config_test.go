package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func mustParse(t *testing.T, text string) *Config {
	t.Helper()
	c, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, text)
	}
	return c
}

const minimal = "SlurmctldHost=n1\nNodeName=n1\n"

func TestParseMinimalDefaults(t *testing.T) {
	c := mustParse(t, minimal)
	if c.ClusterName != "cluster" || c.KillWait != 30 || c.EnforcePartLimits != "ALL" ||
		c.APIPort != 7817 || c.RaftPort != 7818 || c.GossipPort != 7819 || c.DefMemPerCPU != 0 {
		t.Errorf("defaults: %+v", c)
	}
	want := Node{Name: "n1", Addr: "n1", Hostname: "n1", CPUs: 1, Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1, RealMemoryMB: 1, Weight: 1}
	if len(c.Nodes) != 1 || !reflect.DeepEqual(c.Nodes[0], want) {
		t.Errorf("node = %+v, want %+v", c.Nodes, want)
	}
	if !reflect.DeepEqual(c.ControlHosts, []ControlHost{{Name: "n1", Addr: "n1"}}) {
		t.Errorf("control hosts = %+v", c.ControlHosts)
	}
	if len(c.Partitions) != 0 || c.DefaultPartition() != nil {
		t.Errorf("partitions = %+v", c.Partitions)
	}
	if len(c.Raw) != 0 {
		t.Errorf("raw = %v", c.Raw)
	}
}

func TestParseReferenceExample(t *testing.T) {
	c, err := Load("testdata/slurm.conf.example")
	if err != nil {
		t.Fatal(err)
	}
	if c.ClusterName != "lab" || c.DefMemPerCPU != 1000 || c.KillWait != 30 || c.EnforcePartLimits != "ALL" {
		t.Errorf("top level: %+v", c)
	}
	if !reflect.DeepEqual(c.ControlHosts, []ControlHost{{Name: "vm", Addr: "127.0.0.1"}}) {
		t.Errorf("control hosts = %+v", c.ControlHosts)
	}
	if len(c.Nodes) != 4 {
		t.Fatalf("nodes = %+v", c.Nodes)
	}
	n3 := c.Node("node3")
	want := Node{Name: "node3", Addr: "127.0.0.1", Hostname: "vm", CPUs: 2, Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1,
		RealMemoryMB: 4000, Gres: []Gres{{Name: "gpu", Count: 2}}, Weight: 1}
	if n3 == nil || !reflect.DeepEqual(*n3, want) {
		t.Errorf("node3 = %+v, want %+v", n3, want)
	}
	if g := c.Node("node1").Gres; g != nil {
		t.Errorf("node1 gres = %v", g)
	}
	debug := c.Partition("debug")
	if debug == nil || !debug.Default || debug.MaxTimeMin != 1440 || debug.State != "UP" || debug.MaxNodes != -1 ||
		debug.DefaultTimeMin != -1 || !reflect.DeepEqual(debug.Nodes, []string{"node1", "node2", "node3", "node4"}) {
		t.Errorf("debug = %+v", debug)
	}
	gpu := c.Partition("gpu")
	if gpu == nil || gpu.Default || !reflect.DeepEqual(gpu.Nodes, []string{"node3", "node4"}) {
		t.Errorf("gpu = %+v", gpu)
	}
	if got := c.DefaultPartition(); got != debug {
		t.Errorf("DefaultPartition = %+v", got)
	}
	if got := c.PartitionsOf("node3"); !reflect.DeepEqual(got, []string{"debug", "gpu"}) {
		t.Errorf("PartitionsOf(node3) = %v", got)
	}
	if got := c.PartitionsOf("node1"); !reflect.DeepEqual(got, []string{"debug"}) {
		t.Errorf("PartitionsOf(node1) = %v", got)
	}
	if c.PartitionsOf("nosuch") != nil || c.Node("nosuch") != nil || c.Partition("nosuch") != nil {
		t.Error("unknown names must give nil")
	}
	if !c.IsController("vm") || c.IsController("node1") {
		t.Error("IsController")
	}
	// Keys hpc does not interpret are kept as written.
	for k, v := range map[string]string{"SlurmctldPort": "6817-6818", "GresTypes": "gpu", "SchedulerParameters": "batch_sched_delay=0,max_rpc_cnt=150,default_queue_depth=1000,bf_continue,bf_interval=10,bf_max_job_test=1000", "AccountingStorageTRES": "gres/gpu"} {
		if c.Raw[k] != v {
			t.Errorf("Raw[%s] = %q, want %q", k, c.Raw[k], v)
		}
	}
	if _, ok := c.Raw["ClusterName"]; ok {
		t.Error("interpreted keys must not be in Raw")
	}
}

func TestParseSyntax(t *testing.T) {
	text := `# a comment
clustername=MyLab   # trailing comment, lowercased as Slurm does
SLURMCTLDHOST=a(10.0.0.1)
slurmctldhost=b
SlurmctldHost=c(10.0.0.9)
nodename=a,b \
   CPUs=4 \
   RealMemory=8000
NodeName=c NodeAddr=10.0.0.3 Features="big,fast"
Comment=with\#hash
Quoted="two words"
KillWait=60 DefMemPerCPU=2G
HpcApiPort=9000 HpcRaftPort=9001 HpcGossipPort=9002
enforcepartlimits=no

PartitionName=p Nodes=a,b,c
`
	c := mustParse(t, text)
	if c.ClusterName != "mylab" || c.KillWait != 60 || c.DefMemPerCPU != 2048 || c.EnforcePartLimits != "NO" ||
		c.APIPort != 9000 || c.RaftPort != 9001 || c.GossipPort != 9002 {
		t.Errorf("top level: %+v", c)
	}
	if c.Raw["Comment"] != "with#hash" || c.Raw["Quoted"] != "two words" {
		t.Errorf("raw = %q", c.Raw)
	}
	wantCH := []ControlHost{{"a", "10.0.0.1"}, {"b", "b"}, {"c", "10.0.0.9"}}
	if !reflect.DeepEqual(c.ControlHosts, wantCH) {
		t.Errorf("control hosts = %+v", c.ControlHosts)
	}
	a := c.Node("a")
	if a == nil || a.CPUs != 4 || a.Sockets != 4 || a.CoresPerSocket != 1 || a.RealMemoryMB != 8000 {
		t.Errorf("a = %+v", a)
	}
	if cn := c.Node("c"); cn == nil || !reflect.DeepEqual(cn.Features, []string{"big", "fast"}) || cn.Addr != "10.0.0.3" || cn.Hostname != "c" {
		t.Errorf("c = %+v", cn)
	}
	if p := c.Partition("p"); p == nil || !p.Default {
		t.Errorf("the only partition must become the default: %+v", p)
	}
	// A controller that is a node without an address takes the node's address.
	c = mustParse(t, "SlurmctldHost=n1\nNodeName=n1 NodeAddr=127.0.1.1\n")
	if c.ControlHosts[0].Addr != "127.0.1.1" {
		t.Errorf("controller addr = %q", c.ControlHosts[0].Addr)
	}
}

func TestParseNodes(t *testing.T) {
	text := `SlurmctldHost=n1
NodeName=DEFAULT Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=64000
NodeName=n[1-3] NodeAddr=10.0.0.[1-3] Weight=5
NodeName=DEFAULT RealMemory=128000 Gres=gpu:a100:4,mps:100
NodeName=g[01-02] NodeHostname=host[01-02] Features=gpu
NodeName=shared[1-2] NodeAddr=10.9.9.9 CPUs=16 Gres=gpu
NodeName=cores Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 CPUs=4 Gres=gpu:2(S:0-1),gpu:t4:1 Port=17001 State=UNKNOWN
NodeName=boards Boards=2 SocketsPerBoard=2 CoresPerSocket=1 ThreadsPerCore=1 Gres=(null) Features=(null)
`
	c := mustParse(t, text)
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.Name)
	}
	if want := []string{"n1", "n2", "n3", "g01", "g02", "shared1", "shared2", "cores", "boards"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("names = %v, want %v", names, want)
	}
	n2 := c.Node("n2")
	if n2.Addr != "10.0.0.2" || n2.Hostname != "n2" || n2.CPUs != 16 || n2.RealMemoryMB != 64000 || n2.Weight != 5 || n2.Gres != nil {
		t.Errorf("n2 = %+v", n2)
	}
	g2 := c.Node("g02")
	wantG := []Gres{{Name: "gpu", Type: "a100", Count: 4}, {Name: "mps", Count: 100}}
	if g2.Hostname != "host02" || g2.Addr != "host02" || g2.RealMemoryMB != 128000 || g2.Weight != 1 ||
		!reflect.DeepEqual(g2.Gres, wantG) || !reflect.DeepEqual(g2.Features, []string{"gpu"}) {
		t.Errorf("g02 = %+v", g2)
	}
	if g2.GresCount("gpu") != 4 || g2.GresCount("mps") != 100 || g2.GresCount("fpga") != 0 {
		t.Errorf("GresCount: %+v", g2.Gres)
	}
	if got := FormatGres(g2.Gres); got != "gpu:a100:4,mps:100" {
		t.Errorf("FormatGres = %q", got)
	}
	// Nodes must not share slices.
	c.Node("g01").Gres[0].Count = 99
	if g2.Gres[0].Count != 4 {
		t.Error("nodes of one line share their Gres slice")
	}
	s2 := c.Node("shared2")
	if s2.Addr != "10.9.9.9" || s2.CPUs != 16 || s2.Sockets != 2 || !reflect.DeepEqual(s2.Gres, []Gres{{Name: "gpu", Count: 1}}) {
		t.Errorf("shared2 = %+v", s2)
	}
	cores := c.Node("cores")
	if cores.CPUs != 4 || !reflect.DeepEqual(cores.Gres, []Gres{{Name: "gpu", Count: 2}, {Name: "gpu", Type: "t4", Count: 1}}) || cores.GresCount("gpu") != 3 {
		t.Errorf("cores = %+v", cores)
	}
	b := c.Node("boards")
	if b.Sockets != 4 || b.CPUs != 4 || b.Gres != nil || b.Features != nil {
		t.Errorf("boards = %+v", b)
	}
}

func TestParsePartitions(t *testing.T) {
	text := `SlurmctldHost=n1
NodeName=n[1-4]
PartitionName=DEFAULT MaxTime=2:00:00 State=UP
PartitionName=a Nodes=n[1-2],n1
PartitionName=b Nodes=ALL Default=yes MaxTime=UNLIMITED DefaultTime=30 MaxNodes=2 State=drain OverSubscribe=NO
PartitionName=c Nodes=n4 MaxTime=1-00:00:00 DefaultTime=NONE MaxNodes=UNLIMITED State=INACTIVE
PartitionName=d
`
	c := mustParse(t, text)
	a, b, cc, d := c.Partition("a"), c.Partition("b"), c.Partition("c"), c.Partition("d")
	if !reflect.DeepEqual(a.Nodes, []string{"n1", "n2"}) || a.MaxTimeMin != 120 || a.Default || a.State != "UP" {
		t.Errorf("a = %+v", a)
	}
	if !reflect.DeepEqual(b.Nodes, []string{"n1", "n2", "n3", "n4"}) || b.MaxTimeMin != Unlimited || !b.Default ||
		b.DefaultTimeMin != 30 || b.MaxNodes != 2 || b.State != "DRAIN" {
		t.Errorf("b = %+v", b)
	}
	if cc.MaxTimeMin != 1440 || cc.DefaultTimeMin != -1 || cc.MaxNodes != -1 || cc.State != "INACTIVE" {
		t.Errorf("c = %+v", cc)
	}
	if d.Nodes != nil || d.MaxTimeMin != 120 {
		t.Errorf("d = %+v", d)
	}
	if c.DefaultPartition() != b {
		t.Errorf("default = %+v", c.DefaultPartition())
	}
	if got := c.PartitionsOf("n4"); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("PartitionsOf(n4) = %v", got)
	}
	// No Default=YES: the first partition is the default.
	c = mustParse(t, minimal+"PartitionName=x Nodes=n1\nPartitionName=y Nodes=n1\n")
	if !c.Partitions[0].Default || c.Partitions[1].Default || c.DefaultPartition().Name != "x" {
		t.Errorf("partitions = %+v", c.Partitions)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		want       string
	}{
		{"no nodes", "SlurmctldHost=a\n", 0, "no nodes defined"},
		{"no controller", "NodeName=a\n", 0, "no SlurmctldHost"},
		{"unknown node in partition", minimal + "\n\nPartitionName=debug Nodes=n[1-2]\n", 5, "unknown node n2 in partition debug"},
		{"duplicate node", minimal + "NodeName=n[0-1]\n", 3, "node n1 is defined twice (first on line 2)"},
		{"duplicate in one line", "SlurmctldHost=n1\nNodeName=n[1,1]\n", 2, "node n1 is defined twice"},
		{"two defaults", minimal + "PartitionName=a Default=YES\nPartitionName=b Default=YES\n", 4, "only one partition can be the default"},
		{"duplicate partition", minimal + "PartitionName=a\nPartitionName=a\n", 4, "partition a is defined twice"},
		{"bad maxtime", minimal + "PartitionName=a MaxTime=abc\n", 3, "invalid MaxTime=abc"},
		{"negative maxtime", minimal + "PartitionName=a MaxTime=-5\n", 3, "invalid MaxTime=-5"},
		{"bad defaulttime", minimal + "PartitionName=a DefaultTime=x\n", 3, "invalid DefaultTime=x"},
		{"default over max", minimal + "PartitionName=a MaxTime=10 DefaultTime=20\n", 3, "DefaultTime=00:20:00 exceeds MaxTime=00:10:00"},
		{"bad state", minimal + "PartitionName=a State=SLEEPY\n", 3, "invalid State=SLEEPY"},
		{"bad default", minimal + "PartitionName=a Default=maybe\n", 3, "invalid Default=maybe"},
		{"bad maxnodes", minimal + "PartitionName=a MaxNodes=-3\n", 3, "invalid MaxNodes=-3"},
		{"unknown partition key", minimal + "PartitionName=a Colour=red\n", 3, "unknown PartitionName option Colour"},
		{"unknown node key", "SlurmctldHost=n1\nNodeName=n1 Colour=red\n", 2, "unknown NodeName option Colour"},
		{"bad cpus", "SlurmctldHost=n1\nNodeName=n1 CPUs=zero\n", 2, "invalid CPUs=zero"},
		{"zero cores", "SlurmctldHost=n1\nNodeName=n1 CoresPerSocket=0\n", 2, "invalid CoresPerSocket=0"},
		{"bad memory", "SlurmctldHost=n1\nNodeName=n1 RealMemory=4G\n", 2, "invalid RealMemory=4G"},
		{"cpus mismatch", "SlurmctldHost=n1\nNodeName=n1 CPUs=3 Sockets=1 CoresPerSocket=2\n", 2, "CPUs=3 does not match"},
		{"bad gres", "SlurmctldHost=n1\nNodeName=n1 Gres=gpu:x:y\n", 2, "invalid Gres=gpu:x:y"},
		{"bad node hostlist", "SlurmctldHost=n1\nNodeName=n[1-\n", 2, "unbalanced brackets"},
		{"addr count", "SlurmctldHost=n1\nNodeName=n[1-3] NodeAddr=a[1-2]\n", 2, "names 2 hosts for 3 nodes"},
		{"bad default line", "SlurmctldHost=n1\nNodeName=DEFAULT CPUs=x\nNodeName=n1\n", 2, "invalid CPUs=x"},
		{"twice on a line", "SlurmctldHost=n1\nNodeName=n1 CPUs=1 cpus=2\n", 2, "given twice"},
		{"include", minimal + "Include /etc/slurm/nodes.conf\n", 3, "Include is not supported"},
		{"nodeset", minimal + "NodeSet=x Nodes=n1\n", 3, "NodeSet lines are not supported"},
		{"not key=value", minimal + "ClusterName lab\n", 3, `expected Key=Value, found "ClusterName"`},
		{"empty key", minimal + "=x\n", 3, "expected Key=Value"},
		{"unterminated quote", minimal + "Comment=\"x\n", 3, "unterminated double quote"},
		{"bad killwait", minimal + "KillWait=soon\n", 3, "invalid KillWait=soon"},
		{"bad defmem", minimal + "DefMemPerCPU=lots\n", 3, "invalid DefMemPerCPU=lots"},
		{"bad enforce", minimal + "EnforcePartLimits=SOMETIMES\n", 3, "invalid EnforcePartLimits"},
		{"bad port", minimal + "HpcApiPort=70000\n", 3, "invalid HpcApiPort=70000"},
		{"port clash", minimal + "HpcRaftPort=7817\n", 3, "HpcApiPort and HpcRaftPort are both 7817"},
		{"bad ctld", "SlurmctldHost=a(\nNodeName=a\n", 1, "invalid SlurmctldHost=a("},
		{"empty ctld addr", "SlurmctldHost=a()\nNodeName=a\n", 1, "empty address"},
		{"ctld twice", "SlurmctldHost=a\nSlurmctldHost=a(1.2.3.4)\nNodeName=a\n", 2, "SlurmctldHost a is listed twice"},
		{"nodename mid-line", minimal + "ClusterName=x NodeName=y\n", 3, "NodeName must start its line"},
		{"continued error line", minimal + "PartitionName=a \\\n Nodes=zz\n", 3, "unknown node zz"},
		{"bad partition name", minimal + "PartitionName=a,b\n", 3, "invalid PartitionName"},
		{"too many nodes", "SlurmctldHost=a\nNodeName=a[1-65536]\nNodeName=b\n", 3, "more than 65536 nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(tt.text))
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			if pe.Line != tt.line || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q (line %d), want line %d and %q", err, pe.Line, tt.line, tt.want)
			}
			prefix := "slurm.conf line "
			if tt.line == 0 {
				prefix = "slurm.conf: "
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q should start with %q", err, prefix)
			}
		})
	}
}

func TestMethodsOnBuiltConfig(t *testing.T) {
	// A Config built in code (not by Parse) works too.
	c := &Config{
		Nodes:      []Node{{Name: "a"}, {Name: "b"}},
		Partitions: []Partition{{Name: "p", Nodes: []string{"b"}}, {Name: "q", Nodes: []string{"a", "b"}}},
	}
	if c.Node("b") != &c.Nodes[1] || c.Node("c") != nil {
		t.Error("Node")
	}
	if c.DefaultPartition() != &c.Partitions[0] {
		t.Error("without Default=YES the first partition is the default")
	}
	if got := c.PartitionsOf("b"); !reflect.DeepEqual(got, []string{"p", "q"}) {
		t.Errorf("PartitionsOf = %v", got)
	}
	// A stale index (nodes replaced after Parse) falls back to a search.
	c = mustParse(t, "SlurmctldHost=a\nNodeName=a,b\n")
	c.Nodes = []Node{{Name: "b"}}
	if c.Node("b") != &c.Nodes[0] || c.Node("a") != nil {
		t.Error("stale index")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lab.conf")
	if err := os.WriteFile(path, []byte(minimal+"PartitionName=p Nodes=nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || err.Error() != "lab.conf line 3: unknown node nope in partition p" {
		t.Errorf("Load error = %v", err)
	}
	_, err = Load(filepath.Join(dir, "missing.conf"))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestLab(t *testing.T) {
	for n := 1; n <= MaxLabNodes; n++ {
		text, err := Lab(n)
		if err != nil {
			t.Fatalf("Lab(%d): %v", n, err)
		}
		c, err := Parse(strings.NewReader(text))
		if err != nil {
			t.Fatalf("Lab(%d) does not parse back: %v\n%s", n, err, text)
		}
		if len(c.Nodes) != n || c.ClusterName != "lab" || c.DefMemPerCPU != 1000 {
			t.Fatalf("Lab(%d): %d nodes, cluster %q", n, len(c.Nodes), c.ClusterName)
		}
		for i, nd := range c.Nodes {
			want := Node{Name: "node" + strconv.Itoa(i+1), Addr: "127.0.1." + strconv.Itoa(i+1), Hostname: "node" + strconv.Itoa(i+1),
				CPUs: 2, Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1, RealMemoryMB: 4000, Weight: 1}
			if i >= n/2 {
				want.Gres = []Gres{{Name: "gpu", Count: 2}}
			}
			if !reflect.DeepEqual(nd, want) {
				t.Fatalf("Lab(%d) node %d = %+v, want %+v", n, i, nd, want)
			}
		}
		if len(c.ControlHosts) != min(n, 3) || c.ControlHosts[0] != (ControlHost{"node1", "127.0.1.1"}) {
			t.Fatalf("Lab(%d) controllers = %+v", n, c.ControlHosts)
		}
		if len(c.Partitions) != 2 || c.DefaultPartition().Name != "debug" || len(c.Partition("debug").Nodes) != n ||
			c.Partition("debug").MaxTimeMin != 1440 || c.Partition("gpu").MaxTimeMin != 1440 || c.Partition("gpu").Default {
			t.Fatalf("Lab(%d) partitions = %+v", n, c.Partitions)
		}
		if got := len(c.Partition("gpu").Nodes); got != (n+1)/2 {
			t.Fatalf("Lab(%d) has %d GPU nodes", n, got)
		}
	}
	for n, gpu := range map[int]string{4: "node[3-4]", 3: "node[2-3]", 1: "node1", 2: "node2"} {
		text, _ := Lab(n)
		if !strings.Contains(text, "\nPartitionName=gpu Nodes="+gpu+" ") || !strings.Contains(text, "\nNodeName="+gpu+" ") {
			t.Errorf("Lab(%d): GPU nodes should be %s:\n%s", n, gpu, text)
		}
	}
	text, _ := Lab(4)
	for _, want := range []string{"SlurmctldHost=node3(127.0.1.3)\n", "NodeName=node[1-2] NodeAddr=127.0.1.[1-2]\n",
		"PartitionName=debug Nodes=node[1-4] Default=YES MaxTime=1-00:00:00 State=UP\n", "\n# "} {
		if !strings.Contains(text, want) {
			t.Errorf("Lab(4) lacks %q:\n%s", want, text)
		}
	}
	for _, n := range []int{0, -1, 251} {
		if _, err := Lab(n); err == nil {
			t.Errorf("Lab(%d) should fail", n)
		}
	}
}

func FuzzParse(f *testing.F) {
	lab, _ := Lab(4)
	f.Add(lab)
	f.Add(minimal)
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse(strings.NewReader(text))
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			if !strings.HasPrefix(err.Error(), "slurm.conf") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(c.Nodes) == 0 || len(c.ControlHosts) == 0 {
			t.Fatalf("accepted a config without nodes or controllers: %+v", c)
		}
		seen := map[string]bool{}
		for i := range c.Nodes {
			n := &c.Nodes[i]
			if seen[n.Name] || c.Node(n.Name) != n {
				t.Fatalf("node %q duplicated or not found", n.Name)
			}
			seen[n.Name] = true
			if n.CPUs < 1 || n.Addr == "" || n.Hostname == "" {
				t.Fatalf("bad node %+v", n)
			}
		}
		defaults := 0
		for _, p := range c.Partitions {
			if p.Default {
				defaults++
			}
			for _, n := range p.Nodes {
				if !seen[n] {
					t.Fatalf("partition %s has unknown node %s", p.Name, n)
				}
			}
			if p.MaxTimeMin < Unlimited || p.DefaultTimeMin < Unlimited {
				t.Fatalf("partition %+v has a negative time", p)
			}
		}
		if len(c.Partitions) > 0 && defaults != 1 {
			t.Fatalf("%d default partitions", defaults)
		}
	})
}

func TestStorage(t *testing.T) {
	c, err := Parse(strings.NewReader(minimal + "HpcScratchDir=/fast/scratch\nHpcProjectDir=shared/projects\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Storage("/var/lib/hpc")
	want := Storage{Home: "/var/lib/hpc/home", Scratch: "/fast/scratch", Project: "/var/lib/hpc/shared/projects"}
	if got != want {
		t.Errorf("Storage = %+v, want %+v", got, want)
	}
}

// A lab with dedicated controllers: ctl1..ctlN on the addresses after the
// nodes', SlurmctldHost lines and no NodeName line, so the partitions and
// the node list have the compute nodes only.
func TestLabControllers(t *testing.T) {
	text, err := LabWith(LabOptions{Nodes: 4, Controllers: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("does not parse back: %v\n%s", err, text)
	}
	want := []ControlHost{{"ctl1", "127.0.1.5"}, {"ctl2", "127.0.1.6"}, {"ctl3", "127.0.1.7"}}
	if !reflect.DeepEqual(c.ControlHosts, want) || len(c.Nodes) != 4 {
		t.Fatalf("controllers %+v, %d nodes", c.ControlHosts, len(c.Nodes))
	}
	for _, h := range want {
		if !c.ControllerOnly(h.Name) || c.Node(h.Name) != nil || len(c.PartitionsOf(h.Name)) != 0 {
			t.Errorf("%s is not a controller-only host", h.Name)
		}
		if addr, ok := c.HostAddr(h.Name); !ok || addr != h.Addr {
			t.Errorf("HostAddr(%s) = %q %v", h.Name, addr, ok)
		}
	}
	if c.ControllerOnly("node1") || c.IsController("node1") {
		t.Error("node1 of a lab with dedicated controllers is a controller")
	}
	if addr, ok := c.HostAddr("node2"); !ok || addr != "127.0.1.2" {
		t.Errorf("HostAddr(node2) = %q %v", addr, ok)
	}
	if _, ok := c.HostAddr("nosuch"); ok {
		t.Error("HostAddr knows an unknown host")
	}
	// The default lab is unchanged.
	if a, _ := Lab(3); a != mustLab(t, LabOptions{Nodes: 3}) {
		t.Error("Lab(3) differs from LabWith with no dedicated controllers")
	}
	for _, o := range []LabOptions{{Nodes: 3, Controllers: 6}, {Nodes: 3, Controllers: -1}, {Nodes: 250, Controllers: 5}} {
		if _, err := LabWith(o); err == nil {
			t.Errorf("LabWith(%+v) accepted", o)
		}
	}
}

func mustLab(t *testing.T, o LabOptions) string {
	t.Helper()
	s, err := LabWith(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A lab with a login node: login1 on an HpcSubmitHost line after the
// nodes' addresses, a host of the config (HostAddr) that is neither a
// node nor a controller, on the addresses Net gives.
func TestLabSubmitHosts(t *testing.T) {
	text := mustLab(t, LabOptions{Nodes: 3, SubmitHosts: 1, Net: "10.70.0."})
	c, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("does not parse back: %v\n%s", err, text)
	}
	if want := []ControlHost{{"login1", "10.70.0.4"}}; !reflect.DeepEqual(c.SubmitHosts, want) {
		t.Fatalf("submit hosts %+v, want %+v", c.SubmitHosts, want)
	}
	if !c.IsSubmitHost("login1") || c.IsSubmitHost("node1") || c.Node("login1") != nil || c.IsController("login1") || c.ControllerOnly("login1") {
		t.Error("login1 is not a submit host only")
	}
	if addr, ok := c.HostAddr("login1"); !ok || addr != "10.70.0.4" {
		t.Errorf("HostAddr(login1) = %q %v", addr, ok)
	}
	if addr, _ := c.HostAddr("node3"); addr != "10.70.0.3" {
		t.Errorf("node3 on %s, want 10.70.0.3", addr)
	}
	if !strings.Contains(text, "hpc up --nodes 3 --netns") {
		t.Errorf("the header does not name --netns:\n%s", text)
	}
	// NeedsRestart sees a changed submit host.
	other := mustLab(t, LabOptions{Nodes: 3, SubmitHosts: 2, Net: "10.70.0."})
	c2, err := Parse(strings.NewReader(other))
	if err != nil {
		t.Fatal(err)
	}
	if !c2.NeedsRestart(c) {
		t.Error("a second login node needs no restart")
	}
	for _, o := range []LabOptions{{Nodes: 3, SubmitHosts: 6}, {Nodes: 250, Controllers: 3, SubmitHosts: 1, Net: "10.70.0."}} {
		if _, err := LabWith(o); err == nil {
			t.Errorf("LabWith(%+v) accepted", o)
		}
	}
}

func TestSubmitHostErrors(t *testing.T) {
	base := "SlurmctldHost=node1\nNodeName=node1 NodeAddr=127.0.0.1\n"
	for _, c := range []struct{ line, want string }{
		{"HpcSubmitHost=node1(127.0.0.2)", "also a node or a controller"},
		{"HpcSubmitHost=login1(127.0.0.2)\nHpcSubmitHost=login1(127.0.0.3)", "listed twice"},
		{"HpcSubmitHost=login1()", "empty address"},
		{"HpcSubmitHost=login[1-2]", "expected name or name(address)"},
	} {
		_, err := Parse(strings.NewReader(base + c.line + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.line, err, c.want)
		}
	}
	c, err := Parse(strings.NewReader(base + "HpcSubmitHost=login1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if addr, ok := c.HostAddr("login1"); !ok || addr != "login1" {
		t.Errorf("HostAddr(login1) = %q %v: without an address, the name", addr, ok)
	}
}
