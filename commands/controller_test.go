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
	// node2 answers for its Raft but its node is DOWN: not up.
	if got := hostsUp([]string{"node1", "node2", "ctl1", "ctl2"}, nodes, ctls); got != 2 {
		t.Errorf("hostsUp = %d, want 2 (node1, ctl1)", got)
	}
	if got := hostsUp([]string{"ctl3"}, nodes, ctls); got != 0 {
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
			cfg, perr = prepareConfig(c, l)
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
}
