package jobspec

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func resolveWith(t *testing.T, args []string, script string, env []string) (*Options, error) {
	t.Helper()
	return Resolve(args, Input{
		Cwd: "/w", Env: env,
		ReadFile: func(string) ([]byte, error) { return []byte(script), nil },
		Now:      time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
	})
}

func TestInputEnvPrecedence(t *testing.T) {
	script := "#!/bin/sh\n#SBATCH -J fromscript -p fromscript -t 5\ntrue\n"
	env := []string{"SBATCH_JOB_NAME=fromenv", "SBATCH_PARTITION=fromenv", "SBATCH_ACCOUNT=acct", "HOME=/root"}
	// Directives < SBATCH_* variables < command line.
	o, err := resolveWith(t, []string{"-p", "fromcli", "job.sh"}, script, env)
	if err != nil {
		t.Fatal(err)
	}
	if o.Spec.Name != "fromenv" || o.Spec.Partition != "fromcli" || o.Spec.TimeLimitMin != 5 || o.Spec.Account != "acct" {
		t.Errorf("precedence: name %q partition %q time %d account %q", o.Spec.Name, o.Spec.Partition, o.Spec.TimeLimitMin, o.Spec.Account)
	}
	// Flags without an argument are set by the variable being present.
	o, err = resolveWith(t, []string{"job.sh"}, script, []string{"SBATCH_WAIT=", "SBATCH_REQUEUE=1", "SBATCH_TIMELIMIT=1:00:00", "SBATCH_OUTPUT=o-%j"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Wait || o.Spec.Requeue == nil || !*o.Spec.Requeue || o.Spec.TimeLimitMin != 60 || o.Spec.Output != "o-%j" {
		t.Errorf("env flags: wait %v requeue %v time %d output %q", o.Wait, o.Spec.Requeue, o.Spec.TimeLimitMin, o.Spec.Output)
	}
	// A bad value is reported as the option's own error.
	_, err = resolveWith(t, []string{"job.sh"}, script, []string{"SBATCH_TIMELIMIT=soon"})
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Msg != "Invalid --time specification" || ue.Code != 255 {
		t.Errorf("bad SBATCH_TIMELIMIT: %v", err)
	}
	// Every variable names a real option.
	for _, e := range InputEnv {
		if e.Option != "" && byLong()[e.Option] == nil {
			t.Errorf("%s names unknown option %q", e.Var, e.Option)
		}
	}
}

func TestMemOptionsExclusive(t *testing.T) {
	script := "#!/bin/sh\n#SBATCH --mem=1G\ntrue\n"
	_, err := resolveWith(t, []string{"--mem-per-cpu=500", "job.sh"}, script, nil)
	var ue *UsageError
	if !errors.As(err, &ue) || !ue.Fatal || ue.Format("sbatch") != "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.\n" {
		t.Errorf("mem + mem-per-cpu: %v", err)
	}
	// One given directly clears the ones set through variables.
	o, err := resolveWith(t, []string{"--mem-per-cpu=500", "job.sh"}, "#!/bin/sh\ntrue\n", []string{"SBATCH_MEM_PER_NODE=2G"})
	if err != nil || o.Spec.MemPerCPUMB != 500 || o.Spec.MemPerNodeMB != 0 {
		t.Errorf("cli over env: %+v %v", o, err)
	}
	_, err = resolveWith(t, []string{"job.sh"}, "#!/bin/sh\ntrue\n", []string{"SBATCH_MEM_PER_NODE=2G", "SBATCH_MEM_PER_CPU=1G"})
	if !errors.As(err, &ue) || ue.Msg != "SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive." {
		t.Errorf("two env mem vars: %v", err)
	}
}

func TestExportEnv(t *testing.T) {
	env := []string{"HOME=/root", "PATH=/bin", "SLURM_CONF=/etc/s.conf", "X=1"}
	tests := []struct {
		export string
		want   []string
	}{
		{"", env},
		{"ALL", env},
		{"NONE", []string{"SLURM_CONF=/etc/s.conf"}},
		{"ALL,X=2,Y=3", []string{"HOME=/root", "PATH=/bin", "SLURM_CONF=/etc/s.conf", "X=2", "Y=3"}},
		{"PATH,Y=3", []string{"SLURM_CONF=/etc/s.conf", "PATH=/bin", "Y=3"}},
		{"NONE,HOME", []string{"SLURM_CONF=/etc/s.conf", "HOME=/root"}},
		{"MISSING", []string{"SLURM_CONF=/etc/s.conf"}},
	}
	for _, tt := range tests {
		if got := ExportEnv(tt.export, env); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExportEnv(%q) = %q, want %q", tt.export, got, tt.want)
		}
	}
	o, err := resolveWith(t, []string{"--export=NONE,A=b", "job.sh"}, "#!/bin/sh\ntrue\n", env)
	if err != nil || !reflect.DeepEqual(o.Spec.Env, []string{"SLURM_CONF=/etc/s.conf", "A=b"}) || o.Spec.Export != "NONE,A=b" {
		t.Errorf("Resolve --export: %q %v", o.Spec.Env, err)
	}
}

func TestParseBegin(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 30, 0, 0, time.UTC)
	day := func(d, h, m, s int) time.Time { return time.Date(2026, 11, d, h, m, s, 0, time.UTC) }
	tests := []struct {
		in   string
		want time.Time
	}{
		{"now", now},
		{"now+60", now.Add(time.Minute)},
		{"now+1hour", now.Add(time.Hour)},
		{"now+2hours", now.Add(2 * time.Hour)},
		{"now+30minutes", now.Add(30 * time.Minute)},
		{"now+1day", now.Add(24 * time.Hour)},
		{"now+1week", now.Add(7 * 24 * time.Hour)},
		{"now-10sec", now.Add(-10 * time.Second)},
		{"16:00", day(30, 16, 0, 0)},
		{"09:15:30", time.Date(2026, 12, 1, 9, 15, 30, 0, time.UTC)}, // passed: tomorrow
		{"4:00PM", day(30, 16, 0, 0)},
		{"teatime", day(30, 16, 0, 0)},
		{"noon", day(30, 12, 0, 0)},
		{"elevenses", day(30, 11, 0, 0)},
		{"midnight", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"today", day(30, 0, 0, 0)},
		{"tomorrow", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"2027-01-15", time.Date(2027, 1, 15, 0, 0, 0, 0, time.UTC)},
		{"2027-01-15T08:30", time.Date(2027, 1, 15, 8, 30, 0, 0, time.UTC)},
		{"2027-01-15T08:30:05", time.Date(2027, 1, 15, 8, 30, 5, 0, time.UTC)},
		{"12/25", time.Date(2026, 12, 25, 0, 0, 0, 0, time.UTC)},
		{"01/02", time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)}, // passed this year
		{"12/25/27", time.Date(2027, 12, 25, 0, 0, 0, 0, time.UTC)},
		{"12/25-08:00", time.Date(2026, 12, 25, 8, 0, 0, 0, time.UTC)},
		{"122527", time.Date(2027, 12, 25, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		got, err := ParseBegin(tt.in, now)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("ParseBegin(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "someday", "now+", "now+1fortnight", "25:00", "13/01", "2027-02-30", "12:60", "now*2"} {
		if _, err := ParseBegin(bad, now); err == nil {
			t.Errorf("ParseBegin(%q) accepted", bad)
		}
	}
	for in, want := range map[string]time.Time{
		"16:00":     day(29, 16, 0, 0),
		"09:15":     day(30, 9, 15, 0),
		"noon":      day(29, 12, 0, 0),
		"midnight":  day(30, 0, 0, 0),
		"12/25":     time.Date(2025, 12, 25, 0, 0, 0, 0, time.UTC),
		"01/02":     time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		"now-1hour": now.Add(-time.Hour),
	} {
		if got, err := ParseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	o, err := resolveWith(t, []string{"--begin=now+1hour", "job.sh"}, "#!/bin/sh\ntrue\n", nil)
	if err != nil || !o.Spec.Begin.Equal(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)) {
		t.Errorf("Resolve --begin: %v %v", o.Spec.Begin, err)
	}
}

func TestSignalSpec(t *testing.T) {
	tests := []struct {
		in   string
		want SignalSpec
	}{
		{"USR1", SignalSpec{Signal: 10, Seconds: 60}},
		{"SIGUSR2@120", SignalSpec{Signal: 12, Seconds: 120}},
		{"10@5", SignalSpec{Signal: 10, Seconds: 5}},
		{"B:TERM@30", SignalSpec{Signal: 15, Seconds: 30, Batch: true}},
		{"R:USR1", SignalSpec{Signal: 10, Seconds: 60, Reservation: true}},
		{"BR:USR1", SignalSpec{Signal: 10, Seconds: 60, Batch: true, Reservation: true}},
	}
	for _, tt := range tests {
		got, err := ParseSignalSpec(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSignalSpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "NOPE", "USR1@", "USR1@-1", "0", "B:"} {
		if _, err := ParseSignalSpec(bad); err == nil {
			t.Errorf("ParseSignalSpec(%q) accepted", bad)
		}
	}
	for name, want := range map[string]int{"KILL": 9, "sigterm": 15, "SIGUSR1": 10, "2": 2, "nope": 0, "9x": 0} {
		if got := SignalNumber(name); got != want {
			t.Errorf("SignalNumber(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestMailNotice(t *testing.T) {
	o, err := resolveWith(t, []string{"--mail-type=END", "--mail-user=me", "job.sh"}, "#!/bin/sh\ntrue\n", nil)
	if err != nil || len(o.Notices) != 1 || o.Spec.MailType != "END" {
		t.Errorf("mail: %+v %v", o, err)
	}
	o, _ = resolveWith(t, []string{"job.sh"}, "#!/bin/sh\ntrue\n", nil)
	if len(o.Notices) != 0 {
		t.Errorf("notices without mail options: %q", o.Notices)
	}
}
