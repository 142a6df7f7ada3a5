package api

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeAfter is the size from which a list's memory is asked to be backed
// by huge pages.
const hugeAfter = 8 << 20

// adviseHuge asks the kernel to back the 2 MiB pages that b covers
// whole with huge pages when it first touches them (transparent huge
// pages in their "madvise" mode, most distributions' default). A long
// job list is written once, soon after it is made: 100,000 jobs are
// 109 MB, which took some 27,000 page faults of 4 KiB, a third of
// squeue's time, and take some 50 of 2 MiB. Where huge pages are off, or
// the advice is refused, nothing changes.
func adviseHuge(b []byte) {
	if len(b) < hugeAfter {
		return
	}
	const huge = 2 << 20
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	skip := int((huge - addr%huge) % huge) // to the first whole huge page
	if len(b)-skip < huge {
		return
	}
	b = b[skip : skip+(len(b)-skip)/huge*huge]
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
}
