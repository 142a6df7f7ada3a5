package cluster

import (
	"hpc/cluster/api"
	"hpc/exec"
)

// stepUsage is what a step used on one node, as accounting keeps it; nil
// when nothing was measured.
func stepUsage(u exec.Usage, node string) *api.StepUsage {
	if u.MaxRSSKB <= 0 && u.UserCPU <= 0 && u.SystemCPU <= 0 {
		return nil
	}
	return &api.StepUsage{MaxRSSKB: u.MaxRSSKB, MaxRSSNode: node, UserCPU: u.UserCPU, SystemCPU: u.SystemCPU}
}

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
