package sched

import "math"

// maxPools is the most GRES pools a node may have; more are ignored.
const maxPools = 8

// forever stands for "never" on the pass's time line (seconds).
const forever = math.MaxInt64 / 4

// vec is an amount of a node's resources: CPUs, memory and the count of
// each of the node's GRES pools (indexed as the node's pools).
type vec struct {
	cpu int32
	mem int64
	g   [maxPools]int32
}

func (a *vec) add(b *vec) {
	a.cpu += b.cpu
	a.mem += b.mem
	for i := range a.g {
		a.g[i] += b.g[i]
	}
}

func (a *vec) sub(b *vec) {
	a.cpu -= b.cpu
	a.mem -= b.mem
	for i := range a.g {
		a.g[i] -= b.g[i]
	}
}

// covers reports whether a holds at least b in every dimension.
func (a *vec) covers(b *vec) bool {
	if a.cpu < b.cpu || a.mem < b.mem {
		return false
	}
	for i := range a.g {
		if a.g[i] < b.g[i] {
			return false
		}
	}
	return true
}

// lower sets a to the componentwise minimum of a and b.
func (a *vec) lower(b *vec) {
	a.cpu = min(a.cpu, b.cpu)
	a.mem = min(a.mem, b.mem)
	for i := range a.g {
		a.g[i] = min(a.g[i], b.g[i])
	}
}

func (a *vec) neg() vec {
	var r vec
	r.sub(a)
	return r
}

// event changes a node's availability from time t on: a running job's end
// (positive), a reservation's start (negative) or end (positive).
type event struct {
	t int64
	d vec
}
