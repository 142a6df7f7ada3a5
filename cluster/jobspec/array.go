package jobspec

import (
	"sort"
	"strconv"
	"strings"

	"hpc/cluster/api"
)

// maxArraySize is the largest MaxArraySize Slurm allows: task ids run
// 0..4000000. CheckArray holds a job to the configured one.
const maxArraySize = 4000001

// ParseArray reads --array: "0-99", "1-7:2", "1,3,5", each optionally
// followed by "%N", the most tasks that may run at once (0: no limit). The
// indices come back sorted and without repeats.
func ParseArray(spec string) (indices []int, limit int, err error) {
	bad := &api.Error{Message: api.ErrInvalidArray}
	spec, lim, hasLimit := strings.Cut(spec, "%")
	if hasLimit {
		if limit, err = strconv.Atoi(lim); err != nil || limit < 0 {
			return nil, 0, bad
		}
	}
	seen := map[int]bool{}
	for _, item := range strings.Split(spec, ",") {
		rng, stepText, hasStep := strings.Cut(item, ":")
		loText, hiText, isRange := strings.Cut(rng, "-")
		lo, err1 := strconv.Atoi(loText)
		hi, step := lo, 1
		var err2, err3 error
		if isRange {
			hi, err2 = strconv.Atoi(hiText)
		}
		if hasStep {
			step, err3 = strconv.Atoi(stepText)
		}
		if err1 != nil || err2 != nil || err3 != nil || lo < 0 || hi < lo || step < 1 || hi >= maxArraySize || (hasStep && !isRange) {
			return nil, 0, bad
		}
		step = min(step, maxArraySize) // a longer step would overflow i
		for i := lo; i <= hi; i += step {
			if !seen[i] {
				seen[i] = true
				indices = append(indices, i)
			}
		}
	}
	if len(indices) == 0 {
		return nil, 0, bad
	}
	sort.Ints(indices)
	return indices, limit, nil
}

// arrayThrottled marks, for each array with a %N limit, the pending tasks
// beyond what may start now (reason JobArrayTaskLimit).

// ArrayStep is SLURM_ARRAY_TASK_STEP: the common difference of the
// indices, or 1 when they have none.
func ArrayStep(idx []int) int {
	if len(idx) < 2 {
		return 1
	}
	step := idx[1] - idx[0]
	for i := 2; i < len(idx); i++ {
		if idx[i]-idx[i-1] != step {
			return 1
		}
	}
	return step
}

// CheckArray reads --array as ParseArray does and holds its task ids below
// maxSize (MaxArraySize), with Slurm's error beyond.
func CheckArray(spec string, maxSize int) ([]int, error) {
	idx, _, err := ParseArray(spec)
	if err != nil {
		return nil, err
	}
	if idx[0] < 0 || idx[len(idx)-1] >= maxSize {
		return nil, &api.Error{Message: api.ErrInvalidArray}
	}
	return idx, nil
}
