package jobspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"hpc/cluster/api"
)

// Containers, as pyxis adds them to Slurm: --container-image=DIR (a root
// file system directory or an OCI bundle), --container-mounts=SRC[:DST
// [:ro|rw]][,...] and --container-workdir=DIR, taken by sbatch (the batch
// script runs in the image) and srun (its tasks do). The client checks their
// syntax and, where it can see them, that the paths exist; the controller
// checks the syntax again and the node checks everything, with the user's
// permissions, when the step starts (hpc/exec's Image).

// The variables that carry srun's container options to the nodes that run
// its tasks, in srun's environment (as Slurm's SPANK options travel to
// slurmstepd, pyxis's among them). srun sets all three when it is given
// --container-image; otherwise they are inherited, so an srun inside a
// container step runs its own step in the same image. The node reads them
// over the job's own options.
const (
	EnvContainerImage   = "HPC_CONTAINER_IMAGE"
	EnvContainerMounts  = "HPC_CONTAINER_MOUNTS"
	EnvContainerWorkDir = "HPC_CONTAINER_WORKDIR"
)

// ContainerMount is one --container-mounts entry.
type ContainerMount struct {
	Source      string
	Destination string
	ReadOnly    bool
}

// ParseContainerMounts reads --container-mounts' value: entries separated
// by commas, each SRC[:DST[:FLAGS]], DST defaulting to SRC and FLAGS being
// "ro" or "rw" or several of those joined with '+', as pyxis writes them
// (the last wins). DST must be absolute; a relative SRC is resolved against
// cwd, and refused when cwd is "". Errors are *UsageError.
func ParseContainerMounts(s, cwd string) ([]ContainerMount, error) {
	if s == "" {
		return nil, nil
	}
	var out []ContainerMount
	for _, entry := range strings.Split(s, ",") {
		bad := func(why string) error {
			return &UsageError{Msg: fmt.Sprintf("Invalid --container-mounts specification %q: %s", entry, why), Code: 255}
		}
		parts := strings.Split(entry, ":")
		if len(parts) > 3 {
			return nil, bad("expected SRC[:DST[:ro|rw]]")
		}
		m := ContainerMount{Source: parts[0]}
		if len(parts) > 1 {
			m.Destination = parts[1]
		}
		if len(parts) > 2 {
			for _, f := range strings.Split(parts[2], "+") {
				switch f {
				case "ro":
					m.ReadOnly = true
				case "rw":
					m.ReadOnly = false
				default:
					return nil, bad(fmt.Sprintf("unknown flag %q (ro or rw)", f))
				}
			}
		}
		if m.Source == "" {
			return nil, bad("no source")
		}
		if !filepath.IsAbs(m.Source) {
			if cwd == "" {
				return nil, bad("the source must be an absolute path")
			}
			m.Source = filepath.Join(cwd, m.Source)
		}
		if m.Destination == "" {
			m.Destination = m.Source
		}
		if !filepath.IsAbs(m.Destination) {
			return nil, bad("the destination must be an absolute path")
		}
		m.Source, m.Destination = filepath.Clean(m.Source), filepath.Clean(m.Destination)
		if why := badDestination(m.Destination); why != "" {
			return nil, bad(why)
		}
		out = append(out, m)
	}
	return out, nil
}

// badDestination says why a container can have nothing mounted at dst: its
// root, and the kernel's /proc and /sys it gets fresh.
func badDestination(dst string) string {
	if dst == "/" {
		return "cannot mount over the image's root"
	}
	for _, d := range []string{"/proc", "/sys"} {
		if dst == d || strings.HasPrefix(dst, d+"/") {
			return "cannot mount over " + d + ": the step has its own"
		}
	}
	return ""
}

// FormatContainerMounts writes mounts back as --container-mounts takes
// them: SRC:DST, or SRC:DST:ro.
func FormatContainerMounts(ms []ContainerMount) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Source + ":" + m.Destination
		if m.ReadOnly {
			parts[i] += ":ro"
		}
	}
	return strings.Join(parts, ",")
}

// ResolveContainer makes the container options of spec absolute against
// cwd, in their normal form, and checks that they go together. Errors are
// *UsageError.
func ResolveContainer(spec *api.JobSpec, cwd string) error {
	if spec.ContainerImage == "" {
		if spec.ContainerMounts != "" || spec.ContainerWorkDir != "" {
			return &UsageError{Msg: "--container-mounts and --container-workdir need --container-image", Code: 255}
		}
		return nil
	}
	if !filepath.IsAbs(spec.ContainerImage) {
		spec.ContainerImage = filepath.Join(cwd, spec.ContainerImage)
	}
	spec.ContainerImage = filepath.Clean(spec.ContainerImage)
	ms, err := ParseContainerMounts(spec.ContainerMounts, cwd)
	if err != nil {
		return err
	}
	spec.ContainerMounts = FormatContainerMounts(ms)
	return nil
}

