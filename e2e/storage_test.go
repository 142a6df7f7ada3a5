package e2e

// Issue 4's storage tiers end to end: hpc up makes the home, scratch and
// project areas of a lab; every node of the one-machine lab gives a job
// the same $SCRATCH and $PROJECT, made on first use with the right owner
// and mode, and a $TMPDIR of its own, removed when the job ends. A lab of
// its own, of 2 nodes.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// submittedID is the id in sbatch's "Submitted batch job N".
func submittedID(t *testing.T, out string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no job id in %q", out)
	}
	id, _ := strconv.ParseUint(m[1], 10, 64)
	return id
}

func modeOf(t *testing.T, path string) (os.FileMode, uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fi.Mode(), st.Uid, st.Gid
}

func TestStorageLab(t *testing.T) {
	needLab(t)
	// Scratch and project where the config says (relative to the lab's
	// root), home where it is by default.
	l, up := startLab(t, "hpc-storage-", 2, "KillWait=2\nHpcScratchDir=areas/scratch\nHpcProjectDir=areas/project\n")
	home := filepath.Join(l.dir, "home")
	scratch := filepath.Join(l.dir, "areas", "scratch")
	project := filepath.Join(l.dir, "areas", "project")

	for _, c := range []struct {
		dir  string
		mode os.FileMode
	}{{home, os.ModeDir | 0o755}, {scratch, os.ModeDir | os.ModeSticky | 0o777}, {project, os.ModeDir | 0o755}} {
		if m, uid, _ := modeOf(t, c.dir); m != c.mode || uid != 0 {
			t.Errorf("%s: mode %v uid %d, want %v root's", c.dir, m, uid, c.mode)
		}
	}
	for _, want := range []string{"home     " + home, "scratch  " + scratch, "project  " + project} {
		if !strings.Contains(up, want) {
			t.Errorf("hpc up's summary lacks %q:\n%s", want, up)
		}
	}
	if out, _, _ := l.run(0, l.top, "status"); !strings.Contains(out, "scratch  "+scratch) {
		t.Errorf("hpc status does not show the storage:\n%s", out)
	}

	l.commandsOnPath(t)
	userDir := filepath.Join(l.top, "nobody-work")
	os.Mkdir(userDir, 0o755)
	os.Chown(userDir, nobody, nobody)

	t.Run("SameOnEveryNode", func(t *testing.T) {
		l := l.with(t)
		// One task per node: each prints what it sees.
		out, errs, code := l.run(nobody, userDir, "submit", "--wait", "-N2", "-n2", "-o", "storage.out", "--wrap",
			`srun sh -c 'echo "$SLURMD_NODENAME $SCRATCH $PROJECT $TMPDIR $(stat -c %U:%a "$SCRATCH") $(stat -c %U:%G:%a "$PROJECT")"; touch "$SCRATCH/from-$SLURMD_NODENAME"'`)
		if code != 0 {
			t.Fatalf("submit: exit %d %q %q", code, out, errs)
		}
		id := submittedID(t, out)
		b, _ := os.ReadFile(filepath.Join(userDir, "storage.out"))
		lines := sortedLines(strings.TrimSpace(string(b)))
		mine := filepath.Join(scratch, "nobody")
		group := filepath.Join(project, "nogroup")
		if len(lines) != 2 {
			t.Fatalf("output:\n%s", b)
		}
		for i, line := range lines {
			node := fmt.Sprintf("node%d", i+1)
			want := fmt.Sprintf("%s %s %s %s nobody:700 root:nogroup:2770", node, mine, group,
				filepath.Join(l.dir, node, "tmp", fmt.Sprintf("job%d", id)))
			if line != want {
				t.Errorf("task on %s:\n got %q\nwant %q", node, line, want)
			}
			if _, err := os.Stat(filepath.Join(mine, "from-"+node)); err != nil {
				t.Errorf("a file written to $SCRATCH on %s: %v", node, err)
			}
		}
		if m, uid, _ := modeOf(t, mine); m != os.ModeDir|0o700 || uid != nobody {
			t.Errorf("%s: %v uid %d", mine, m, uid)
		}
		// $TMPDIR goes with the job, on every node.
		waitFor(t, 30*time.Second, fmt.Sprintf("the TMPDIRs of job %d to go", id), func() (bool, string) {
			var left []string
			for _, n := range []string{"node1", "node2"} {
				tmp := filepath.Join(l.dir, n, "tmp", fmt.Sprintf("job%d", id))
				if _, err := os.Stat(tmp); !os.IsNotExist(err) {
					left = append(left, tmp+" still there")
				}
			}
			return len(left) == 0, strings.Join(left, "; ")
		})
	})

	// Scratch is world-writable, so anyone can make a directory there; one
	// under another user's name is not taken as that user's $SCRATCH: it
	// is moved aside (the reason in the node's log) and the job, which
	// does not fail, gets a directory of its user's own.
	t.Run("NoTrapInScratch", func(t *testing.T) {
		l := l.with(t)
		trap := filepath.Join(scratch, "root")
		os.RemoveAll(trap)
		if err := os.Mkdir(trap, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chown(trap, nobody, nobody)
		rootDir := filepath.Join(l.top, "root-work")
		os.Mkdir(rootDir, 0o755)
		out, errs, code := l.run(0, rootDir, "submit", "--wait", "--wrap", `touch "$SCRATCH/secret"`)
		if code != 0 {
			t.Fatalf("the job failed: %s %s", out, errs)
		}
		moved, _ := filepath.Glob(filepath.Join(scratch, ".refused-root-*"))
		if len(moved) != 1 || owner(t, moved[0]) != nobody {
			t.Errorf("the trap was not moved aside: %v", moved)
		}
		if owner(t, trap) != 0 {
			t.Errorf("root's $SCRATCH belongs to uid %d", owner(t, trap))
		}
		if _, err := os.Stat(filepath.Join(trap, "secret")); err != nil {
			t.Errorf("the job's file is not in its own $SCRATCH: %v", err)
		}
		logs := ""
		for i := 1; i <= 3; i++ {
			b, _ := os.ReadFile(filepath.Join(l.dir, fmt.Sprintf("node%d", i), "hpc.log"))
			logs += string(b)
		}
		if !strings.Contains(logs, "moved aside") || !strings.Contains(logs, "a directory of uid 65534") {
			t.Errorf("no node's log says why")
		}
		for _, m := range moved {
			if _, err := os.Stat(filepath.Join(m, "secret")); err == nil {
				t.Error("the job wrote into the trap")
			}
		}
	})
}
