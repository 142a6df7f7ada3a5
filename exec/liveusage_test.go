package exec

import (
	"errors"
	"testing"
	"time"
)

// LiveUsage reads a running step's tasks from /proc (by SLURM_PROCID),
// and from its cgroup in container mode; an ended step answers
// ErrStepEnded.
func TestLiveUsage(t *testing.T) {
	modes(t, func(t *testing.T, e *Executor) {
		task := func(rank string) TaskSpec {
			return TaskSpec{Argv: []string{"/bin/sh", "-c", "head -c 2000000 /dev/zero >/dev/null; exec sleep 30"},
				Env: append([]string{"SLURM_PROCID=" + rank}, env...)}
		}
		s := launch(t, e, StepSpec{ID: "77.0", UID: nobody, GID: nobody, WorkDir: "/", Tasks: []TaskSpec{task("4"), task("5")}})
		defer func() { s.Kill(0); s.Wait() }()
		var u LiveUsage
		deadline := time.Now().Add(20 * time.Second)
		for {
			var err error
			u, err = s.LiveUsage()
			if err != nil {
				t.Fatal(err)
			}
			// Both tasks past their reads and settled in sleep: a task
			// caught in its exec has no environment (no SLURM_PROCID)
			// and no memory yet for that instant.
			if len(u.Tasks) == 2 && u.Tasks[0].ReadBytes >= 2000000 && u.Tasks[1].ReadBytes >= 2000000 &&
				u.Tasks[0].Task == 4 && u.Tasks[1].Task == 5 && u.Tasks[0].RSSKB > 0 && u.Tasks[1].RSSKB > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("usage never showed tasks 4 and 5 settled after their reads: %+v", u)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for i, tu := range u.Tasks {
			if tu.Task != 4+i || len(tu.Pids) == 0 || tu.RSSKB <= 0 || tu.VMSizeKB < tu.RSSKB {
				t.Errorf("task %d: %+v", i, tu)
			}
		}
		if e.Containers() && (u.CgroupMemKB <= 0 || u.Cgroup.MaxRSSKB < u.CgroupMemKB) {
			t.Errorf("cgroup figures: %+v", u)
		}
		s.Kill(0)
		s.Wait()
		if _, err := s.LiveUsage(); !errors.Is(err, ErrStepEnded) {
			t.Errorf("after the end: %v", err)
		}
	})
}
