package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/cluster/peer"
)

// ctlLab is a cluster of real daemons, each under a Node (so that a role
// change can restart it), on loopback addresses 127.67.x.y of its own.
type ctlLab struct {
	t     testing.TB
	cfg   *config.Config
	dir   string
	nodes map[string]*Node
}

// newCtlLab parses conf, where "NET." stands for the lab's address prefix.
func newCtlLab(t testing.TB, conf string) *ctlLab {
	t.Helper()
	net := fmt.Sprintf("127.67.%d.", 1+rand.IntN(250))
	cfg, err := config.Parse(strings.NewReader(strings.ReplaceAll(conf, "NET.", net)))
	if err != nil {
		t.Fatal(err)
	}
	l := &ctlLab{t: t, cfg: cfg, dir: t.TempDir(), nodes: map[string]*Node{}}
	t.Cleanup(func() {
		for _, n := range l.nodes {
			n.Shutdown()
		}
	})
	return l
}

// twoNodeConf: one dedicated controller (ctl1) and two compute nodes.
const twoNodeConf = `ClusterName=t
SlurmctldHost=ctl1(NET.10)
HpcApiPort=26827
HpcRaftPort=26828
HpcGossipPort=26829
SlurmdTimeout=10
NodeName=node[1-2] NodeAddr=NET.[1-2] CPUs=2 RealMemory=1000
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=60
`

