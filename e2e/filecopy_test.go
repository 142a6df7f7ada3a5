package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runLink runs one of the lab's Slurm-named links (sstat, sbcast, ...) as
// uid in dir, with extra environment; stdout, stderr and the exit status.
func (l *labT) runLink(uid int, dir string, env []string, name string, args ...string) (string, string, int) {
	l.t.Helper()
	cmd := exec.Command(filepath.Join(l.links, name), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HPC_DIR="+l.dir), env...)
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		cmd.Env = append(cmd.Env, "HOME="+dir)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		l.t.Fatalf("%s %v: %v", name, args, err)
	}
	return out.String(), errb.String(), code
}

// sstat, sbcast and sgather in a two-node lab (steps in containers): a
// job of nobody's runs a step on both nodes; sstat reads its tasks' live
// usage from their cgroups and processes; sbcast puts a file on both
// nodes as nobody's, sgather brings it back; another user may do none of
// it.
func TestLabSstatSbcast(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-sstat-", 2, "")
	l.commandsOnPath(t)
	work := filepath.Join(l.top, "nobody-work")
	os.Mkdir(work, 0o755)
	os.Chown(work, nobody, nobody)
	id := l.submit(nobody, work, "-N2", "-n2", "-o", "out", "--wrap",
		`srun sh -c 'head -c 3000000 /dev/zero >/dev/null; exec sleep 120'`)
	t.Cleanup(func() { l.run(0, l.top, "cancel", fmt.Sprint(id)) })
	jid := fmt.Sprint(id)
	var line string
	waitFor(t, 60*time.Second, "sstat to show the step", func() (bool, string) {
		out, errs, _ := l.runLink(nobody, work, nil, "sstat", "-P", "-n", "-j", jid, "-o", "JobID,NTasks,Nodelist,MaxRSS,MaxDiskRead,MinCPUTask,ConsumedEnergy")
		line = strings.TrimSpace(out)
		return strings.HasPrefix(line, jid+".0|2|node[1-2]|") && !strings.Contains(line, "||"), out + errs
	})
	f := strings.Split(line, "|")
	if f[3] == "0" || f[4] == "0" || f[6] != "0" {
		t.Errorf("sstat line %q", line)
	}
	// Root sees every step, the batch step too, with the header.
	out, errs, code := l.runLink(0, l.top, nil, "sstat", "-a", "-j", jid, "-o", "JobID,NTasks")
	if code != 0 || !strings.Contains(out, "JobID") || !strings.Contains(out, jid+".batch") || !strings.Contains(out, jid+".0") {
		t.Errorf("sstat -a as root: %d %q %q", code, out, errs)
	}
	// Another user: Slurm's error for each step.
	const other = 60001
	out, errs, code = l.runLink(other, l.top, nil, "sstat", "-n", "-j", jid)
	if code != 0 || out != "" || !strings.Contains(errs, "sstat: error: problem getting step_layout for StepId="+jid+".0: Invalid user id") {
		t.Errorf("sstat as another user: %d %q %q", code, out, errs)
	}

	// sbcast: both nodes write the same path here (one machine).
	src := filepath.Join(work, "src")
	data := bytes.Repeat([]byte("sbcast "), 1<<20)
	os.WriteFile(src, data, 0o644)
	os.Chown(src, nobody, nobody)
	env := []string{"SLURM_JOB_ID=" + jid}
	if out, errs, code := l.runLink(nobody, work, env, "sbcast", "-f", "-p", "src", "dst"); code != 0 {
		t.Fatalf("sbcast: %d %q %q", code, out, errs)
	}
	dst := filepath.Join(work, "dst")
	if b, _ := os.ReadFile(dst); !bytes.Equal(b, data) || owner(t, dst) != nobody {
		t.Errorf("sbcast's copy: %d bytes, owner %d", len(b), owner(t, dst))
	}
	_, errs, code = l.runLink(nobody, work, env, "sbcast", "src", "dst")
	if code == 0 || !strings.Contains(errs, "sbcast: error: REQUEST_FILE_BCAST(node1): File exists") {
		t.Errorf("sbcast without -f: %d %q", code, errs)
	}
	_, errs, code = l.runLink(other, l.top, nil, "sbcast", "-j", jid, src, filepath.Join(work, "other"))
	if code == 0 || !strings.Contains(errs, "sbcast: error: Slurm job "+jid+" lookup error: Access/permission denied") {
		t.Errorf("sbcast by another user: %d %q", code, errs)
	}
	if _, err := os.Lstat(filepath.Join(work, "other")); err == nil {
		t.Error("another user's sbcast wrote into the job's nodes")
	}

	// sgather -k: dst of each node as dst.<node> here, nobody's.
	if out, errs, code := l.runLink(nobody, work, env, "sgather", "-k", "dst", "back"); code != 0 {
		t.Fatalf("sgather: %d %q %q", code, out, errs)
	}
	for _, n := range []string{"node1", "node2"} {
		p := filepath.Join(work, "back."+n)
		if b, _ := os.ReadFile(p); !bytes.Equal(b, data) || owner(t, p) != nobody {
			t.Errorf("%s: %d bytes, owner %d", p, len(b), owner(t, p))
		}
	}
	if _, err := os.Stat(dst); err != nil {
		t.Errorf("sgather -k removed the source: %v", err)
	}
	_, errs, code = l.runLink(other, l.top, nil, "sgather", "-j", jid, dst, filepath.Join(l.top, "stolen"))
	if code == 0 || !strings.Contains(errs, "Access/permission denied") {
		t.Errorf("sgather by another user: %d %q", code, errs)
	}

	// Once the job has ended: no steps, no copies.
	l.run(0, l.top, "cancel", jid)
	l.waitState(id, "CA")
	_, errs, _ = l.runLink(nobody, work, nil, "sstat", "-j", jid)
	if !strings.Contains(errs, "sstat: error: No steps running for job "+jid) {
		t.Errorf("sstat of an ended job: %q", errs)
	}
	_, errs, code = l.runLink(nobody, work, env, "sbcast", "-f", "src", "dst")
	if code == 0 || !strings.Contains(errs, "lookup error: Job/step already completing or completed") {
		t.Errorf("sbcast into an ended job: %d %q", code, errs)
	}
}
