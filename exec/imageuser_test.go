//go:build linux

package exec

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hpc/internal/testrootfs"
)

// secretText stands for a host file no step may read (the cluster key).
const secretText = "cluster-key:x:4242:4242:s3cr3t-never-in-a-step\n"

// writeSecret writes the secret into a file outside any image.
func writeSecret(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// stepPasswd makes a step's /etc/passwd and /etc/group from the image at
// root, for nobody, and returns them (or the error).
func stepPasswd(t *testing.T, root string) (passwd, group string, err error) {
	t.Helper()
	if _, err := user.LookupId("65534"); err != nil {
		t.Skip("no user 65534 on this host")
	}
	r := &containerRuntime{stateDir: t.TempDir()}
	ms, err := r.userFiles(&StepSpec{ID: "9.0", UID: nobody, GID: nobody, Image: &Image{Path: root, root: root}})
	if err != nil {
		return "", "", err
	}
	if len(ms) != 2 {
		t.Fatalf("%d binds", len(ms))
	}
	return readFile(t, ms[0].Source), readFile(t, ms[1].Source), nil
}

// The image's /etc/passwd and /etc/group are read by root: a symbolic link
// there resolves inside the image, whichever way it points out of it, so a
// host file never reaches the step's copies; the copies are made as for an
// image without those files (the user's entry alone). A link that stays in
// the image is followed as before.
func TestUserFilesConfinedToImage(t *testing.T) {
	base := t.TempDir()
	secret := writeSecret(t, base)
	os.WriteFile(filepath.Join(base, "passwd"), []byte(secretText), 0o644)
	up := strings.Repeat("../", 20) + strings.TrimPrefix(secret, "/")
	for _, c := range []struct {
		name  string
		setup func(img string)
		want  string // the image's own line expected in the copy, if any
	}{
		{"absolute link", func(img string) {
			os.Symlink(secret, filepath.Join(img, "etc/passwd"))
			os.Symlink(secret, filepath.Join(img, "etc/group"))
		}, ""},
		{"link up and out", func(img string) {
			os.Symlink(up, filepath.Join(img, "etc/passwd"))
			os.Symlink("../"+up, filepath.Join(img, "etc/group"))
		}, ""},
		{"linked etc", func(img string) {
			os.Remove(filepath.Join(img, "etc"))
			os.Symlink(base, filepath.Join(img, "etc"))
		}, ""},
		{"link to /proc", func(img string) {
			os.Symlink("/proc/self/root"+secret, filepath.Join(img, "etc/passwd"))
		}, ""},
		{"link inside the image", func(img string) {
			os.MkdirAll(filepath.Join(img, "usr/share"), 0o755)
			os.WriteFile(filepath.Join(img, "usr/share/passwd"), []byte("img:x:7:7::/:/bin/sh\n"), 0o644)
			os.Symlink("/usr/share/passwd", filepath.Join(img, "etc/passwd"))
		}, "img:x:7:7::/:/bin/sh\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "img")
			os.MkdirAll(filepath.Join(img, "etc"), 0o755)
			c.setup(img)
			passwd, group, err := stepPasswd(t, img)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(passwd+group, "s3cr3t") {
				t.Fatalf("a host file leaked into the step's copies:\n%s\n%s", passwd, group)
			}
			if want := c.want + "nobody:x:65534:65534:nobody:"; !strings.HasPrefix(passwd, want) {
				t.Errorf("passwd %q, want it to begin with %q", passwd, want)
			}
			if !strings.HasSuffix(group, ":x:65534:\n") {
				t.Errorf("group %q", group)
			}
		})
	}
}

