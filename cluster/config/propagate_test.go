package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestPropagateResourceLimits(t *testing.T) {
	names := func(ls []Rlimit) []string {
		out := []string{}
		for _, l := range ls {
			out = append(out, l.Name)
		}
		return out
	}
	all := []string{"CPU", "FSIZE", "DATA", "STACK", "CORE", "RSS", "NPROC", "NOFILE", "MEMLOCK", "AS"}
	for _, c := range []struct {
		lines string
		want  []string
	}{
		{"", all},
		{"PropagateResourceLimits=ALL\n", all},
		{"PropagateResourceLimits=NONE\n", []string{}},
		{"PropagateResourceLimits=NOFILE,RLIMIT_core\n", []string{"CORE", "NOFILE"}},
		{"PropagateResourceLimitsExcept=MEMLOCK,AS\n", all[:8]},
		{"PropagateResourceLimitsExcept=NONE\n", all},
		{"PropagateResourceLimitsExcept=ALL\n", []string{}},
		// Except wins, whichever comes first.
		{"PropagateResourceLimitsExcept=CPU\nPropagateResourceLimits=CORE\n", all[1:]},
	} {
		text, _ := Lab(2)
		cfg, err := Parse(strings.NewReader(text + c.lines))
		if err != nil {
			t.Fatalf("%q: %v", c.lines, err)
		}
		if got := names(cfg.PropagatedLimits()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, want %v", c.lines, got, c.want)
		}
		if c.lines != "" && cfg.Raw[strings.Split(c.lines, "=")[0]] == "" {
			t.Errorf("%q: not kept for scontrol show config", c.lines)
		}
	}
	text, _ := Lab(2)
	if _, err := Parse(strings.NewReader(text + "PropagateResourceLimits=CORE,VMEM\n")); err == nil || !strings.Contains(err.Error(), "VMEM") {
		t.Errorf("an unknown limit: %v", err)
	}
}
