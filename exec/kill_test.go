package exec

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillNowSendsNoTerm: KillNow ends a step with SIGKILL and no SIGTERM
// before it (srun -W's end, as slurmstepd's), where Kill gives the step
// its SIGTERM first. The step's shell traps TERM: under Kill it says so
// and exits 3; under KillNow it never hears of it and dies of signal 9.
func TestKillNowSendsNoTerm(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		dir := userDir(t, testBase(t), "u", nobody)
		script := `trap 'echo term; exit 3' TERM; echo up; while :; do sleep 0.1; done`
		for _, c := range []struct {
			id   string
			kill func(*Step)
			want func(Result, string) bool
		}{
			{"1.0", func(s *Step) { s.KillNow() }, func(r Result, out string) bool {
				return r.Signal == int(syscall.SIGKILL) && !strings.Contains(out, "term")
			}},
			{"2.0", func(s *Step) { s.Kill(time.Minute) }, func(r Result, out string) bool {
				return r.ExitCode == 3 && r.Signal == 0 && strings.Contains(out, "term")
			}},
		} {
			out := filepath.Join(dir, c.id+".out")
			s := launch(t, e, StepSpec{ID: c.id, UID: nobody, GID: nobody, Stdout: out,
				Argv: []string{"/bin/sh", "-c", script}})
			waitForFile(t, out, "up", s)
			c.kill(s)
			if r, got := s.Wait(), readFile(t, out); !c.want(r, got) {
				t.Errorf("step %s: %+v, output %q", c.id, r, got)
			}
		}
		checkNoLeftovers(t, e)
	})
}
