package sched

// replay is a Planner's memory of the last pass while it walks the next.
type replay struct{}

func (r *replay) touch(n int32)                      {}
func (r *replay) ghostsBefore(j *jobInfo)            {}
func (r *replay) replay(ji int32) bool               { return false }
func (r *replay) recomputed(ji int32, old *decision) {}
