package sched

import (
	"math"
	"testing"
	"time"
)

func TestSharesFairTree(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := Snapshot{
		Now: now,
		Assocs: []Assoc{
			{Account: "root"},
			{Account: "root", User: "root"},
			{Account: "a", Parent: "root", Shares: 1},
			{Account: "b", Parent: "root", Shares: 3},
			{Account: "a", User: "u1"},
			{Account: "b", User: "u3"},
			{Account: "b", User: "u2", Shares: 2},
		},
		Usage: []Usage{
			{Account: "a", User: "u1", CPUs: 2, Start: now.Add(-100 * time.Second), End: now.Add(-50 * time.Second)},
			{Account: "b", User: "u2", CPUs: 1, Start: now.Add(-30 * time.Second), End: now},
		},
	}
	got := Shares(s)
	want := []struct {
		acct, user string
		depth      int
		norm, raw  float64
	}{
		{"root", "", 0, 1, 130},
		{"root", "root", 1, 1.0 / 3, 0},
		{"a", "", 1, 1.0 / 3, 100},
		{"a", "u1", 2, 1, 100},
		{"b", "", 1, 1.0 / 3 * 3 / 1, 30},
		{"b", "u2", 2, 2.0 / 3, 30},
		{"b", "u3", 2, 1.0 / 3, 0},
	}
	// root's children: root user (1), a (1), b (3): total 5.
	want[1].norm, want[2].norm, want[4].norm = 0.2, 0.2, 0.6
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Account != w.acct || g.User != w.user || g.Depth != w.depth {
			t.Errorf("row %d = %s/%s depth %d, want %s/%s depth %d", i, g.Account, g.User, g.Depth, w.acct, w.user, w.depth)
		}
		if math.Abs(g.NormShares-w.norm) > 1e-9 || math.Abs(g.RawUsage-w.raw) > 1e-9 {
			t.Errorf("row %d (%s/%s): norm %v raw %v, want %v %v", i, g.Account, g.User, g.NormShares, g.RawUsage, w.norm, w.raw)
		}
		if g.User != "" && (g.FairShare <= 0 || g.FairShare > 1) {
			t.Errorf("row %d: fair-share %v outside (0,1]", i, g.FairShare)
		}
	}
	if got[3].EffectvUsage != 1 || math.Abs(got[2].EffectvUsage-100.0/130) > 1e-9 {
		t.Errorf("effective usage: a %v, a/u1 %v", got[2].EffectvUsage, got[3].EffectvUsage)
	}
	if got[4].RawShares != 3 || got[6].RawShares != 1 {
		t.Errorf("raw shares: b %d, b/u3 %d", got[4].RawShares, got[6].RawShares)
	}
	// Fair Tree: root user and b (no/low usage for their share) rank above
	// a; u3 (no usage) above u2 above u1, the heavy user last.
	fs := func(i int) float64 { return got[i].FairShare }
	if !(fs(1) > fs(6) && fs(6) > fs(5) && fs(5) > fs(3)) {
		t.Errorf("fair-share order wrong: root %v u3 %v u2 %v u1 %v", fs(1), fs(6), fs(5), fs(3))
	}
	if fs(1) != 1 || fs(3) != 0.25 {
		t.Errorf("fair-share of top user %v (want 1), last user %v (want 0.25)", fs(1), fs(3))
	}
}

func TestSharesEmpty(t *testing.T) {
	if got := Shares(Snapshot{Now: time.Unix(0, 0)}); got != nil {
		t.Fatalf("Shares without associations = %+v, want nil", got)
	}
}
