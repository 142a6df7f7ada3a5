package commands

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/commands/scenario"
)

// scenarioLab is scenario.Lab on a lab directory of this machine: the
// daemons `hpc up` started there, by their pid files.
type scenarioLab struct {
	l   lab
	exe string // this program, to run `hpc up --dir`
}

// findScenarioLab is the lab whose sockets the commands use: the
// directory of $HPC_SOCKET's node, else the first lab directory with a
// node socket ($HPC_DIR, /var/lib/hpc, ~/.local/share/hpc); nil with
// none.
func findScenarioLab(e *Env) scenario.Lab {
	exe, err := e.Executable()
	if err != nil {
		return nil
	}
	if s := os.Getenv("HPC_SOCKET"); s != "" {
		dir := filepath.Dir(filepath.Dir(s))
		if _, err := os.Stat(filepath.Join(dir, "slurm.conf")); err != nil {
			return nil
		}
		return &scenarioLab{l: lab{dir: dir}, exe: exe}
	}
	for _, dir := range clientDirs() {
		if len(sockets(dir)) > 0 {
			abs, _ := filepath.Abs(dir)
			return &scenarioLab{l: lab{dir: abs}, exe: exe}
		}
	}
	return nil
}

func (s *scenarioLab) Dir() string { return s.l.dir }

func (s *scenarioLab) Unreachable(node string) string {
	if _, err := os.Stat(s.l.pidPath(node)); err != nil {
		return fmt.Sprintf("no pid file %s (a daemon this machine's `hpc up` did not start)", s.l.pidPath(node))
	}
	pid, ok := s.l.running(node)
	if !ok {
		return "its daemon is not running"
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return fmt.Sprintf("cannot signal its daemon (pid %d): %v (run as the user who ran hpc up)", pid, err)
	}
	return ""
}

func (s *scenarioLab) Kill(node string) error {
	pid, ok := s.l.running(node)
	if !ok {
		return fmt.Errorf("%s's daemon is not running", node)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, ok := s.l.running(node); !ok {
			return nil
		}
	}
	return fmt.Errorf("%s's daemon (pid %d) still runs 10 s after SIGKILL", node, pid)
}

func (s *scenarioLab) Up(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, s.exe, "up", "--dir", s.l.dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hpc up --dir %s: %v: %s", s.l.dir, err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (s *scenarioLab) Client(node string) *api.Client { return api.NewClient(s.l.sockPath(node)) }
