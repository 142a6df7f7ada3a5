package agent

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
