package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"hpc/cluster/api"
)

var containers = &Scenario{
	Name:  "containers",
	Title: "the same job on the node and in a --container-image root file system",
	Needs: "steps in containers (hpc up as root, cgroups), a root file system: --image DIR or the lab directory's images/NAME",
	run:   runContainers,
}

// containerProbe is the job both runs execute: what distribution the
// root file system says it is, and how many programs its /bin holds.
const containerProbe = `echo "os-release: $(grep '^PRETTY_NAME=' /etc/os-release 2>/dev/null || echo none)"; echo "programs in /bin: $(ls /bin | wc -l)"`

// containerObs is what the containers scenario saw.
type containerObs struct {
	image           string
	host, inImage   api.Job
	hostOut, imgOut string
	// want are the probe's lines as the image's files say they must read
	// in it.
	want []string
}

func runContainers(r *Run) Verdict {
	r.needNodes(1)
	st, err := r.cl.Status(r.ctx)
	r.check(err, "hpc status")
	if !strings.HasPrefix(st.ExecMode, "containers") {
		r.skip("steps run as %q on %s (hpc status: Steps:), not in containers: start the lab as root with cgroups", st.ExecMode, st.Node)
	}
	img, why := r.findImage()
	if img == "" {
		r.skip("no root file system image: %s", why)
	}
	want, err := imageProbe(img)
	r.check(err, "reading the image "+img)
	dir, err := os.MkdirTemp("", "hpc-scenario-containers-")
	r.check(err, "a directory for the jobs' output")
	os.Chmod(dir, 0o755)
	r.onUndo("rm -r "+dir, func(context.Context) error { return os.RemoveAll(dir) })
	r.say("One job, run twice: on the node's own root file system, then with")
	r.say("--container-image=%s (as pyxis adds it to Slurm): the same", img)
	r.say("commands see another distribution and another /bin.")
	out := filepath.Join(dir, "%x-%j.out")
	plain := r.sbatch("-J", "ct-host", "-n1", "-t", "1", "-D", dir, "-o", out, "--wrap", containerProbe)
	in := r.sbatch("-J", "ct-image", "-n1", "-t", "1", "-D", dir, "-o", out, "--container-image="+img, "--wrap", containerProbe)
	r.typeCmd(fmt.Sprintf("cat %s/ct-*.out", dir))
	m := r.follow().until("the jobs to end", 90*time.Second, []uint64{plain, in}, func(m map[uint64]api.Job) bool {
		return allEnded(m, plain, in)
	})
	o := containerObs{image: img, host: m[plain], inImage: m[in], want: want}
	o.hostOut, o.imgOut = r.output(plain), r.output(in)
	r.printf("         --- ct-host (job %d):\n%s", plain, indent(o.hostOut))
	r.printf("         --- ct-image (job %d):\n%s", in, indent(o.imgOut))
	res, summary, evidence := judgeContainers(o)
	return Verdict{Result: res, Summary: summary, Evidence: evidence}
}

// findImage is the image to use: Options.Image, else the first directory
// of the lab's images/ with a /bin/sh; why says what was looked for.
func (r *Run) findImage() (img, why string) {
	if r.o.Image != "" {
		if _, err := os.Lstat(filepath.Join(r.o.Image, "bin", "sh")); err != nil {
			return "", fmt.Sprintf("%s has no /bin/sh", r.o.Image)
		}
		return filepath.Clean(r.o.Image), ""
	}
	if r.o.Lab == nil {
		return "", "no --image DIR, and the lab's directory is out of reach"
	}
	images := filepath.Join(r.o.Lab.Dir(), "images")
	entries, _ := os.ReadDir(images)
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(images, e.Name(), "bin", "sh")); err == nil {
			return filepath.Join(images, e.Name()), ""
		}
	}
	return "", fmt.Sprintf("no --image DIR, and no root file system with a /bin/sh in %s (unpack one there, e.g. docker export IMAGE | tar -x -C %s/NAME)", images, images)
}

// imageProbe is what containerProbe must print inside the image, read
// from the image's files.
func imageProbe(img string) ([]string, error) {
	pretty := "none"
	if b, err := os.ReadFile(inImage(img, "/etc/os-release")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "PRETTY_NAME=") {
				pretty = line
				break
			}
		}
	}
	entries, err := os.ReadDir(inImage(img, "/bin"))
	if err != nil {
		return nil, err
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return []string{"os-release: " + pretty, fmt.Sprintf("programs in /bin: %d", n)}, nil
}

// inImage is path in the image, its symbolic links (up to a few) resolved
// inside the image rather than on the host.
func inImage(img, path string) string {
	for range 8 {
		p := filepath.Join(img, path)
		target, err := os.Readlink(p)
		if err != nil {
			return p
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return filepath.Join(img, path)
}

// output reads a job's standard output as `cat` would on its node.
func (r *Run) output(id uint64) string {
	out, err := r.cl.JobOutput(r.ctx, id, "stdout", 0)
	if err != nil {
		return "(" + errText(err) + ")"
	}
	return out.Data
}

// indent sets text off in the narration.
func indent(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString("         " + l + "\n")
	}
	return b.String()
}

// judgeContainers checks that both runs COMPLETED, that the run in the
// image printed what the image's files say (its os-release, its /bin), and
// that the run on the node printed something else.
func judgeContainers(o containerObs) (Result, string, []string) {
	lines := func(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }
	ev := []string{
		fmt.Sprintf("job %d on %s, no image: %s", o.host.ID, compress(o.host.NodeNames()), strings.Join(lines(o.hostOut), " | ")),
		fmt.Sprintf("job %d on %s, --container-image=%s: %s", o.inImage.ID, compress(o.inImage.NodeNames()), o.image, strings.Join(lines(o.imgOut), " | ")),
		"the image's own files say: " + strings.Join(o.want, " | "),
	}
	fail := notCompleted(o.host, o.inImage)
	if got := lines(o.imgOut); strings.Join(got, "\n") != strings.Join(o.want, "\n") {
		fail = append(fail, "the job in the image did not see the image's files")
	}
	if strings.TrimSpace(o.hostOut) == "" || strings.TrimSpace(o.hostOut) == strings.TrimSpace(o.imgOut) {
		fail = append(fail, "the job without an image saw the same as the one in it")
	}
	if len(fail) > 0 {
		return Fail, joinSemi(fail), ev
	}
	return Pass, fmt.Sprintf("job %d saw the node's system (%s), job %d the image's (%s)",
		o.host.ID, lines(o.hostOut)[0], o.inImage.ID, lines(o.imgOut)[0]), ev
}
