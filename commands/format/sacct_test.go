package format

import (
	"reflect"
	"strings"
	"testing"

	"hpc/cluster/api"
)

func TestParseSacctFields(t *testing.T) {
	names := func(fs []SacctField) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	for _, c := range []struct {
		in   []string
		want []string
	}{
		{nil, strings.Split(DefaultSacctFormat, ",")},
		{[]string{"jobid,JOBNAME", " state "}, []string{"JobID", "JobName", "State"}},
		{[]string{"jobn", "node", "elapsedr"}, []string{"JobName", "NodeList", "ElapsedRaw"}},
		{[]string{"Elapsed"}, []string{"Elapsed"}},
		{[]string{"user", "uid"}, []string{"User", "UID"}},
	} {
		got, err := ParseSacctFields(c.in)
		if err != nil {
			t.Errorf("%v: %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(names(got), c.want) {
			t.Errorf("%v resolved to %v, want %v", c.in, names(got), c.want)
		}
	}
	all, err := ParseSacctFields([]string{"ALL"})
	if err != nil || len(all) != len(sacctDefs) {
		t.Errorf("ALL gave %d fields, err %v; want %d", len(all), err, len(sacctDefs))
	}
	_, err = ParseSacctFields([]string{"JobID,bogus"})
	if err == nil || err.Error() != `Invalid field requested: "bogus"` {
		t.Errorf("bogus field error = %v", err)
	}
	w, _ := ParseSacctFields([]string{"JobName%20", "JobID%5"})
	if w[0].Width != 20 || w[1].Width != 5 {
		t.Errorf("widths %d %d, want 20 5", w[0].Width, w[1].Width)
	}
}

func TestSacctFormatting(t *testing.T) {
	by := uint32(1000)
	rows := []api.AcctRow{
		{JobID: 7, JobName: "a-rather-long-name", Partition: "verylongpartition", Account: "physics",
			AllocCPUs: 1234567890, State: "CANCELLED", CancelledBy: &by, ExitCode: 0, Signal: 9,
			NodeList: "node[1-12]", Start: at(4, 0, 0), End: at(5, 1, 2)},
		{JobID: 7, Step: "batch", JobName: "batch", Partition: "verylongpartition", Account: "physics",
			AllocCPUs: 1, State: "CANCELLED", Signal: 9, NodeList: "node1", Start: at(4, 0, 0)},
		{JobID: 8, JobName: "wait", Partition: "debug", Account: "root", State: "PENDING", Submit: at(4, 0, 0)},
	}
	o := SacctOptions{
		Fields: []string{"JobID,JobName,Partition,AllocCPUS,State,ExitCode,Elapsed,NodeList,NNodes,Start,End%10,JobID%4"},
		Now:    at(4, 30, 0),
	}
	got := Sacct(rows, o)
	want := "" +
		"JobID           JobName  Partition  AllocCPUS      State ExitCode    Elapsed        NodeList   NNodes               Start        End JobI \n" +
		"------------ ---------- ---------- ---------- ---------- -------- ---------- --------------- -------- ------------------- ---------- ---- \n" +
		"7            a-rather-+ verylongp+ 1234567890 CANCELLED+      0:9   01:01:02      node[1-12]       12 2026-11-30T04:00:00 2026-11-30    7 \n" +
		"7.batch           batch                     1  CANCELLED      0:9   00:30:00           node1        1 2026-11-30T04:00:00    Unknown 7.b+ \n" +
		"8                  wait      debug          0    PENDING      0:0   00:00:00   None assigned        0             Unknown    Unknown    8 \n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	o.Fields = []string{"JobID", "State", "Partition", "UID"}
	o.ParsableTrailing = true
	got = Sacct(rows, o)
	want = "JobID|State|Partition|UID|\n" +
		"7|CANCELLED by 1000|verylongpartition|0|\n" +
		"7.batch|CANCELLED|||\n" +
		"8|PENDING|debug|0|\n"
	if got != want {
		t.Errorf("-p got\n%q\nwant\n%q", got, want)
	}

	o.ParsableTrailing, o.Parsable, o.NoHeader = false, true, true
	got = Sacct(rows[:1], o)
	if want := "7|CANCELLED by 1000|verylongpartition|0\n"; got != want {
		t.Errorf("-P -n got %q, want %q", got, want)
	}

	o.Parsable = false
	if got := Sacct(rows, SacctOptions{Fields: []string{"nosuch"}}); got != "" {
		t.Errorf("invalid field printed %q", got)
	}
	if got := Sacct(nil, SacctOptions{NoHeader: true}); got != "" {
		t.Errorf("-n with no rows printed %q", got)
	}
}
