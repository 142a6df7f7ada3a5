package testrootfs

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Marker is the file Build writes into every root file system it makes,
// found nowhere on the host: a step that can read it runs in the image.
const Marker = "/etc/hpc-test-image"

// busybox is a static busybox binary, fetched once per test process.
var busybox struct {
	once sync.Once
	bin  []byte
	why  string // why there is none
}

// Build makes a root file system in dir (created with mode 0755; the
// caller removes it) and returns dir. It holds /bin/busybox with every
// applet linked where busybox puts it (/bin/sh, /usr/bin/env, ...), the
// usual empty directories, an /etc/passwd and /etc/group with root and
// nobody, and Marker, which holds content. It skips the test when no static
// busybox can be had.
func Build(t testing.TB, dir, content string) string {
	t.Helper()
	bin := staticBusybox(t)
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "etc", "tmp", "proc", "sys", "dev", "root", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Join(dir, "tmp"), 0o1777)
	bb := filepath.Join(dir, "bin", "busybox")
	if err := os.WriteFile(bb, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bb, "--list-full").Output()
	if err != nil {
		t.Skipf("busybox --list-full: %v", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "bin/busybox" {
			continue
		}
		link := filepath.Join(dir, applet)
		os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink("/bin/busybox", link); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		Marker:       content,
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// staticBusybox returns a static busybox binary, fetched once per test
// process: from Debian's busybox-static package, else the host's
// /bin/busybox if it is a static one.
func staticBusybox(t testing.TB) []byte {
	t.Helper()
	busybox.once.Do(func() {
		bin, err := fromPackage()
		if err == nil {
			busybox.bin = bin
			return
		}
		busybox.why = err.Error()
		for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
			if isStatic(p) {
				if bin, err := os.ReadFile(p); err == nil {
					busybox.bin = bin
					return
				}
			}
		}
		busybox.why += "; and no static busybox is installed (apt-get install busybox-static)"
	})
	if busybox.bin == nil {
		t.Skipf("no static busybox to build a root file system from: %s", busybox.why)
	}
	return busybox.bin
}

// fromPackage downloads busybox-static with apt-get, unpacks it with
// dpkg-deb and returns its busybox.
func fromPackage() ([]byte, error) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return nil, errors.New("no apt-get")
	}
	dir, err := os.MkdirTemp("", "hpc-testrootfs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// _apt cannot write into a private directory: download as the caller.
	cmd := exec.Command("apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", "busybox-static")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("apt-get download busybox-static: %v: %s", err, strings.TrimSpace(string(out)))
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "busybox-static_*.deb"))
	if len(debs) == 0 {
		return nil, errors.New("apt-get download busybox-static left no package")
	}
	x := filepath.Join(dir, "x")
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], x).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("dpkg-deb -x: %v: %s", err, strings.TrimSpace(string(out)))
	}
	for _, p := range []string{"bin/busybox", "usr/bin/busybox"} {
		if f := filepath.Join(x, p); isStatic(f) {
			return os.ReadFile(f)
		}
	}
	return nil, errors.New("the busybox-static package holds no static busybox")
}

// isStatic reports whether p is an ELF executable without an interpreter.
func isStatic(p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return false
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}