// CheckContainerPaths checks, on the submitting host, what it can of spec's
// (resolved) container options, as the user: the image is a directory,
// an OCI bundle's root file system too, and the mount sources exist. A path
// the node will see but this host does not fails here too, so it is meant
// for clusters that share their file systems (a one-machine lab, say).
// stat and readFile are the file system's (os.Stat, os.ReadFile). Errors
// are *UsageError.
func CheckContainerPaths(spec *api.JobSpec, stat func(string) (fs.FileInfo, error), readFile func(string) ([]byte, error)) error {
	if spec.ContainerImage == "" {
		return nil
	}
	img := spec.ContainerImage
	bad := func(format string, args ...any) error {
		return &UsageError{Msg: fmt.Sprintf(format, args...), Code: 1}
	}
	fi, err := stat(img)
	switch {
	case err != nil:
		return bad("Invalid --container-image %s: %s", img, errText(err))
	case !fi.IsDir():
		return bad("Invalid --container-image %s: Not a directory (an unpacked root file system or an OCI bundle)", img)
	}
	if readFile != nil {
		if b, err := readFile(filepath.Join(img, "config.json")); err == nil {
			var cfg struct {
				Root *struct {
					Path string `json:"path"`
				} `json:"root"`
			}
			if json.Unmarshal(b, &cfg) != nil || cfg.Root == nil || cfg.Root.Path == "" {
				return bad("Invalid --container-image %s: an OCI bundle's config.json must name its root file system (root.path)", img)
			}
			root := cfg.Root.Path
			if !filepath.IsAbs(root) {
				root = filepath.Join(img, root)
			}
			if fi, err := stat(root); err != nil {
				return bad("Invalid --container-image %s: the OCI bundle's root file system %s: %s", img, root, errText(err))
			} else if !fi.IsDir() {
				return bad("Invalid --container-image %s: the OCI bundle's root file system %s: Not a directory", img, root)
			}
		}
	}
	ms, err := ParseContainerMounts(spec.ContainerMounts, "")
	if err != nil {
		return err
	}
	for _, m := range ms {
		if _, err := stat(m.Source); err != nil {
			return bad("Invalid --container-mounts source %s: %s", m.Source, errText(err))
		}
	}
	return nil
}

// errText spells a file system error as strerror(3) does ("No such file or
// directory").
func errText(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		if s := en.Error(); s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// containerOption is the apply func of the --container-* options: their
// syntax is checked now, the paths resolved in Resolve.
func containerOption(name string) func(o *Options, v string) error {
	return func(o *Options, v string) error {
		bad := func(why string) error {
			return &UsageError{Msg: fmt.Sprintf("Invalid --%s specification %q: %s", name, v, why), Code: 255}
		}
		switch name {
		case "container-image":
			if v == "" {
				return bad("an image directory is required")
			}
			o.Spec.ContainerImage = v
		case "container-mounts":
			if _, err := ParseContainerMounts(v, "/"); err != nil { // sources are resolved later
				return err
			}
			o.Spec.ContainerMounts = v
		case "container-workdir":
			if !filepath.IsAbs(v) {
				return bad("must be an absolute path in the image")
			}
			o.Spec.ContainerWorkDir = filepath.Clean(v)
		}
		return nil
	}
}

// ValidateContainer checks the syntax of the container options (pyxis's
// --container-image, --container-mounts, --container-workdir), which
// clients other than sbatch and srun may get wrong; whether the paths exist
// is for the nodes to say, where the job runs.
func ValidateContainer(s *api.JobSpec) error {
	bad := func(msg string) error {
		return &api.Error{Message: "Invalid container specification", Detail: msg}
	}
	if s.ContainerImage == "" {
		if s.ContainerMounts != "" || s.ContainerWorkDir != "" {
			return bad("--container-mounts and --container-workdir need --container-image")
		}
		return nil
	}
	if !filepath.IsAbs(s.ContainerImage) {
		return bad(fmt.Sprintf("--container-image %q is not an absolute path", s.ContainerImage))
	}
	if _, err := ParseContainerMounts(s.ContainerMounts, ""); err != nil {
		return bad(err.Error())
	}
	if s.ContainerWorkDir != "" && !filepath.IsAbs(s.ContainerWorkDir) {
		return bad(fmt.Sprintf("--container-workdir %q is not an absolute path", s.ContainerWorkDir))
	}
	return nil
}
