package openapi

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"hpc/cluster/api"
)

// SlurmVersion is the Slurm release whose output this package reproduces;
// scontrol show node prints it as the node's Version.
const SlurmVersion = "22.05.8"

// NodeArch is the machine name Slurm reports for this build's architecture.
func NodeArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i686"
	}
	return runtime.GOARCH
}

// IDList spells CPU or device indices as Slurm's bitmaps do ("0-1,4").
func IDList(ids []int) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(ids[i])+"-"+strconv.Itoa(ids[j]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// GresOfAlloc is the GRES a node gives a job, with device indices, as
// scontrol show job -d shows it: "gpu:a100:2(IDX:0-1)".
func GresOfAlloc(a api.NodeAlloc) string {
	var parts []string
	for _, g := range a.Gres {
		name := g.Name
		if g.Type != "" {
			name += ":" + g.Type
		}
		parts = append(parts, fmt.Sprintf("%s:%d(IDX:%s)", name, len(g.Indices), IDList(g.Indices)))
	}
	return strings.Join(parts, ",")
}
