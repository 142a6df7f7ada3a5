//go:build linux

package exec

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadOOMKills reads the OOM killer's counter as both cgroup versions
// write it: v1's memory.oom_control and v2's memory.events (this machine
// runs v1; the v2 file is the kernel's format, Documentation/admin-guide/
// cgroup-v2.rst).
func TestReadOOMKills(t *testing.T) {
	dir := t.TempDir()
	v1 := filepath.Join(dir, "v1")
	v2 := filepath.Join(dir, "v2")
	os.Mkdir(v1, 0o755)
	os.Mkdir(v2, 0o755)
	os.WriteFile(filepath.Join(v1, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 0o644)
	os.WriteFile(filepath.Join(v2, "memory.events"), []byte("low 0\nhigh 0\nmax 7\noom 3\noom_kill 3\noom_group_kill 0\n"), 0o644)
	if n, err := readOOMKills(map[string]string{"memory": v1}, false); err != nil || n != 2 {
		t.Errorf("v1: %d, %v", n, err)
	}
	if n, err := readOOMKills(map[string]string{"": v2}, true); err != nil || n != 3 {
		t.Errorf("v2: %d, %v", n, err)
	}
	if _, err := readOOMKills(map[string]string{}, false); err == nil {
		t.Error("v1 without a memory cgroup: no error")
	}
	os.WriteFile(filepath.Join(v2, "memory.events"), []byte("low 0\n"), 0o644)
	if _, err := readOOMKills(map[string]string{"": v2}, true); err == nil {
		t.Error("v2 without oom_kill: no error")
	}
}
