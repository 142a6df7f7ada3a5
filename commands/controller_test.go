package commands

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// scontrol ping reports the controllers as they answer for themselves
// when the daemon gives their states: SlurmctldHost order (the first is
// Slurm's primary whichever one leads), any Raft role but down is UP, and
// a node still being added (no vote yet) is not listed.
func TestPingControllerStates(t *testing.T) {
	f, e, out, errb := newFake(t)
	f.status.Controllers = []api.ControllerState{
		{Name: "ctl1", Role: api.RoleDown, Voter: true, Dedicated: true, Error: "not responding"},
		{Name: "ctl2", Role: api.RoleLeader, Voter: true, Dedicated: true, Term: 3},
		{Name: "ctl3", Role: api.RoleFollower, Voter: true, Dedicated: true, Term: 3, LastContact: time.Now()},
		{Name: "node4", Role: api.RoleFollower, Voter: false},
	}
	stdout, _, code := run(e, out, errb, "scontrol", "ping")
	want := "Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup1) at ctl2 is UP\nSlurmctld(backup2) at ctl3 is UP\n" +
		"*****************************************\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n*****************************************\n"
	if stdout != want || code != 0 {
		t.Errorf("ping: exit %d\n%s\nwant\n%s", code, stdout, want)
	}
	f.status.Controllers[0].Role = api.RoleFollower
	f.status.Controllers = f.status.Controllers[:2]
	stdout, _, _ = run(e, out, errb, "scontrol", "ping")
	if want := "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n"; stdout != want {
		t.Errorf("ping, both up: %q", stdout)
	}
}

func TestHostsUp(t *testing.T) {
	nodes := []api.Node{{Name: "node1", State: api.NodeIdle}, {Name: "node2", State: api.NodeDown}}
	ctls := []api.ControllerState{{Name: "ctl1", Role: api.RoleLeader}, {Name: "ctl2", Role: api.RoleDown},
		{Name: "node2", Role: api.RoleFollower}}
	// login1 (a submit host) is up as an alive gossip member; node2's
	// membership does not make a DOWN node up.
	members := []api.Member{{Name: "login1", State: "alive"}, {Name: "node2", State: "alive"}, {Name: "login2", State: "dead"}}
	// node2 answers for its Raft but its node is DOWN: not up.
	if got := hostsUp([]string{"node1", "node2", "ctl1", "ctl2", "login1"}, nodes, ctls, members); got != 3 {
		t.Errorf("hostsUp = %d, want 3 (node1, ctl1, login1)", got)
	}
	if got := hostsUp([]string{"ctl3", "login2"}, nodes, ctls, members); got != 0 {
		t.Errorf("an unknown host counted up: %d", got)
	}
}

func TestPrintControllersNames(t *testing.T) {
	if got := pingControllers(nil); got != nil {
		t.Errorf("no states: %v", got)
	}
	ctls := pingControllers([]api.ControllerState{{Name: "a", Role: api.RoleCandidate}, {Name: "b", Role: api.RoleDown}})
	if len(ctls) != 2 || !ctls[0].Up || ctls[1].Up {
		t.Errorf("without voter marks every controller is listed: %+v", ctls)
	}
	if !strings.Contains(controllerCommand().Description, "quorum") {
		t.Error("hpc controller's help does not say what it refuses")
	}
}

// hpc up --controllers N writes a lab with N dedicated controllers, and
// the hosts it starts daemons on are the nodes, then the controllers; an
// existing lab refuses another number of them.
func TestUpControllersConfig(t *testing.T) {
	l := lab{dir: t.TempDir()}
	prepare := func(args ...string) (*config.Config, error) {
		var cfg *config.Config
		var perr error
		cmd := upCommand()
		cmd.Action = func(c *cli.Context) error {
			cfg, perr = prepareConfig(c, l, c.Bool("netns"))
			return nil
		}
		app := &cli.App{Commands: []*cli.Command{cmd}}
		if err := app.Run(append([]string{"hpc", "up"}, args...)); err != nil {
			t.Fatal(err)
		}
		return cfg, perr
	}
	cfg, err := prepare("--nodes", "2", "--controllers", "3")
	if err != nil {
		t.Fatal(err)
	}
	if got := labHosts(cfg); !slices.Equal(got, []string{"node1", "node2", "ctl1", "ctl2", "ctl3"}) {
		t.Errorf("hosts %v", got)
	}
	if _, err := prepare("--controllers", "1"); err == nil || !strings.Contains(err.Error(), "has 3 dedicated controllers") {
		t.Errorf("another number of controllers for an existing lab: %v", err)
	}
	if _, err := prepare("--controllers", "3"); err != nil {
		t.Errorf("the same lab again: %v", err)
	}
	// The default lab: node1-node3 are the controllers, no other host.
	l.dir = t.TempDir()
	cfg, err = prepare()
	if err != nil {
		t.Fatal(err)
	}
	if got := labHosts(cfg); !slices.Equal(got, []string{"node1", "node2", "node3"}) || len(cfg.ControlHosts) != 3 {
		t.Errorf("default lab: hosts %v, controllers %+v", got, cfg.ControlHosts)
	}
	// The --netns lab: the nodes on its network, then login1, a host
	// with an address there that is neither node nor controller.
	l.dir = t.TempDir()
	cfg, err = prepare("--netns", "--controllers", "1")
	if err != nil {
		t.Fatal(err)
	}
	if got := labHosts(cfg); !slices.Equal(got, []string{"node1", "node2", "node3", "ctl1", "login1"}) {
		t.Errorf("--netns lab: hosts %v", got)
	}
	hosts, err := netHosts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []netHost{{"node1", "10.70.0.1"}, {"node2", "10.70.0.2"}, {"node3", "10.70.0.3"}, {"ctl1", "10.70.0.4"}, {"login1", "10.70.0.5"}}; !slices.Equal(hosts, want) {
		t.Errorf("--netns hosts %v, want %v", hosts, want)
	}
	if _, err := prepare("--netns", "--controllers", "2"); err == nil || !strings.Contains(err.Error(), "has 1 dedicated controllers") {
		t.Errorf("a --netns lab's login node counted as a controller: %v", err)
	}
}

// A lab whose hosts are not all on the --netns network cannot be put in
// namespaces: netHosts names the host.
func TestNetHostsOutsideTheNetwork(t *testing.T) {
	text, err := config.LabWith(config.LabOptions{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := netHosts(cfg); err == nil || !strings.Contains(err.Error(), "node1's address 127.0.1.1 is not on") {
		t.Errorf("netHosts of a loopback lab: %v", err)
	}
}
