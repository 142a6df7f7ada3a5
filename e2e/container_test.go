package e2e

// Issue 4, item 7: containers as pyxis gives them to Slurm. A real 2-node
// lab of its own runs batch scripts and srun steps in a tiny root file
// system built from Debian's busybox-static during the test:
// --container-image, --container-mounts, --container-workdir, the job's
// working directory and $TMPDIR in the image, errors at submit time and on
// the node, and the memory limit in the image.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"hpc/cluster/api"
	"hpc/internal/testrootfs"
)

const containerMarker = "hpc container test image\n"

func TestContainerImage(t *testing.T) {
	needLab(t)
	// The image first: without busybox there is nothing to test.
	images, err := os.MkdirTemp("", "hpc-container-images-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(images) })
	os.Chmod(images, 0o755)
	img := testrootfs.Build(t, filepath.Join(images, "img"), containerMarker)
	// A command only the image has.
	if err := os.WriteFile(filepath.Join(img, "bin", "only-in-image"), []byte("#!/bin/sh\necho only in the image: $(cat "+testrootfs.Marker+")\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noShell := filepath.Join(images, "no-shell")
	os.MkdirAll(filepath.Join(noShell, "etc"), 0o755)

	l, _ := startLab(t, "hpc-container-", 2, "KillWait=2\n")
	if out, _, _ := l.run(0, l.top, "status"); !strings.Contains(out, "Steps:    containers") {
		t.Skipf("steps do not run in containers here:\n%s", out)
	}
	l.commandsOnPath(t)
	work := filepath.Join(l.top, "work")
	os.Mkdir(work, 0o755)
	os.Chown(work, nobody, nobody)
	idRE := regexp.MustCompile(`Submitted batch job (\d+)`)
	idOf := func(t *testing.T, out string) uint64 {
		m := idRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no job id in %q", out)
		}
		id, _ := strconv.ParseUint(m[1], 10, 64)
		return id
	}
	read := func(t *testing.T, p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// The batch script runs in the image, as its user, in its working
	// directory (the host's, bound in and writable), with /proc, /dev,
	// /dev/shm, a read-only /sys and its $TMPDIR.
	t.Run("Batch", func(t *testing.T) {
		l := l.with(t)
		script := "cat " + testrootfs.Marker + `
test -e ` + l.bin + ` && echo host-visible || echo host-hidden
pwd
id -u
echo from-the-image > written
touch "$TMPDIR/tmpfile" && echo tmpdir
test -r /proc/self/status && echo proc
echo shm > /dev/shm/x && cat /dev/shm/x
touch /sys/x 2>/dev/null && echo sys-writable || echo sys-read-only
touch /x 2>/dev/null && echo root-writable || echo root-read-only
echo done > /dev/null && echo devnull`
		out, errs, code := l.run(nobody, work, "submit", "--wait", "--container-image", img, "-o", "batch.out", "--wrap", script)
		if code != 0 {
			t.Fatalf("submit: %d %q %q", code, out, errs)
		}
		want := containerMarker + "host-hidden\n" + work + "\n65534\ntmpdir\nproc\nshm\nsys-read-only\nroot-read-only\ndevnull\n"
		if got := read(t, filepath.Join(work, "batch.out")); got != want {
			t.Errorf("batch output:\n%s\nwant:\n%s", got, want)
		}
		if got := read(t, filepath.Join(work, "written")); got != "from-the-image\n" {
			t.Errorf("file written in the working directory: %q", got)
		}
		if uid := owner(t, filepath.Join(work, "written")); uid != nobody {
			t.Errorf("written by uid %d", uid)
		}
		if j := l.job(idOf(t, out)); j.State != api.StateCompleted || j.Spec.ContainerImage != img {
			t.Errorf("job %s, image %q", j.State, j.Spec.ContainerImage)
		}
	})

	// srun runs its tasks in the image: on its own (making an
	// allocation), across nodes, with commands only the image has; and
	// inside a batch job that runs on the host, where the next srun
	// without the option is on the host again.
	t.Run("Srun", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(nobody, work, "srun", "--container-image="+img, "-N2", "-l", "sh", "-c", "cat "+testrootfs.Marker+"; echo $(pwd) $(id -u)")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		sort.Strings(lines)
		marker := strings.TrimSpace(containerMarker)
		want := []string{"0: " + marker, fmt.Sprintf("0: %s 65534", work), "1: " + marker, fmt.Sprintf("1: %s 65534", work)}
		sort.Strings(want)
		if code != 0 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("srun -N2: %d %q %q", code, out, errs)
		}
		if nodes := l.job(l.lastJob()).NodeNames(); len(nodes) != 2 {
			t.Errorf("srun -N2 ran on %v", nodes)
		}
		out, errs, code = l.run(nobody, work, "srun", "--container-image="+img, "only-in-image")
		if code != 0 || out != "only in the image: "+containerMarker {
			t.Errorf("a command only the image has: %d %q %q", code, out, errs)
		}
		_, errs, code = l.run(nobody, work, "srun", "--container-image="+img, "nosuchcommand")
		if code != 2 || !strings.Contains(errs, "slurmstepd: error: execve(): nosuchcommand: No such file or directory") {
			t.Errorf("a command the image lacks: %d %q", code, errs)
		}

		script := "srun --container-image=" + img + " cat " + testrootfs.Marker + "\nsrun cat " + testrootfs.Marker + " 2>/dev/null || echo not-on-the-host\n"
		out, errs, code = l.run(nobody, work, "submit", "--wait", "-o", "steps.out", "--wrap", script)
		if code != 0 {
			t.Fatalf("submit: %d %q %q", code, out, errs)
		}
		if got := read(t, filepath.Join(work, "steps.out")); got != containerMarker+"not-on-the-host\n" {
			t.Errorf("steps of a host job: %q", got)
		}

		// salloc, as pyxis's: its command stays on the host, the sruns
		// it starts run in the image.
		out, errs, code = l.run(nobody, work, "salloc", "-Q", "--container-image", img, "-N2", "sh", "-c",
			"cat "+testrootfs.Marker+" 2>/dev/null || echo salloc-on-the-host; srun -l cat "+testrootfs.Marker+" | sort")
		if want := "salloc-on-the-host\n0: " + containerMarker + "1: " + containerMarker; code != 0 || out != want {
			t.Errorf("salloc --container-image: %d %q %q, want %q", code, out, errs, want)
		}
	})

	// --container-mounts (relative sources are the submit directory's),
	// read-only ones refuse writes; --container-workdir is where the
	// script starts.
	t.Run("Mounts", func(t *testing.T) {
		l := l.with(t)
		for _, d := range []string{"data", "ro"} {
			p := filepath.Join(work, d)
			os.Mkdir(p, 0o755)
			os.WriteFile(filepath.Join(p, "in"), []byte(d+" in\n"), 0o644)
			os.Chown(p, nobody, nobody)
		}
		script := "pwd; cat /data/in /ro/in; echo new > /data/new\n(echo x > /ro/x) 2>/dev/null && echo ro-writable || echo ro-refused"
		out, errs, code := l.run(nobody, work, "submit", "--wait", "--container-image", img, "--container-mounts=data:/data,ro:/ro:ro",
			"--container-workdir=/data", "-o", "mounts.out", "--wrap", script)
		if code != 0 {
			t.Fatalf("submit: %d %q %q", code, out, errs)
		}
		if got := read(t, filepath.Join(work, "mounts.out")); got != "/data\ndata in\nro in\nro-refused\n" {
			t.Errorf("mounts: %q", got)
		}
		if got := read(t, filepath.Join(work, "data", "new")); got != "new\n" {
			t.Errorf("written through the mount: %q", got)
		}
		if j := l.job(idOf(t, out)); j.Spec.ContainerMounts != filepath.Join(work, "data")+":/data,"+filepath.Join(work, "ro")+":/ro:ro" {
			t.Errorf("the job's mounts: %q", j.Spec.ContainerMounts)
		}
		// srun takes them too.
		out, errs, code = l.run(nobody, work, "srun", "--container-image", img, "--container-mounts", "data:/d:ro", "--container-workdir", "/d", "sh", "-c", "pwd; cat in; touch x 2>/dev/null || echo refused")
		if code != 0 || out != "/d\ndata in\nrefused\n" {
			t.Errorf("srun with mounts: %d %q %q", code, out, errs)
		}
	})

	// Bad input: refused at submit time with sbatch's and srun's errors
	// where the client can tell; the controller checks the syntax of what
	// other clients send; what only the node can tell fails the job with
	// the reason, and the node goes on running jobs.
	t.Run("Errors", func(t *testing.T) {
		l := l.with(t)
		missing := filepath.Join(work, "missing")
		for _, c := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"submit", "--container-image", missing, "--wrap", "true"}, 1,
				"sbatch: error: Invalid --container-image " + missing + ": No such file or directory\n"},
			{[]string{"submit", "--container-image", filepath.Join(img, "etc", "passwd"), "--wrap", "true"}, 1,
				"sbatch: error: Invalid --container-image " + filepath.Join(img, "etc", "passwd") + ": Not a directory (an unpacked root file system or an OCI bundle)\n"},
			{[]string{"submit", "--container-image", img, "--container-mounts=/a:/b:c:d", "--wrap", "true"}, 255,
				"sbatch: error: Invalid --container-mounts specification \"/a:/b:c:d\": expected SRC[:DST[:ro|rw]]\n"},
			{[]string{"submit", "--container-image", img, "--container-mounts=nowhere:/n", "--wrap", "true"}, 1,
				"sbatch: error: Invalid --container-mounts source " + filepath.Join(work, "nowhere") + ": No such file or directory\n"},
			{[]string{"submit", "--container-mounts=/tmp", "--wrap", "true"}, 255,
				"sbatch: error: --container-mounts and --container-workdir need --container-image\n"},
			{[]string{"srun", "--container-image", missing, "true"}, 1,
				"srun: error: Invalid --container-image " + missing + ": No such file or directory\n"},
			{[]string{"srun", "--container-image", img, "--container-mounts=/x:rel", "true"}, 255,
				"srun: error: Invalid --container-mounts specification \"/x:rel\": the destination must be an absolute path\n"},
			{[]string{"salloc", "--container-image", missing, "true"}, 1,
				"salloc: error: Invalid --container-image " + missing + ": No such file or directory\n"},
		} {
			out, errs, code := l.run(nobody, work, c.args...)
			if code != c.code || errs != c.want || out != "" {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d %q", c.args, code, out, errs, c.code, c.want)
			}
		}

		cl := api.NewClient(filepath.Join(l.dir, "node1", "hpc.sock"))
		for _, spec := range []api.JobSpec{
			{ContainerImage: "relative"},
			{ContainerImage: img, ContainerMounts: "/a:/b:bad"},
			{ContainerMounts: "/a"},
			{ContainerImage: img, ContainerWorkDir: "w"},
		} {
			spec.Script, spec.WorkDir = "#!/bin/sh\ntrue\n", work
			_, err := cl.Submit(context.Background(), spec)
			if ae, ok := err.(*api.Error); !ok || ae.Message != "Invalid container specification" || ae.Detail == "" {
				t.Errorf("submit %+v through the API: %#v", spec, err)
			}
		}

		// Only the node sees that the image has no shell to start the
		// step with.
		out, _, code := l.run(nobody, work, "submit", "--wait", "--container-image", noShell, "-o", "noshell.out", "--wrap", "true")
		j := l.job(idOf(t, out))
		reason := "Invalid container image " + noShell + ": it has no usable /bin/sh (every process of the step starts through it): No such file or directory"
		if code == 0 || j.State != api.StateFailed || j.Reason != reason {
			t.Errorf("image without a shell: exit %d, job %s %q", code, j.State, j.Reason)
		}
		_, errs, code := l.run(nobody, work, "srun", "--container-image", noShell, "true")
		if code != 1 || !strings.Contains(errs, reason) {
			t.Errorf("srun in an image without a shell: %d %q", code, errs)
		}
		if _, _, code := l.run(nobody, work, "submit", "--wait", "--container-image", img, "--wrap", "true"); code != 0 {
			t.Errorf("the next job failed: %d", code)
		}
	})

	// The job's memory limit holds in the image: over it, the job ends
	// OUT_OF_MEMORY.
	t.Run("OutOfMemory", func(t *testing.T) {
		l := l.with(t)
		out, errs, code := l.run(nobody, work, "submit", "--wait", "--mem=50M", "--container-image", img, "-o", "oom.out",
			"--wrap", "dd if=/dev/zero of=/dev/null bs=200M count=1")
		if code == 0 {
			t.Errorf("over --mem in an image: exit 0 %q %q", out, errs)
		}
		id := idOf(t, out)
		if j := l.job(id); j.State != api.StateOutOfMemory {
			t.Errorf("over --mem in an image: job %s", j.State)
		}
		if got := read(t, filepath.Join(work, "oom.out")); !strings.Contains(got, fmt.Sprintf("Detected 1 oom-kill event(s) in StepId=%d.batch", id)) {
			t.Errorf("output of the OOM job: %q", got)
		}
	})
}
