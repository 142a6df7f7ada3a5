// Command simnodes stands in for many compute nodes at once: for each
// node of a cluster's slurm.conf whose name starts with -prefix it joins
// the cluster's gossip (memberlist, encrypted with the cluster key, the
// daemons' settings) as that node, so that the leader sees it alive and
// UP as it sees a real node. The nodes run no agent: a job sent to one
// fails to launch. It measures what a large cluster costs the leader
// (scripts/bench/nodes.sh), not what a node does.
//
//	simnodes -config lab/slurm.conf -key lab/cluster.key -prefix sim
//
// It runs until SIGINT or SIGTERM, printing the members it sees every 10 s.
package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"

	"hpc/cluster/config"
	"hpc/cluster/peer"
)

// meta is what a node daemon says of itself in gossip (cluster's
// nodeMeta): its API address, no Raft, plain processes.
type meta struct {
	API   string `json:"api"`
	Ctl   bool   `json:"ctl"`
	Mode  string `json:"mode"`
	Plain bool   `json:"plain,omitempty"`
}

type delegate struct{ meta []byte }

func (d delegate) NodeMeta(int) []byte               { return d.meta }
func (delegate) NotifyMsg([]byte)                    {}
func (delegate) GetBroadcasts(int, int) [][]byte     { return nil }
func (delegate) LocalState(bool) []byte              { return nil }
func (delegate) MergeRemoteState(buf []byte, _ bool) {}
func (d delegate) String() string                    { return string(d.meta) }

func main() {
	confPath := flag.String("config", "", "the cluster's slurm.conf")
	keyPath := flag.String("key", "", "the cluster key file (hex)")
	prefix := flag.String("prefix", "sim", "simulate the nodes whose names start with this")
	flag.Parse()
	// The thousand members' messages are short-lived garbage; a larger
	// heap between collections leaves the machine's CPU to the daemons
	// being measured (the simulator's memory is not a figure).
	debug.SetGCPercent(400)
	cfg, err := config.LoadAll(*confPath)
	if err != nil {
		fail(err)
	}
	raw, err := os.ReadFile(*keyPath)
	if err != nil {
		fail(err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		fail(err)
	}
	var seeds []string // the real nodes: every simulated node joins them
	var lists []*memberlist.Memberlist
	for _, n := range cfg.Nodes {
		if !strings.HasPrefix(n.Name, *prefix) {
			seeds = append(seeds, net.JoinHostPort(n.Addr, strconv.Itoa(cfg.GossipPort)))
		}
	}
	for _, n := range cfg.Nodes {
		if !strings.HasPrefix(n.Name, *prefix) {
			continue
		}
		m, _ := json.Marshal(meta{API: net.JoinHostPort(n.Addr, strconv.Itoa(cfg.APIPort)), Mode: "plain processes (simulated node)", Plain: true})
		mc := memberlist.DefaultLocalConfig()
		mc.Name, mc.BindAddr, mc.AdvertiseAddr = n.Name, n.Addr, n.Addr
		mc.BindPort, mc.AdvertisePort = cfg.GossipPort, cfg.GossipPort
		mc.SecretKey = peer.GossipKey(key)
		mc.LogOutput = io.Discard
		// A node daemon's failure detector settings, but a simulated node
		// probes others ten times less often: the thousand of them share
		// this one process's CPU, and what is measured is the leader, which
		// probes and answers as a node daemon does.
		mc.ProbeInterval, mc.SuspicionMult, mc.SuspicionMaxTimeoutMult = 5*time.Second, 2, 3
		// As a node daemon, it compresses nothing (cluster's startGossip).
		// With compression on, compressing each message was 24% of this
		// process's CPU (perf record over 20 s, 1,000 members), garbage
		// collection 47% besides, and the members fell behind.
		mc.EnableCompression = false
		mc.Delegate = delegate{meta: m}
		l, err := memberlist.Create(mc)
		if err != nil {
			fail(fmt.Errorf("%s: %w", n.Name, err))
		}
		// As a node daemon joins: a few members at random (here among the
		// real nodes and the simulated ones already up), which hand over
		// the rest; every node dialling the same four would swamp them.
		joined := 0
		for try := 0; joined == 0 && try < 5; try++ {
			joined, _ = l.Join(pick(seeds, 3))
		}
		if joined == 0 {
			fmt.Fprintf(os.Stderr, "simnodes: %s joined no one\n", n.Name)
		}
		lists = append(lists, l)
		seeds = append(seeds, net.JoinHostPort(n.Addr, strconv.Itoa(cfg.GossipPort)))
	}
	fmt.Printf("simnodes: %d nodes joined\n", len(lists))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(10 * time.Second)
	for {
		select {
		case <-sig:
			for _, l := range lists {
				_ = l.Shutdown()
			}
			return
		case <-tick.C:
			if len(lists) > 0 {
				fmt.Printf("simnodes: members seen by the first: %d\n", lists[0].NumMembers())
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "simnodes:", err)
	os.Exit(1)
}

// pick is k of peers at random.
func pick(peers []string, k int) []string {
	out := make([]string, 0, k)
	for _, i := range rand.Perm(len(peers))[:min(k, len(peers))] {
		out = append(out, peers[i])
	}
	return out
}
