//go:build linux

package exec

import (
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hostCPUs lists the CPUs this process may run on, in order.
func hostCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var out []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}

// cpuset maps a step's CPU ids onto the host's CPUs (see StepSpec.CPUIDs)
// and spells them as cpuset.cpus does ("0-2,5"); "" for none.
func (r *containerRuntime) cpuset(ids []int) string {
	if len(ids) == 0 || len(r.hostCPUs) == 0 {
		return ""
	}
	var cpus []int
	for _, id := range ids {
		if id >= 0 {
			cpus = append(cpus, r.hostCPUs[id%len(r.hostCPUs)])
		}
	}
	return cpuList(cpus)
}

// cpuList spells a set of CPUs as a list of ranges.
func cpuList(cpus []int) string {
	cpus = slices.Clone(cpus)
	slices.Sort(cpus)
	cpus = slices.Compact(cpus)
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