func (l *ctlLab) start(name string) *Node {
	l.t.Helper()
	n, err := StartNode(Options{
		Name: name, Config: l.cfg, Dir: filepath.Join(l.dir, name), Key: []byte("0123456789abcdef0123456789abcdef"),
		ForcePlain: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		l.t.Fatalf("start %s: %v", name, err)
	}
	l.nodes[name] = n
	return n
}

func (l *ctlLab) stop(name string) {
	l.nodes[name].Stop()
	delete(l.nodes, name)
}

func (l *ctlLab) client(name string) *api.Client {
	return api.NewClient(filepath.Join(l.dir, name, "hpc.sock"))
}

// waitUntil polls cond every 50 ms for up to timeout.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last seen: %s", what, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// status waits until name's daemon answers hpc status with a leader whose
// controllers all answer as wanted (role by name; "" is any role but down).
func (l *ctlLab) status(name string, want map[string]string) *api.Status {
	l.t.Helper()
	var st *api.Status
	waitUntil(l.t, 30*time.Second, name+"'s status to show "+fmt.Sprint(want), func() (bool, string) {
		var err error
		st, err = l.client(name).Status(context.Background())
		if err != nil || st.Leader == "" {
			return false, fmt.Sprint(err)
		}
		got := map[string]string{}
		for _, c := range st.Controllers {
			if !c.Voter {
				continue
			}
			got[c.Name] = c.Role
			if w, ok := want[c.Name]; ok && w == "" && c.Role != api.RoleDown {
				got[c.Name] = ""
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("%+v", st.Controllers)
	})
	return st
}

// change asks the leader, as root, for a controller change.
func (l *ctlLab) change(leader, action, node string) (int, string) {
	l.t.Helper()
	d := l.nodes[leader].Daemon()
	return askAs(l.t, d, rootID, d.handleControllerChange, http.MethodPost, "/api/controller", api.ControllerChange{Action: action, Node: node}, nil)
}

// A SlurmctldHost without a NodeName line runs a controller only: it
// leads, answers commands on its socket, and is no node of the cluster
// (no node list shows it, no job runs there). A NodeName without a
// SlurmctldHost line runs jobs and no Raft; its commands reach the leader.
func TestControllerOnlyHost(t *testing.T) {
	l := newCtlLab(t, twoNodeConf)
	ctl := l.start("ctl1")
	l.start("node1")
	l.start("node2")
	st := l.status("node1", map[string]string{"ctl1": api.RoleLeader})
	// A new leader's first entry commits a moment after it is elected.
	for deadline := time.Now().Add(10 * time.Second); st.Controllers[0].CommitIndex == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		st = l.status("node1", map[string]string{"ctl1": api.RoleLeader})
	}
	// scontrol show config on a node that holds no state answers too.
	var conf struct {
		ClusterName string `json:"cluster_name"`
	}
	if err := l.client("node1").Config(context.Background(), &conf); err != nil {
		t.Errorf("node1's config: %v", err)
	}
	if st.Leader != "ctl1" || st.RaftState != "Agent (not a controller)" || !slices.Equal(st.Voters, []string{"ctl1"}) {
		t.Errorf("node1's status: leader %q, its state %q, voters %v", st.Leader, st.RaftState, st.Voters)
	}
	if c := st.Controllers[0]; !c.Dedicated || c.Term == 0 || c.CommitIndex == 0 {
		t.Errorf("ctl1 as status shows it: %+v", c)
	}
	if l.nodes["node1"].Daemon().raft != nil {
		t.Error("a compute-only node runs Raft")
	}
	waitUntil(t, 30*time.Second, "node1 and node2 idle", func() (bool, string) {
		resp, err := l.client("ctl1").Nodes(context.Background())
		if err != nil {
			return false, err.Error()
		}
		var names []string
		idle := 0
		for _, n := range resp.Nodes {
			names = append(names, n.Name)
			if n.State == api.NodeIdle {
				idle++
			}
		}
		return slices.Equal(names, []string{"node1", "node2"}) && idle == 2, fmt.Sprint(names)
	})
	testUserAssoc(t, ctl.Daemon())
	cl := l.client("ctl1")
	id, err := cl.Submit(context.Background(), api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: t.TempDir(), Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, cl, id, api.StateCompleted)
	if slices.ContainsFunc(j.Alloc, func(a api.NodeAlloc) bool { return a.Node == "ctl1" }) {
		t.Errorf("a job ran on the controller-only host: %+v", j.Alloc)
	}
	// No agent routes on a controller-only host: nothing could send work.
	var out struct{}
	err = ctl.Daemon().peers.CallNode(context.Background(), ctl.Daemon().apiAddr("ctl1"), "/internal/launch", struct{}{}, &out)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a launch sent to the controller-only host: %v", err)
	}
}

// hpc controller add makes a running compute node a voter; it stays one
// across a restart of its daemon (Raft's log holds the voter set, the node
// its role) without bootstrapping again; remove makes it a compute node
// again. Refused: a second change while one is in progress, removing the
// last controller, a change that leaves no quorum up, and anyone but root.
func TestControllerAddRemove(t *testing.T) {
	l := newCtlLab(t, twoNodeConf)
	l.start("ctl1")
	l.start("node1")
	l.start("node2")
	l.status("ctl1", map[string]string{"ctl1": api.RoleLeader})
	waitUntil(t, 30*time.Second, "node1 in gossip", func() (bool, string) {
		return l.nodes["ctl1"].Daemon().aliveMembers()["node1"], ""
	})

	d := l.nodes["ctl1"].Daemon()
	nobody := peer.Identity{UID: 65534, GID: 65534, User: "nobody"}
	if code, body := askAs(t, d, nobody, d.handleControllerChange, http.MethodPost, "/api/controller", api.ControllerChange{Action: "add", Node: "node1"}, nil); code != http.StatusForbidden {
		t.Errorf("add as nobody: %d %s", code, body)
	}
	busy := "adding node2"
	d.ctlChange.Store(&busy)
	if code, body := l.change("ctl1", "add", "node1"); code != http.StatusConflict || !strings.Contains(body, "in progress (adding node2)") {
		t.Errorf("a second change while one is in progress: %d %s", code, body)
	}
	d.ctlChange.Store(nil)
	if code, body := l.change("ctl1", "remove", "ctl1"); code != http.StatusConflict || !strings.Contains(body, "last controller") {
		t.Errorf("remove the last controller: %d %s", code, body)
	}
	if code, body := l.change("ctl1", "add", "nosuch"); code != http.StatusBadRequest || !strings.Contains(body, api.ErrInvalidNodeName) {
		t.Errorf("add an unknown node: %d %s", code, body)
	}

	if code, body := l.change("ctl1", "add", "node1"); code != http.StatusOK {
		t.Fatalf("add node1: %d %s", code, body)
	}
	st := l.status("node2", map[string]string{"ctl1": api.RoleLeader, "node1": api.RoleFollower})
	if !slices.Equal(st.Voters, []string{"ctl1", "node1"}) {
		t.Errorf("voters after the add: %v", st.Voters)
	}
	if code, body := l.change("ctl1", "add", "node1"); code != http.StatusConflict || !strings.Contains(body, "already a controller") {
		t.Errorf("add node1 again: %d %s", code, body)
	}
	if role, _ := readRole(filepath.Join(l.dir, "node1")); role != roleVoter {
		t.Errorf("node1's recorded role: %q", role)
	}

	// A restart keeps node1 a voter; its Raft state is its own.
	l.stop("node1")
	l.start("node1")
	l.status("node2", map[string]string{"ctl1": api.RoleLeader, "node1": api.RoleFollower})

	// With node1 gone, removing ctl1 would leave 0 of 1 up; removing the
	// silent node1 leaves ctl1, a quorum of one.
	l.stop("node1")
	waitUntil(t, 30*time.Second, "node1 gone from ctl1's gossip", func() (bool, string) {
		return !d.aliveMembers()["node1"], ""
	})
	if code, body := l.change("ctl1", "remove", "node2"); code != http.StatusConflict || !strings.Contains(body, "not a controller") {
		t.Errorf("remove a node that is no controller: %d %s", code, body)
	}
	d.ctlChange.Store(nil)
	// ctl1 is the leader: removing it hands leadership to node1, which
	// is down, so quorum is checked first.
	if code, body := l.change("ctl1", "remove", "ctl1"); code != http.StatusConflict || !strings.Contains(body, "short of the quorum") {
		t.Errorf("remove ctl1 with node1 down: %d %s", code, body)
	}
	code, body := l.change("ctl1", "remove", "node1")
	if code != http.StatusOK || !strings.Contains(body, "did not answer") {
		t.Fatalf("remove the silent node1: %d %s", code, body)
	}
	// When node1 comes back it still runs Raft (it missed the removal);
	// the leader tells it to stop, and it runs jobs only.
	l.start("node1")
	waitUntil(t, 60*time.Second, "node1 to stop its Raft", func() (bool, string) {
		role, _ := readRole(filepath.Join(l.dir, "node1"))
		nd := l.nodes["node1"].Daemon()
		return role == roleRemoved && nd != nil && nd.raft == nil, role
	})
	if _, err := os.Stat(filepath.Join(l.dir, "node1", "raft")); !os.IsNotExist(err) {
		t.Errorf("node1 kept its Raft state: %v", err)
	}
	st = l.status("node2", map[string]string{"ctl1": api.RoleLeader})
	if !slices.Equal(st.Voters, []string{"ctl1"}) {
		t.Errorf("voters after the remove: %v", st.Voters)
	}

	// Added again, node1 starts from the leader's log. (Its daemon
	// restarted without Raft: wait for gossip to see the new one.)
	waitUntil(t, 30*time.Second, "node1 back in ctl1's gossip", func() (bool, string) {
		return d.aliveMembers()["node1"], ""
	})
	if code, body := l.change("ctl1", "add", "node1"); code != http.StatusOK {
		t.Fatalf("add node1 again: %d %s", code, body)
	}
	l.status("node2", map[string]string{"ctl1": api.RoleLeader, "node1": api.RoleFollower})

	// Removing the leader: it hands leadership to node1, which removes
	// it; ctl1 runs no Raft any more, and node1 is the last controller.
	if code, body := l.change("ctl1", "remove", "ctl1"); code != http.StatusOK || strings.Contains(body, "did not answer") {
		t.Fatalf("remove ctl1, the leader: %d %s", code, body)
	}
	waitUntil(t, 30*time.Second, "ctl1 to stop its Raft", func() (bool, string) {
		role, _ := readRole(filepath.Join(l.dir, "ctl1"))
		cd := l.nodes["ctl1"].Daemon()
		return role == roleRemoved && cd != nil && cd.raft == nil, role
	})
	st = l.status("node2", map[string]string{"node1": api.RoleLeader})
	if !slices.Equal(st.Voters, []string{"node1"}) {
		t.Errorf("voters after removing ctl1: %v", st.Voters)
	}
	if code, body := l.change("node1", "remove", "node1"); code != http.StatusConflict || !strings.Contains(body, "last controller") {
		t.Errorf("remove the last controller, node1: %d %s", code, body)
	}
	// Its role outlives a restart: ctl1 starts without Raft.
	l.stop("ctl1")
	if cd := l.start("ctl1").Daemon(); cd.raft != nil {
		t.Error("ctl1 runs Raft again after a restart")
	}
}

func TestQuorumAfter(t *testing.T) {
	up := map[string]bool{"a": true, "b": true}
	for _, c := range []struct {
		voters []string
		ok     bool
	}{
		{[]string{"a"}, true},
		{[]string{"a", "b"}, true},
		{[]string{"a", "c"}, false},      // 1 of 2 up: a quorum is 2
		{[]string{"a", "b", "c"}, true},  // 2 of 3
		{[]string{"a", "c", "d"}, false}, // 1 of 3
		{[]string{"a", "b", "c", "d"}, false},
		{nil, false},
	} {
		if err := quorumAfter(c.voters, up, "x"); (err == nil) != c.ok {
			t.Errorf("%v: %v", c.voters, err)
		}
	}
}

func TestRoleFile(t *testing.T) {
	dir := t.TempDir()
	if r, err := readRole(dir); r != "" || err != nil {
		t.Fatalf("no file: %q %v", r, err)
	}
	for _, role := range []string{roleVoter, roleRemoved, ""} {
		if err := writeRole(dir, role); err != nil {
			t.Fatal(err)
		}
		if r, err := readRole(dir); r != role || err != nil {
			t.Errorf("wrote %q, read %q %v", role, r, err)
		}
	}
	os.WriteFile(filepath.Join(dir, roleFile), []byte("boss\n"), 0o644)
	if _, err := readRole(dir); err == nil || !strings.Contains(err.Error(), "boss") {
		t.Errorf("an unknown role: %v", err)
	}
	for _, c := range []struct {
		role string
		ctl  bool
		want bool
	}{{"", true, true}, {"", false, false}, {roleVoter, false, true}, {roleRemoved, true, false}} {
		if got := wantsRaft(c.role, c.ctl); got != c.want {
			t.Errorf("wantsRaft(%q, %v) = %v", c.role, c.ctl, got)
		}
	}
}

// An HpcSubmitHost (a login node) runs neither jobs nor Raft: its daemon
// answers the commands run there by forwarding them to the controllers,
// it is in no node list, no job runs there, it takes no agent's work, and
// it cannot be made a controller.
func TestSubmitHost(t *testing.T) {
	l := newCtlLab(t, twoNodeConf+"HpcSubmitHost=login1(NET.20)\n")
	ctl := l.start("ctl1")
	l.start("node1")
	l.start("node2")
	login := l.start("login1")
	st := l.status("login1", map[string]string{"ctl1": api.RoleLeader})
	if st.Leader != "ctl1" || st.ExecMode != noStepsSubmit || !strings.HasPrefix(st.RaftState, "Submit host") {
		t.Errorf("login1's status: leader %q, steps %q, state %q", st.Leader, st.ExecMode, st.RaftState)
	}
	if login.Daemon().raft != nil {
		t.Error("a submit host runs Raft")
	}
	cl := l.client("login1")
	waitUntil(t, 30*time.Second, "node1 and node2 idle through login1", func() (bool, string) {
		resp, err := cl.Nodes(context.Background())
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, n := range resp.Nodes {
			if n.State == api.NodeIdle {
				names = append(names, n.Name)
			}
		}
		return slices.Equal(names, []string{"node1", "node2"}), fmt.Sprint(resp.Nodes)
	})
	testUserAssoc(t, ctl.Daemon())
	id, err := cl.Submit(context.Background(), api.JobSpec{Script: "#!/bin/sh\ntrue\n", WorkDir: t.TempDir(), Nodes: 2, SubmitHost: "login1"})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, cl, id, api.StateCompleted)
	if j.Spec.SubmitHost != "login1" || slices.ContainsFunc(j.Alloc, func(a api.NodeAlloc) bool { return a.Node == "login1" }) {
		t.Errorf("job submitted from login1: submit host %q, ran on %+v", j.Spec.SubmitHost, j.Alloc)
	}
	var out struct{}
	err = ctl.Daemon().peers.CallNode(context.Background(), ctl.Daemon().apiAddr("login1"), "/internal/launch", struct{}{}, &out)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a launch sent to the submit host: %v", err)
	}
	if code, body := l.change("ctl1", "add", "login1"); code != http.StatusBadRequest || !strings.Contains(body, "submit host") {
		t.Errorf("controller add login1: %d %s", code, body)
	}
}
