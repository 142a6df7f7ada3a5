package cluster

import (
	"hpc/cluster/api"
)

// addUsage folds one node's usage of a step into the step's: the peak of
// the busiest node, CPU time summed.
func addUsage(total, u *api.StepUsage) *api.StepUsage {
	if u == nil {
		return total
	}
	if total == nil {
		c := *u
		return &c
	}
	if u.MaxRSSKB > total.MaxRSSKB {
		total.MaxRSSKB, total.MaxRSSNode = u.MaxRSSKB, u.MaxRSSNode
	}
	total.UserCPU += u.UserCPU
	total.SystemCPU += u.SystemCPU
	return total
}