// What an image has at /etc/passwd but cannot be one (a directory, a FIFO
// that would block a reader, a device, a file over 1 MiB) refuses the
// step, saying why; root never blocks on it nor reads it whole.
func TestUserFilesRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(p string) error
		want  string
	}{
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "its /etc/passwd is a directory, not a regular file"},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }, "its /etc/passwd is a named pipe, not a regular file"},
		{"device", func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))) }, "its /etc/passwd is a device, not a regular file"},
		{"link to a fifo", func(p string) error {
			if err := unix.Mkfifo(filepath.Join(filepath.Dir(p), "fifo"), 0o644); err != nil {
				return err
			}
			return os.Symlink("fifo", p)
		}, "its /etc/passwd is a named pipe, not a regular file"},
		{"too large", func(p string) error { return os.WriteFile(p, make([]byte, maxImageFile+1), 0o644) }, "its /etc/passwd is larger than 1024 KiB"},
		{"link loop", func(p string) error { return os.Symlink("passwd", p) }, "its /etc/passwd cannot be opened: Too many levels of symbolic links"},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "img")
			os.MkdirAll(filepath.Join(img, "etc"), 0o755)
			if err := c.setup(filepath.Join(img, "etc/passwd")); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := stepPasswd(t, img)
				done <- err
			}()
			select {
			case err := <-done:
				want := "Invalid container image " + img + ": " + c.want
				if err == nil || err.Error() != want {
					t.Errorf("error %v, want %q", err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("reading the image's /etc/passwd blocked")
			}
		})
	}
	// Exactly 1 MiB is still read.
	img := filepath.Join(t.TempDir(), "img")
	os.MkdirAll(filepath.Join(img, "etc"), 0o755)
	big := []byte(strings.Repeat("u:x:1:1::/:/bin/sh\n", maxImageFile/19))
	big = append(big, strings.Repeat("#", maxImageFile-len(big))...)
	os.WriteFile(filepath.Join(img, "etc/passwd"), big, 0o644)
	if passwd, _, err := stepPasswd(t, img); err != nil || !strings.HasPrefix(passwd, string(big)) {
		t.Errorf("a passwd of 1 MiB: %v", err)
	}
}

// The user swaps the image's /etc/passwd between a file and a link to a
// host file while root reads it: with a check before the open, root would
// now and then open the host file; confined to the image, never.
func TestUserFilesSwapRace(t *testing.T) {
	base := t.TempDir()
	secret := writeSecret(t, base)
	img := filepath.Join(base, "img")
	etc := filepath.Join(img, "etc")
	os.MkdirAll(etc, 0o755)
	file, link := filepath.Join(etc, "file"), filepath.Join(etc, "link")
	stop := make(chan struct{})
	swapped := make(chan int)
	go func() {
		n := 0
		defer func() { swapped <- n }()
		for ; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			// rename(2) replaces /etc/passwd at once: a file, then a link.
			os.WriteFile(file, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
			os.Rename(file, filepath.Join(etc, "passwd"))
			os.Symlink(secret, link)
			os.Rename(link, filepath.Join(etc, "passwd"))
		}
	}()
	deadline := time.Now().Add(time.Second)
	reads := 0
	for ; time.Now().Before(deadline); reads++ {
		passwd, _, err := stepPasswd(t, img)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(passwd, "s3cr3t") {
			close(stop)
			<-swapped
			t.Fatalf("read %d: the host file leaked:\n%s", reads, passwd)
		}
	}
	close(stop)
	t.Logf("%d reads during %d swaps", reads, <-swapped)
}

// A step in an image whose /etc/passwd is a link to a host file sees the
// user's entry, not the host file.
func TestImagePasswdLinkOut(t *testing.T) {
	e := newContainerExecutor(t, "img-passwd")
	base := testBase(t)
	secret := writeSecret(t, base)
	img := testImage(t, base)
	os.Remove(filepath.Join(img, "etc/passwd"))
	if err := os.Symlink(secret, filepath.Join(img, "etc/passwd")); err != nil {
		t.Fatal(err)
	}
	work := userDir(t, base, "work", nobody)
	out := filepath.Join(work, "out")
	r := launch(t, e, StepSpec{ID: "78.batch", UID: nobody, GID: nobody, WorkDir: work, Stdout: out, Stderr: out,
		Argv: []string{"/bin/sh", "-c", "cat " + testrootfs.Marker + " /etc/passwd; id -un"}, Image: &Image{Path: img}}).Wait()
	got := readFile(t, out)
	if strings.Contains(got, "s3cr3t") {
		t.Fatalf("the host file leaked into the step:\n%s", got)
	}
	if r.ExitCode != 0 || r.Err != nil || !strings.HasPrefix(got, imageMarker+"nobody:x:65534:65534:") || !strings.HasSuffix(got, "\nnobody\n") {
		t.Errorf("result %+v, output:\n%s", r, got)
	}
}
