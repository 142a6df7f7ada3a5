package e2e

// Issue 3's scheduling policy end to end: QoS and association limits and
// QoS preemption, set with sacctmgr and seen through sbatch's errors,
// squeue's reasons, scontrol and sacct, on a real 2-node lab of its own.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// schedLabConf makes QoS priority order the queue (so a preempting job
// goes first), lets QoS preempt, and lets jobs over a partition's limits
// queue (they pend with Slurm's reason).
const schedLabConf = "KillWait=2\nPriorityType=priority/multifactor\nPriorityWeightQOS=1000\n" +
	"PreemptType=preempt/qos\nPreemptMode=REQUEUE\nEnforcePartLimits=NO\n"

// mgr runs sacctmgr -i as root and fails the test if it fails.
func (l *labT) mgr(args ...string) string {
	l.t.Helper()
	out, errs, code := l.run(0, l.top, append([]string{"sacctmgr", "-i"}, args...)...)
	if code != 0 {
		l.t.Fatalf("sacctmgr %v: exit %d\n%s%s", args, code, out, errs)
	}
	return out
}

// waitStateWithin is waitState with a deadline of its own; a job that
// ends on the way fails the test at once.
func (l *labT) waitStateWithin(id uint64, st string, d time.Duration) {
	l.t.Helper()
	waitFor(l.t, d, fmt.Sprintf("job %d to reach %s", id, st), func() (bool, string) {
		out, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(id), "-o", "%t")
		got := strings.TrimSpace(out)
		if got != st && got != "" && got != "PD" && got != "R" && got != "CG" {
			l.t.Fatalf("job %d ended %s instead of reaching %s:\n%s", id, got, st, l.scontrolJob(id))
		}
		return got == st, fmt.Sprintf("%q", out)
	})
}

// waitPending polls squeue until the job pends with the reason.
func (l *labT) waitPending(id uint64, reason string) {
	l.t.Helper()
	waitFor(l.t, 90*time.Second, fmt.Sprintf("job %d to pend with %s", id, reason), func() (bool, string) {
		out, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(id), "-o", "%t %r")
		return strings.TrimSpace(out) == "PD "+reason, fmt.Sprintf("%q", out)
	})
}

// cancelAll cancels jobs and waits until they have ended, so the next
// test starts on an empty cluster.
func (l *labT) cancelAll(ids ...uint64) {
	l.t.Helper()
	for _, id := range ids {
		l.run(0, l.top, "cancel", fmt.Sprint(id))
	}
	for _, id := range ids {
		waitFor(l.t, 90*time.Second, fmt.Sprintf("job %d to end after scancel", id), func() (bool, string) {
			out, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(id), "-o", "%t")
			st := strings.TrimSpace(out)
			return st != "PD" && st != "R" && st != "CG", fmt.Sprintf("%q", st)
		})
	}
}

// scontrolJob returns scontrol show job's text for a job.
func (l *labT) scontrolJob(id uint64) string {
	l.t.Helper()
	out, errs, code := l.run(0, l.top, "scontrol", "show", "job", fmt.Sprint(id))
	if code != 0 {
		l.t.Fatalf("scontrol show job %d: %s", id, errs)
	}
	return out
}

// refusedAtSubmit submits as nobody and expects Slurm's accounting-policy
// refusal with the reason first.
func (l *labT) refusedAtSubmit(dir, reason string, args ...string) {
	l.t.Helper()
	out, errs, code := l.run(nobody, dir, append([]string{"submit"}, args...)...)
	want := "sbatch: error: " + reason + "\n" +
		"sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)\n"
	if code != 1 || out != "" || errs != want {
		l.t.Fatalf("submit %v: exit %d stdout %q stderr %q; want exit 1 and %q", args, code, out, errs, want)
	}
}

