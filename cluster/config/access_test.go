package config

import (
	"strings"
	"testing"
)

// PrivateData and AccountingStorageEnforce are comma lists, read as Slurm
// reads them and printed as scontrol show config prints them.
func TestAccessKeys(t *testing.T) {
	base, err := Lab(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lines           string
		private, policy string
	}{
		{"", "none", "associations,limits,qos"}, // the lab's
		{"PrivateData=jobs\nAccountingStorageEnforce=none\n", "jobs", "none"},
		{"PrivateData=Usage,job,users\nAccountingStorageEnforce=associations\n", "jobs,usage,users", "associations"},
		{"PrivateData=all\nAccountingStorageEnforce=qos\n", "accounts,cloud,events,jobs,nodes,partitions,reservations,usage,users", "associations,qos"},
		{"AccountingStorageEnforce=safe,nosteps\n", "none", "associations,limits,nosteps,safe"},
		{"AccountingStorageEnforce=all\n", "none", "associations,limits,qos,safe,wckeys"},
		{"AccountingStorageEnforce=nojobs\n", "none", "nojobs,nosteps"},
	} {
		cfg, err := Parse(strings.NewReader(base + c.lines))
		if err != nil {
			t.Fatalf("%q: %v", c.lines, err)
		}
		if got := cfg.PrivateData.String(); got != c.private {
			t.Errorf("%q: PrivateData %q, want %q", c.lines, got, c.private)
		}
		if got := cfg.AccountingStorageEnforce.String(); got != c.policy {
			t.Errorf("%q: AccountingStorageEnforce %q, want %q", c.lines, got, c.policy)
		}
	}
	cfg, _ := Parse(strings.NewReader(base + "AccountingStorageEnforce=qos\nPrivateData=jobs\n"))
	if e := cfg.AccountingStorageEnforce; !e.Associations || !e.QOS || e.Limits || !cfg.PrivateData.Jobs || cfg.PrivateData.Usage {
		t.Errorf("flags: %+v %+v", e, cfg.PrivateData)
	}
	for _, bad := range []string{"PrivateData=jobs,secrets\n", "AccountingStorageEnforce=associations,everything\n"} {
		if _, err := Parse(strings.NewReader(base + bad)); err == nil || !strings.Contains(err.Error(), "invalid") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}
