package jobspec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The container options as sbatch takes them: on the command line and in
// #SBATCH lines, relative paths made absolute against the submit
// directory, mounts written back in their normal form.
func TestContainerOptions(t *testing.T) {
	script := []byte("#!/bin/sh\n#SBATCH --container-image=img --container-mounts=data:/data:ro+rw,/scratch\n#SBATCH --container-workdir=/data/\ncat /etc/os-release\n")
	in := Input{Cwd: "/home/u", ReadFile: func(string) ([]byte, error) { return script, nil }}
	o, err := Resolve([]string{"job.sh"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if s := o.Spec; s.ContainerImage != "/home/u/img" || s.ContainerMounts != "/home/u/data:/data,/scratch:/scratch" || s.ContainerWorkDir != "/data" {
		t.Errorf("from directives: %q %q %q", s.ContainerImage, s.ContainerMounts, s.ContainerWorkDir)
	}
	// The command line wins.
	o, err = Resolve([]string{"--container-image", "/opt/images/debian", "--container-mounts=/a:/b:ro", "job.sh"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if s := o.Spec; s.ContainerImage != "/opt/images/debian" || s.ContainerMounts != "/a:/b:ro" || s.ContainerWorkDir != "/data" {
		t.Errorf("from the command line: %q %q %q", s.ContainerImage, s.ContainerMounts, s.ContainerWorkDir)
	}
	// No container options: nothing set.
	o, err = Resolve([]string{"--wrap", "true"}, Input{Cwd: "/w"})
	if err != nil || o.Spec.ContainerImage != "" || o.Spec.ContainerMounts != "" || o.Spec.ContainerWorkDir != "" {
		t.Errorf("without container options: %v %+v", err, o)
	}
}

func TestContainerOptionErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
		code int
	}{
		{[]string{"--container-image=", "--wrap", "true"}, `Invalid --container-image specification "": an image directory is required`, 255},
		{[]string{"--container-image=/i", "--container-mounts=/a:/b:c:d", "--wrap", "true"}, `Invalid --container-mounts specification "/a:/b:c:d": expected SRC[:DST[:ro|rw]]`, 255},
		{[]string{"--container-image=/i", "--container-mounts=/a:/b:rx", "--wrap", "true"}, `Invalid --container-mounts specification "/a:/b:rx": unknown flag "rx" (ro or rw)`, 255},
		{[]string{"--container-image=/i", "--container-mounts=/a:b", "--wrap", "true"}, `Invalid --container-mounts specification "/a:b": the destination must be an absolute path`, 255},
		{[]string{"--container-image=/i", "--container-mounts=/a,,/b", "--wrap", "true"}, `Invalid --container-mounts specification "": no source`, 255},
		{[]string{"--container-image=/i", "--container-mounts=/a:/proc/x", "--wrap", "true"}, `Invalid --container-mounts specification "/a:/proc/x": cannot mount over /proc: the step has its own`, 255},
		{[]string{"--container-image=/i", "--container-mounts=/a:/", "--wrap", "true"}, `Invalid --container-mounts specification "/a:/": cannot mount over the image's root`, 255},
		{[]string{"--container-image=/i", "--container-workdir=data", "--wrap", "true"}, `Invalid --container-workdir specification "data": must be an absolute path in the image`, 255},
		{[]string{"--container-mounts=/a", "--wrap", "true"}, "--container-mounts and --container-workdir need --container-image", 255},
	} {
		_, err := Resolve(c.args, Input{Cwd: "/w"})
		var ue *UsageError
		if !errors.As(err, &ue) || ue.Msg != c.msg || ue.Code != c.code {
			t.Errorf("Resolve(%q): %#v, want %q (%d)", c.args, err, c.msg, c.code)
		}
	}
}

func TestParseContainerMounts(t *testing.T) {
	got, err := ParseContainerMounts("/a,rel:/r:ro,/c:/d:rw,/e/:/f/:rw+ro", "/cwd")
	want := []ContainerMount{
		{Source: "/a", Destination: "/a"}, {Source: "/cwd/rel", Destination: "/r", ReadOnly: true},
		{Source: "/c", Destination: "/d"}, {Source: "/e", Destination: "/f", ReadOnly: true},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseContainerMounts = %v, %v", got, err)
	}
	if s := FormatContainerMounts(got); s != "/a:/a,/cwd/rel:/r:ro,/c:/d,/e:/f:ro" {
		t.Errorf("FormatContainerMounts = %q", s)
	}
	if _, err := ParseContainerMounts("rel:/r", ""); err == nil || err.Error() != `Invalid --container-mounts specification "rel:/r": the source must be an absolute path` {
		t.Errorf("relative source without a directory: %v", err)
	}
}

// What the submitting host can check: the image is a directory (a bundle's
// root file system too) and the mount sources exist.
func TestCheckContainerPaths(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	os.Mkdir(rootfs, 0o755)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	bundle := func(name, config string) string {
		d := filepath.Join(dir, name)
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, "config.json"), []byte(config), 0o644)
		return d
	}
	good := bundle("good", `{"root":{"path":"`+rootfs+`"}}`)
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		image, mounts, want string
	}{
		{rootfs, "", ""},
		{good, file + ":/f," + rootfs + ":/r:ro", ""},
		{missing, "", "Invalid --container-image " + missing + ": No such file or directory"},
		{file, "", "Invalid --container-image " + file + ": Not a directory (an unpacked root file system or an OCI bundle)"},
		{bundle("b1", `{"root":{"path":"rootfs"}}`), "", "Invalid --container-image " + filepath.Join(dir, "b1") + ": the OCI bundle's root file system " + filepath.Join(dir, "b1", "rootfs") + ": No such file or directory"},
		{bundle("b2", `{}`), "", "Invalid --container-image " + filepath.Join(dir, "b2") + ": an OCI bundle's config.json must name its root file system (root.path)"},
		{bundle("b3", `{"root":{"path":"`+file+`"}}`), "", "Invalid --container-image " + filepath.Join(dir, "b3") + ": the OCI bundle's root file system " + file + ": Not a directory"},
		{rootfs, missing + ":/m", "Invalid --container-mounts source " + missing + ": No such file or directory"},
	} {
		spec := &Options{}
		spec.Spec.ContainerImage, spec.Spec.ContainerMounts = c.image, c.mounts
		err := CheckContainerPaths(&spec.Spec, os.Stat, os.ReadFile)
		var ue *UsageError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v", c.image, c.mounts, err)
		case c.want != "" && (!errors.As(err, &ue) || ue.Msg != c.want || ue.Code != 1):
			t.Errorf("%s %s: %v, want %q", c.image, c.mounts, err, c.want)
		}
	}
	// Resolve checks them when given a Stat.
	_, err := Resolve([]string{"--container-image=missing", "--wrap", "true"}, Input{Cwd: dir, Stat: os.Stat, ReadFile: os.ReadFile})
	if err == nil || err.Error() != "Invalid --container-image "+missing+": No such file or directory" {
		t.Errorf("Resolve with a missing image: %v", err)
	}
}
