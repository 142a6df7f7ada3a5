package promtext

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The Go runtime's and the process's figures, under the names Prometheus's
// client library gives them (go_*, process_*), so that dashboards made
// for any Go program read them.
var (
	goGoroutines   = &Family{Name: "go_goroutines", Type: Gauge, Help: "Number of goroutines that currently exist."}
	goThreads      = &Family{Name: "go_threads", Type: Gauge, Help: "Number of OS threads created."}
	goInfo         = &Family{Name: "go_info", Type: Gauge, Help: "Information about the Go environment.", Labels: []string{"version"}}
	goGC           = &Family{Name: "go_gc_duration_seconds", Type: Summary, Help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles."}
	goMaxProcs     = &Family{Name: "go_sched_gomaxprocs_threads", Type: Gauge, Help: "The current runtime.GOMAXPROCS setting."}
	goAlloc        = &Family{Name: "go_memstats_alloc_bytes", Type: Gauge, Help: "Number of bytes allocated in heap and currently in use."}
	goAllocTotal   = &Family{Name: "go_memstats_alloc_bytes_total", Type: Counter, Help: "Total number of bytes allocated in heap until now, even if released already."}
	goSys          = &Family{Name: "go_memstats_sys_bytes", Type: Gauge, Help: "Number of bytes obtained from system."}
	goMallocs      = &Family{Name: "go_memstats_mallocs_total", Type: Counter, Help: "Total number of heap objects allocated."}
	goFrees        = &Family{Name: "go_memstats_frees_total", Type: Counter, Help: "Total number of heap objects frees."}
	goHeapAlloc    = &Family{Name: "go_memstats_heap_alloc_bytes", Type: Gauge, Help: "Number of heap bytes allocated and currently in use."}
	goHeapSys      = &Family{Name: "go_memstats_heap_sys_bytes", Type: Gauge, Help: "Number of heap bytes obtained from system."}
	goHeapIdle     = &Family{Name: "go_memstats_heap_idle_bytes", Type: Gauge, Help: "Number of heap bytes waiting to be used."}
	goHeapInuse    = &Family{Name: "go_memstats_heap_inuse_bytes", Type: Gauge, Help: "Number of heap bytes that are in use."}
	goHeapReleased = &Family{Name: "go_memstats_heap_released_bytes", Type: Gauge, Help: "Number of heap bytes released to OS."}
	goHeapObjects  = &Family{Name: "go_memstats_heap_objects", Type: Gauge, Help: "Number of currently allocated objects."}
	goStackInuse   = &Family{Name: "go_memstats_stack_inuse_bytes", Type: Gauge, Help: "Number of bytes obtained from system for stack allocator in non-CGO environments."}
	goNextGC       = &Family{Name: "go_memstats_next_gc_bytes", Type: Gauge, Help: "Number of heap bytes when next garbage collection will take place."}
	goLastGC       = &Family{Name: "go_memstats_last_gc_time_seconds", Type: Gauge, Help: "Number of seconds since 1970 of last garbage collection."}

	procCPU     = &Family{Name: "process_cpu_seconds_total", Type: Counter, Help: "Total user and system CPU time spent in seconds."}
	procRSS     = &Family{Name: "process_resident_memory_bytes", Type: Gauge, Help: "Resident memory size in bytes."}
	procVirtual = &Family{Name: "process_virtual_memory_bytes", Type: Gauge, Help: "Virtual memory size in bytes."}
	procStart   = &Family{Name: "process_start_time_seconds", Type: Gauge, Help: "Start time of the process since unix epoch in seconds."}
	procOpenFDs = &Family{Name: "process_open_fds", Type: Gauge, Help: "Number of open file descriptors."}
	procMaxFDs  = &Family{Name: "process_max_fds", Type: Gauge, Help: "Maximum number of open file descriptors."}
)

// AddRuntime adds the Go runtime's figures and, where /proc can be read,
// the process's.
func (p *Page) AddRuntime() {
	p.Add(goGoroutines, float64(runtime.NumGoroutine()))
	p.Add(goThreads, float64(pprof.Lookup("threadcreate").Count()))
	p.Add(goInfo, 1, runtime.Version())
	p.Add(goMaxProcs, float64(runtime.GOMAXPROCS(0)))

	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	quantiles := make([][2]float64, 5)
	for i := range quantiles {
		quantiles[i] = [2]float64{float64(i) / 4, gc.PauseQuantiles[i].Seconds()}
	}
	p.AddSummary(goGC, quantiles, gc.PauseTotal.Seconds(), uint64(gc.NumGC))

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for _, g := range []struct {
		f *Family
		v uint64
	}{
		{goAlloc, ms.Alloc}, {goAllocTotal, ms.TotalAlloc}, {goSys, ms.Sys}, {goMallocs, ms.Mallocs},
		{goFrees, ms.Frees}, {goHeapAlloc, ms.HeapAlloc}, {goHeapSys, ms.HeapSys}, {goHeapIdle, ms.HeapIdle},
		{goHeapInuse, ms.HeapInuse}, {goHeapReleased, ms.HeapReleased}, {goHeapObjects, ms.HeapObjects},
		{goStackInuse, ms.StackInuse}, {goNextGC, ms.NextGC},
	} {
		p.Add(g.f, float64(g.v))
	}
	p.Add(goLastGC, float64(ms.LastGC)/1e9)
	p.addProcess()
}

// Linux reports times in /proc in clock ticks of USER_HZ, 100 on every
// architecture Go runs on.
const userHZ = 100

// addProcess adds the process's figures from /proc/self (nothing where it
// cannot be read: not Linux, or /proc not mounted).
func (p *Page) addProcess() {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return
	}
	// The fields after the command's name, which is in parentheses and
	// may hold spaces and parentheses itself.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime 15, starttime 22,
	// vsize 23, rss 24.
	if len(f) < 22 {
		return
	}
	num := func(field int) float64 {
		v, _ := strconv.ParseFloat(string(f[field-3]), 64)
		return v
	}
	p.Add(procCPU, (num(14)+num(15))/userHZ)
	p.Add(procVirtual, num(23))
	p.Add(procRSS, num(24)*float64(os.Getpagesize()))
	if boot, ok := bootTime(); ok {
		p.Add(procStart, boot+num(22)/userHZ)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		p.Add(procOpenFDs, float64(len(fds)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		p.Add(procMaxFDs, float64(lim.Cur))
	}
}

// bootTime is the machine's boot, in seconds since 1970 (/proc/stat's
// btime), read once: it does not change, and /proc/stat grows with the
// machine's CPUs.
var bootTime = sync.OnceValues(readBootTime)

func readBootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			t, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return t, err == nil
		}
	}
	return 0, false
}
