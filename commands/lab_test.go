package commands

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A client takes the first node of the lab whose daemon accepts
// connections, passing over a socket file a stopped daemon left; with
// none listening it says which sockets it tried.
func TestClientSkipsStoppedNodes(t *testing.T) {
	dir := t.TempDir()
	listen := func(node string) *net.UnixListener {
		os.MkdirAll(filepath.Join(dir, node), 0o755)
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, node, "hpc.sock"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	stopped := listen("node1")
	stopped.SetUnlinkOnClose(false)
	stopped.Close() // node1/hpc.sock stays, refusing connections
	t.Setenv("HPC_SOCKET", "")
	t.Setenv("HPC_DIR", dir)
	ctx := context.Background()
	_, err := client(ctx)
	if detail, _ := errText(err); err == nil || !strings.Contains(detail, "no node answers at "+filepath.Join(dir, "node1", "hpc.sock")) {
		t.Fatalf("with only a stopped node: %v (%s)", err, detail)
	}
	live := listen("node2")
	defer live.Close()
	c, err := client(ctx)
	if err != nil || c.Socket != filepath.Join(dir, "node2", "hpc.sock") {
		t.Fatalf("client %+v, %v; want node2's socket", c, err)
	}
}

// sockets lists each node directory's hpc.sock, in name order, and reads
// the lab directory's name as a name, not a pattern.
func TestSockets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab[1]*")
	for _, n := range []string{"node2", "node10", "home", "node1"} {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"node1", "node10", "node2"} {
		if err := os.WriteFile(filepath.Join(dir, n, "hpc.sock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sockets(dir) {
		got = append(got, strings.TrimPrefix(s, dir+"/"))
	}
	if want := "node1/hpc.sock node10/hpc.sock node2/hpc.sock"; strings.Join(got, " ") != want {
		t.Errorf("sockets: %q, want %q", got, want)
	}
	if s := sockets(filepath.Join(dir, "none")); s != nil {
		t.Errorf("a missing directory: %q", s)
	}
}
