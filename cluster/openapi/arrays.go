package openapi

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// Job arrays as Slurm shows them. The controller keeps one record per task;
// Slurm keeps one record for all the tasks that have not started yet (its
// "meta" record, JobId=the array's id, ArrayTaskId=0-7) and splits a task
// off as it starts. CollapseArrays gives Slurm's view.

// neverStarted reports whether a task has not run yet: Slurm keeps such
// tasks in the array's record instead of records of their own.
func neverStarted(j *api.Job) bool {
	return j.ArrayJobID != 0 && j.StartTime.IsZero() && j.Restarts == 0
}

// CollapseArrays returns jobs with each array's pending tasks that never
// started merged into one record (ArrayTasks set), in the place of the
// first of them: the record of the lowest job id among them, with the
// task ids of all. Tasks held or released on their own (a different Hold)
// are shown as records of their own, as Slurm splits them. Tasks cancelled
// before they started are no records in Slurm (the cancel only drops
// them from the array's record): they are left out while tasks of the
// array are still pending, and once none is, the array's record is the
// cancelled ones, merged the same way. The result reuses jobs' storage:
// jobs itself is not to be read after.
func CollapseArrays(jobs []api.Job) []api.Job {
	type group struct {
		first int // index in jobs of the lowest job id
		tasks []int
	}
	pending := map[uint64]*group{}   // by array id: the array's record
	cancelled := map[uint64]*group{} // by array id, used when nothing is pending
	hold := map[uint64]string{}
	// The array's record holds the Hold of its lowest pending task.
	for i := range jobs {
		j := &jobs[i]
		if !neverStarted(j) || j.State != api.StatePending {
			continue
		}
		if g, ok := pending[j.ArrayJobID]; !ok || j.ID < jobs[g.first].ID {
			pending[j.ArrayJobID] = &group{first: i}
			hold[j.ArrayJobID] = j.Hold
		}
	}
	for i := range jobs {
		j := &jobs[i]
		if !neverStarted(j) {
			continue
		}
		switch {
		case j.State == api.StatePending && j.Hold == hold[j.ArrayJobID]:
			g := pending[j.ArrayJobID]
			g.tasks = append(g.tasks, j.ArrayTaskID)
		case j.State == api.StateCancelled && pending[j.ArrayJobID] == nil:
			g := cancelled[j.ArrayJobID]
			if g == nil || j.ID < jobs[g.first].ID {
				if g == nil {
					g = &group{}
					cancelled[j.ArrayJobID] = g
				}
				g.first = i
			}
			g.tasks = append(g.tasks, j.ArrayTaskID)
		}
	}
	// In place: a record moves only to a place already read, and a job is
	// a kilobyte: one that stays where it is is not copied (100,000 of
	// them were copied twice: 8% of squeue's CPU, with no array at all).
	out := jobs[:0]
	keep := func(i int) {
		if len(out) == i {
			out = out[:i+1]
		} else {
			out = append(out, jobs[i])
		}
	}
	for i := range jobs {
		j := &jobs[i]
		if !neverStarted(j) {
			keep(i)
			continue
		}
		g := pending[j.ArrayJobID]
		switch {
		case g != nil && j.State == api.StatePending && j.Hold == hold[j.ArrayJobID]:
		case g != nil && j.State == api.StateCancelled:
			continue // dropped from the array's record
		case g == nil && j.State == api.StateCancelled:
			g = cancelled[j.ArrayJobID]
		default:
			keep(i) // split off (held or released on its own)
			continue
		}
		if g.first != i {
			continue
		}
		slices.Sort(g.tasks)
		j.ArrayTasks = IntRanges(g.tasks) // i is not yet in out: no record out holds changes
		keep(i)
	}
	return out
}

// ArrayThrottle is the array's %N limit, 0 without one.
func ArrayThrottle(j *api.Job) int {
	if _, lim, err := jobspec.ParseArray(j.Spec.Array); err == nil {
		return lim
	}
	return 0
}

// ArrayTaskString prints an array record's task ids as Slurm does: a
// stepped range ("0-30:3") when more than 5 ids spaced by more than 1 span
// more than 10, otherwise ranges ("0-3,7"), cut to SLURM_BITSTR_LEN
// characters (64 by default, "..." marking the cut), then "%N" for a
// throttle.
func ArrayTaskString(j *api.Job) string {
	ids, _, _ := jobspec.ParseArray(j.ArrayTasks)
	s := steppedRange(ids)
	if s == "" {
		s = j.ArrayTasks
		limit := 64
		if v, err := strconv.Atoi(os.Getenv("SLURM_BITSTR_LEN")); err == nil && v >= 0 {
			limit = min(v, 4096)
		}
		if limit > 3 && len(s) > limit-3 {
			s = s[:limit-4] + "..."
		}
	}
	if lim := ArrayThrottle(j); lim > 0 {
		s += "%" + strconv.Itoa(lim)
	}
	return s
}

// steppedRange is "first-last:step" when the ids qualify, else "".
func steppedRange(ids []int) string {
	n := len(ids)
	if n <= 5 || ids[n-1]-ids[0] <= 10 || ids[1] == ids[0]+1 {
		return ""
	}
	step := ids[1] - ids[0]
	for i := 2; i < n; i++ {
		if ids[i]-ids[i-1] != step {
			return ""
		}
	}
	return fmt.Sprintf("%d-%d:%d", ids[0], ids[n-1], step)
}

// IntRanges prints sorted integers as ranges: "0-3,5,7-9".
func IntRanges(v []int) string {
	var b strings.Builder
	for i := 0; i < len(v); {
		k := i
		for k+1 < len(v) && v[k+1] == v[k]+1 {
			k++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v[i]))
		if k > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(v[k]))
		}
		i = k + 1
	}
	return b.String()
}
