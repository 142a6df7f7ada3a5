package export

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// Source is what an export is made of.
type Source struct {
	Config *config.Config
	// Records are the cluster's sacctmgr records as GET /api/acctmgr
	// answers them (associations resolved, in tree order); nil when the
	// export is made from a slurm.conf, where there are none beyond a new
	// database's.
	Records *api.AcctmgrState
	// From names where the export came from, for the files' headers.
	From string
	// Host is the short name of this machine: a cluster whose hosts are
	// all on loopback addresses (a lab) runs on one machine, and its
	// Slurm does too, so slurmctld's SlurmctldHost and the nodes'
	// NodeHostname are this name.
	Host string
}

// File is one file of an export.
type File struct {
	Name string
	Mode os.FileMode
	Text string
}

// OneHostPortBase is where the slurmd ports of a cluster on one machine
// start: node i of slurm.conf listens on OneHostPortBase+i, as Slurm's
// multiple-slurmd set-ups (`slurmd -N node1`) need one port per slurmd.
const OneHostPortBase = 17000

// layout is how the exported cluster's hosts are laid out.
type layout struct {
	oneHost bool           // every host on loopback: one machine, several slurmd
	host    string         // the machine's name when oneHost
	ports   map[string]int // node -> its slurmd's port when oneHost
	// fakeDevices: some GRES device file is outside /dev (the lab's
	// links to /dev/null), so the devices cgroup cannot be used.
	fakeDevices bool
}

func newLayout(src Source) layout {
	c := src.Config
	l := layout{oneHost: true, host: src.Host}
	for _, n := range c.Nodes {
		l.oneHost = l.oneHost && loopback(n.Addr)
	}
	for _, h := range c.ControlHosts {
		l.oneHost = l.oneHost && loopback(h.Addr)
	}
	if l.host == "" {
		l.host = "localhost"
	}
	if l.oneHost {
		l.ports = map[string]int{}
		for i, n := range c.Nodes {
			l.ports[n.Name] = OneHostPortBase + i + 1
		}
	}
	for _, d := range c.GresDevices {
		for _, f := range d.Files {
			if f != "" && !strings.HasPrefix(f, "/dev/") {
				l.fakeDevices = true
			}
		}
	}
	return l
}

// loopback reports whether addr is a loopback address (127.0.0.0/8, ::1)
// or localhost.
func loopback(addr string) bool {
	if strings.EqualFold(addr, "localhost") {
		return true
	}
	ip := net.ParseIP(addr)
	return ip != nil && ip.IsLoopback()
}

// Slurm makes the files of a Slurm 22.05 cluster of src's shape:
// slurm.conf, gres.conf (when nodes have GRES), topology.conf (when the
// cluster has one), cgroup.conf, sacctmgr.sh and README.
func Slurm(src Source) ([]File, error) {
	if src.Config == nil {
		return nil, fmt.Errorf("no configuration to export")
	}
	l := newLayout(src)
	files := []File{{Name: "slurm.conf", Mode: 0o644, Text: slurmConf(src, l)}}
	if g := gresConf(src, l); g != "" {
		files = append(files, File{Name: "gres.conf", Mode: 0o644, Text: g})
	}
	if len(src.Config.Topology) > 0 {
		files = append(files, File{Name: "topology.conf", Mode: 0o644, Text: topologyConf(src)})
	}
	files = append(files,
		File{Name: "cgroup.conf", Mode: 0o644, Text: cgroupConf(src, l)},
		File{Name: "sacctmgr.sh", Mode: 0o755, Text: sacctmgrScript(src)},
		File{Name: "README", Mode: 0o644, Text: readme(src, l)},
	)
	return files, nil
}

// Write writes the files into dir, which it makes if needed. Files of the
// same names there are replaced; nothing else in dir is touched.
func Write(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, []byte(f.Text), f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.Mode); err != nil { // an older file kept its mode
			return err
		}
	}
	return nil
}

// header is the comment every exported file starts with.
func header(src Source, what string) string {
	from := src.From
	if from == "" {
		from = "an hpc cluster"
	}
	return fmt.Sprintf("# %s for Slurm 22.05, exported by `hpc export slurm` from %s.\n", what, from)
}