func TestSchedLab(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-schedlab-", 2, schedLabConf)
	userDir := filepath.Join(l.top, "nobody-work")
	os.Mkdir(userDir, 0o755)
	os.Chown(userDir, nobody, nobody)

	// QoS as a site sets them up for preemption and limits, and nobody's
	// association under an account that may use them.
	l.mgr("add", "qos", "low", "PreemptMode=requeue")
	l.mgr("add", "qos", "scavenger", "PreemptMode=cancel")
	l.mgr("add", "qos", "high", "Priority=100", "Preempt=low,scavenger")
	l.mgr("add", "qos", "limited")
	l.mgr("add", "qos", "nogpu", "GrpTRES=gres/gpu=0")
	l.mgr("add", "account", "physics")
	l.mgr("delete", "user", "nobody") // startLab's association under root
	l.mgr("add", "user", "nobody", "account=physics", "qos=normal,low,scavenger,high,limited,nogpu", "defaultqos=normal")
	out := l.mgr("show", "qos", "format=Name,Priority,Preempt,PreemptMode,GrpTRES", "-P", "-n")
	if want := "normal|0||cluster|\nlow|0||requeue|\nscavenger|0||cancel|\nhigh|100|low,scavenger|cluster|\nlimited|0||cluster|\nnogpu|0||cluster|gres/gpu=0\n"; out != want {
		t.Errorf("show qos:\n%s\nwant:\n%s", out, want)
	}

	submit := func(l *labT, args ...string) uint64 {
		l.t.Helper()
		return l.submit(nobody, userDir, append(args, "--wrap", "sleep 300")...)
	}

	t.Run("PreemptRequeue", func(t *testing.T) {
		l := l.with(t)
		low := submit(l, "--qos=low", "-N2", "-n4")
		l.waitState(low, "R")
		high := submit(l, "--qos=high", "-n2")
		// The low job goes back to the queue with the same id; the high
		// one runs in its place.
		l.waitState(high, "R")
		l.waitState(low, "PD")
		show := l.scontrolJob(low)
		for _, want := range []string{fmt.Sprintf("JobId=%d ", low), "JobState=PENDING", "Reason=BeginTime", "Restarts=1", "QOS=low"} {
			if !strings.Contains(show, want) {
				t.Errorf("scontrol show job of the requeued job lacks %q:\n%s", want, show)
			}
		}
		// As under Slurm, a preempted job may not start again for 121 s
		// (else, older than the job that preempted it, it would take its
		// place back and be preempted again, for ever).
		if m := regexp.MustCompile(`EligibleTime=(\S+)`).FindStringSubmatch(show); m == nil {
			t.Errorf("no EligibleTime:\n%s", show)
		} else if at, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], time.Local); err != nil || time.Until(at) < 100*time.Second {
			t.Errorf("the requeued job is eligible at %s (%v), not about two minutes from now", m[1], err)
		}
		// It runs again when there is room and its begin time is moved
		// to now.
		l.cancelAll(high)
		if out, errs, code := l.run(0, l.top, "scontrol", "update", fmt.Sprintf("JobId=%d", low), "StartTime=now"); code != 0 {
			t.Fatalf("scontrol update StartTime=now: %d %q %q", code, out, errs)
		}
		l.waitStateWithin(low, "R", time.Minute)
		if show := l.scontrolJob(low); !strings.Contains(show, "JobState=RUNNING") || !strings.Contains(show, "Restarts=1") {
			t.Errorf("after the rerun:\n%s", show)
		}
		l.cancelAll(low)
	})

	t.Run("PreemptCancel", func(t *testing.T) {
		l := l.with(t)
		scav := submit(l, "--qos=scavenger", "-N2", "-n4")
		l.waitState(scav, "R")
		high := submit(l, "--qos=high", "-n2")
		l.waitState(high, "R")
		l.waitState(scav, "PR")
		waitFor(t, 30*time.Second, fmt.Sprintf("job %d's sacct row to show PREEMPTED", scav), func() (bool, string) {
			row := l.acctRow(scav)
			return strings.Contains(row, "|PREEMPTED|"), fmt.Sprintf("%q", row)
		})
		if show := l.scontrolJob(scav); !strings.Contains(show, "JobState=PREEMPTED") {
			t.Errorf("scontrol show job:\n%s", show)
		}
		l.cancelAll(high)
	})

	t.Run("QOSMaxJobsPerUser", func(t *testing.T) {
		l := l.with(t)
		l.mgr("modify", "qos", "limited", "set", "MaxJobsPerUser=1", "MaxSubmitJobsPerUser=2")
		a := submit(l, "--qos=limited")
		b := submit(l, "--qos=limited")
		l.waitState(a, "R")
		l.waitPending(b, "QOSMaxJobsPerUserLimit")
		out, _, _ := l.run(nobody, userDir, "queue", "-j", fmt.Sprint(b))
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^ +%d +debug +wrap +nobody PD +0:00 +1 \(QOSMaxJobsPerUserLimit\)$`, b)).MatchString(out) {
			t.Errorf("squeue:\n%s", out)
		}
		l.refusedAtSubmit(userDir, "QOSMaxSubmitJobPerUserLimit", "--qos=limited", "--wrap", "true")
		// Lifting the limit lets the pending job start.
		l.mgr("modify", "qos", "limited", "set", "MaxJobsPerUser=-1")
		l.waitState(b, "R")
		l.cancelAll(a, b)
		l.mgr("modify", "qos", "limited", "set", "MaxSubmitJobsPerUser=-1")
	})

	t.Run("AssocMaxJobs", func(t *testing.T) {
		l := l.with(t)
		l.mgr("modify", "user", "nobody", "set", "MaxJobs=1", "MaxSubmitJobs=2")
		a := submit(l)
		b := submit(l)
		l.waitState(a, "R")
		l.waitPending(b, "AssocMaxJobsLimit")
		l.refusedAtSubmit(userDir, "AssocMaxSubmitJobLimit", "--wrap", "true")
		l.mgr("modify", "user", "nobody", "set", "MaxJobs=-1")
		l.waitState(b, "R")
		l.cancelAll(a, b)
		l.mgr("modify", "user", "nobody", "set", "MaxSubmitJobs=-1")
	})

	// A limit of 0 allows nothing, as in Slurm; -1 clears it.
	t.Run("ZeroLimits", func(t *testing.T) {
		l := l.with(t)
		l.mgr("modify", "user", "nobody", "set", "MaxJobs=0")
		if out := l.mgr("show", "assoc", "user=nobody", "format=User,MaxJobs", "-P", "-n"); out != "nobody|0\n" {
			t.Errorf("show assoc: %q", out)
		}
		a := submit(l)
		l.waitPending(a, "AssocMaxJobsLimit")
		l.mgr("modify", "user", "nobody", "set", "MaxJobs=-1")
		l.waitState(a, "R")
		l.cancelAll(a)

		// GrpTRES=gres/gpu=0 holds GPU jobs back; other jobs of the QoS run.
		gpu := submit(l, "--qos=nogpu", "-p", "gpu", "--gres=gpu:1")
		cpu := submit(l, "--qos=nogpu")
		l.waitState(cpu, "R")
		l.waitPending(gpu, "QOSGrpGRES")
		l.cancelAll(gpu, cpu)
	})

	t.Run("AssocGrpCpu", func(t *testing.T) {
		l := l.with(t)
		l.mgr("modify", "account", "physics", "set", "GrpTRES=cpu=2")
		a := submit(l, "-n2")
		l.waitState(a, "R")
		b := submit(l)
		l.waitPending(b, "AssocGrpCpuLimit")
		l.mgr("modify", "account", "physics", "set", "GrpTRES=cpu=-1")
		l.waitState(b, "R")
		l.cancelAll(a, b)
	})

	t.Run("QOSMaxCpuPerUser", func(t *testing.T) {
		l := l.with(t)
		l.mgr("modify", "qos", "limited", "set", "MaxTRESPerUser=cpu=2")
		a := submit(l, "--qos=limited", "-n2")
		l.waitState(a, "R")
		b := submit(l, "--qos=limited")
		l.waitPending(b, "QOSMaxCpuPerUserLimit")
		// When the user's running job ends, the next one fits.
		l.cancelAll(a)
		l.waitState(b, "R")
		l.cancelAll(b)
		l.mgr("modify", "qos", "limited", "set", "MaxTRESPerUser=cpu=-1")
	})

	t.Run("QOSMaxWall", func(t *testing.T) {
		l := l.with(t)
		l.mgr("modify", "qos", "limited", "set", "MaxWall=10")
		long := submit(l, "--qos=limited", "-t", "20")
		short := submit(l, "--qos=limited", "-t", "10")
		l.waitState(short, "R")
		l.waitPending(long, "QOSMaxWallDurationPerJobLimit")
		l.mgr("modify", "qos", "limited", "set", "MaxWall=-1")
		l.waitState(long, "R")
		l.cancelAll(long, short)
	})
	t.Run("PartitionTimeLimit", func(t *testing.T) {
		l := l.with(t)
		// With EnforcePartLimits=NO a job over its partition's MaxTime is
		// queued, and waits.
		id := submit(l, "-t", "2-00:00:00")
		l.waitPending(id, "PartitionTimeLimit")
		l.cancelAll(id)
	})
}
