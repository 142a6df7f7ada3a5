package api

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A long list's memory is backed by huge pages where the kernel has them
// on request (transparent huge pages, "madvise" or "always").
func TestAdviseHuge(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("no transparent huge pages here")
	}
	// First whether huge pages are granted here at all, when asked for
	// directly (an emulator, such as qemu-user, may take the advice and
	// do nothing).
	control := make([]byte, 32<<20)
	if err := unix.Madvise(control[4<<20:28<<20], unix.MADV_HUGEPAGE); err != nil || touchedHugeKB(t, control) == 0 {
		t.Skipf("huge pages are not granted here (%v)", err)
	}
	b := make([]byte, 32<<20)
	adviseHuge(b)
	if kb := touchedHugeKB(t, b); kb < 2048 {
		t.Errorf("%d kB of the list's 32 MiB in huge pages", kb)
	}
}

// touchedHugeKB writes every page of b, then returns how much of it is
// in huge pages.
func touchedHugeKB(t *testing.T, b []byte) int {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return anonHugeKB(t, start, start+uintptr(len(b)))
}

// anonHugeKB sums AnonHugePages of the mappings that overlap [lo, hi).
func anonHugeKB(t *testing.T, lo, hi uintptr) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in, total := false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		var a, z uintptr
		if n, _ := fmt.Sscanf(fields[0], "%x-%x", &a, &z); n == 2 && !strings.HasSuffix(fields[0], ":") {
			in = a < hi && z > lo
			continue
		}
		if in && fields[0] == "AnonHugePages:" {
			kb, _ := strconv.Atoi(fields[1])
			total += kb
		}
	}
	return total
}
