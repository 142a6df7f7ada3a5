package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes namespaces")
	}
	for _, tool := range []string{"ip", "unshare", "nsenter", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
}

// A holder with a host name and a hosts file: its namespaces are its
// own, the name and the file are what it sees, Holders finds it by its
// tag, Join gives it an address on a hub's bridge, and Remove ends it all.
func TestHoldJoinRemove(t *testing.T) {
	needRoot(t)
	prefix := fmt.Sprintf("netns-test:%d|", os.Getpid())
	t.Cleanup(func() { Remove(prefix) })
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("10.249.0.1\tnsone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hub, err := Hold(Spec{Tag: prefix + "hub"})
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Tag: prefix + "one", Hostname: "nsone", Hosts: hosts}
	one, err := Hold(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := Bridge(hub, "br0"); err != nil {
		t.Fatal(err)
	}
	if err := Join(hub, "br0", "v1", one, "eth0", "10.249.0.1/24"); err != nil {
		t.Fatal(err)
	}
	out, err := Command(one, spec.Kinds(), "sh", "-c", "hostname; cat /etc/hosts; ip -o -4 addr show dev eth0").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if s := string(out); !strings.HasPrefix(s, "nsone\n10.249.0.1\tnsone\n") || !strings.Contains(s, "inet 10.249.0.1/24") {
		t.Errorf("inside: %q", s)
	}
	if h, _ := os.Hostname(); h == "nsone" {
		t.Error("the host name changed outside")
	}
	found, err := Holders(prefix)
	if err != nil || len(found) != 2 || found[prefix+"one"] != one || found[prefix+"hub"] != hub {
		t.Errorf("Holders = %v %v, want hub %d and one %d", found, err, hub, one)
	}
	if err := Remove(prefix); err != nil {
		t.Fatal(err)
	}
	if found, _ := Holders(prefix); len(found) != 0 {
		t.Errorf("left after Remove: %v", found)
	}
}

func TestHoldRefusesBadTag(t *testing.T) {
	for _, tag := range []string{"", "two\nlines"} {
		if _, err := Hold(Spec{Tag: tag}); err == nil {
			t.Errorf("tag %q accepted", tag)
		}
	}
}
