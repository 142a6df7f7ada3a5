//go:build linux

package exec

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// TaskUsage is what one task of a running step uses now, summed over its
// processes (the task's own and those it started): sstat's per-task
// figures.
type TaskUsage struct {
	// Task is the task's global rank (its SLURM_PROCID; 0 where the
	// process does not say).
	Task int
	// Pids are the host pids of the task's processes.
	Pids []int
	// RSSKB and VMSizeKB are the resident and virtual sizes, in KiB.
	RSSKB, VMSizeKB int64
	// Pages counts the major page faults.
	Pages int64
	// CPU is the CPU time, user and system, of the processes and of the
	// children they reaped.
	CPU time.Duration
	// ReadBytes and WriteBytes are the bytes read and written (rchar and
	// wchar of /proc/<pid>/io).
	ReadBytes, WriteBytes int64
}

// LiveUsage is what a running step uses now.
type LiveUsage struct {
	Tasks []TaskUsage // by task, in rank order
	// Cgroup holds the step cgroup's figures (container mode): its
	// memory high-water mark and CPU time so far; zero in plain mode.
	Cgroup Usage
	// CgroupMemKB is the cgroup's memory use now, in KiB (container mode).
	CgroupMemKB int64
}

// LiveUsage reads what the step's processes use now: from /proc for each
// process (found in the step's cgroup in container mode, by its process
// group in plain mode), and from the step's cgroup when it has one. A
// step that has ended answers ErrStepEnded.
func (s *Step) LiveUsage() (LiveUsage, error) {
	var out LiveUsage
	select {
	case <-s.done:
		return out, ErrStepEnded
	default:
	}
	var pids []int
	switch k := s.sig.(type) {
	case *ctrStep:
		ps, paths, err := k.live()
		if err != nil {
			return out, err
		}
		pids = ps
		// A hybrid v1 host lists the unified hierarchy under "" too:
		// only a v2 host has no memory controller of its own.
		v2 := paths["memory"] == "" && paths[""] != ""
		out.Cgroup = cgroupUsage(paths, v2)
		out.CgroupMemKB = cgroupMemNow(paths, v2)
	case *plainStep:
		pids = groupPids(k.pgid)
	default:
		return out, errors.New("the step's processes are not known")
	}
	out.Tasks = tasksOf(pids)
	return out, nil
}

// live lists the step's processes (its supervisor left out) and its
// cgroup's paths.
func (k *ctrStep) live() ([]int, map[string]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended {
		return nil, nil, ErrStepEnded
	}
	all, err := k.c.Processes()
	if err != nil {
		return nil, nil, err
	}
	st, err := k.c.State()
	if err != nil {
		return nil, nil, err
	}
	pids := all[:0]
	for _, p := range all {
		if p != k.initPid {
			pids = append(pids, p)
		}
	}
	return pids, st.CgroupPaths, nil
}

// cgroupMemNow is a cgroup's memory use now in KiB (v1:
// memory.usage_in_bytes, v2: memory.current).
func cgroupMemNow(paths map[string]string, v2 bool) int64 {
	p := filepath.Join(paths["memory"], "memory.usage_in_bytes")
	if v2 {
		p = filepath.Join(paths[""], "memory.current")
	}
	n, _ := readInt(p)
	return n >> 10
}

// groupPids lists the processes of a process group.
func groupPids(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := unix.Getpgid(pid); err == nil && g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// tasksOf groups processes into tasks by their SLURM_PROCID and sums
// their figures.
func tasksOf(pids []int) []TaskUsage {
	byTask := map[int]*TaskUsage{}
	for _, pid := range pids {
		p, ok := readProc(pid)
		if !ok {
			continue // it ended meanwhile
		}
		t := byTask[p.task]
		if t == nil {
			t = &TaskUsage{Task: p.task}
			byTask[p.task] = t
		}
		t.Pids = append(t.Pids, pid)
		t.RSSKB += p.rssKB
		t.VMSizeKB += p.vmKB
		t.Pages += p.majflt
		t.CPU += p.cpu
		t.ReadBytes += p.read
		t.WriteBytes += p.write
	}
	out := make([]TaskUsage, 0, len(byTask))
	for _, t := range byTask {
		sort.Ints(t.Pids)
		out = append(out, *t)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Task < out[b].Task })
	return out
}

// procFigures is what /proc says of one process.
type procFigures struct {
	task                int
	rssKB, vmKB, majflt int64
	cpu                 time.Duration
	read, write         int64
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTick = 10 * time.Millisecond

// readProc reads a process's figures from /proc/<pid>/stat, io and
// environ; false if it is gone.
func readProc(pid int) (procFigures, bool) {
	var p procFigures
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return p, false
	}
	// The command name may hold spaces and parentheses: the fields
	// start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return p, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	num := func(n int) int64 {
		if n-3 >= len(f) {
			return 0
		}
		v, _ := strconv.ParseInt(f[n-3], 10, 64)
		return v
	}
	p.majflt = num(12)
	p.cpu = time.Duration(num(14)+num(15)+num(16)+num(17)) * clockTick
	p.vmKB = num(23) >> 10
	p.rssKB = num(24) * int64(os.Getpagesize()) >> 10
	io := readKeyed(filepath.Join(dir, "io"))
	p.read, p.write = io["rchar:"], io["wchar:"]
	if env, err := os.ReadFile(filepath.Join(dir, "environ")); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("SLURM_PROCID=")); ok {
				p.task, _ = strconv.Atoi(string(v))
				break
			}
		}
	}
	return p, true
}

// AsUser runs fn on an OS thread of its own whose file-system identity is
// the user's (see asUser): the files fn opens are checked against the
// user's permissions and those it creates are the user's. The agent copies
// files into and out of jobs (sbcast, sgather) with it.
func AsUser(uid, gid uint32, groups []uint32, fn func() error) error {
	return asUser(uid, gid, groups, fn)
}
