//go:build linux

package exec

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupUsage reads what a step's cgroup used: its memory high-water mark
// and its CPU time (v1: memory.max_usage_in_bytes, cpuacct.usage_user and
// usage_sys; v2: memory.peak, cpu.stat).
func cgroupUsage(paths map[string]string, v2 bool) Usage {
	var u Usage
	if v2 {
		dir := paths[""]
		if n, ok := readInt(filepath.Join(dir, "memory.peak")); ok {
			u.MaxRSSKB = n >> 10
		}
		stat := readKeyed(filepath.Join(dir, "cpu.stat"))
		u.UserCPU = time.Duration(stat["user_usec"]) * time.Microsecond
		u.SystemCPU = time.Duration(stat["system_usec"]) * time.Microsecond
		return u
	}
	if n, ok := readInt(filepath.Join(paths["memory"], "memory.max_usage_in_bytes")); ok {
		u.MaxRSSKB = n >> 10
	}
	acct := paths["cpuacct"]
	if n, ok := readInt(filepath.Join(acct, "cpuacct.usage_user")); ok {
		u.UserCPU = time.Duration(n)
		if n, ok := readInt(filepath.Join(acct, "cpuacct.usage_sys")); ok {
			u.SystemCPU = time.Duration(n)
		}
		return u
	}
	// Older kernels: clock ticks.
	stat := readKeyed(filepath.Join(acct, "cpuacct.stat"))
	const tick = 10 * time.Millisecond // USER_HZ = 100
	u.UserCPU, u.SystemCPU = time.Duration(stat["user"])*tick, time.Duration(stat["system"])*tick
	return u
}

// rusageOf is the usage of a reaped process (and its reaped children).
func rusageOf(ps *os.ProcessState) Usage {
	if ps == nil {
		return Usage{}
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return Usage{}
	}
	return Usage{MaxRSSKB: ru.Maxrss, UserCPU: time.Duration(ru.Utime.Nano()), SystemCPU: time.Duration(ru.Stime.Nano())}
}

// add sums CPU times and keeps the larger peak.
func (u *Usage) add(v Usage) {
	u.MaxRSSKB = max(u.MaxRSSKB, v.MaxRSSKB)
	u.UserCPU += v.UserCPU
	u.SystemCPU += v.SystemCPU
}

func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// readKeyed reads a "key value" per line file.
func readKeyed(path string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}
