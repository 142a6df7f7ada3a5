package openapi

import (
	"strings"

	"hpc/cluster/api"
)

// JobStdIn is the job's input file: -i's pattern, else /dev/null.
func JobStdIn(j *api.Job) string {
	if j.Spec.Input != "" {
		return j.Spec.Input
	}
	return "/dev/null"
}

// JobTRES is the TRES string of a job's allocation (or request).
func JobTRES(j *api.Job) string {
	cpus := JobNumCPUs(j)
	return TRESString(int64(cpus), jobMemMB(j), int64(JobNumNodes(j)), int64(cpus), jobGres(j))
}

// jobGres is the gres a job asked for, per node (--gres=gpu:2).
func jobGres(j *api.Job) []GresCount {
	g := ParseGres(j.Spec.Gres)
	nodes := int64(JobNumNodes(j))
	for i := range g {
		g[i].Count *= nodes
	}
	return g
}

// TRESPerNode is squeue's TRES_PER_NODE (and scontrol's TresPerNode):
// "gres:gpu:1", or N/A.
func TRESPerNode(j *api.Job) string {
	var parts []string
	if j.Spec.Gres != "" {
		for _, item := range strings.Split(j.Spec.Gres, ",") {
			parts = append(parts, "gres:"+item)
		}
	}
	if j.Spec.GpusPerNode != "" {
		parts = append(parts, "gres:gpu:"+j.Spec.GpusPerNode)
	}
	if len(parts) == 0 {
		return "N/A"
	}
	return strings.Join(parts, ",")
}

func TRESPerTask(j *api.Job) string {
	if j.Spec.GpusPerTask == "" {
		return "N/A"
	}
	return "gres:gpu:" + j.Spec.GpusPerTask
}

func TRESPerJob(j *api.Job) string {
	if j.Spec.Gpus == "" {
		return "N/A"
	}
	return "gres:gpu:" + j.Spec.Gpus
}
