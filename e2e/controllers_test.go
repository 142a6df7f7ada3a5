package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// TestLabControllers runs a lab with three dedicated controllers (ctl1-3:
// SlurmctldHost lines without NodeName lines) and three compute nodes,
// started by hpc up. sinfo lists the compute nodes only; scontrol ping
// and hpc status show every controller. The leader's daemon is killed: a
// job still runs. hpc controller add makes node3 a voter, which it stays
// across a restart of its daemon; hpc controller remove makes it a
// compute node only again.
func TestLabControllers(t *testing.T) {
	needLab(t)
	l := newLabT(t, "hpc-controllers-")
	hosts := []string{"node1", "node2", "node3", "ctl1", "ctl2", "ctl3"}
	text, err := config.LabWith(config.LabOptions{Nodes: 3, Controllers: 3})
	if err != nil {
		t.Fatal(err)
	}
	text = strings.ReplaceAll(text, "127.0.1.", l.net) + "\nKillWait=2\n" +
		fmt.Sprintf("HpcApiPort=%d\nHpcRaftPort=%d\nHpcGossipPort=%d\n", l.api, l.api+1, l.api+2)
	conf := filepath.Join(l.top, "lab.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := l.run(0, l.top, "up", "--dir", l.dir, "--config", conf)
	t.Cleanup(func() {
		l.run(0, l.top, "down", "--dir", l.dir)
		for _, h := range hosts {
			if b, _ := os.ReadFile(filepath.Join(l.dir, h, "hpc.log")); os.Getenv(labRaceEnv) != "" && strings.Contains(string(b), "WARNING: DATA RACE") {
				t.Errorf("%s's daemon found a data race", h)
			}
		}
		if t.Failed() {
			for _, h := range hosts {
				b, _ := os.ReadFile(filepath.Join(l.dir, h, "hpc.log"))
				t.Logf("--- log of %s:\n%s", h, b)
			}
		}
	})
	if code != 0 {
		t.Fatalf("hpc up: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "ctl1") || !strings.Contains(out, "controller only") {
		t.Errorf("hpc up's summary does not show the dedicated controllers:\n%s", out)
	}
	l.letNobodySubmit()
	work := filepath.Join(l.top, "work") // nobody's jobs write their output here
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, nobody, nobody); err != nil {
		t.Fatal(err)
	}

	// sinfo: compute nodes only.
	out, _, _ = l.run(0, l.top, "nodes", "-h", "-N", "-o", "%N")
	// (-N prints a node once per partition: node2 and node3 are in gpu too.)
	got := strings.Fields(out)
	slices.Sort(got)
	if got = slices.Compact(got); !slices.Equal(got, []string{"node1", "node2", "node3"}) {
		t.Errorf("sinfo -N lists %v, want the compute nodes only", got)
	}
	allUp := "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup1) at ctl2 is UP\nSlurmctld(backup2) at ctl3 is UP\n"
	l.waitPing(allUp)
	leader := l.waitLeader("", []string{"ctl1", "ctl2", "ctl3"})
	out, _, _ = l.run(0, l.top, "status")
	if !strings.Contains(out, "Controllers:") || !lineHas(out, leader, "leader") {
		t.Errorf("hpc status does not show %s leading:\n%s", leader, out)
	}

	// kill -9 of the leader's daemon: another controller leads, ping says
	// the killed one is DOWN (and exits 0: one answers), and a job runs.
	l.stopDaemon(leader, syscall.SIGKILL)
	next := l.waitLeader(leader, []string{"ctl1", "ctl2", "ctl3"})
	t.Logf("killed %s; %s leads", leader, next)
	waitFor(t, 60*time.Second, "scontrol ping to show "+leader+" DOWN", func() (bool, string) {
		out, _, code := l.run(0, l.top, "scontrol", "ping")
		return code == 0 && strings.Contains(out, " at "+leader+" is DOWN\n"), out
	})
	id := l.submit(nobody, work, "--wrap", "hostname")
	cl := api.NewClient(filepath.Join(l.dir, "node1", "hpc.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	j, err := cl.Wait(ctx, id)
	cancel()
	if err != nil || j.State != api.StateCompleted {
		t.Fatalf("job %d after the leader's kill: %s %v", id, jobState(j), err)
	}
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after the kill: %d\n%s\n%s", code, out, errs)
	}
	l.waitPing(allUp)

	// hpc controller add: root only; node3 becomes a voter.
	if _, errs, code := l.run(nobody, l.top, "controller", "add", "node3"); code == 0 || !strings.Contains(errs, api.ErrAccessDenied) {
		t.Errorf("controller add as nobody: exit %d %q", code, errs)
	}
	out, errs, code = l.run(0, l.top, "controller", "add", "node3")
	if code != 0 || !strings.Contains(out, "node3 added to the controllers") {
		t.Fatalf("controller add node3: exit %d\n%s\n%s", code, out, errs)
	}
	four := []string{"ctl1", "ctl2", "ctl3", "node3"}
	l.waitVoters(four)
	out, _, _ = l.run(0, l.top, "status")
	t.Logf("hpc status with node3 a controller:\n%s", out)
	l.waitPing(allUp + "Slurmctld(backup3) at node3 is UP\n")
	if _, errs, code := l.run(0, l.top, "controller", "add", "node3"); code == 0 || !strings.Contains(errs, "already a controller") {
		t.Errorf("controller add node3 again: exit %d %q", code, errs)
	}

	// node3's daemon restarts: it is still a voter, with its own log.
	l.stopDaemon("node3", syscall.SIGTERM)
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after stopping node3: %d\n%s\n%s", code, out, errs)
	}
	l.waitVoters(four)

	// hpc controller remove: node3 is a compute node only again, and
	// still runs jobs.
	out, errs, code = l.run(0, l.top, "controller", "remove", "node3")
	if code != 0 || !strings.Contains(out, "node3 removed from the controllers") {
		t.Fatalf("controller remove node3: exit %d\n%s\n%s", code, out, errs)
	}
	l.waitVoters([]string{"ctl1", "ctl2", "ctl3"})
	waitFor(t, 60*time.Second, "node3 to run no Raft", func() (bool, string) {
		st, err := api.NewClient(filepath.Join(l.dir, "node3", "hpc.sock")).Status(context.Background())
		return err == nil && st.RaftState == "Agent (not a controller)", fmt.Sprintf("%+v %v", st, err)
	})
	l.waitPing(allUp)
	id = l.submit(nobody, work, "-w", "node3", "--wrap", "hostname")
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	j, err = cl.Wait(ctx, id)
	cancel()
	if err != nil || j.State != api.StateCompleted || j.BatchHost != "node3" {
		t.Fatalf("job %d on node3 after its removal: %s %v", id, jobState(j), err)
	}
}

// waitPing waits until scontrol ping prints want.
func (l *labT) waitPing(want string) {
	l.t.Helper()
	waitFor(l.t, 60*time.Second, "scontrol ping to print "+strings.ReplaceAll(want, "\n", "; "), func() (bool, string) {
		out, _, _ := l.run(0, l.top, "scontrol", "ping")
		return out == want, out
	})
}

// waitLeader waits until one of hosts other than not leads, as a compute
// node sees it, and returns it.
func (l *labT) waitLeader(not string, hosts []string) string {
	l.t.Helper()
	var leader string
	waitFor(l.t, 60*time.Second, "a leader among "+strings.Join(hosts, ","), func() (bool, string) {
		st, err := api.NewClient(filepath.Join(l.dir, "node1", "hpc.sock")).Status(context.Background())
		if err != nil {
			return false, err.Error()
		}
		leader = st.Leader
		leading := 0
		for _, c := range st.Controllers {
			if c.Role == api.RoleLeader {
				leading++
			}
		}
		return leader != not && slices.Contains(hosts, leader) && leading == 1, fmt.Sprintf("%+v", st.Controllers)
	})
	return leader
}

// waitVoters waits until the Raft voters are want, each of them answering
// (hpc status's controller table), as a compute node sees them, and hpc
// status lists them.
func (l *labT) waitVoters(want []string) {
	l.t.Helper()
	// hpc status answers from the node whose socket the command finds
	// first (ctl1), with that node's own view of Raft: a controller
	// restarted a moment ago shows its old voters until the leader's
	// entries reach it, so it too is waited for.
	line := "Voters:   " + strings.Join(want, ", ") + "\n"
	waitFor(l.t, 90*time.Second, "voters "+strings.Join(want, ","), func() (bool, string) {
		st, err := api.NewClient(filepath.Join(l.dir, "node1", "hpc.sock")).Status(context.Background())
		if err != nil {
			return false, err.Error()
		}
		var answering []string
		for _, c := range st.Controllers {
			if c.Voter && c.Role != api.RoleDown {
				answering = append(answering, c.Name)
			}
		}
		if !slices.Equal(st.Voters, want) || !slices.Equal(answering, want) {
			return false, fmt.Sprintf("voters %v; %+v", st.Voters, st.Controllers)
		}
		out, _, _ := l.run(0, l.top, "status")
		return strings.Contains(out, line), "hpc status:\n" + out
	})
}

// lineHas reports whether a line of out has every one of the words.
func lineHas(out string, words ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		ok := true
		for _, w := range words {
			ok = ok && slices.Contains(f, w)
		}
		if ok {
			return true
		}
	}
	return false
}

func jobState(j *api.Job) string {
	if j == nil {
		return "no job"
	}
	return fmt.Sprintf("%s on %s (exit %d, reason %q)", j.State, j.BatchHost, j.ExitCode, j.Reason)
}
