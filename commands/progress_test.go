package commands

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Progress is drawn on terminals only: a buffer, a pipe or a file (what
// tests and scripts read) gets none, so their output stays as it was.
func TestProgressQuietOffTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, out := range map[string]any{"buffer": &bytes.Buffer{}, "pipe": w, "file": f} {
		var p *progress
		switch o := out.(type) {
		case *bytes.Buffer:
			p = newProgress(o, 3, "x")
		case *os.File:
			p = newProgress(o, 3, "x")
		}
		if p != nil {
			t.Errorf("%s: a progress bar off a terminal", name)
		}
		p.describe("y") // a nil progress does nothing
		p.set(1)
		p.done()
	}
}

// On a terminal (a pseudo-terminal here) the bar shows its description and
// count, and is cleared at the end.
func TestProgressOnTerminal(t *testing.T) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal: %v", err)
	}
	defer tty.Close()
	p := newProgress(tty, 3, "nodes")
	if p == nil {
		t.Fatal("no progress bar on a terminal")
	}
	p.describe("nodes up")
	p.set(2)
	time.Sleep(60 * time.Millisecond) // past the throttle
	p.set(3)
	p.done()
	buf := make([]byte, 4096)
	master.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, _ := master.Read(buf)
	if s := string(buf[:got]); !strings.Contains(s, "nodes") {
		t.Errorf("the terminal got %q", s)
	}
}
