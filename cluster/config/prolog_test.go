package config

import (
	"strings"
	"testing"
)

func TestPrologEpilogKeys(t *testing.T) {
	c := mustParse(t, minimal)
	if c.Prolog != "" || c.Epilog != "" || c.PrologEpilogTimeout != 65534 {
		t.Errorf("defaults: Prolog=%q Epilog=%q PrologEpilogTimeout=%d", c.Prolog, c.Epilog, c.PrologEpilogTimeout)
	}
	c = mustParse(t, minimal+"prolog=/etc/slurm/prolog.sh\nEpilog=/etc/slurm/epilog.sh\nPrologEpilogTimeout=30\n")
	if c.Prolog != "/etc/slurm/prolog.sh" || c.Epilog != "/etc/slurm/epilog.sh" || c.PrologEpilogTimeout != 30 {
		t.Errorf("got Prolog=%q Epilog=%q PrologEpilogTimeout=%d", c.Prolog, c.Epilog, c.PrologEpilogTimeout)
	}
	if _, ok := c.Raw["prolog"]; ok {
		t.Errorf("Prolog also kept raw: %v", c.Raw)
	}
}

func TestPrologEpilogErrors(t *testing.T) {
	for _, line := range []string{"Prolog=prolog.sh", "Epilog=./epilog", "PrologEpilogTimeout=0", "PrologEpilogTimeout=ten"} {
		_, err := Parse(strings.NewReader(minimal + line + "\n"))
		if err == nil {
			t.Errorf("%s: no error", line)
			continue
		}
		key, _, _ := strings.Cut(line, "=")
		if !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "line 3:") {
			t.Errorf("%s: error %q does not name the key and line", line, err)
		}
	}
}
